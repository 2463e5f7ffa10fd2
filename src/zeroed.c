/* (_DEFAULT_SOURCE: MAP_ANONYMOUS and madvise's MADV_HUGEPAGE.) */
#define _DEFAULT_SOURCE
/*
 * zeroed.c - zeroed tables from fresh pages (zeroed.h).
 *
 * Tables up to CSDI_ZEROED_POOL_MAX share 2 MiB chunks, each one huge page
 * where the system gives them: all the tables of a decode then cost one
 * page fault. Where the first touch of a page is dear (a virtual machine
 * with shadow page tables takes an exit per 4 KiB page), a small capture
 * otherwise spends more on its tables' page faults than on decoding. A
 * chunk is handed out in 4 KiB pages; a page given back is zeroed when it
 * is next handed out. Larger tables are mappings of their own.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "zeroed.h"

#define HUGE_PAGE ((size_t)2 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
/* Under AddressSanitizer the tables come from malloc, so that
 * LeakSanitizer, which does not look into mappings, reports a table never
 * given back; the pool is checked on its own (csdi_zeroed_pool_new, by
 * tests/test_zeroed.c), its pages that no table holds and the tail of a
 * table's last page poisoned, so that an overrun is reported. */
#define TABLES_IN_POOL 0
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define TABLES_IN_POOL 1
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* size bytes from malloc, zeroed, aligned to 64; NULL if memory is short. */
static void *heap_new(size_t size)
{
	void *p = aligned_alloc(64, (size + 63) / 64 * 64);
	if (p)
		memset(p, 0, size);
	return p;
}

#ifdef MAP_ANONYMOUS

#define POOL_CHUNK HUGE_PAGE
#define POOL_PAGE ((size_t)4096)
#define POOL_PAGES (POOL_CHUNK / POOL_PAGE)
#define POOL_WORDS (POOL_PAGES / 64)
#define POOL_MAX CSDI_ZEROED_POOL_MAX

struct pool_chunk {
	unsigned char *base;
	uint64_t used[POOL_WORDS];   /* pages handed out */
	uint64_t dirty[POOL_WORDS];  /* pages handed out at some time (maybe written) */
	unsigned live;               /* tables in the chunk */
	struct pool_chunk *next;
};

/* Shared by the decoders of all threads; taken only to make or free a table. */
static struct pool_chunk *pool;
static atomic_flag pool_lock = ATOMIC_FLAG_INIT;

static void pool_enter(void)
{
	while (atomic_flag_test_and_set_explicit(&pool_lock, memory_order_acquire))
		sched_yield();
}

static void pool_leave(void)
{
	atomic_flag_clear_explicit(&pool_lock, memory_order_release);
}

/* A fork while another thread holds the lock would leave it held for
 * ever in the child: fork waits for it, as for malloc's. */
static pthread_once_t pool_fork_once = PTHREAD_ONCE_INIT;
static void pool_fork_handlers(void)
{
	pthread_atfork(pool_enter, pool_leave, pool_leave);
}

static int bit(const uint64_t *set, size_t i)
{
	return (int)((set[i / 64] >> (i % 64)) & 1);
}

static void set_bits(uint64_t *set, size_t from, size_t n, int on)
{
	for (size_t i = from; i < from + n; i++) {
		if (on)
			set[i / 64] |= (uint64_t)1 << (i % 64);
		else
			set[i / 64] &= ~((uint64_t)1 << (i % 64));
	}
}

/* The first run of n free pages of c, or POOL_PAGES. */
static size_t free_run(const struct pool_chunk *c, size_t n)
{
	size_t run = 0;
	for (size_t i = 0; i < POOL_PAGES; i++) {
		run = bit(c->used, i) ? 0 : run + 1;
		if (run == n)
			return i + 1 - n;
	}
	return POOL_PAGES;
}

/* A 2 MiB-aligned chunk (one huge page if the system gives it), all
 * poisoned; NULL if memory is short. */
