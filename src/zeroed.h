/*
 * zeroed.h - zeroed tables without writing the zeros where it can be
 * helped: fresh anonymous pages read as zero. Tables up to 512 KiB share
 * 2 MiB chunks (huge pages where the system gives them; zeroed.c), so
 * that the decoders' tables of a small capture cost one page fault, not
 * one per 4 KiB; larger ones are mappings of their own, of which a table
 * sized for big captures costs only the pages a small one touches.
 * Thread-safe. Where anonymous mappings are not available, and under
 * AddressSanitizer up to CSDI_ZEROED_POOL_MAX, an allocation and a memset.
 */
#ifndef CSDEC_ZEROED_H
#define CSDEC_ZEROED_H

#include <stddef.h>

enum {
	/* In 2 MiB pages where the system has them, aligned to 2 MiB (if
	 * size is a multiple of 2 MiB). */
	CSDI_ZEROED_HUGE = 1,
	/* Every page made now, in one call, where the system can: for a
	 * table that a long decode has shown it will fill (a page fault
	 * each in the decoding loop costs more). */
	CSDI_ZEROED_POPULATE = 2,
};
/* size bytes, all zero, aligned to 64 at least; flags CSDI_ZEROED_*;
 * NULL if memory is short. */
void *csdi_zeroed_new(size_t size, unsigned flags);
/* Frees a table of csdi_zeroed_new (size as it was made; p may be NULL). */
void csdi_zeroed_free(void *p, size_t size);

/* Tables up to this size share the pool's chunks. */
#define CSDI_ZEROED_POOL_MAX ((size_t)512 << 10)
/* A table of the pool itself (1 to CSDI_ZEROED_POOL_MAX bytes, zero,
 * aligned to 64 at least), whatever the build: csdi_zeroed_new takes its tables
 * from the heap under AddressSanitizer (for LeakSanitizer's sake), and
 * the pool's own test comes here. NULL if memory is short. */
void *csdi_zeroed_pool_new(size_t size);
/* Gives back a table of csdi_zeroed_pool_new: 1, or 0 if p is not one. */
int csdi_zeroed_pool_free(void *p, size_t size);

#endif
