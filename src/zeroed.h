/*
 * zeroed.h - large zeroed tables without writing the zeros: fresh
 * anonymous pages read as zero, so a table costs a page fault for each
 * page the decoding touches and nothing for the pages it never does
 * (a small capture touches a few of a table sized for big ones). Where
 * anonymous mappings are not available, an allocation and a memset.
 */
#ifndef CSDEC_ZEROED_H
#define CSDEC_ZEROED_H

#include <stddef.h>

/* size bytes, all zero, aligned to 64 (to 2 MiB, in huge pages where the
 * system has them, if huge is set and size is a multiple of 2 MiB); NULL
 * if memory is short. */
void *csdi_zeroed_new(size_t size, int huge);
/* Frees a table of csdi_zeroed_new (size as it was made; p may be NULL). */
void csdi_zeroed_free(void *p, size_t size);

#endif
