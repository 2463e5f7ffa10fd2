/*
 * PTM walks through long straight-line code and the walk cache
 * (src/walk_cache.c). A branch packet into 16 MiB of zeros used to walk up
 * to 2^22 instructions, block by block, for every packet. The cache must
 * change no record, only the work:
 *   - hostile: 1,000 packets (full-address branches into a 16 MiB zeroed
 *     image, repeated and all different, A32 and T32, atoms, waypoint
 *     updates) decode with the image read a bounded number of times (an
 *     image served by a counting callback), and their first packets give
 *     the records of a decode without the cache; the whole trace over a
 *     256 KiB image gives the same records with and without the cache and
 *     the same execution in instruction mode;
 *   - directed: a waypoint update naming the waypoint that ends the walk
 *     (when that waypoint begins a block of the walk, and when it does
 *     not), naming a plain instruction far ahead, one beyond the waypoint,
 *     one behind; the walk limit; an A32 start at 2 mod 4; T32 code that is
 *     all 32-bit (two runs through it that never meet); a cache too small
 *     for the code; the image changing between calls;
 *   - random: small images of zeros, all-32-bit T32, sparse branches and
 *     random bytes in up to three sections (sometimes at the top of the
 *     address space, sometimes through the read callback), random traces
 *     of branches, atoms, waypoint updates, I-syncs and exceptions, random
 *     walk limits and cache sizes: records with the cache equal those
 *     without, and instruction mode describes the same execution.
 */
#include <time.h>

#include "check.h"
#include "flow.h"
#include "flow_run.h"

/* ------------------------------------------------------------------ */
/* Images */

struct seg {
	uint32_t addr;
	uint32_t size;
	uint8_t *data;
};

struct test_image {
	struct seg seg[3];
	int nseg;
	int callback;           /* served by the read callback, not as sections */
	unsigned long long reads; /* callback calls */
};

static size_t image_read(void *ctx, uint64_t addr, uint8_t *buf, size_t size)
{
	struct test_image *ti = ctx;
	ti->reads++;
	for (int i = 0; i < ti->nseg; i++) {
		const struct seg *s = &ti->seg[i];
		if (addr >= s->addr && addr - s->addr < s->size) {
			uint64_t k = addr - s->addr;
			size_t n = s->size - k < size ? (size_t)(s->size - k) : size;
			memcpy(buf, s->data + k, n);
			return n;
		}
	}
	return 0;
}

static csd_image *image_make(struct test_image *ti)
{
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	if (ti->callback) {
		CHECK_EQ(csd_image_set_callback(img, image_read, ti), 0);
	} else {
		for (int i = 0; i < ti->nseg; i++)
			CHECK_EQ(csd_image_add_buffer(img, ti->seg[i].addr, ti->seg[i].data, ti->seg[i].size, 0), 0);
	}
	return img;
}

static void image_free(struct test_image *ti)
{
	for (int i = 0; i < ti->nseg; i++)
		free(ti->seg[i].data);
	memset(ti, 0, sizeof(*ti));
}

