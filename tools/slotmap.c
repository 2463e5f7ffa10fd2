/* slotmap.c - counters and bits per 2-byte slot (see slotmap.h). */
#include <stdlib.h>
#include <string.h>

#include "slotmap.h"

#define FREE_KEY UINT64_MAX

unsigned slot_isa_index(int isa)
{
	return isa == CSD_ISA_THUMB ? SLOT_ISA_T32 : isa == CSD_ISA_THUMBEE ? SLOT_ISA_TEE : SLOT_ISA_A32;
}

static size_t hash_key(uint64_t key, size_t cap)
{
	key ^= key >> 31;
	key *= UINT64_C(0xBF58476D1CE4E5B9);
	key ^= key >> 29;
	return (size_t)key & (cap - 1);
}

static int charge(struct slot_budget *b, size_t bytes)
{
	if (bytes > b->limit || b->used > b->limit - bytes)
		return SLOT_LIMIT;
	b->used += bytes;
	return SLOT_OK;
}

static void refund(struct slot_budget *b, size_t bytes)
{
	b->used -= bytes < b->used ? bytes : b->used;
}

size_t slot_keys_lower(const uint64_t *keys, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- open addressing ---- */

/* The counter and bit tables are arrays of `size`-byte entries, each
 * starting with its uint64_t key (FREE_KEY: a free entry), kept at most
 * half full; a key's entry is found by linear probing from its hash. */
static inline uint64_t entry_key(const void *e, size_t size, size_t k)
{
	uint64_t key;
	memcpy(&key, (const char *)e + k * size, sizeof(key));
	return key;
}

/* The entry of key, or the free entry where it would go. */
static inline size_t table_probe(const void *e, size_t cap, size_t size, uint64_t key)
{
	size_t k = hash_key(key, cap);
	for (uint64_t x; (x = entry_key(e, size, k)) != FREE_KEY && x != key;)
		k = (k + 1) & (cap - 1);
	return k;
}

/* The array *e of *cap entries doubled (64 at first) and its entries
 * placed again, the memory charged to budget: SLOT_OK, SLOT_LIMIT,
 * SLOT_NOMEM (then nothing has changed). */
static int table_grow(void **e, size_t *cap, size_t size, struct slot_budget *budget)
{
	const size_t ncap = *cap ? *cap * 2 : 64;
	if (charge(budget, ncap * size) != SLOT_OK)
		return SLOT_LIMIT;
	char *ne = malloc(ncap * size);
	if (!ne) {
		refund(budget, ncap * size);
		return SLOT_NOMEM;
	}
	const uint64_t free_key = FREE_KEY;
	for (size_t i = 0; i < ncap; i++)
		memcpy(ne + i * size, &free_key, sizeof(free_key));
	for (size_t i = 0; i < *cap; i++) {
		const uint64_t key = entry_key(*e, size, i);
		if (key != FREE_KEY)
			memcpy(ne + table_probe(ne, ncap, size, key) * size, (const char *)*e + i * size, size);
	}
	refund(budget, *cap * size);
	free(*e);
	*e = ne;
	*cap = ncap;
	return SLOT_OK;
}

/* ---- counters ---- */

static size_t chunk_bytes(unsigned wlog)
{
	return sizeof(struct count_chunk) + ((size_t)SLOT_CHUNK << wlog);
}

static unsigned width_for(int64_t v)
{
	if (v == (int8_t)v)
		return 0;
	if (v == (int16_t)v)
		return 1;
	if (v == (int32_t)v)
		return 2;
	return 3;
}

static void chunk_put(struct count_chunk *c, unsigned j, int64_t v)
{
	switch (c->wlog) {
	case 0:
		c->v[j] = (unsigned char)(int8_t)v;
		break;
	case 1: {
		int16_t x = (int16_t)v;
		memcpy(c->v + 2 * j, &x, 2);
		break;
	}
	case 2: {
		int32_t x = (int32_t)v;
		memcpy(c->v + 4 * j, &x, 4);
		break;
	}
	default:
		memcpy(c->v + 8 * j, &v, 8);
		break;
	}
}

void ctab_init(struct ctab *t, struct slot_budget *budget)
{
	memset(t, 0, sizeof(*t));
	t->budget = budget;
}

void ctab_free(struct ctab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].key != FREE_KEY) {
			refund(t->budget, chunk_bytes(t->e[i].c->wlog));
			free(t->e[i].c);
		}
	refund(t->budget, t->cap * sizeof(*t->e));
	free(t->e);
	ctab_init(t, t->budget);
}

