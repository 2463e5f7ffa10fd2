/*
 * walk_cache.c - where a PTM walk through straight-line code ends
 * (walk_cache.h), in time that does not depend on the walk's length.
 *
 * Lines. Code is learnt in aligned lines of 128 bytes, 64 halfword "slots",
 * once per key: A32 at addresses 0 mod 4, A32 at 2 mod 4, T32, ThumbEE.
 * A line keeps bitmaps over its slots: an instruction starting there is
 * not plain; (T32) the halfword there is a 16-bit instruction. The
 * instruction starts of a run entering the line at any slot follow from
 * them by bit operations, so a walk from a new address costs no decoding
 * once its line is known. Whether an instruction is plain does not depend
 * on its address, so a line of one halfword over and over (zeros) is
 * classified once, and repeated encodings come from a small memo.
 *
 * Chains. A run of plain instructions enters a line at slot 0 or 1 (a
 * 32-bit T32 instruction may straddle the boundary; A32 keeps its parity
 * of slots): two phases. (line, phase) is a node; its successor is where
 * the run enters the next line, with the instructions in between, unless
 * the run meets one that is not plain in the line (a terminal node).
 * These chains are canonical - walks from any address share them after
 * their first line - and union-find with path compression (each node keeps
 * a node further along its chain and the instructions to it) makes
 * following one to its end O(1) amortized. Nodes are computed, and lines
 * learnt, when a walk first needs them; a walk stops learning once it
 * knows `max` instructions.
 *
 * Positions inside a run (the instruction containing a stop address, the
 * max-th one) need the run's phase at a line, which T32 makes depend on
 * where the run came from - but not on much: a run passing a 16-bit
 * halfword at slot m (as an instruction, or as the second half of one)
 * starts an instruction at m + 1, since a 32-bit one at m - 1 ends there
 * too. Between the last 16-bit halfword m before a slot and the slot every
 * instruction is 32 bits, so the slot starts one exactly when it is an
 * even number of slots after m + 1 (after the walk's start if no 16-bit
 * halfword lies between). Each line keeps the last 16-bit halfword at or
 * before its end; instruction counts come from the union-find weights at
 * line boundaries (a search over lines finds the max-th one, interpolating:
 * a line holds 32 to 64 instructions).
 *
 * Memory: the lines and nodes of 64 KiB of code (a chunk) are allocated
 * together when a walk first reaches it, up to the cache's limit. A chain
 * that needs a chunk beyond the limit ends there, "open": a walk learns
 * how far it got (CSDI_WALK_PART) and goes on block by block. Another
 * image generation empties the cache.
 *
 * The learnt lines also fill the flow decoder's blocks of plain code
 * without decoding (csdi_walk_cache_block).
 */
#include <stdlib.h>
#include <string.h>

#include "walk_cache.h"

#define WC_SLOTS 64u
#define WC_LINE_SHIFT 7u
#define WC_CHUNK_SHIFT 16u
#define WC_CHUNK_LINES (1u << (WC_CHUNK_SHIFT - WC_LINE_SHIFT))
#define WC_NUM_LINES (1u << (32 - WC_LINE_SHIFT))
#define WC_REGIONS (1u << (32 - WC_CHUNK_SHIFT))

/* Node ids are (chunk index + 1) << 10 | line in chunk << 1 | phase;
 * these smaller values say a node has no parent. */
#define WC_UNSET 0u /* not computed yet */
#define WC_TERM 1u  /* the run meets an instruction that is not plain in this line */
#define WC_OPEN 2u  /* the next line cannot be had (cache full, end of the address space) */
#define WC_ID_SHIFT 10u
_Static_assert(WC_CHUNK_LINES * 2 == 1u << WC_ID_SHIFT, "node id layout");

#define WC_NONE UINT32_MAX

enum { KEY_A32_0, KEY_A32_2, KEY_T32, KEY_TEE, WC_KEYS };

/* A line of A32: its run keeps the parity of slots of its start, so one
 * node (the phase is the key's). */
struct wc_a32 {
	uint64_t stop;      /* bit s: an instruction starting at slot s is not plain */
	uint32_t up;        /* a node further along the chain, or WC_UNSET / TERM / OPEN */
	uint32_t w;         /* instructions from the node to up */
};