static uint8_t *zeros(size_t n)
{
	uint8_t *p = calloc(1, n);
	CHECK(p != NULL);
	return p;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

/* Size of the instruction at addr (0: not in the image). */
static unsigned insn_size(csd_image *img, uint64_t addr, uint8_t isa)
{
	uint8_t b[4];
	int got = csd_image_read(img, addr, b, sizeof(b));
	if (isa == CSD_ISA_ARM)
		return got >= 4 ? 4 : 0;
	if (got < 2)
		return 0;
	unsigned size = csdi_t32_size((uint16_t)(b[0] | b[1] << 8));
	return got >= (int)size ? size : 0;
}

/* ------------------------------------------------------------------ */
/* Traces */

struct trace {
	uint8_t *b;
	size_t n, cap;
	csd_ptm_encoder *enc;
	int ca;                 /* cycle-accurate */
	unsigned long long cyc;
};

static void tr_init(struct trace *t, const struct csd_trace_config *tc)
{
	memset(t, 0, sizeof(*t));
	t->enc = csd_ptm_enc_new(tc);
	CHECK(t->enc != NULL);
	t->ca = (tc->etmcr >> 12) & 1;
	t->cap = 4096;
	t->b = malloc(t->cap);
	CHECK(t->b != NULL);
}

static void tr_free(struct trace *t)
{
	csd_ptm_enc_free(t->enc);
	free(t->b);
	memset(t, 0, sizeof(*t));
}

static void tr_put(struct trace *t, struct csd_packet *p)
{
	if (t->cap - t->n < 64) {
		t->cap *= 2;
		t->b = realloc(t->b, t->cap);
		CHECK(t->b != NULL);
	}
	int n = csd_ptm_enc_packet(t->enc, p, t->b + t->n, t->cap - t->n);
	CHECK(n > 0);
	if (n > 0)
		t->n += (size_t)n;
}

static struct csd_packet pkt(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

/* A cycle count for packets that carry one in cycle-accurate mode. */
static void tr_cycles(struct trace *t, struct csd_packet *p)
{
	if (t->ca) {
		p->flags |= CSD_PKTF_CYCLE_COUNT;
		p->cycle_count = (uint32_t)(1 + t->cyc++ % 7);
	}
}

/* A-sync and an I-sync at addr; an A32 address 2 mod 4 is written into
 * the packet's bytes (the encoder, rightly, will not). */
static void tr_sync(struct trace *t, uint32_t addr, uint8_t isa, uint8_t reason)
{
	struct csd_packet a = pkt(CSD_PKT_ASYNC);
	tr_put(t, &a);
	struct csd_packet s = pkt(CSD_PKT_ISYNC);
	s.isa = isa;
	s.addr = isa == CSD_ISA_ARM ? addr & ~3u : addr;
	s.reason = reason;
	s.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	if (t->ca && reason != CSD_REASON_PERIODIC)
		tr_cycles(t, &s);
	size_t at = t->n;
	tr_put(t, &s);
	if (isa == CSD_ISA_ARM && (addr & 2))
		t->b[at + 1] |= 2; /* header, then the address from bit 0 */
}

static void tr_branch(struct trace *t, uint32_t addr, uint8_t isa, int full)
{
	struct csd_packet p = pkt(CSD_PKT_BRANCH);
	p.addr = addr;
	p.isa = isa;
	p.flags = CSD_PKTF_ISA;
	p.addr_bytes = full ? 5 : 0;
	tr_cycles(t, &p);
	tr_put(t, &p);
}

static void tr_exception(struct trace *t, uint32_t addr, uint8_t isa)
{
	struct csd_packet p = pkt(CSD_PKT_BRANCH);
	p.addr = addr;
	p.isa = isa;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
	p.exception = 14; /* IRQ */
	p.addr_bytes = 5;
	tr_cycles(t, &p);
	tr_put(t, &p);
}

static void tr_atoms(struct trace *t, unsigned num, uint32_t en)
{
	for (unsigned i = 0; i < num;) {
		struct csd_packet p = pkt(CSD_PKT_ATOM);
		unsigned k = t->ca ? 1 : num - i > 5 ? 5 : num - i;
		p.atoms.num = (uint8_t)k;
		p.atoms.en = (en >> i) & ((1u << k) - 1);
		tr_cycles(t, &p);
		tr_put(t, &p);
		i += k;
	}
}

static void tr_update(struct trace *t, uint32_t addr, uint8_t isa)
{
	struct csd_packet p = pkt(CSD_PKT_WAYPOINT);
	p.addr = isa == CSD_ISA_ARM ? addr & ~3u : addr & ~1u;
	p.isa = isa;
	p.flags = CSD_PKTF_ISA;
	p.addr_bytes = 5;
	tr_put(t, &p);
}

static struct csd_trace_config ptm_config(uint32_t etmcr)
{
	struct csd_trace_config tc;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	tc.protocol = CSD_PROTO_PTM;
	tc.etmcr = etmcr;
	tc.etmidr = 0x411CF312;
	tc.etmccer = 0x34C01AC2;
	tc.trace_id = 0x13;
	return tc;
}

/* ------------------------------------------------------------------ */
/* Decoding and comparing */

struct dec_opts {
	int insn;               /* CSD_FLOW_INSN */
	int cache;              /* the walk cache on */
	size_t cache_bytes;     /* its limit (0: the default) */
	uint32_t walk_blocks;   /* walk limit (0: CSDI_WALK_MAX_BLOCKS) */
	size_t piece;           /* feed pieces of this many bytes (0: all at once) */
	struct test_image *change;  /* after the first half of the trace, add this to the image */
};

static void decode(const struct trace *t, const struct csd_trace_config *tc, csd_image *img,
		   const struct dec_opts *o, struct flow_run *fr)
{
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = tc;
	fc.image = img;
	fc.flags = o->insn ? CSD_FLOW_INSN : 0;
	csd_flow_decoder *d = csd_flow_new(&fc);
	CHECK(d != NULL);
	if (!d)
		return;
	csdi_ptm_flow_walk_cache(d, o->cache, o->cache_bytes);
	if (o->walk_blocks)
		csdi_ptm_flow_walk_limit(d, o->walk_blocks);
	const size_t piece = o->piece ? o->piece : t->n;
	int changed = 0;
	for (size_t off = 0; off < t->n;) {
		if (o->change && !changed && off >= t->n / 2) {
			for (int i = 0; i < o->change->nseg; i++)
				CHECK_EQ(csd_image_add_buffer(img, o->change->seg[i].addr, o->change->seg[i].data,
							      o->change->seg[i].size, 0), 0);
			changed = 1;
		}
		size_t n = t->n - off < piece ? t->n - off : piece;
		struct csd_bytes in = { .data = t->b + off, .size = n, .base = off };
		CHECK_EQ(csd_flow_feed(d, &in), 0);
		flow_run_drain(d, fr, FLOW_RUN_MIXED);
		off += n;
	}
	CHECK_EQ(csd_flow_finish(d), 0);
	flow_run_drain(d, fr, FLOW_RUN_MIXED);
	csd_flow_free(d);
}

static void print_rec(const char *what, size_t i, const struct csd_record *r)
{
	fprintf(stderr, "  %s %zu: %s off %llu addr 0x%llx last 0x%llx end 0x%llx count %u flags 0x%x cond %u isa %u"
		" cycles %llu%s%s\n", what, i, csd_rec_type_name((int)r->type), (unsigned long long)r->offset,
		(unsigned long long)r->addr, (unsigned long long)r->last, (unsigned long long)r->end, r->count,
		r->flags, r->cond, r->isa, (unsigned long long)r->cycles, r->error ? " " : "", r->error ? r->error : "");
}

/* a and b are the same records. */
static int same_records(const struct flow_run *a, const struct flow_run *b, const char *what)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++) {
		if (!flow_run_same(&a->rec[i], &b->rec[i])) {
			fprintf(stderr, "%s: record %zu differs (of %zu / %zu)\n", what, i, a->n, b->n);
			for (size_t k = i > 2 ? i - 2 : 0; k < i + 2 && k < n; k++) {
				print_rec("cache   ", k, &a->rec[k]);
				print_rec("no cache", k, &b->rec[k]);
			}
			return 0;
		}
	}
	if (a->n != b->n) {
		fprintf(stderr, "%s: %zu records / %zu\n", what, a->n, b->n);
		return 0;
	}
	return 1;
}

