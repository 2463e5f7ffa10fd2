/* disasm.h - instruction text for the listing: capstone when the tool was
 * built with it (CSD_HAVE_CAPSTONE), otherwise nothing. */
#ifndef CSD_DISASM_H
#define CSD_DISASM_H

#include <stddef.h>
#include <stdint.h>

struct disasm;

/* Open the disassembler; NULL when the tool was built without one (or it
 * cannot start): the listing then shows no mnemonics. */
struct disasm *disasm_new(void);
void disasm_free(struct disasm *d);

/*
 * Disassemble one instruction given as a flow record has it (`opcode`: the
 * A32 word, a 16-bit T32 halfword, or a 32-bit T32 instruction as
 * first << 16 | second; `size` 2 or 4; `isa` enum csd_isa). Each
 * instruction is taken on its own, without the IT block around it (as
 * DS-5 lists them). Writes the lower-case mnemonic and the operands;
 * returns 0, or -1 (no disassembler, undecodable bytes: both strings "").
 */
int disasm_insn(struct disasm *d, int isa, uint64_t addr, uint32_t opcode, uint32_t size, char *mnemonic,
		size_t mnemonic_cap, char *operands, size_t operands_cap);

#endif