/* A line of T32 or ThumbEE. */
struct wc_t32 {
	uint64_t stop;      /* as for A32 */
	uint64_t narrow;    /* bit s: the halfword at slot s is a 16-bit instruction */
	uint32_t up[2];     /* per phase, as for A32 */
	uint32_t w[2];
	uint32_t last16;    /* absolute slot of the last 16-bit halfword at or before the end
			       of this line, in the known lines up to it (WC_NONE: none) */
};

/* The lines of 64 KiB of code of one key. */
struct wc_chunk {
	uint32_t first_line;    /* line number of the first */
	uint8_t key, isa;
	uint64_t known[WC_CHUNK_LINES / 64];  /* bit per line: learnt */
	struct wc_a32 *a;       /* A32 keys: the lines (after this header) */
	struct wc_t32 *t;       /* T32 keys */
};

/* A line's bitmaps (A32: no 16-bit halfwords). */
struct wc_view {
	uint64_t stop, narrow;
};

/* Whether an encoding is plain, by encoding: the classifier's class and
 * flags do not depend on the address (only a branch target does), and
 * code a walk crosses for long is often one word over and over. */
#define WC_MEMO 64u
struct wc_memo {
	uint32_t enc;
	uint8_t isa, size, plain, valid;
};

struct csdi_walk_cache {
	struct csdi_walk_code code;
	uint64_t gen;
	struct wc_memo memo[WC_MEMO];
	/* Per 64 KiB of addresses: chunk index + 1, 0 if none, in tables of
	 * 256 made as needed (a whole table was 256 KiB per key). */
	uint32_t *region[WC_KEYS][WC_REGIONS / 256];
	struct wc_chunk **chunk;
	uint32_t nchunks, max_chunks;
	size_t bytes, max_bytes;     /* in chunks */
};

static const uint8_t key_isa[WC_KEYS] = { CSD_ISA_ARM, CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_THUMBEE };

static size_t chunk_size(unsigned key)
{
	return sizeof(struct wc_chunk) +
	       WC_CHUNK_LINES * (key <= KEY_A32_2 ? sizeof(struct wc_a32) : sizeof(struct wc_t32));
}

struct csdi_walk_cache *csdi_walk_cache_new(const struct csdi_walk_code *code, size_t max_bytes)
{
	struct csdi_walk_cache *wc = calloc(1, sizeof(*wc));
	if (!wc)
		return NULL;
	wc->code = *code;
	wc->max_bytes = max_bytes;
	size_t n = max_bytes / chunk_size(KEY_A32_0);
	wc->max_chunks = n > (1u << 20) ? 1u << 20 : (uint32_t)n;
	wc->chunk = calloc(wc->max_chunks ? wc->max_chunks : 1, sizeof(*wc->chunk));
	if (!wc->chunk) {
		free(wc);
		return NULL;
	}
	return wc;
}

static void wc_empty(struct csdi_walk_cache *wc)
{
	for (uint32_t i = 0; i < wc->nchunks; i++) {
		struct wc_chunk *c = wc->chunk[i];
		const uint32_t r = c->first_line >> (WC_CHUNK_SHIFT - WC_LINE_SHIFT);
		wc->region[c->key][r / 256][r % 256] = 0;
		free(c);
		wc->chunk[i] = NULL;
	}
	wc->nchunks = 0;
	wc->bytes = 0;
}

void csdi_walk_cache_free(struct csdi_walk_cache *wc)
{
	if (!wc)
		return;
	wc_empty(wc);
	for (unsigned k = 0; k < WC_KEYS; k++)
		for (unsigned t = 0; t < WC_REGIONS / 256; t++)
			free(wc->region[k][t]);
	free(wc->chunk);
	free(wc);
}

static int key_of(uint8_t isa, uint32_t addr)
{
	if (addr & 1)
		return -1;
	switch (isa) {
	case CSD_ISA_ARM:
		return (addr & 2) ? KEY_A32_2 : KEY_A32_0;
	case CSD_ISA_THUMB:
		return KEY_T32;
	case CSD_ISA_THUMBEE:
		return KEY_TEE;
	}
	return -1;
}