/* Ranges r and instruction records in describe the same execution: the
 * ranges instruction by instruction are the instruction records, the
 * other records are equal, the cycles add up alike. */
static int same_execution(csd_image *img, const struct flow_run *r, const struct flow_run *in, const char *what)
{
	size_t j = 0;
	unsigned long long cr = 0, ci = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct csd_record *x = &r->rec[i];
		if (x->flags & CSD_RECF_CYCLES)
			cr += x->cycles;
		if (x->type != CSD_REC_RANGE) {
			if (j >= in->n || !flow_run_same(x, &in->rec[j]))
				goto differ;
			j++;
			continue;
		}
		uint32_t at = (uint32_t)x->addr; /* (wraps at the top of the address space, as the decoder's) */
		for (uint32_t k = 0; k < x->count; k++, j++) {
			unsigned size = insn_size(img, at, x->isa);
			if (j >= in->n || in->rec[j].type != CSD_REC_INSN || in->rec[j].addr != at ||
			    in->rec[j].isa != x->isa || !size || (k + 1 == x->count && at != x->last))
				goto differ;
			at += size;
		}
		if (at != x->end)
			goto differ;
		continue;
differ:
		fprintf(stderr, "%s: range record %zu / instruction record %zu differ\n", what, i, j);
		print_rec("range", i, x);
		if (j < in->n)
			print_rec("insn ", j, &in->rec[j]);
		return 0;
	}
	for (size_t k = 0; k < in->n; k++)
		if (in->rec[k].flags & CSD_RECF_CYCLES)
			ci += in->rec[k].cycles;
	if (j != in->n || cr != ci) {
		fprintf(stderr, "%s: %zu of %zu instruction records matched, cycles %llu / %llu\n", what, j, in->n, cr, ci);
		return 0;
	}
	return 1;
}

/* Decode with and without the cache (and in instruction mode unless
 * no_insn) and require the same records and execution. Returns the
 * records with the cache in *out if given. */
