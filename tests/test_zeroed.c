/*
 * Zeroed tables (zeroed.c): every table reads as zero when made, whether
 * its pages are fresh or were another table's; tables never overlap; and
 * this holds with tables made and given back on two threads at once, in
 * the shared chunks and beyond them (tables larger than a chunk's share).
 * Both through csdi_zeroed_new and through the pool's own calls (which
 * csdi_zeroed_new does not use under AddressSanitizer; there, a write
 * past a pool table must be stopped).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "zeroed.h"

#define SLOTS 48

struct table {
	unsigned char *p;
	size_t size;
	unsigned char fill;
};

static size_t nonzero_bytes(const unsigned char *p, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

static size_t wrong_bytes(const struct table *t)
{
	size_t bad = 0;
	for (size_t i = 0; i < t->size; i++)
		bad += t->p[i] != t->fill;
	return bad;
}

/* Sizes from a byte to past a quarter of a 2 MiB chunk, most of them small
 * and not a whole number of pages. */
static size_t size_of(uint32_t r)
{
	switch (r % 8) {
	case 0:
		return 1 + r % 64;
	case 1:
		return 4096;
	case 2:
		return 4096 + 1 + r % 4000;
	case 3:
		return 600 * 1024 + r % 4096; /* a mapping of its own */
	default:
		return 1 + r % (40 * 1024);
	}
}