/* The chunk holding line number `line` of `key` (made if `make`), its
 * index + 1 in *ci; NULL if there is none. */
static struct wc_chunk *chunk_of(struct csdi_walk_cache *wc, unsigned key, uint32_t line, int make, uint32_t *ci)
{
	const uint32_t r = line >> (WC_CHUNK_SHIFT - WC_LINE_SHIFT);
	uint32_t **tab = &wc->region[key][r / 256];
	if (!*tab) {
		if (!make || !(*tab = calloc(256, sizeof(uint32_t))))
			return NULL;
	}
	uint32_t i = (*tab)[r % 256];
	if (!i) {
		const size_t size = chunk_size(key);
		if (!make || wc->nchunks == wc->max_chunks || size > wc->max_bytes - wc->bytes)
			return NULL;
		struct wc_chunk *c = calloc(1, size);
		if (!c)
			return NULL;
		c->first_line = r << (WC_CHUNK_SHIFT - WC_LINE_SHIFT);
		c->key = (uint8_t)key;
		c->isa = key_isa[key];
		if (key <= KEY_A32_2)
			c->a = (struct wc_a32 *)(c + 1);
		else
			c->t = (struct wc_t32 *)(c + 1);
		wc->chunk[wc->nchunks++] = c;
		wc->bytes += size;
		i = wc->nchunks;
		(*tab)[r % 256] = i;
	}
	*ci = i;
	return wc->chunk[i - 1];
}

/* The chunk holding line number `line` of `key`, if there is one. */
static struct wc_chunk *chunk_peek(const struct csdi_walk_cache *wc, unsigned key, uint32_t line)
{
	const uint32_t r = line >> (WC_CHUNK_SHIFT - WC_LINE_SHIFT);
	const uint32_t *tab = wc->region[key][r / 256];
	const uint32_t i = tab ? tab[r % 256] : 0;
	return i ? wc->chunk[i - 1] : NULL;
}

static inline int line_known(const struct wc_chunk *c, unsigned k)
{
	return (c->known[k / 64] >> (k % 64)) & 1;
}

static inline struct wc_view line_view(const struct wc_chunk *c, unsigned k)
{
	struct wc_view v;
	if (c->t) {
		v.stop = c->t[k].stop;
		v.narrow = c->t[k].narrow;
	} else {
		v.stop = c->a[k].stop;
		v.narrow = 0;
	}
	return v;
}

static uint32_t node_id(struct csdi_walk_cache *wc, unsigned key, uint32_t line, unsigned phase, int make)
{
	uint32_t ci;
	if (!chunk_of(wc, key, line, make, &ci))
		return 0;
	return ci << WC_ID_SHIFT | (line & (WC_CHUNK_LINES - 1)) << 1 | phase;
}

static inline struct wc_chunk *node_chunk(const struct csdi_walk_cache *wc, uint32_t id)
{
	return wc->chunk[(id >> WC_ID_SHIFT) - 1];
}

static inline unsigned node_k(uint32_t id)
{
	return (id >> 1) & (WC_CHUNK_LINES - 1);
}

/* The parent field of node id; *w the weight beside it. */
static inline uint32_t *node_up(const struct csdi_walk_cache *wc, uint32_t id, uint32_t **w)
{
	struct wc_chunk *c = node_chunk(wc, id);
	const unsigned k = node_k(id);
	if (c->t) {
		*w = &c->t[k].w[id & 1];
		return &c->t[k].up[id & 1];
	}
	*w = &c->a[k].w;
	return &c->a[k].up;
}

/* (No popcnt instruction in the baseline x86-64 the library is built
 * for; __builtin_popcountll became a call.) */
