/*
 * fuzz_common.h - what the libFuzzer harnesses (fuzz/fuzz_*.c) share: the
 * layout of their inputs (also used by the seed generator), input-chosen
 * feed splitting, and the invariant checks that need no oracle.
 *
 * A harness aborts (FUZZ_CHECK) when an invariant fails, so libFuzzer keeps
 * the input as a crash; tests/test_fuzz_regress.c includes the harness
 * sources and replays fuzz/regress/ through the same entry points.
 */
#ifndef CSD_FUZZ_COMMON_H
#define CSD_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csdec_internal.h"

/* Called before a failed check aborts: harnesses that write temporary
 * files remove them here, so crashing inputs (and crash minimisation,
 * which runs hundreds) leave nothing behind. */
static void (*fuzz_on_failure)(void);

static inline void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
	if (fuzz_on_failure)
		fuzz_on_failure();
	abort();
}

#define FUZZ_CHECK(cond) do { if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond); } while (0)

/* Capture offset of input byte 0: not 0, so an offset that was never set
 * (0) cannot pass for the first byte. */
#define FUZZ_BASE UINT64_C(0x100000)

/* ------------------------------------------------------------------------
 * Input layout of the packet and flow harnesses:
 *   [0..3]   ETMCR   (little-endian)
 *   [4..7]   ETMCCER
 *   [8..11]  ETMIDR  (ETMv3 harnesses force bits 11:8 to 2, "ETMv3",
 *                     unless FUZZ_MISC_RAW_IDR is set)
 *   [12]     misc bits, FUZZ_MISC_*
 *   [13]     split mode  (see fuzz_split_init)
 *   [14]     split seed
 *   [15]     flow harnesses: words of extra code that follow (0..63, see
 *            fuzz_flow.h); packet harnesses: ignored
 *   then the trace bytes of one source.
 * ---------------------------------------------------------------------- */
#define FUZZ_HDR_SIZE 16

enum {
	FUZZ_MISC_PROFILE = 3u,         /* bits 1:0: core profile (3 = A) */
	FUZZ_MISC_SPREAD = 1u << 2,     /* byte i has capture offset BASE + 2i (offsets array) */
	FUZZ_MISC_SHORT_CFG = 1u << 3,  /* config struct as an older, shorter caller passes it */
	FUZZ_MISC_CODE_CALLBACK = 1u << 4, /* flow: extra code read through the image callback */
	FUZZ_MISC_SHORT_WALK = 1u << 5, /* PTM flow: walks give up after 5 blocks (csdi_ptm_flow_walk_limit) */
	FUZZ_MISC_RAW_IDR = 1u << 7,    /* ETMv3: ETMIDR exactly as given */
};

struct fuzz_hdr {
	uint32_t etmcr, etmccer, etmidr;
	uint8_t misc, split_mode, split_seed, code_words;
};

static inline uint32_t fuzz_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void fuzz_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Returns 0 if the input is too short for a header. */
static inline int fuzz_hdr_parse(const uint8_t *data, size_t size, struct fuzz_hdr *h)
{
	if (size < FUZZ_HDR_SIZE)
		return 0;
	h->etmcr = fuzz_le32(data);
	h->etmccer = fuzz_le32(data + 4);
	h->etmidr = fuzz_le32(data + 8);
	h->misc = data[12];
	h->split_mode = data[13];
	h->split_seed = data[14];
	h->code_words = data[15];
	return 1;
}

static inline void fuzz_hdr_write(uint8_t *out, const struct fuzz_hdr *h)
{
	fuzz_put_le32(out, h->etmcr);
	fuzz_put_le32(out + 4, h->etmccer);
	fuzz_put_le32(out + 8, h->etmidr);
	out[12] = h->misc;
	out[13] = h->split_mode;
	out[14] = h->split_seed;
	out[15] = h->code_words;
}

