/* t16_text.h - the text capstone 4 gives a 16-bit T32 encoding (syntax
 * CS_OPT_SYNTAX_NOREGNAME), written without capstone: the listing's 16-bit
 * T32 instructions, and the texts of every 16-bit encoding, among which
 * the listing looks a 32-bit instruction's text up to decide where it is
 * written with ".w" (their hashes are a table made at build time,
 * tools/build/t16_narrow_gen.c). Capstone takes several times as long.
 * test_t16_text holds this to capstone's text for every encoding. */
#ifndef CSD_TOOLS_T16_TEXT_H
#define CSD_TOOLS_T16_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The capstone version whose texts these are (test_t16_text). */
#define T16_CAPSTONE_MAJOR 4
#define T16_CAPSTONE_MINOR 0

/* The mnemonic and operands of 16-bit encoding hw at address addr (branch
 * targets are absolute): 1, or 0 where capstone decodes nothing (then both
 * are empty). IT (0xBFxy, y != 0) is not written here: it is never a
 * ".w" question, and capstone would enter an IT block. */
int t16_text(uint16_t hw, uint32_t addr, char *mn, size_t mncap, char *ops, size_t opscap);

/* A hash of a text (mnemonic and operands), as the listing's table of
 * 16-bit texts (tools/build/t16_narrow_gen.c) keys them. */
uint32_t t16_text_hash(const char *mn, const char *ops);

/* Register r (0-15) as capstone names it in that syntax (r9-r12 as
 * r-numbers, as DS-5 writes them). */
const char *t16_reg_name(unsigned r);

#endif
