/*
 * prof_accum.h - what `csdec profile` adds up and reports: instructions
 * and cycles per function, calls, the call graph with inclusive costs,
 * and per instruction address for the callgrind file. No printing to the
 * terminal and no exit here: errors come back as -1 with prof_error().
 */
#ifndef CSD_PROF_ACCUM_H
#define CSD_PROF_ACCUM_H

#include <stdint.h>
#include <stdio.h>

#include "csdec.h"

struct symtab;
struct prof;

/* Functions are st's symbols, or without any the call targets seen. With
 * per_address, the costs per instruction address are kept (callgrind).
 * Everything it keeps may use up to mem_limit bytes. */
struct prof *prof_new(const struct symtab *st, int per_address, size_t mem_limit);
void prof_free(struct prof *p);
/* Also keep the self costs per call stack (prof_write_folded); before the
 * first record. */
int prof_keep_stacks(struct prof *p);

/*
 * A source of this configuration must be decoded instruction by
 * instruction: in cycle-accurate ETMv3 every instruction of a range has
 * its own cycles, which a range gives only as a sum. (PTM charges a
 * range's cycles to its last instruction, its waypoint.)
 */
int prof_needs_insns(const struct csd_trace_config *cfg);

/* One record of source `src` (< 128). */
int prof_record(struct prof *p, unsigned src, const struct csd_record *r);
/* The source's records are all in; img is the image it was decoded with. */
int prof_source_end(struct prof *p, unsigned src, csd_image *img);
/* After the last source: calls still open end, totals per function. */
int prof_finish(struct prof *p);

int prof_print_top(const struct prof *p, FILE *out, unsigned long top, int by_cycles);
int prof_write_callgrind(struct prof *p, FILE *f, int argc, char **argv);
/* Folded stacks weighted by cycles or instructions (prof_keep_stacks). */
int prof_write_folded(const struct prof *p, FILE *f, int by_cycles);

const char *prof_error(const struct prof *p);
uint64_t prof_instructions(const struct prof *p);
uint64_t prof_cycles(const struct prof *p);    /* in instructions */
size_t prof_memory(const struct prof *p);

#endif