/* The trace configuration a header describes. */
static inline struct csd_trace_config fuzz_hdr_config(const struct fuzz_hdr *h, uint32_t protocol)
{
	struct csd_trace_config c;
	memset(&c, 0, sizeof(c));
	c.size = (h->misc & FUZZ_MISC_SHORT_CFG) ? offsetof(struct csd_trace_config, etmidr) : sizeof(c);
	c.protocol = protocol;
	c.etmcr = h->etmcr;
	c.etmccer = h->etmccer;
	c.etmidr = h->etmidr;
	if (protocol == CSD_PROTO_ETM3 && !(h->misc & FUZZ_MISC_RAW_IDR) && c.etmidr)
		c.etmidr = (c.etmidr & ~0xF00u) | 0x200u;
	c.trace_id = 0x10;
	c.core_profile = (uint8_t)((h->misc & FUZZ_MISC_PROFILE) == 3 ? CSD_CORE_A : (h->misc & FUZZ_MISC_PROFILE));
	return c;
}

/* ------------------------------------------------------------------------
 * Feed splitting. Mode 0: everything in one feed; 1: one byte per feed;
 * m >= 2: pieces of 1..2m bytes from a PRNG seeded by the input, with an
 * empty feed now and then (legal, and a corner of the input layer).
 * ---------------------------------------------------------------------- */
struct fuzz_split {
	uint32_t state;
	uint8_t mode;
};

static inline void fuzz_split_init(struct fuzz_split *s, uint8_t mode, uint32_t seed)
{
	s->mode = mode;
	s->state = seed * 2654435761u + 0x9E3779B9u;
	if (!s->state)
		s->state = 1;
}

static inline uint32_t fuzz_rand(uint32_t *state)
{
	uint32_t x = *state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* Length of the next piece (0 = an empty feed) of `left` bytes. */
static inline size_t fuzz_split_next(struct fuzz_split *s, size_t left)
{
	size_t n;
	if (s->mode == 0)
		return left;
	if (s->mode == 1)
		return left ? 1 : 0;
	uint32_t r = fuzz_rand(&s->state);
	if ((r & 31) == 0)
		return 0;
	n = 1 + (r >> 5) % (2u * s->mode);
	return n < left ? n : left;
}

/* ------------------------------------------------------------------------
 * Byte offsets: byte i of a trace stream is at FUZZ_BASE + i, or at
 * FUZZ_BASE + 2i when the stream is fed with an offsets array (spread).
 * ---------------------------------------------------------------------- */
struct fuzz_stream {
	const uint8_t *data;
	size_t size;
	int spread;
	uint64_t *offsets;      /* spread: offsets of all bytes */
};

static inline int fuzz_stream_init(struct fuzz_stream *st, const uint8_t *data, size_t size, int spread)
{
	st->data = data;
	st->size = size;
	st->spread = spread;
	st->offsets = NULL;
	if (spread) {
		st->offsets = malloc((size ? size : 1) * sizeof(uint64_t));
		if (!st->offsets)
			return 0;
		for (size_t i = 0; i < size; i++)
			st->offsets[i] = FUZZ_BASE + 2 * i;
	}
	return 1;
}

static inline void fuzz_stream_free(struct fuzz_stream *st)
{
	free(st->offsets);
	st->offsets = NULL;
}

/* The run of bytes [pos, pos+n) as a decoder input. */
static inline struct csd_bytes fuzz_stream_run(const struct fuzz_stream *st, size_t pos, size_t n)
{
	struct csd_bytes b;
	memset(&b, 0, sizeof(b));
	b.data = n ? st->data + pos : NULL;
	b.size = n;
	if (st->spread && n)
		b.offsets = st->offsets + pos;
	b.base = FUZZ_BASE + (st->spread ? 2 * pos : pos);
	b.id = 0x10;
	return b;
}

/* Index of the byte at capture offset `off`; -1 if no byte is there. */
static inline long fuzz_stream_index(const struct fuzz_stream *st, uint64_t off)
{
	if (off < FUZZ_BASE)
		return -1;
	uint64_t d = off - FUZZ_BASE;
	if (st->spread) {
		if (d & 1)
			return -1;
		d /= 2;
	}
	return d < st->size ? (long)d : -1;
}

/* ------------------------------------------------------------------------
 * Growable arrays of results, compared between two decodes of one input.
 * ---------------------------------------------------------------------- */
static inline void *fuzz_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(p, ncap * elem);
	FUZZ_CHECK(np != NULL);
	*cap = ncap;
	return np;
}

#endif