static size_t ctab_probe(const struct ctab *t, uint64_t key)
{
	return table_probe(t->e, t->cap, sizeof(*t->e), key);
}

static int ctab_grow(struct ctab *t)
{
	void *e = t->e;
	const int rc = table_grow(&e, &t->cap, sizeof(*t->e), t->budget);
	t->e = e;
	if (rc == SLOT_OK)
		t->hit = 0;
	return rc;
}

/* The entry of key, made (all zero) if new; NULL with *rc on failure. */
static struct ctab_entry *ctab_entry(struct ctab *t, uint64_t key, int *rc)
{
	if (t->cap && t->e[t->hit].key == key)
		return &t->e[t->hit];
	if (t->cap) {
		size_t k = ctab_probe(t, key);
		if (t->e[k].key == key) {
			t->hit = k;
			return &t->e[k];
		}
	}
	if ((t->n + 1) * 2 > t->cap && (*rc = ctab_grow(t)) != SLOT_OK)
		return NULL;
	if ((*rc = charge(t->budget, chunk_bytes(0))) != SLOT_OK)
		return NULL;
	struct count_chunk *c = calloc(1, chunk_bytes(0));
	if (!c) {
		refund(t->budget, chunk_bytes(0));
		*rc = SLOT_NOMEM;
		return NULL;
	}
	size_t k = ctab_probe(t, key);
	t->e[k].key = key;
	t->e[k].c = c;
	t->n++;
	t->hit = k;
	return &t->e[k];
}

static int widen(struct ctab *t, struct ctab_entry *e, unsigned wlog)
{
	struct count_chunk *old = e->c;
	if (charge(t->budget, chunk_bytes(wlog)) != SLOT_OK)
		return SLOT_LIMIT;
	struct count_chunk *c = malloc(chunk_bytes(wlog));
	if (!c) {
		refund(t->budget, chunk_bytes(wlog));
		return SLOT_NOMEM;
	}
	memset(c, 0, sizeof(*c));
	c->wlog = (uint8_t)wlog;
	for (unsigned j = 0; j < SLOT_CHUNK; j++)
		chunk_put(c, j, count_chunk_get(old, j));
	refund(t->budget, chunk_bytes(old->wlog));
	free(old);
	e->c = c;
	return SLOT_OK;
}

int ctab_add(struct ctab *t, uint32_t group, uint64_t addr, int64_t delta)
{
	int rc = SLOT_OK;
	struct ctab_entry *e = ctab_entry(t, slot_key(group, addr), &rc);
	if (!e)
		return rc;
	unsigned j = slot_index(addr);
	int64_t v = (int64_t)((uint64_t)count_chunk_get(e->c, j) + (uint64_t)delta);
	unsigned w = width_for(v);
	if (w > e->c->wlog && (rc = widen(t, e, w)) != SLOT_OK)
		return rc;
	chunk_put(e->c, j, v);
	return SLOT_OK;
}

int ctab_add_chunk(struct ctab *t, uint64_t key, const int64_t *values)
{
	int rc = SLOT_OK;
	struct ctab_entry *e = ctab_entry(t, key, &rc);
	if (!e)
		return rc;
	unsigned w = e->c->wlog;
	for (unsigned j = 0; j < SLOT_CHUNK; j++) {
		unsigned need = width_for((int64_t)((uint64_t)count_chunk_get(e->c, j) + (uint64_t)values[j]));
		w = need > w ? need : w;
	}
	if (w > e->c->wlog && (rc = widen(t, e, w)) != SLOT_OK)
		return rc;
	for (unsigned j = 0; j < SLOT_CHUNK; j++)
		if (values[j])
			chunk_put(e->c, j, (int64_t)((uint64_t)count_chunk_get(e->c, j) + (uint64_t)values[j]));
	return SLOT_OK;
}

