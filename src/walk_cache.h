/*
 * walk_cache.h - where a PTM walk through straight-line code ends, without
 * walking it (walk_cache.c; internal).
 *
 * A PTM atom or branch packet means "execution went on from here to the
 * next waypoint"; in code without waypoints (data taken for code, a zeroed
 * image) that walk covers up to CSDI_WALK_MAX_BLOCKS blocks of the block
 * cache. The image does not change, so where the walk from an address
 * ends is a function of the address; this cache answers it in time that
 * does not depend on the length of the walk, for walks from any address.
 *
 * An instruction is "plain" when it can be read and followed and is not a
 * waypoint: exactly the instructions that fill a CSDI_BLOCK_LIMIT block.
 * The caller gives the classifier (the flow decoder's own decode and image
 * access) and the flags that make a waypoint, so both see the same code.
 */
#ifndef CSD_WALK_CACHE_H
#define CSD_WALK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "arm_isa.h"

struct csdi_walk_cache;

/* The code the cache learns, as the flow decoder sees it. */
struct csdi_walk_code {
	/* Classify the instruction at addr: its size, or a negative
	 * csd_error (unreadable, unsupported instruction set). */
	int (*decode)(void *ctx, uint32_t addr, uint8_t isa, struct csdi_insn *insn);
	/* The image bytes from addr on: how many can be read contiguously
	 * (*p points at them), 0 if none. decode() of an address among them
	 * with at least 4 bytes left must be csdi_isa_decode() of those bytes. */
	size_t (*fetch)(void *ctx, uint32_t addr, const uint8_t **p);
	void *ctx;
	/* csdi_insn flags that make an instruction of class CSDI_INSN_NORMAL
	 * a waypoint (every other class is one). */
	uint32_t wp_flags;
};

enum csdi_walk_event {
	CSDI_WALK_NONE = 0, /* nothing known from here: walk block by block */
	CSDI_WALK_TERM,     /* `count` plain instructions, then one that is not plain at `end` */
	CSDI_WALK_STOP,     /* `count` plain instructions, then the plain one containing the
			       stop address at `end` (`size` bytes) */
	CSDI_WALK_CAP,      /* `max` plain instructions (`count`), the next one at `end` */
	CSDI_WALK_PART,     /* `count` plain instructions (a multiple of `unit`) up to `end`;
			       what follows is not known (the cache is full, or the top of
			       the address space) */
};

struct csdi_walk_span {
	int event;          /* enum csdi_walk_event */
	uint32_t count;     /* plain instructions from the start, before `end` */
	uint32_t end;       /* address of the instruction after them */
	uint32_t last;      /* address of the last of them (when count > 0) */
	uint8_t size;       /* CSDI_WALK_STOP: size of the instruction at `end` */
};

/* A cache of the code `code` describes (copied), using at most max_bytes
 * for what it learns; NULL when memory is short. */
struct csdi_walk_cache *csdi_walk_cache_new(const struct csdi_walk_code *code, size_t max_bytes);
void csdi_walk_cache_free(struct csdi_walk_cache *wc);

/*
 * The straight-line run from addr (the start of an instruction) in isa,
 * for image generation gen (another generation empties the cache first):
 * the first of the instruction that is not plain, the one containing
 * `stop` (when has_stop; only a stop address in the run counts), and
 * instruction number `max` (max >= 1). Learns the code it has to - with
 * known_only, nothing when the code at addr is not known yet.
 */
void csdi_walk_cache_span(struct csdi_walk_cache *wc, uint64_t gen, uint32_t addr, uint8_t isa, uint32_t max,
			  int has_stop, uint32_t stop, uint32_t unit, int known_only, struct csdi_walk_span *out);

/*
 * The next n instructions (n <= 64) from addr in isa, if the cache has
 * learnt them and all are plain: 1 with the address after them in *next
 * and bit i of *wide set when instruction i is 32-bit (as
 * csdi_flow_block_fill would find them), else 0. Learns nothing.
 */
int csdi_walk_cache_block(const struct csdi_walk_cache *wc, uint64_t gen, uint32_t addr, uint8_t isa, unsigned n,
			  uint32_t *next, uint64_t *wide);

#endif
