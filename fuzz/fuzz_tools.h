/*
 * fuzz_tools.h - the tool's code the harnesses fuzz_symbols.c and
 * fuzz_accum.c test, compiled into them (once, also where
 * tests/test_fuzz_regress.c includes both): the ELF symbol reader and the
 * counting of coverage and profile.
 */
#ifndef CSD_FUZZ_TOOLS_H
#define CSD_FUZZ_TOOLS_H

#include "../tools/dynlib.c"
#include "../tools/slotmap.c"
#include "../tools/symbols.c"
#include "../tools/cov_accum.c"
#include "../tools/prof_accum.c"

#endif