const struct count_chunk *ctab_find(const struct ctab *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	size_t k = ctab_probe(t, key);
	return t->e[k].key == key ? t->e[k].c : NULL;
}

int64_t ctab_get(const struct ctab *t, uint32_t group, uint64_t addr)
{
	const struct count_chunk *c = ctab_find(t, slot_key(group, addr));
	return c ? count_chunk_get(c, slot_index(addr)) : 0;
}

uint64_t *ctab_keys(const struct ctab *t, size_t *n, int *failed)
{
	*n = 0;
	if (!t->n)
		return NULL;
	uint64_t *keys = malloc(t->n * sizeof(*keys));
	if (!keys) {
		if (failed)
			*failed = 1;
		return NULL;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].key != FREE_KEY)
			keys[(*n)++] = t->e[i].key;
	qsort(keys, *n, sizeof(*keys), cmp_u64);
	return keys;
}

/* ---- bits ---- */

void btab_init(struct btab *t, struct slot_budget *budget)
{
	memset(t, 0, sizeof(*t));
	t->budget = budget;
}

void btab_free(struct btab *t)
{
	refund(t->budget, t->cap * sizeof(*t->e));
	free(t->e);
	btab_init(t, t->budget);
}

static size_t btab_probe(const struct btab *t, uint64_t key)
{
	return table_probe(t->e, t->cap, sizeof(*t->e), key);
}

static int btab_grow(struct btab *t)
{
	void *e = t->e;
	const int rc = table_grow(&e, &t->cap, sizeof(*t->e), t->budget);
	t->e = e;
	return rc;
}

int btab_or(struct btab *t, uint64_t key, const uint64_t *w)
{
	size_t k = 0;
	if (t->cap)
		k = btab_probe(t, key);
	if (!t->cap || t->e[k].key != key) {
		int rc;
		if ((t->n + 1) * 2 > t->cap && (rc = btab_grow(t)) != SLOT_OK)
			return rc;
		k = btab_probe(t, key);
		memset(&t->e[k], 0, sizeof(t->e[k]));
		t->e[k].key = key;
		t->n++;
	}
	for (unsigned i = 0; i < SLOT_CHUNK / 64; i++)
		t->e[k].w[i] |= w[i];
	return SLOT_OK;
}

int btab_set(struct btab *t, uint32_t group, uint64_t addr)
{
	uint64_t w[SLOT_CHUNK / 64] = { 0 };
	unsigned j = slot_index(addr);
	w[j / 64] = UINT64_C(1) << (j % 64);
	return btab_or(t, slot_key(group, addr), w);
}

const uint64_t *btab_find(const struct btab *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	size_t k = btab_probe(t, key);
	return t->e[k].key == key ? t->e[k].w : NULL;
}

int btab_test(const struct btab *t, uint32_t group, uint64_t addr)
{
	const uint64_t *w = btab_find(t, slot_key(group, addr));
	unsigned j = slot_index(addr);
	return w && (w[j / 64] >> (j % 64) & 1);
}

uint64_t *btab_keys(const struct btab *t, size_t *n, int *failed)
{
	*n = 0;
	if (!t->n)
		return NULL;
	uint64_t *keys = malloc(t->n * sizeof(*keys));
	if (!keys) {
		if (failed)
			*failed = 1;
		return NULL;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].key != FREE_KEY)
			keys[(*n)++] = t->e[i].key;
	qsort(keys, *n, sizeof(*keys), cmp_u64);
	return keys;
}

/* ---- ranges ---- */

