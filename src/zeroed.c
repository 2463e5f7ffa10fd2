/* (_DEFAULT_SOURCE: MAP_ANONYMOUS and madvise's MADV_HUGEPAGE.) */
#define _DEFAULT_SOURCE
/* zeroed.c - large zeroed tables from fresh pages (zeroed.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "zeroed.h"

#define HUGE_PAGE ((size_t)2 << 20)

#ifdef MAP_ANONYMOUS
void *csdi_zeroed_new(size_t size, unsigned flags)
{
	if (size == 0)
		return NULL;
	int mflags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
	if (flags & CSDI_ZEROED_POPULATE)
		mflags |= MAP_POPULATE;
#endif
#ifdef MADV_HUGEPAGE
	if ((flags & CSDI_ZEROED_HUGE) && size % HUGE_PAGE == 0) {
		/* Map one huge page more and keep the aligned part. */
		if (size > SIZE_MAX - HUGE_PAGE)
			return NULL;
		const size_t span = size + HUGE_PAGE;
		unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		const size_t head = (HUGE_PAGE - (uintptr_t)m % HUGE_PAGE) % HUGE_PAGE;
		if (head)
			munmap(m, head);
		if (span - head > size)
			munmap(m + head + size, span - head - size);
		madvise(m + head, size, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
		if (flags & CSDI_ZEROED_POPULATE)
			madvise(m + head, size, MADV_POPULATE_WRITE);
#endif
		return m + head;
	}
#endif
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, mflags, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

void csdi_zeroed_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}
#else
void *csdi_zeroed_new(size_t size, unsigned flags)
{
	(void)flags;
	if (size == 0)
		return NULL;
	void *p = aligned_alloc(64, (size + 63) / 64 * 64);
	if (p)
		memset(p, 0, size);
	return p;
}

void csdi_zeroed_free(void *p, size_t size)
{
	(void)size;
	free(p);
}
#endif
