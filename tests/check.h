/* check.h - minimal assertions for csdec unit tests. A failed CHECK prints
 * the location and expression and marks the test failed; check_done()
 * returns the exit status. */
#ifndef CSD_TEST_CHECK_H
#define CSD_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(expr) do { check_count++; if (!(expr)) { check_failures++; \
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr); } } while (0)

#define CHECK_EQ(a, b) do { long long check_a_ = (long long)(a), check_b_ = (long long)(b); \
	check_count++; if (check_a_ != check_b_) { check_failures++; \
	fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld != %lld, 0x%llx != 0x%llx)\n", \
		__FILE__, __LINE__, #a, #b, check_a_, check_b_, \
		(unsigned long long)check_a_, (unsigned long long)check_b_); } } while (0)

#define CHECK_STR(a, b) do { const char *check_a_ = (a), *check_b_ = (b); check_count++; \
	if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) { check_failures++; \
	fprintf(stderr, "%s:%d: CHECK_STR failed: %s == %s (\"%s\" != \"%s\")\n", __FILE__, __LINE__, \
		#a, #b, check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)"); } } while (0)

/* Directory of the shared reference material (../shared), from the
 * environment the Makefile sets. Tests that need it fail without it. */
static inline const char *check_shared_dir(void)
{
	const char *d = getenv("CSD_SHARED");
	if (!d || !*d) {
		fprintf(stderr, "CSD_SHARED is not set (run through make test)\n");
		exit(1);
	}
	return d;
}

/* The whole file at path (malloc'd, *len bytes; an empty file gives a
 * 1-byte buffer and *len 0), or NULL if it cannot be read. */
static inline unsigned char *check_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	long n = -1;
	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	unsigned char *b = NULL;
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc(n > 0 ? (size_t)n : 1);
		if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
			free(b);
			b = NULL;
		}
	}
	fclose(f);
	*len = n > 0 ? (size_t)n : 0;
	return b;
}

static inline int check_done(const char *name)
{
	if (check_count == 0) {
		fprintf(stderr, "%s: no checks ran\n", name);
		return 1;
	}
	if (check_failures) {
		fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
		return 1;
	}
	printf("%s: %d checks passed\n", name, check_count);
	return 0;
}

#endif
