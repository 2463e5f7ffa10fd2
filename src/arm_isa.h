/* arm_isa.h - classifier of A32 / T32 / ThumbEE instructions for the
 * program-flow walkers (internal).
 *
 * The walkers step through the program image between trace waypoints; for
 * each instruction they need its size, whether and how it changes the flow
 * (direct branch with a target known from the encoding, or indirect: any
 * other write of the PC), whether it links, its condition, and a few
 * properties PTM and ETMv3 care about (barriers, exception generation and
 * return). This is not a disassembler: nothing else is decoded.
 *
 * Encodings follow the ARMv7-A/R Architecture Reference Manual decode
 * tables (ARM: A5, Thumb: A6, ThumbEE: A9); waypoint classes follow the
 * PFT architecture (IHI 0035) section 2.2.
 */
#ifndef CSD_ARM_ISA_H
#define CSD_ARM_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "csdec.h"

/* What the instruction does to the program flow. */
enum csdi_insn_class {
	CSDI_INSN_NORMAL = 0,     /* falls through to address + size */
	CSDI_INSN_DIRECT = 1,     /* branch whose target is in the encoding: `target`, `target_isa` */
	CSDI_INSN_INDIRECT = 2,   /* any other write of the PC (BX, LDR pc, POP {pc}, MOV pc, TBB, ERET, ...) */
};

/* Flags of struct csdi_insn. */
enum {
	/* Writes the return address (address + size) to LR: BL, BLX (immediate
	 * and register), ThumbEE HBL/HBLP. */
	CSDI_INSNF_LINK = 1u << 0,
	/* Executes only if its own condition field passes (`cond` != AL):
	 * conditional A32 instructions, T32 B<c>. T32 instructions inside an
	 * IT block get it from csdi_insn_apply_it(). */
	CSDI_INSNF_COND = 1u << 1,
	/* Exception return: SUBS pc, lr and the other flag-setting
	 * data-processing writes of the PC in A32, ERET, RFE, LDM with ^ and pc. */
	CSDI_INSNF_EXC_RETURN = 1u << 2,
	/* Exception-generating: SVC, BKPT, SMC, HVC, UDF. */
	CSDI_INSNF_EXCEPTION = 1u << 3,
	/* DMB or DSB, including the CP15 c7 forms (PTM waypoints when
	 * ETMCCER bit 24 says so). */
	CSDI_INSNF_DMB_DSB = 1u << 4,
	/* ISB, including the CP15 c7 form (always a PTM waypoint). */
	CSDI_INSNF_ISB = 1u << 5,
	/* The encoding is UNDEFINED (executing it takes the Undefined
	 * Instruction exception), or unallocated in ARMv7. */
	CSDI_INSNF_UNDEFINED = 1u << 6,
	/* The encoding is UNPREDICTABLE. Checked for the cases that involve the
	 * PC (PC as a destination where the architecture forbids it, base
	 * writeback to the PC, BKPT/HVC with a condition, ...) and a few common
	 * others; an unflagged instruction is not guaranteed to be predictable. */
	CSDI_INSNF_UNPREDICTABLE = 1u << 7,
	/* The IT instruction: ITSTATE = csdi_it_start(opcode) afterwards. */
	CSDI_INSNF_IT = 1u << 8,
	/* ThumbEE handler branch HB, HBL, HBP, HBLP: class INDIRECT (the base
	 * TEEHBR is a register); `target` holds the offset from TEEHBR. */
	CSDI_INSNF_TEE_HANDLER = 1u << 9,
	/* ThumbEE CHKA: branches to the IndexCheck handler (with link) when
	 * the check fails; otherwise a normal instruction. */
	CSDI_INSNF_TEE_CHECK = 1u << 10,
};

/* DMB/DSB or ISB. */
#define CSDI_INSNF_BARRIER (CSDI_INSNF_DMB_DSB | CSDI_INSNF_ISB)

#define CSDI_COND_AL 14u

struct csdi_insn {
	/* A32: the instruction word. T32/ThumbEE: a 16-bit instruction in bits
	 * 15:0; a 32-bit one as (first halfword << 16) | second halfword. */
	uint32_t opcode;
	/* DIRECT: the branch target. ThumbEE handler branches: the offset of
	 * the handler from TEEHBR. Otherwise 0. */
	uint32_t target;
	uint32_t flags;       /* CSDI_INSNF_* */
	uint8_t size;         /* bytes: 4 (A32), 2 or 4 (T32) */
	uint8_t isa;          /* enum csd_isa it was decoded in */
	uint8_t cls;          /* enum csdi_insn_class */
	/* Condition 0-15 (CSDI_COND_AL = 14 for unconditional instructions,
	 * including A32 instructions with cond == 0b1111). */
	uint8_t cond;
	/* DIRECT: instruction set at the target (BLX immediate switches
	 * A32 <-> T32; ENTERX enters and LEAVEX leaves ThumbEE). Otherwise
	 * the same as `isa`. */
	uint8_t target_isa;
};

/*
 * Classify the instruction at `addr`, whose bytes (little-endian
 * instruction memory) start at `code` with `avail` bytes readable.
 * isa: CSD_ISA_ARM, CSD_ISA_THUMB or CSD_ISA_THUMBEE.
 * Returns the instruction size (2 or 4) with *out filled, or
 *   CSD_ENOMAP        avail is shorter than the instruction; out->size then
 *                     says how many bytes are needed (when known);
 *   CSD_EUNSUPPORTED  isa is CSD_ISA_JAZELLE: bytecodes cannot be followed;
 *   CSD_EINVAL        NULL pointer or unknown isa.
 * Never reads beyond code[avail - 1]; every bit pattern is classified.
 */