static struct pool_chunk *chunk_new(void)
{
	struct pool_chunk *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	const size_t span = 2 * POOL_CHUNK;
	unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		free(c);
		return NULL;
	}
	const size_t head = (POOL_CHUNK - (uintptr_t)m % POOL_CHUNK) % POOL_CHUNK;
	if (head)
		munmap(m, head);
	munmap(m + head + POOL_CHUNK, span - head - POOL_CHUNK);
	c->base = m + head;
#ifdef MADV_HUGEPAGE
	madvise(c->base, POOL_CHUNK, MADV_HUGEPAGE);
#endif
	POISON(c->base, POOL_CHUNK);
	return c;
}

void *csdi_zeroed_pool_new(size_t size)
{
	if (size == 0 || size > POOL_MAX)
		return NULL;
	const size_t n = (size + POOL_PAGE - 1) / POOL_PAGE;
	pthread_once(&pool_fork_once, pool_fork_handlers);
	pool_enter();
	struct pool_chunk *c;
	size_t at = POOL_PAGES;
	for (c = pool; c; c = c->next)
		if ((at = free_run(c, n)) < POOL_PAGES)
			break;
	if (!c) {
		c = chunk_new();
		if (!c) {
			pool_leave();
			return NULL;
		}
		c->next = pool;
		pool = c;
		at = 0;
	}
	set_bits(c->used, at, n, 1);
	c->live++;
	unsigned char *p = c->base + at * POOL_PAGE;
	UNPOISON(p, size);
	/* Pages handed out before hold what their last table left. */
	for (size_t i = at; i < at + n; i++) {
		if (!bit(c->dirty, i))
			continue;
		size_t len = i + 1 < at + n ? POOL_PAGE : size - (i - at) * POOL_PAGE;
		memset(c->base + i * POOL_PAGE, 0, len);
	}
	set_bits(c->dirty, at, n, 1);
	pool_leave();
	return p;
}

int csdi_zeroed_pool_free(void *p, size_t size)
{
	unsigned char *const b = p;
	if (!p)
		return 0;
	pool_enter();
	struct pool_chunk **link = &pool, *c;
	for (; (c = *link); link = &c->next)
		if (b >= c->base && b < c->base + POOL_CHUNK)
			break;
	if (!c) {
		pool_leave();
		return 0;
	}
	const size_t n = (size + POOL_PAGE - 1) / POOL_PAGE;
	set_bits(c->used, (size_t)(b - c->base) / POOL_PAGE, n, 0);
	POISON(b, n * POOL_PAGE);
	/* One empty chunk is kept for the next decoder; the others go back. */
	if (--c->live == 0) {
		const struct pool_chunk *o = pool;
		while (o && (o == c || o->live))
			o = o->next;
		if (o) {
			*link = c->next;
			UNPOISON(c->base, POOL_CHUNK);
			munmap(c->base, POOL_CHUNK);
			free(c);
		}
	}
	pool_leave();
	return 1;
}

void *csdi_zeroed_new(size_t size, unsigned flags)
{
	if (size == 0)
		return NULL;
	if (size <= POOL_MAX) {
		if (TABLES_IN_POOL)
			return csdi_zeroed_pool_new(size);
		return heap_new(size);
	}
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
	if (!p)
		return;
	if (size > POOL_MAX)
		munmap(p, size);
	else if (!TABLES_IN_POOL)
		free(p);
	else
		csdi_zeroed_pool_free(p, size);
}
#else
void *csdi_zeroed_new(size_t size, unsigned flags)
{
	(void)flags;
	return size ? heap_new(size) : NULL;
}

void csdi_zeroed_free(void *p, size_t size)
{
	(void)size;
	free(p);
}

void *csdi_zeroed_pool_new(size_t size)
{
	return size && size <= CSDI_ZEROED_POOL_MAX ? heap_new(size) : NULL;
}

int csdi_zeroed_pool_free(void *p, size_t size)
{
	(void)size;
	free(p);
	return p != NULL;
}
#endif