static int check_same(const struct trace *t, const struct csd_trace_config *tc, struct test_image *ti,
		      const struct dec_opts *base, int no_insn, const char *what, struct flow_run *out)
{
	struct flow_run with = { 0 }, without = { 0 }, insns = { 0 };
	struct dec_opts o = *base;
	/* (An image per decode: a change in the middle must not leak.) */
	csd_image *img = image_make(ti);
	o.cache = 1;
	decode(t, tc, img, &o, &with);
	csd_image_free(img);
	img = image_make(ti);
	o.cache = 0;
	decode(t, tc, img, &o, &without);
	int ok = same_records(&with, &without, what);
	csd_image_free(img);
	if (!no_insn) {
		img = image_make(ti);
		o.insn = 1;
		o.cache = 1;
		decode(t, tc, img, &o, &insns);
		ok &= same_execution(img, &without, &insns, what);
		csd_image_free(img);
	}
	CHECK(ok);
	if (out)
		*out = with;
	else
		flow_run_free(&with);
	flow_run_free(&without);
	flow_run_free(&insns);
	return ok;
}

static size_t count_type(const struct flow_run *fr, uint32_t type)
{
	size_t n = 0;
	for (size_t i = 0; i < fr->n; i++)
		n += fr->rec[i].type == type;
	return n;
}

/* ------------------------------------------------------------------ */
/* Random numbers (xorshift; the seed is printed with a failure). One
 * call per expression, so that gcc and clang builds draw the same. */

static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

/* ------------------------------------------------------------------ */
/* Hostile: 1,000 packets into zeros */

#define BIG_BASE 0x01000000u
#define BIG_SIZE (16u << 20)

/* The hostile trace over `size` bytes of zeros at BIG_BASE: A32 from its
 * start (which walks exactly 2^22 instructions to the end of 16 MiB),
 * then `npkt` packets. */