int csdi_isa_decode(uint32_t addr, const uint8_t *code, size_t avail, int isa,
                    struct csdi_insn *out);

/* The same from an already fetched A32 word. */
void csdi_isa_decode_a32(uint32_t addr, uint32_t word, struct csdi_insn *out);
/* The same from already fetched T32 halfwords (isa CSD_ISA_THUMB or
 * CSD_ISA_THUMBEE); hw2 is ignored when hw1 is a 16-bit instruction.
 * Returns the size, 2 or 4. */
int csdi_isa_decode_t32(uint32_t addr, uint16_t hw1, uint16_t hw2, int isa,
                        struct csdi_insn *out);

/* Size in bytes of the T32 instruction whose first halfword is hw1: 4 if
 * bits 15:11 are 0b11101, 0b11110 or 0b11111, else 2. */
static inline unsigned csdi_t32_size(uint16_t hw1)
{
	return hw1 >= 0xE800u ? 4u : 2u;
}

/*
 * IT blocks (T32). The caller keeps ITSTATE (8 bits, as in the CPSR IT
 * field: firstcond in 7:4 after the shift, mask below) and, for every
 * instruction it walks in Thumb state:
 *     csdi_isa_decode(..., &insn);
 *     csdi_insn_apply_it(&insn, itstate);          // condition from IT
 *     itstate = (insn.flags & CSDI_INSNF_IT) ? csdi_it_start(insn.opcode)
 *                                            : csdi_it_advance(itstate);
 * ITSTATE is 0 outside IT blocks and after exceptions / exception returns
 * it comes from the trace, not from here.
 */

/* ITSTATE after the IT instruction `it_opcode`: its firstcond:mask byte. */
static inline uint8_t csdi_it_start(uint32_t it_opcode)
{
	return (uint8_t)(it_opcode & 0xFFu);
}

/* Nonzero if the instruction executed with this ITSTATE is in an IT block. */
static inline int csdi_it_active(uint8_t itstate)
{
	return (itstate & 0x0Fu) != 0;
}

/* Nonzero if it is the last instruction of its IT block. */
static inline int csdi_it_last(uint8_t itstate)
{
	return (itstate & 0x0Fu) == 0x08u;
}

/* Condition of the instruction executed with this ITSTATE (inside a block). */
static inline unsigned csdi_it_cond(uint8_t itstate)
{
	return itstate >> 4;
}

/* ITSTATE for the next instruction (ITAdvance() of the ARM ARM). */
static inline uint8_t csdi_it_advance(uint8_t itstate)
{
	if ((itstate & 0x07u) == 0)
		return 0;
	return (uint8_t)((itstate & 0xE0u) | ((itstate << 1) & 0x1Fu));
}

/*
 * Give a T32 instruction executed with `itstate` its condition from the IT
 * block (cond, CSDI_INSNF_COND unless AL; BKPT stays unconditional, as the
 * architecture has it), and flag as UNPREDICTABLE what
 * the architecture forbids there: an IT, CBZ/CBNZ or B<c> inside a block,
 * and a branch or other PC write that is not the last of the block.
 * Does nothing outside an IT block or for A32.
 */
void csdi_insn_apply_it(struct csdi_insn *insn, uint8_t itstate);

/*
 * Data transfers (ETMv3 data trace). What a load/store instruction moves,
 * so that a decoder can tie each data packet to its transfer (IHI 0014
 * 7.4: one packet per transfer of up to 32 bits; the first transfer of an
 * instruction carries the address, later ones follow it unless the trace
 * gives another).
 */
enum csdi_mem_dir {
	CSDI_MEM_NONE = 0,      /* no data transfer */
	CSDI_MEM_LOAD = 1,
	CSDI_MEM_STORE = 2,
	CSDI_MEM_SWAP = 3,      /* SWP/SWPB: transfer 0 loads, transfer 1 stores, same address */
};

/* Flags of struct csdi_mem. */
enum {
	CSDI_MEMF_SIGNED = 1u << 0,     /* sign-extending load (LDRSB, LDRSH and their T forms) */
	CSDI_MEMF_EXCLUSIVE = 1u << 1,  /* LDREX* / STREX*: a store may fail (Store failed packet) */
	CSDI_MEMF_COPROC = 1u << 2,     /* LDC / STC: words, `count` at most (the coprocessor decides) */
};

struct csdi_mem {
	uint8_t dir;       /* enum csdi_mem_dir */
	uint8_t count;     /* transfers (0 with CSDI_MEM_NONE) */
	uint8_t size;      /* bytes per transfer: 1, 2, 4 or 8 (a VFP doubleword) */
	uint8_t flags;     /* CSDI_MEMF_* */
};

/*
 * The data transfers of a classified instruction (in->opcode, in->isa):
 * dir, count and size, the same for every transfer. Addresses: transfer 0
 * at the address the instruction computes (the lowest one, for load/store
 * multiple of any direction), transfer k + 1 at transfer k's + size, except
 * for CSDI_MEM_SWAP (both at one address). Advanced SIMD VLDn / VSTn: one
 * transfer per element (VLD1 / VST1 of whole registers: one doubleword per
 * register). LDC / STC (CSDI_MEMF_COPROC): up to `count` words, as many as
 * the coprocessor moves. A doubleword transfer (size 8)
 * is two 32-bit data packets, low word first. Encodings flagged UNDEFINED
 * give CSDI_MEM_NONE; the condition is not applied (in->cond). Returns
 * out->count.
 */
unsigned csdi_isa_mem(const struct csdi_insn *in, struct csdi_mem *out);

#endif
