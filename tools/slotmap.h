/*
 * slotmap.h - counters and bits per 2-byte slot of the 32-bit address
 * space, for the commands that add up what the instructions did
 * (coverage, profile).
 *
 * Slots come in chunks of SLOT_CHUNK slots (512 bytes of address space),
 * made when something is first stored in them, so the memory follows the
 * code that ran, never the number of times it ran. A key names a chunk:
 * a 32-bit group (what is counted: an instruction set, a function) and the
 * chunk's index. A chunk of counters keeps its values 1 byte wide until
 * one no longer fits, then 2, 4 or 8 bytes (signed, wrapping at 64 bits).
 * Everything allocated is charged to a budget; an operation that would
 * pass its limit fails with SLOT_LIMIT and changes nothing.
 *
 * Ranges of instructions are recorded as two differences (+1 at the first
 * instruction, -1 after the last) per source and instruction set, and
 * folded into per-instruction counts once the source has ended
 * (slot_fold): O(1) per range however long, O(the code covered) once.
 */
#ifndef CSD_SLOTMAP_H
#define CSD_SLOTMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "csdec.h"

#define SLOT_CHUNK 256u          /* slots per chunk */
#define SLOT_CHUNK_SHIFT 9       /* address bits below a chunk's index */
#define SLOT_GROUP_MAX 0x0FFFFFFFu /* groups below this; bits 31:28 name an instruction set */

/* What the counting commands (coverage, profile) keep at most, in bytes:
 * a few bytes per instruction of 256 MiB of code executed. */
#define ACCUM_MEM_LIMIT ((size_t)1 << 30)

enum { SLOT_OK = 0, SLOT_LIMIT = -1, SLOT_NOMEM = -2 };

struct slot_budget {
	size_t used, limit;      /* bytes */
};

/* The instruction sets a fold tells apart (by how the next instruction is found). */
enum { SLOT_ISA_A32, SLOT_ISA_T32, SLOT_ISA_TEE, SLOT_NISA };
unsigned slot_isa_index(int isa);

static inline uint64_t slot_key(uint32_t group, uint64_t addr)
{
	return (uint64_t)group << 32 | (uint32_t)(addr >> SLOT_CHUNK_SHIFT);
}
static inline uint32_t slot_key_group(uint64_t key)
{
	return (uint32_t)(key >> 32);
}
static inline uint64_t slot_key_addr(uint64_t key)
{
	return (uint64_t)(uint32_t)key << SLOT_CHUNK_SHIFT;
}
static inline unsigned slot_index(uint64_t addr)
{
	return (unsigned)(addr >> 1) & (SLOT_CHUNK - 1);
}

/* ---- counters ---- */

struct count_chunk {
	uint8_t wlog;            /* values are 1 << wlog bytes */
	uint8_t pad[7];
	unsigned char v[];       /* SLOT_CHUNK << wlog bytes */
};

struct ctab_entry {
	uint64_t key;            /* UINT64_MAX: free */
	struct count_chunk *c;
};

struct ctab {
	struct ctab_entry *e;
	size_t cap, n;
	struct slot_budget *budget;
	size_t hit;              /* slot of the last chunk used (a guess, checked) */
};

void ctab_init(struct ctab *t, struct slot_budget *budget);
void ctab_free(struct ctab *t);
/* Add delta to the slot of addr in group. SLOT_OK, SLOT_LIMIT, SLOT_NOMEM. */
int ctab_add(struct ctab *t, uint32_t group, uint64_t addr, int64_t delta);
/* Add a whole chunk's values (SLOT_CHUNK of them). */
int ctab_add_chunk(struct ctab *t, uint64_t key, const int64_t *values);
int64_t ctab_get(const struct ctab *t, uint32_t group, uint64_t addr);
const struct count_chunk *ctab_find(const struct ctab *t, uint64_t key);
static inline int64_t count_chunk_get(const struct count_chunk *c, unsigned j)
{
	switch (c->wlog) {
	case 0:
		return (int8_t)c->v[j];
	case 1: {
		int16_t x;
		memcpy(&x, c->v + 2 * j, 2);
		return x;
	}
	case 2: {
		int32_t x;
		memcpy(&x, c->v + 4 * j, 4);
		return x;
	}
	default: {
		int64_t x;
		memcpy(&x, c->v + 8 * j, 8);
		return x;
	}
	}
}
/* The keys in use, sorted (malloc'ed, NULL when there are none or memory is short: *n = 0 then
 * and *failed set when it was memory). */
uint64_t *ctab_keys(const struct ctab *t, size_t *n, int *failed);

/* ---- bits ---- */

struct btab_entry {
	uint64_t key;            /* UINT64_MAX: free */
	uint64_t w[SLOT_CHUNK / 64];
};

struct btab {
	struct btab_entry *e;
	size_t cap, n;
	struct slot_budget *budget;
};

void btab_init(struct btab *t, struct slot_budget *budget);
void btab_free(struct btab *t);
int btab_set(struct btab *t, uint32_t group, uint64_t addr);
/* OR a chunk's bits (SLOT_CHUNK / 64 words) into key's. */
int btab_or(struct btab *t, uint64_t key, const uint64_t *w);
int btab_test(const struct btab *t, uint32_t group, uint64_t addr);
const uint64_t *btab_find(const struct btab *t, uint64_t key);
uint64_t *btab_keys(const struct btab *t, size_t *n, int *failed);

/* First index >= from in sorted keys[0..n) whose key is >= key. */
size_t slot_keys_lower(const uint64_t *keys, size_t n, uint64_t key);

/* ---- ranges ---- */

/*
 * Record instructions [addr, end) of instruction set isa executed once,
 * counted in group (< SLOT_GROUP_MAX), as differences in diff.
 */
int slot_range(struct ctab *diff, int isa, uint32_t group, uint64_t addr, uint64_t end);

/*
 * Turn the differences of diff (one source's, decoded with img) into
 * counts per instruction added to counts (same group), and mark in
 * isa_bits (group isa_index << 28 | group) where the instruction sets of
 * the mask `mark` (bit isa_index) ran. The instructions of a range are found again from
 * its first one as the decoder found them: A32 every 4 bytes, T32 2 or 4
 * bytes by the first halfword. A count never flows through memory the
 * image cannot read, so the work is bounded by the image. diff is emptied.
 */
int slot_fold(struct ctab *diff, csd_image *img, struct ctab *counts, struct btab *isa_bits, unsigned mark);

#endif