int slot_range(struct ctab *diff, int isa, uint32_t group, uint64_t addr, uint64_t end)
{
	uint32_t g = (uint32_t)slot_isa_index(isa) << 28 | (group & SLOT_GROUP_MAX);
	if (addr == end)
		return SLOT_OK;
	int rc = ctab_add(diff, g, addr, 1);
	if (rc != SLOT_OK)
		return rc;
	rc = ctab_add(diff, g, end, -1);
	if (rc != SLOT_OK)
		ctab_add(diff, g, addr, -1); /* the chunk exists and narrows back: cannot fail */
	return rc;
}

/* The first halfword at base + 2j, from code[0..got) or the image. */
static int halfword_at(csd_image *img, uint64_t base, const uint8_t *code, int got, unsigned j, uint16_t *hw)
{
	uint8_t b[2];
	if ((int)(2 * j + 2) <= got) {
		*hw = (uint16_t)(code[2 * j] | code[2 * j + 1] << 8);
		return 1;
	}
	if (csd_image_read(img, base + 2 * j, b, 2) != 2)
		return 0;
	*hw = (uint16_t)(b[0] | b[1] << 8);
	return 1;
}

int slot_fold(struct ctab *diff, csd_image *img, struct ctab *counts, struct btab *isa_bits, unsigned mark)
{
	size_t n = 0;
	int failed = 0, rc = SLOT_OK;
	uint64_t *keys = ctab_keys(diff, &n, &failed);
	if (failed)
		return SLOT_NOMEM;
	int64_t acc[SLOT_CHUNK];
	uint8_t code[2 * SLOT_CHUNK];
	size_t i = 0;
	while (i < n && rc == SLOT_OK) {
		uint32_t g = slot_key_group(keys[i]);
		unsigned isa = g >> 28;
		uint32_t group = g & SLOT_GROUP_MAX;
		/* counts arriving at the next slot and the one after */
		uint64_t w0 = 0, w1 = 0;
		uint64_t chunk = (uint32_t)keys[i];
		for (;;) {
			const struct count_chunk *dc = NULL;
			if (i < n && keys[i] == ((uint64_t)g << 32 | chunk))
				dc = ctab_find(diff, keys[i++]);
			if (!dc && !w0 && !w1) {
				if (i < n && slot_key_group(keys[i]) == g) {
					chunk = (uint32_t)keys[i];
					continue;
				}
				break;
			}
			uint64_t base = chunk << SLOT_CHUNK_SHIFT;
			uint64_t bits[SLOT_CHUNK / 64] = { 0 };
			int got = -1, any = 0;
			memset(acc, 0, sizeof(acc));
			for (unsigned j = 0; j < SLOT_CHUNK; j++) {
				uint64_t v = w0 + (dc ? (uint64_t)count_chunk_get(dc, j) : 0);
				uint16_t hw;
				w0 = w1;
				w1 = 0;
				if (!v)
					continue;
				if (got < 0) {
					got = csd_image_read(img, base, code, sizeof(code));
					got = got < 0 ? 0 : got;
				}
				/* No instruction can be where the image has no code:
				 * the count stops there (only inconsistent records
				 * get here). */
				if (!halfword_at(img, base, code, got, j, &hw))
					continue;
				acc[j] = (int64_t)((uint64_t)acc[j] + v);
				bits[j / 64] |= UINT64_C(1) << (j % 64);
				any = 1;
				if (isa == SLOT_ISA_A32 || hw >= 0xE800u)
					w1 += v;
				else
					w0 += v;
			}
			if (any) {
				rc = ctab_add_chunk(counts, (uint64_t)group << 32 | chunk, acc);
				if (rc == SLOT_OK && isa_bits && (mark >> isa & 1))
					rc = btab_or(isa_bits, (uint64_t)g << 32 | chunk, bits);
				if (rc != SLOT_OK)
					break;
			}
			chunk++;
		}
	}
	free(keys);
	if (rc == SLOT_OK)
		ctab_free(diff);
	return rc;
}