static uint32_t next_rand(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

struct run {
	uint32_t seed;
	int rounds;
	int pool;       /* csdi_zeroed_pool_new rather than csdi_zeroed_new */
	size_t made, not_zero, overwritten, misaligned, failed;
};

static void give_back(struct run *r, const struct table *t)
{
	if (!r->pool)
		csdi_zeroed_free(t->p, t->size);
	else if (!csdi_zeroed_pool_free(t->p, t->size))
		r->failed++;
}

/* Tables made, filled with their own byte and checked, given back in a
 * random order, and made again in their place. */
static void *churn(void *arg)
{
	struct run *r = arg;
	struct table t[SLOTS];
	memset(t, 0, sizeof(t));
	for (int round = 0; round < r->rounds; round++) {
		const size_t k = next_rand(&r->seed) % SLOTS;
		if (t[k].p) {
			r->overwritten += wrong_bytes(&t[k]);
			give_back(r, &t[k]);
			t[k].p = NULL;
			continue;
		}
		t[k].size = size_of(next_rand(&r->seed));
		if (r->pool && t[k].size > CSDI_ZEROED_POOL_MAX)
			t[k].size = CSDI_ZEROED_POOL_MAX;
		t[k].p = r->pool ? csdi_zeroed_pool_new(t[k].size) : csdi_zeroed_new(t[k].size, 0);
		if (!t[k].p) {
			r->failed++;
			continue;
		}
		r->made++;
		r->misaligned += (uintptr_t)t[k].p % 64 != 0;
		r->not_zero += nonzero_bytes(t[k].p, t[k].size);
		t[k].fill = (unsigned char)(1 + next_rand(&r->seed) % 255);
		memset(t[k].p, t[k].fill, t[k].size);
	}
	for (size_t k = 0; k < SLOTS; k++) {
		if (!t[k].p)
			continue;
		r->overwritten += wrong_bytes(&t[k]);
		give_back(r, &t[k]);
	}
	return NULL;
}

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#ifdef TEST_ASAN
/* A write one byte past a table, in a child: AddressSanitizer must stop it
 * (the pool poisons what no table holds). 1 if the child was stopped. */
static int overrun_stopped(size_t size)
{
	unsigned char *p = csdi_zeroed_pool_new(size);
	if (!p)
		return 0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		volatile unsigned char *v = p;
		v[size] = 1;
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	csdi_zeroed_pool_free(p, size);
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
#endif

/* Pool tables made and given back until *stop. */
static void *pool_busy(void *arg)
{
	const atomic_int *stop = arg;
	while (!atomic_load(stop)) {
		void *p = csdi_zeroed_pool_new(256 * 1024);
		csdi_zeroed_pool_free(p, 256 * 1024);
	}
	return NULL;
}

/* Forks while another thread makes and frees pool tables: each child
 * makes a table, and must not find the pool's lock held for ever (an
 * alarm ends a child that waits). The number of children that failed. */
static int forks_while_busy(int forks)
{
	atomic_int stop = 0;
	pthread_t th;
	if (pthread_create(&th, NULL, pool_busy, &stop) != 0)
		return forks;
	int failed = 0;
	for (int i = 0; i < forks; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(2);
			void *p = csdi_zeroed_pool_new(4096);
			_exit(p ? 0 : 1);
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	return failed;
}

static void check_run(const struct run *r)
{
	CHECK(r->made > 100);
	CHECK_EQ(r->failed, 0);
	CHECK_EQ(r->misaligned, 0);
	CHECK_EQ(r->not_zero, 0);
	CHECK_EQ(r->overwritten, 0);
}

int main(void)
{
	/* Zero-sized: nothing to make. */
	CHECK(csdi_zeroed_new(0, 0) == NULL);
	csdi_zeroed_free(NULL, 0);

	/* A page written to the end, given back and made again as part of a
	 * larger table, in the same place or not: zero again throughout. */
	unsigned char *a = csdi_zeroed_new(4096, 0);
	CHECK(a != NULL);
	if (a) {
		memset(a, 0xA5, 4096);
		csdi_zeroed_free(a, 4096);
	}
	unsigned char *b = csdi_zeroed_new(3 * 4096 + 17, CSDI_ZEROED_POPULATE);
	CHECK(b != NULL);
	if (b) {
		CHECK_EQ(nonzero_bytes(b, 3 * 4096 + 17), 0);
		csdi_zeroed_free(b, 3 * 4096 + 17);
	}

	/* More than a chunk holds, at once: all zero, none overlapping; then
	 * all given back and made again. */
	for (int pass = 0; pass < 2; pass++) {
		enum { N = 12, SIZE = 300 * 1024 };
		struct table t[N];
		size_t not_zero = 0, overwritten = 0, made = 0;
		for (int i = 0; i < N; i++) {
			t[i].size = SIZE;
			t[i].fill = (unsigned char)(i + 1);
			t[i].p = csdi_zeroed_new(SIZE, 0);
			if (!t[i].p)
				continue;
			made++;
			not_zero += nonzero_bytes(t[i].p, SIZE);
			memset(t[i].p, t[i].fill, SIZE);
		}
		for (int i = 0; i < N; i++) {
			if (!t[i].p)
				continue;
			overwritten += wrong_bytes(&t[i]);
			csdi_zeroed_free(t[i].p, SIZE);
		}
		CHECK_EQ(made, N);
		CHECK_EQ(not_zero, 0);
		CHECK_EQ(overwritten, 0);
	}

#ifdef TEST_ASAN
	/* Past the end of a page's part, and past a whole page. */
	CHECK(overrun_stopped(100));
	CHECK(overrun_stopped(4096));
#endif

	CHECK_EQ(forks_while_busy(200), 0);

	/* Not a pool table: not taken. */
	int local;
	CHECK_EQ(csdi_zeroed_pool_free(&local, sizeof(local)), 0);
	CHECK(csdi_zeroed_pool_new(CSDI_ZEROED_POOL_MAX + 1) == NULL);

	/* One thread, then two at once; through csdi_zeroed_new, then
	 * through the pool's own calls. */
	for (int pool = 0; pool < 2; pool++) {
		struct run one = { .seed = 1, .rounds = 4000, .pool = pool };
		churn(&one);
		check_run(&one);
		struct run two[2] = { { .seed = 7, .rounds = 4000, .pool = pool },
				      { .seed = 99, .rounds = 4000, .pool = pool } };
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, churn, &two[0]), 0);
		churn(&two[1]);
		pthread_join(th, NULL);
		check_run(&two[0]);
		check_run(&two[1]);
	}
	return check_done("test_zeroed");
}