static inline uint64_t popcount64(uint64_t v)
{
	v = v - ((v >> 1) & UINT64_C(0x5555555555555555));
	v = (v & UINT64_C(0x3333333333333333)) + ((v >> 2) & UINT64_C(0x3333333333333333));
	v = (v + (v >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
	return (v * UINT64_C(0x0101010101010101)) >> 56;
}

static inline uint64_t below(unsigned bit)
{
	return (UINT64_C(1) << bit) - 1;   /* bit < 64 */
}

#define WC_ODD UINT64_C(0xAAAAAAAAAAAAAAAA)

/* The 2 * WC_SLOTS + 4 bytes at p are one halfword repeated. */
static int uniform(const uint8_t *p)
{
	uint64_t w0, w;
	memcpy(&w0, p, 8);
	if ((uint16_t)w0 != (uint16_t)(w0 >> 16) || (uint32_t)w0 != (uint32_t)(w0 >> 32))
		return 0;
	for (unsigned i = 8; i < 2 * WC_SLOTS; i += 8) {
		memcpy(&w, p + i, 8);
		if (w != w0)
			return 0;
	}
	uint32_t t;
	memcpy(&t, p + 2 * WC_SLOTS, 4);
	return t == (uint32_t)w0;
}

/* Decode every slot of line k of chunk c (A32: the slots of its parity). */
static void learn(struct csdi_walk_cache *wc, struct wc_chunk *c, unsigned k)
{
	const uint32_t line = c->first_line + k;
	const uint32_t base = line << WC_LINE_SHIFT;
	const int a32 = c->a != NULL;
	uint64_t stop = 0, narrow = 0;
	/* The line's bytes at once where they are contiguous (as decode()
	 * would fetch them one instruction at a time). */
	const uint8_t *bytes = NULL;
	const size_t avail = wc->code.fetch(wc->code.ctx, base, &bytes);
	unsigned first = c->key == KEY_A32_2, step = a32 ? 2 : 1;
	if (avail >= 2 * WC_SLOTS + 4 && uniform(bytes)) {
		/* One halfword over and over: every slot is the same
		 * instruction, 16- or 32-bit. */
		step = WC_SLOTS;
	}
	for (unsigned s = first; s < WC_SLOTS; s += step) {
		struct csdi_insn insn;
		const size_t off = 2 * s;
		int rc, plain;
		if (off + 4 <= avail) {
			const uint8_t *b = bytes + off;
			const uint32_t hw1 = (uint32_t)b[0] | (uint32_t)b[1] << 8;
			const uint32_t word = hw1 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
			const uint8_t size = a32 || hw1 >= 0xE800u ? 4 : 2;
			const uint32_t enc = size == 2 ? hw1 : word;
			struct wc_memo *m = &wc->memo[(enc * UINT32_C(0x9E3779B1)) >> 26];
			if (m->valid && m->enc == enc && m->isa == c->isa && m->size == size) {
				rc = size;
				plain = m->plain;
			} else {
				rc = csdi_isa_decode(base + (uint32_t)off, b, avail - off, c->isa, &insn);
				plain = rc > 0 && insn.cls == CSDI_INSN_NORMAL && !(insn.flags & wc->code.wp_flags);
				if (rc == size) {
					m->enc = enc;
					m->isa = c->isa;
					m->size = size;
					m->plain = (uint8_t)plain;
					m->valid = 1;
				}
			}
		} else {
			rc = wc->code.decode(wc->code.ctx, base + (uint32_t)off, c->isa, &insn);
			plain = rc > 0 && insn.cls == CSDI_INSN_NORMAL && !(insn.flags & wc->code.wp_flags);
		}
		const uint64_t at = step == WC_SLOTS ? (a32 ? (first ? WC_ODD : ~WC_ODD) : ~UINT64_C(0))
						     : UINT64_C(1) << s;
		if (rc == 2)
			narrow |= at;
		if (!plain)
			stop |= at;
	}
	c->known[k / 64] |= UINT64_C(1) << (k % 64);
	if (a32) {
		c->a[k].stop = stop;
		return;
	}
	struct wc_t32 *l = &c->t[k];
	l->stop = stop;
	l->narrow = narrow;
	l->last16 = WC_NONE;
	if (narrow) {
		l->last16 = (line << 6) + 63 - (uint32_t)__builtin_clzll(narrow);
	} else if (line) {
		const struct wc_chunk *pc = chunk_peek(wc, c->key, line - 1);
		const unsigned pk = (line - 1) & (WC_CHUNK_LINES - 1);
		if (pc && line_known(pc, pk))
			l->last16 = pc->t[pk].last16;
	}
	/* Known lines after this one without a 16-bit halfword had none
	 * before them so far. */
	if (l->last16 == WC_NONE)
		return;
	for (uint32_t next = line + 1; next < WC_NUM_LINES; next++) {
		struct wc_chunk *nc = chunk_peek(wc, c->key, next);
		const unsigned nk = next & (WC_CHUNK_LINES - 1);
		if (!nc || !line_known(nc, nk) || nc->t[nk].narrow || nc->t[nk].last16 != WC_NONE)
			break;
		nc->t[nk].last16 = l->last16;
	}
}

/* The instruction starts in line v of a run entering at slot e. */
static inline uint64_t run_starts(const struct wc_view *v, unsigned e)
{
	const uint64_t from = ~UINT64_C(0) << e;
	const uint64_t alt = ((e & 1) ? WC_ODD : ~WC_ODD) & from;
	const uint64_t n16 = v->narrow & from;
	if (!n16)
		return alt;
	/* 32-bit instructions up to the first 16-bit halfword m. After it, a
	 * slot starts one when the last 16-bit halfword below it is of the
	 * other parity (one slot after it, or an even number more). odd: bit s
	 * set when the nearest 16-bit halfword at or below s is at an odd
	 * slot (spread up through the 32-bit ones in six doubling steps). */
	const unsigned m = (unsigned)__builtin_ctzll(n16);
	const uint64_t upto = m == 63 ? ~UINT64_C(0) : (UINT64_C(2) << m) - 1;
	uint64_t odd = v->narrow & WC_ODD, pass = ~v->narrow;
	for (unsigned i = 1; i < 64; i <<= 1) {
		odd |= (odd << i) & pass;
		pass &= pass << i;
	}
	return (alt & upto) | ((WC_ODD ^ (odd << 1)) & ~upto);
}

/* The slot (0 or 1) where a run with starts st enters the next line. */
static inline unsigned run_exit(const struct wc_view *v, uint64_t st)
{
	const unsigned last = 63 - (unsigned)__builtin_clzll(st);
	return last + (((v->narrow >> last) & 1) ? 1 : 2) - WC_SLOTS;
}

static void node_compute(struct csdi_walk_cache *wc, uint32_t id)
{
	struct wc_chunk *c = node_chunk(wc, id);
	const unsigned k = node_k(id);
	if (!line_known(c, k))
		learn(wc, c, k);
	const struct wc_view v = line_view(c, k);
	const uint64_t st = run_starts(&v, id & 1);
	uint32_t *w, *up = node_up(wc, id, &w);
	if (st & v.stop) {
		*up = WC_TERM;
		return;
	}
	const uint32_t next = c->first_line + k + 1;
	const uint32_t nid = next < WC_NUM_LINES ? node_id(wc, c->key, next, run_exit(&v, st), 1) : 0;
	*up = nid ? nid : WC_OPEN;
	*w = (uint32_t)popcount64(st);
}

/*
 * The end of node x's chain as far as known: a terminal or open node, or
 * the first node not computed once `limit` instructions from x are known
 * (computing nodes up to there). *sum: the instructions from x to it.
 * Every node passed then points at it.
 */
static uint32_t wc_find(struct csdi_walk_cache *wc, uint32_t x, uint64_t limit, uint64_t *sum)
{
	uint32_t *wx, *ux = node_up(wc, x, &wx);
	/* Mostly x points at its end already. */
	if (*ux >= (1u << WC_ID_SHIFT)) {
		uint32_t *wu, *uu = node_up(wc, *ux, &wu);
		if (*uu == WC_TERM || *uu == WC_OPEN) {
			*sum = *wx;
			return *ux;
		}
	}
	uint64_t s = 0;
	uint32_t v = x;
	for (;;) {
		uint32_t *w, *up = node_up(wc, v, &w);
		if (*up == WC_UNSET) {
			if (s >= limit)
				break;
			node_compute(wc, v);
			continue;
		}
		if (*up < (1u << WC_ID_SHIFT))
			break;
		s += *w;
		v = *up;
	}
	uint64_t acc = 0;
	for (uint32_t u = x; u != v;) {
		uint32_t *w, *up = node_up(wc, u, &w);
		const uint32_t next = *up, wu = *w;
		*up = v;
		*w = (uint32_t)(s - acc);
		acc += wu;
		u = next;
	}
	*sum = s;
	return v;
}

/* One span's run: from absolute slot a (line line0, starts0 its
 * instruction starts there, count0 of them), entering the next line at
 * node x, x's chain ending at root, wx instructions from x to root. */
struct wc_run {
	struct csdi_walk_cache *wc;
	unsigned key;
	int a32;
	uint32_t a, line0;
	uint64_t starts0;
	uint32_t count0;
	uint32_t x, root, root_line;
	uint64_t wx;
};

/* Line ln of the run's T32 key (its chunk exists). */
static inline const struct wc_t32 *run_t32(const struct wc_run *q, uint32_t ln)
{
	return &chunk_peek(q->wc, q->key, ln)->t[ln & (WC_CHUNK_LINES - 1)];
}

static inline struct wc_view run_view(const struct wc_run *q, uint32_t ln)
{
	return line_view(chunk_peek(q->wc, q->key, ln), ln & (WC_CHUNK_LINES - 1));
}

/* Slot s (after the start, all plain between) starts an instruction of the run. */
static int on_run(const struct wc_run *q, uint32_t s)
{
	if (q->a32)
		return ((s - q->a) & 1) == 0;
	const uint32_t ln = s >> 6;
	uint64_t n16 = run_t32(q, ln)->narrow & below(s & 63);
	if (ln == q->line0)
		n16 &= ~below(q->a & 63);
	uint32_t m = WC_NONE;
	if (n16) {
		m = (ln << 6) + 63 - (uint32_t)__builtin_clzll(n16);
	} else if (ln > q->line0) {
		const uint32_t prev = run_t32(q, ln - 1)->last16;
		if (prev != WC_NONE && prev >= q->a)
			m = prev;
	}
	return m == WC_NONE ? ((s - q->a) & 1) == 0 : ((s - m - 1) & 1) == 0;
}

/* The run's entry slot (0 or 1) into line ln (line0 < ln <= root_line). */
static unsigned run_phase(const struct wc_run *q, uint32_t ln)
{
	return on_run(q, ln << 6) ? 0 : 1;
}

/* Instructions of the T32 run before line ln (line0 < ln <= root_line),
 * which it enters at `phase` (A32 runs are counted by their callers). */
static uint64_t count_before_line(const struct wc_run *q, uint32_t ln, unsigned phase)
{
	uint64_t wy;
	wc_find(q->wc, node_id(q->wc, q->key, ln, phase, 0), 0, &wy);
	return q->count0 + q->wx - wy;
}

/* Instructions of the run before slot s, which starts one. */
static uint64_t count_before(const struct wc_run *q, uint32_t s)
{
	const uint32_t ln = s >> 6;
	if (ln == q->line0)
		return popcount64(q->starts0 & below(s & 63));
	if (q->a32)
		return (s - q->a) / 2;
	const unsigned p = run_phase(q, ln);
	const struct wc_view v = run_view(q, ln);
	return count_before_line(q, ln, p) + popcount64(run_starts(&v, p) & below(s & 63));
}

/* Slot of the k-th bit set in v (there is one). */
static unsigned nth_bit(uint64_t v, uint64_t k)
{
	while (k--)
		v &= v - 1;
	return (unsigned)__builtin_ctzll(v);
}

/* Slot of instruction k of the run (k no more than the instructions known
 * up to root_line's boundary, or before a terminator in it). */
static uint32_t run_select(const struct wc_run *q, uint64_t k)
{
	if (k < q->count0)
		return (q->line0 << 6) + nth_bit(q->starts0, k);
	if (q->a32)
		return q->a + 2 * (uint32_t)k;
	/* The last line boundary with no more than k instructions before it.
	 * A line holds 32 to 64 instructions, so a guess from the counts at
	 * the bounds is close (and exact in uniform code); binary steps in
	 * between keep the search logarithmic. */
	uint32_t lo = q->line0 + 1, hi = q->root_line;
	uint64_t clo = q->count0, chi = q->count0 + q->wx;
	if (chi <= k) {
		lo = hi;
		clo = chi;
	}
	for (unsigned step = 0; lo < hi && hi - lo > 1; step++) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (!(step & 1)) {
			mid = lo + (uint32_t)((k - clo) * (hi - lo) / (chi - clo));
			mid = mid <= lo ? lo + 1 : mid >= hi ? hi - 1 : mid;
		}
		const unsigned p = run_phase(q, mid);
		const uint64_t cm = count_before_line(q, mid, p);
		if (cm > k) {
			hi = mid;
			chi = cm;
			continue;
		}
		lo = mid;
		clo = cm;
		const struct wc_view v = run_view(q, mid);
		if (k < cm + popcount64(run_starts(&v, p)))
			break;
	}
	const unsigned p = run_phase(q, lo);
	if (k == clo)
		return (lo << 6) + p;
	const struct wc_view v = run_view(q, lo);
	return (lo << 6) + nth_bit(run_starts(&v, p), k - clo);
}

/* Address of the instruction before the one at slot s (s after the start). */
static inline uint32_t run_prev(const struct wc_run *q, uint32_t s)
{
	if (!q->a32 && on_run(q, s - 1))
		return (s - 1) * 2;
	return (s - 2) * 2;
}

void csdi_walk_cache_span(struct csdi_walk_cache *wc, uint64_t gen, uint32_t addr, uint8_t isa, uint32_t max,
			  int has_stop, uint32_t stop, uint32_t unit, int known_only, struct csdi_walk_span *out)
{
	out->event = CSDI_WALK_NONE;
	if (wc->gen != gen) {
		wc_empty(wc);
		wc->gen = gen;
	}
	const int key = key_of(isa, addr);
	if (key < 0 || max == 0 || unit == 0)
		return;
	struct wc_run q;
	q.wc = wc;
	q.key = (unsigned)key;
	q.a32 = key == KEY_A32_0 || key == KEY_A32_2;
	q.a = addr >> 1;
	q.line0 = addr >> WC_LINE_SHIFT;
	q.x = q.root = q.root_line = 0;
	q.wx = 0;
	uint32_t ci;
	struct wc_chunk *c;
	const uint32_t r0 = q.line0 >> (WC_CHUNK_SHIFT - WC_LINE_SHIFT);
	const uint32_t *tab = wc->region[key][r0 / 256];
	if (tab && (ci = tab[r0 % 256]) != 0)
		c = wc->chunk[ci - 1];
	else if (known_only || !(c = chunk_of(wc, q.key, q.line0, 1, &ci)))
		return;
	const unsigned k0 = q.line0 & (WC_CHUNK_LINES - 1);
	if (!line_known(c, k0)) {
		if (known_only)
			return;
		learn(wc, c, k0);
	}
	const struct wc_view v0 = line_view(c, k0);
	q.starts0 = run_starts(&v0, q.a & 63);
	/* (A32: every other slot, counted without popcount.) */
	q.count0 = q.a32 ? (WC_SLOTS + 1 - (q.a & 63)) / 2 : (uint32_t)popcount64(q.starts0);

	/* The first instruction that is not plain (t_slot), or how many are
	 * known to be plain (known, up to slot f_slot). */
	uint32_t t_slot = WC_NONE, f_slot = 0;
	uint64_t t_rel = 0, known = 0;
	const uint64_t t0 = q.starts0 & v0.stop;
	if (t0) {
		const unsigned t = (unsigned)__builtin_ctzll(t0);
		t_slot = (q.line0 << 6) + t;
		t_rel = q.a32 ? (t + 1 - (q.a & 63)) / 2 : popcount64(q.starts0 & below(t));
	} else {
		if (q.line0 + 1 >= WC_NUM_LINES)
			return;
		const unsigned exit = run_exit(&v0, q.starts0);
		q.x = (q.line0 + 1) & (WC_CHUNK_LINES - 1)
			      ? ci << WC_ID_SHIFT | ((q.line0 + 1) & (WC_CHUNK_LINES - 1)) << 1 | exit
			      : node_id(wc, q.key, q.line0 + 1, exit, 1);
		if (!q.x)
			return;
		q.root = wc_find(wc, q.x, max > q.count0 ? max - q.count0 : 0, &q.wx);
		const struct wc_chunk *rc = node_chunk(wc, q.root);
		const unsigned rk = node_k(q.root), rp = q.root & 1;
		q.root_line = rc->first_line + rk;
		if ((rc->t ? rc->t[rk].up[rp] : rc->a[rk].up) == WC_TERM) {
			const struct wc_view rv = line_view(rc, rk);
			const uint64_t st = run_starts(&rv, rp);
			const unsigned t = (unsigned)__builtin_ctzll(st & rv.stop);
			t_slot = (q.root_line << 6) + t;
			t_rel = q.count0 + q.wx + (q.a32 ? (t + 1 - rp) / 2 : popcount64(st & below(t)));
		} else {
			known = q.count0 + q.wx;
			f_slot = (q.root_line << 6) + rp;
		}
	}

	/* The instruction containing the stop address, if it is in the run. */
	uint32_t s_slot = WC_NONE;
	uint64_t s_rel = 0;
	const uint32_t run_end = (t_slot != WC_NONE ? t_slot : f_slot) * 2;
	if (has_stop && stop - addr < run_end - addr) {
		s_slot = stop >> 1;
		if (!on_run(&q, s_slot))
			s_slot--;
		s_rel = count_before(&q, s_slot);
	}

	const uint64_t first = s_slot != WC_NONE ? s_rel : t_slot != WC_NONE ? t_rel : known;
	if (first >= max) {
		const uint32_t x = run_select(&q, max);
		out->event = CSDI_WALK_CAP;
		out->count = max;
		out->end = x * 2;
		out->last = run_prev(&q, x);
	} else if (s_slot != WC_NONE) {
		out->event = CSDI_WALK_STOP;
		out->count = (uint32_t)s_rel;
		out->end = s_slot * 2;
		out->size = q.a32 || !((run_t32(&q, s_slot >> 6)->narrow >> (s_slot & 63)) & 1) ? 4 : 2;
		out->last = s_rel ? run_prev(&q, s_slot) : 0;
	} else if (t_slot != WC_NONE) {
		out->event = CSDI_WALK_TERM;
		out->count = (uint32_t)t_rel;
		out->end = t_slot * 2;
		out->last = t_rel ? run_prev(&q, t_slot) : 0;
	} else {
		const uint64_t n = known / unit * unit;
		if (!n)
			return;
		const uint32_t x = run_select(&q, n);
		out->event = CSDI_WALK_PART;
		out->count = (uint32_t)n;
		out->end = x * 2;
		out->last = run_prev(&q, x);
	}
}

int csdi_walk_cache_block(const struct csdi_walk_cache *wc, uint64_t gen, uint32_t addr, uint8_t isa, unsigned n,
			  uint32_t *next, uint64_t *wide)
{
	const int key = key_of(isa, addr);
	if (key < 0 || wc->gen != gen || n > 64)
		return 0;
	uint32_t line = addr >> WC_LINE_SHIFT, end = addr;
	unsigned e = (addr >> 1) & 63, i = 0;
	uint64_t w = 0;
	for (;;) {
		const struct wc_chunk *c = chunk_peek(wc, (unsigned)key, line);
		const unsigned k = line & (WC_CHUNK_LINES - 1);
		if (!c || !line_known(c, k))
			return 0;
		const struct wc_view v = line_view(c, k);
		const uint64_t st = run_starts(&v, e);
		for (uint64_t left = st; left && i < n; left &= left - 1, i++) {
			const unsigned s = (unsigned)__builtin_ctzll(left);
			if ((v.stop >> s) & 1)
				return 0;
			const uint32_t size = (v.narrow >> s) & 1 ? 2 : 4;
			if (size == 4)
				w |= UINT64_C(1) << i;
			end = (line << WC_LINE_SHIFT) + 2 * s + size;
		}
		if (i == n)
			break;
		if (++line >= WC_NUM_LINES)
			return 0;
		e = run_exit(&v, st);
	}
	*next = end;
	*wide = w;
	return 1;
}