static void hostile_trace(struct trace *t, uint32_t size, unsigned npkt)
{
	static const uint32_t repeated[8] = { 0x0, 0x4, 0x1000, 0x2222, 0x40000, 0x123456, 0x800000, 0xFFFFF0 };
	tr_sync(t, BIG_BASE, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
	for (unsigned i = 0; i < npkt; i++) {
		const uint32_t k = rnd_below(100);
		const uint8_t isa = rnd_below(4) ? CSD_ISA_ARM : CSD_ISA_THUMB;
		const uint32_t align = isa == CSD_ISA_ARM ? ~3u : ~1u;
		uint32_t off = k < 30 ? repeated[rnd_below(8)] % size : rnd_below(size);
		const uint32_t addr = BIG_BASE + (off & align);
		if (k < 80) {
			tr_branch(t, addr, isa, 1);
		} else if (k < 90) {
			const unsigned num = 1 + rnd_below(5);
			tr_atoms(t, num, rnd());
		} else {
			/* A waypoint update ahead, behind or beyond the end. */
			const uint32_t ahead = rnd_below(size);
			const uint32_t behind = rnd_below(size / 8);
			tr_branch(t, addr, isa, 1);
			tr_update(t, addr + ahead - behind, isa);
			i++;
		}
	}
}

static void test_hostile(void)
{
	const struct csd_trace_config tc = ptm_config(0);

	/* The whole image: bounded reads of it. */
	struct test_image big = { .nseg = 1, .callback = 1 };
	big.seg[0] = (struct seg){ BIG_BASE, BIG_SIZE, zeros(BIG_SIZE) };
	struct trace t;
	tr_init(&t, &tc);
	rng_state = 0x9E3779B97F4A7C15ull;
	hostile_trace(&t, BIG_SIZE, 1000);
	csd_image *img = image_make(&big);
	struct flow_run fr = { 0 };
	const struct dec_opts o = { .cache = 1 };
	const clock_t c0 = clock();
	decode(&t, &tc, img, &o, &fr);
	const double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
	/* The image is 4096 pages of the callback's: each instruction set's
	 * run through it reads each page about once; the rest is a few
	 * reads a packet. Without the cache every packet read up to all. */
	printf("hostile: %zu bytes of trace, %zu records, %llu image reads, %.2f s\n", t.n, fr.n, big.reads, secs);
	CHECK(big.reads < 3 * (BIG_SIZE / 4096) + 8 * 1000);
	CHECK(secs < 30.0); /* a sanity bound only: without the cache, minutes */
	CHECK(count_type(&fr, CSD_REC_RANGE) >= 800);
	/* The walk from the image's start: 2^22 A32 instructions exactly,
	 * then the image ends, one block beyond the walk's limit. */
	CHECK(fr.n > 1 && fr.rec[0].type == CSD_REC_TRACE_ON);
	size_t first = 0;
	while (first < fr.n && fr.rec[first].type != CSD_REC_RANGE)
		first++;
	CHECK(first < fr.n && fr.rec[first].addr == BIG_BASE && fr.rec[first].count == 1u << 22);
	CHECK(first + 1 < fr.n && fr.rec[first + 1].type == CSD_REC_ERROR &&
	      fr.rec[first + 1].addr == BIG_BASE + BIG_SIZE);
	csd_image_free(img);

	/* Its first packets without the cache: the same records. */
	struct trace head;
	tr_init(&head, &tc);
	rng_state = 0x9E3779B97F4A7C15ull;
	hostile_trace(&head, BIG_SIZE, 12);
	big.callback = 0;
	check_same(&head, &tc, &big, &(struct dec_opts){ 0 }, 1, "hostile head", NULL);
	tr_free(&head);
	tr_free(&t);
	flow_run_free(&fr);
	image_free(&big);

	/* The whole trace's kind over 256 KiB, with and without the cache;
	 * also with a walk limit the image reaches, and in instruction mode
	 * (which makes a record per instruction: a short limit). */
	struct test_image small = { .nseg = 1 };
	small.seg[0] = (struct seg){ BIG_BASE, 256u << 10, zeros(256u << 10) };
	tr_init(&t, &tc);
	rng_state = 12345;
	hostile_trace(&t, 256u << 10, 1000);
	check_same(&t, &tc, &small, &(struct dec_opts){ 0 }, 1, "hostile 256 KiB", NULL);
	check_same(&t, &tc, &small, &(struct dec_opts){ .walk_blocks = 300 }, 1, "hostile 256 KiB, limit", NULL);
	check_same(&t, &tc, &small, &(struct dec_opts){ .walk_blocks = 6 }, 0, "hostile 256 KiB, instructions", NULL);
	tr_free(&t);
	image_free(&small);
}

/* ------------------------------------------------------------------ */
/* Directed cases */

#define D_BASE 0x00100000u
#define D_SIZE (128u << 10)

static void test_directed(void)
{
	const struct csd_trace_config tc = ptm_config(1u << 29);
	const uint32_t wp = D_BASE + 0x10000;     /* an A32 B at the middle of the zeros */
	struct test_image ti = { .nseg = 1 };
	ti.seg[0] = (struct seg){ D_BASE, D_SIZE, zeros(D_SIZE) };
	put32(ti.seg[0].data + (wp - D_BASE), 0xEA000010u); /* B wp + 8 + 0x40 */
	struct flow_run fr = { 0 };
	struct trace t;

	/* A waypoint update naming the waypoint that ends the walk: the walk
	 * stops in front of it. 64 x 7 instructions before it, the waypoint
	 * begins a block of the walk; 64 x 7 + 5, it does not. */
	for (unsigned k = 0; k < 2; k++) {
		const uint32_t n = 64 * 7 + (k ? 5 : 0);
		tr_init(&t, &tc);
		tr_sync(&t, D_BASE, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
		tr_branch(&t, wp - 4 * n, CSD_ISA_ARM, 1);
		tr_update(&t, wp, CSD_ISA_ARM);
		tr_atoms(&t, 2, 3);
		check_same(&t, &tc, &ti, &(struct dec_opts){ 0 }, 0, k ? "update at the waypoint, mid-block"
								      : "update at the waypoint, block start", &fr);
		/* Block start: the range before stays open and joins the
		 * atom's; otherwise it is closed with the update. */
		size_t r = 0;
		while (r < fr.n && !(fr.rec[r].type == CSD_REC_RANGE && fr.rec[r].addr == wp - 4 * n))
			r++;
		CHECK(r < fr.n);
		if (r < fr.n)
			CHECK_EQ(fr.rec[r].last, k ? wp - 4 : wp);
		flow_run_free(&fr);
		tr_free(&t);
	}

	/* Updates at a plain instruction far ahead (mid-instruction), beyond
	 * the waypoint, and behind the walk's start. */
	static const int32_t stops[] = { 4 * 3000 + 2, 0x10000 + 0x40, -0x100 };
	for (unsigned k = 0; k < 3; k++) {
		tr_init(&t, &tc);
		tr_sync(&t, D_BASE, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
		tr_branch(&t, D_BASE + 0x200, CSD_ISA_ARM, 1);
		tr_update(&t, (uint32_t)(D_BASE + 0x200 + stops[k]), CSD_ISA_ARM);
		tr_atoms(&t, 1, 1);
		check_same(&t, &tc, &ti, &(struct dec_opts){ 0 }, 0, "update", &fr);
		CHECK_EQ(count_type(&fr, CSD_REC_ERROR), k == 0 ? 0 : 1);
		flow_run_free(&fr);
		tr_free(&t);
	}

	/* The walk limit reached, from A32 at 0 mod 4 and at 2 mod 4, from
	 * T32 and from ThumbEE (with waypoint updates on the way). */
	static const uint8_t limit_isa[4] = { CSD_ISA_ARM, CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_THUMBEE };
	for (unsigned k = 0; k < 4; k++) {
		tr_init(&t, &tc);
		tr_sync(&t, D_BASE + (k == 1 ? 0x402 : 0x400), limit_isa[k], CSD_REASON_TRACE_ON);
		tr_atoms(&t, 1, 1);
		tr_sync(&t, D_BASE + 0x1000 + 2 * k, limit_isa[k], CSD_REASON_PERIODIC);
		tr_update(&t, D_BASE + 0x1000 + 0x1802 + 4 * k, limit_isa[k]);
		tr_atoms(&t, 1, 1);
		tr_sync(&t, D_BASE + 0x20, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
		tr_atoms(&t, 1, 0);
		check_same(&t, &tc, &ti, &(struct dec_opts){ .walk_blocks = 40 }, 0, "walk limit", &fr);
		CHECK(count_type(&fr, CSD_REC_ERROR) >= 1);
		flow_run_free(&fr);
		tr_free(&t);
	}

	/* A cache with room for two chunks of code: walks learn how far it
	 * knows and go on block by block. */
	tr_init(&t, &tc);
	tr_sync(&t, D_BASE, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
	for (unsigned i = 0; i < 20; i++) {
		tr_branch(&t, D_BASE + 0x20000 - 0x1000 * i, CSD_ISA_ARM, 1);
		tr_update(&t, D_BASE + 0x20000 - 0x1000 * i + 0x800 + 0x100 * i, CSD_ISA_ARM);
	}
	check_same(&t, &tc, &ti, &(struct dec_opts){ .cache_bytes = 60000 }, 0, "small cache", NULL);
	tr_free(&t);

	/* The image changes between calls: code learnt before must go. */
	struct test_image patch = { .nseg = 1 };
	patch.seg[0] = (struct seg){ D_BASE + 0x8000, 4, zeros(4) };
	put32(patch.seg[0].data, 0xEAFFFFFEu); /* B . */
	tr_init(&t, &tc);
	tr_sync(&t, D_BASE, CSD_ISA_ARM, CSD_REASON_TRACE_ON);
	for (unsigned i = 0; i < 40; i++) {
		tr_branch(&t, D_BASE + 0x100 * (i % 8), CSD_ISA_ARM, 1);
		tr_atoms(&t, 1, 0);
	}
	check_same(&t, &tc, &ti, &(struct dec_opts){ .change = &patch, .piece = 7 }, 0, "image change", &fr);
	size_t at_patch = 0;
	for (size_t i = 0; i < fr.n; i++)
		at_patch += fr.rec[i].type == CSD_REC_RANGE && fr.rec[i].last == D_BASE + 0x8000;
	CHECK(at_patch > 0);
	flow_run_free(&fr);
	tr_free(&t);
	image_free(&patch);
	image_free(&ti);

	/* T32 that is all 32-bit (ADD.W r11, r0, r0 ..., each halfword a
	 * first half too): runs entering at 0 and at 2 never meet. Walks from
	 * both phases, updates at both halves of instructions of either, the
	 * limit in the middle. */
	ti.nseg = 1;
	ti.seg[0] = (struct seg){ D_BASE, D_SIZE, zeros(D_SIZE) };
	for (uint32_t a = 0; a < D_SIZE; a += 2)
		put16(ti.seg[0].data + a, 0xEB00);
	put16(ti.seg[0].data + 0x9000, 0x4770); /* BX lr, 16-bit: the runs meet after it */
	put16(ti.seg[0].data + 0xC000, 0x0000);
	for (unsigned k = 0; k < 24; k++) {
		tr_init(&t, &tc);
		tr_sync(&t, D_BASE + 2 * k, CSD_ISA_THUMB, CSD_REASON_TRACE_ON);
		tr_update(&t, D_BASE + 2 * k + 0x1000 + 2 * (k / 2), CSD_ISA_THUMB);
		tr_branch(&t, D_BASE + 0xA000 + 2 * k, CSD_ISA_THUMB, 1);
		tr_update(&t, D_BASE + 0xD000 + 2 * k, CSD_ISA_THUMB);
		tr_atoms(&t, 1, 1);
		tr_branch(&t, D_BASE + 0x100 + 2 * k, CSD_ISA_THUMB, 1);
		tr_atoms(&t, 1, 1);
		check_same(&t, &tc, &ti, &(struct dec_opts){ .walk_blocks = k & 1 ? 100 : 0 }, 0, "T32 32-bit only",
			   NULL);
		tr_free(&t);
	}
	image_free(&ti);
}

/* ------------------------------------------------------------------ */
/* Random code and traces */

/* Fill n bytes (even) at p with code of one kind. */
static void random_code(uint8_t *p, size_t n)
{
	static const uint16_t t32[] = { 0x0000, 0xEB00, 0xF000, 0xF8D0, 0xE92D, 0xBF00, 0x4600 };
	const uint32_t kind = rnd_below(7);
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint16_t h = 0;
		switch (kind) {
		case 0: /* zeros */
			break;
		case 1: /* T32 32-bit only */
			h = 0xEB00;
			break;
		case 2: /* zeros, a branch now and then (A32 B, T32 B, T32 BL) */
			if (rnd_below(600) == 0) {
				const uint32_t b = rnd_below(3);
				if (b == 0 && i % 4 == 0 && i + 3 < n) {
					put32(p + i, 0xEA000000u | rnd_below(64));
					i += 2;
					continue;
				}
				if (b == 1 && i + 3 < n) {
					put16(p + i, 0xF000);
					put16(p + i + 2, 0xF800 | (uint16_t)rnd_below(64));
					i += 2;
					continue;
				}
				h = (uint16_t)(0xE000 | rnd_below(256));
			}
			break;
		case 3: /* random bytes */
			h = (uint16_t)rnd();
			break;
		case 4: /* T32 halfwords that are mostly first halves */
			h = t32[rnd_below(7)];
			break;
		case 5: /* runs of zeros and of 32-bit T32 */
			h = (i / 64 + i / 200) % 3 ? 0xEB00 : 0x0000;
			break;
		default: /* A32 data processing (plain), now and then a BX lr */
			if (i % 4 == 0 && i + 3 < n) {
				put32(p + i, rnd_below(2000) ? 0xE0800000u | (rnd() & 0xFFFFu) : 0xE12FFF1Eu);
				i += 2;
				continue;
			}
			break;
		}
		put16(p + i, h);
	}
}

static void random_image(struct test_image *ti)
{
	memset(ti, 0, sizeof(*ti));
	ti->callback = rnd_below(4) == 0;
	ti->nseg = 1 + (int)rnd_below(3);
	const uint32_t total = (8u << 10) << rnd_below(3);
	uint32_t addr = rnd_below(8) == 0 ? 0 - total - 0x400 : 0x8000 + (rnd_below(1u << 20) & ~3u);
	for (int i = 0; i < ti->nseg; i++) {
		const uint32_t size = (total / (uint32_t)ti->nseg) & ~15u;
		struct seg *s = &ti->seg[i];
		s->addr = addr;
		s->size = size;
		s->data = zeros(size);
		for (uint32_t at = 0; at < size;) {
			uint32_t run = 256u << rnd_below(6);
			run += 2 * rnd_below(64);
			if (run > size - at)
				run = size - at;
			random_code(s->data + at, run);
			at += run;
		}
		addr += size + (rnd_below(2) ? 0 : 2 * rnd_below(256));
	}
	/* The last section up to the top of the address space. */
	if (ti->seg[0].addr > 0x80000000u) {
		struct seg *s = &ti->seg[ti->nseg - 1];
		uint32_t grow = 0 - s->addr - s->size;
		uint8_t *d = realloc(s->data, s->size + grow);
		CHECK(d != NULL);
		random_code(d + s->size, grow);
		s->data = d;
		s->size += grow;
	}
}

static uint32_t random_addr(const struct test_image *ti, uint8_t isa)
{
	const struct seg *s = &ti->seg[rnd_below((uint32_t)ti->nseg)];
	uint32_t a = s->addr + rnd_below(s->size);
	if (rnd_below(20) == 0)
		a = rnd(); /* probably outside */
	return isa == CSD_ISA_ARM ? a & ~3u : a & ~1u;
}

/* Address of the first waypoint from `at` in isa, as the PTM flow
 * decoder classifies instructions (at if none is found nearby). */
static uint32_t next_waypoint(const struct test_image *ti, uint32_t at, uint8_t isa)
{
	for (int i = 0; i < ti->nseg; i++) {
		const struct seg *sg = &ti->seg[i];
		if (at < sg->addr || at - sg->addr >= sg->size)
			continue;
		for (uint32_t a = at; a - sg->addr < sg->size && a - at < 0x10000;) {
			struct csdi_insn insn;
			int rc = csdi_isa_decode(a, sg->data + (a - sg->addr), sg->size - (a - sg->addr), isa, &insn);
			if (rc < 0)
				break;
			if (insn.cls != CSDI_INSN_NORMAL || (insn.flags & CSDI_INSNF_ISB))
				return a + (rc == 4 && rnd_below(2) ? 2 : 0);
			a += (uint32_t)rc;
		}
	}
	return at;
}

static void random_trace(struct trace *t, const struct test_image *ti)
{
	uint8_t isa = rnd_below(2) ? CSD_ISA_ARM : CSD_ISA_THUMB;
	uint32_t at = random_addr(ti, isa);
	tr_sync(t, at | (isa == CSD_ISA_ARM && rnd_below(4) == 0 ? 2 : 0), isa, CSD_REASON_TRACE_ON);
	const unsigned n = 10 + rnd_below(40);
	for (unsigned i = 0; i < n; i++) {
		const uint32_t k = rnd_below(100);
		if (k < 35) {
			isa = rnd_below(3) ? isa : (isa == CSD_ISA_ARM ? CSD_ISA_THUMB : CSD_ISA_ARM);
			at = random_addr(ti, isa);
			tr_branch(t, at, isa, rnd_below(2));
		} else if (k < 65) {
			const unsigned num = 1 + rnd_below(8);
			tr_atoms(t, num, rnd());
		} else if (k < 85) {
			uint32_t d = rnd_below(4) ? rnd_below(0x8000) : rnd_below(0x400);
			if (rnd_below(3) == 0)
				tr_update(t, next_waypoint(ti, at, isa), isa);
			else
				tr_update(t, rnd_below(6) ? at + d : at - d, isa);
		} else if (k < 92) {
			isa = rnd_below(2) ? CSD_ISA_ARM : CSD_ISA_THUMB;
			at = random_addr(ti, isa);
			const uint32_t half = isa == CSD_ISA_ARM && rnd_below(3) == 0 ? 2 : 0;
			tr_sync(t, at | half, isa, rnd_below(2) ? CSD_REASON_PERIODIC : CSD_REASON_TRACE_ON);
		} else {
			isa = rnd_below(2) ? CSD_ISA_ARM : CSD_ISA_THUMB;
			at = random_addr(ti, isa);
			tr_exception(t, at, isa);
		}
	}
}

static void test_random(unsigned rounds)
{
	static const uint32_t etmcr[] = { 0, 1u << 29, 1u << 12, (1u << 12) | (1u << 29) };
	static const uint32_t limits[] = { 0, 0, 5, 8, 20, 100 };
	unsigned failed = 0;
	for (unsigned r = 0; r < rounds && failed < 3; r++) {
		const uint64_t seed = 0xC0FFEEull + r;
		rng_state = seed * 0x9E3779B97F4A7C15ull | 1;
		struct test_image ti;
		random_image(&ti);
		const struct csd_trace_config tc = ptm_config(etmcr[rnd_below(4)]);
		struct trace t;
		tr_init(&t, &tc);
		random_trace(&t, &ti);
		struct dec_opts o = { 0 };
		o.walk_blocks = limits[rnd_below(6)];
		o.cache_bytes = rnd_below(4) ? 0 : 30000 * (1 + rnd_below(3));
		o.piece = rnd_below(2) ? 0 : 1 + rnd_below(16);
		char what[64];
		snprintf(what, sizeof(what), "random round %u", r);
		if (!check_same(&t, &tc, &ti, &o, 0, what, NULL)) {
			fprintf(stderr, "  (seed %llu, %d sections from 0x%x, callback %d, limit %u, cache %zu)\n",
				(unsigned long long)seed, ti.nseg, ti.seg[0].addr, ti.callback, o.walk_blocks,
				o.cache_bytes);
			failed++;
		}
		tr_free(&t);
		image_free(&ti);
	}
}

/* Random rounds: fewer under AddressSanitizer, where making the decoders
 * (their block caches zeroed) is most of a round's cost. */
#if defined(__SANITIZE_ADDRESS__)
#define RANDOM_ROUNDS 300
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RANDOM_ROUNDS 300
#endif
#endif
#ifndef RANDOM_ROUNDS
#define RANDOM_ROUNDS 1500
#endif

int main(int argc, char **argv)
{
	const unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : RANDOM_ROUNDS;
	test_directed();
	test_random(rounds);
	test_hostile();
	printf("test_walk_cache: %d checks, %d failed\n", check_count, check_failures);
	return check_failures ? 1 : 0;
}
