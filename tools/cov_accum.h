/*
 * cov_accum.h - what `csdec coverage` adds up and reports: executions per
 * instruction address (all sources together), taken branches, and the
 * program's code from its ELF files to compare with. No printing to the
 * terminal and no exit here: errors come back as -1 with cov_error().
 */
#ifndef CSD_COV_ACCUM_H
#define CSD_COV_ACCUM_H

#include <stdint.h>
#include <stdio.h>

#include "csdec.h"

#define ACCUM_SOURCES 128          /* trace IDs */

struct symtab;
struct cov;

/* Counters may use up to mem_limit bytes. NULL when memory is short. */
struct cov *cov_new(const struct symtab *st, size_t mem_limit);
void cov_free(struct cov *c);

/* One record of source `src` (< ACCUM_SOURCES): ranges or instructions. */
int cov_record(struct cov *c, unsigned src, const struct csd_record *r);
/* The source's records are all in; img is the image it was decoded with. */
int cov_source_end(struct cov *c, unsigned src, csd_image *img);
/* The program's instructions: each function symbol's range of img (the
 * ELF files' code) walked. After the last source. */
int cov_load_code(struct cov *c, csd_image *img);

int cov_print_summary(const struct cov *c, FILE *out);
/* Every instruction of the program, or without one every executed address. */
int cov_print_insns(const struct cov *c, FILE *out);
int cov_write_lcov(const struct cov *c, FILE *f);

const char *cov_error(const struct cov *c);
uint64_t cov_executions(const struct cov *c);
/* Bytes the counters use now. */
size_t cov_memory(const struct cov *c);

#endif
