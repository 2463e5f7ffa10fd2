/*
 * Differential decode against OpenCSD: every ETMv3 / PTM source of every
 * snapshot under $CSD_SHARED/traces (and of every directory listed in
 * CSD_DIFF_SNAPSHOTS, colon-separated snapshots or directories of them) is
 * decoded by csdec (range mode) and by OpenCSD's full decoder, and the two
 * are compared:
 *   - the sequence of executed instruction addresses (both decoders' ranges
 *     expanded through the program image), two instructions matching where
 *     their addresses are equal and the capture offsets of the packets that
 *     executed them agree;
 *   - events at the same point of that sequence: exceptions (number and
 *     return address), exception returns, trace on (reason), inaccessible
 *     memory (address), timestamps (value), and the condition result of the
 *     last instruction of a range;
 *   - cycle counts, summed between range ends the two decoders share.
 * Every difference must be one of the kinds explained in
 * docs/opencsd-differences.md; each kind is a narrow rule below that names
 * its section there. CSD_DIFF_VERBOSE=1 prints every difference with the
 * records and elements around it, explained or not.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "check.h"
#include "flow_run.h"
#include "ocsd_decode.h"

static int verbose;
/* Mutation self-tests run the comparison quietly. */
static int quiet;

#define NONE ((size_t)-1)

/* ------------------------------------------------------------------------
 * Growable arrays
 * ---------------------------------------------------------------------- */

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 1024;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(p, ncap * elem);
	if (!np) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	*cap = ncap;
	return np;
}

/* Executed instruction addresses, each with the index of the csdec record
 * or OpenCSD element it came from. */
struct seq {
	uint32_t *addr;
	size_t *owner;
	size_t n, cap_a, cap_o;
	/* Optional (NULL: not known): the capture offsets between which the
	 * packet that executed each instruction lies, inclusive. */
	uint64_t *lo, *hi;
};

static void seq_push(struct seq *s, uint32_t addr, size_t owner)
{
	s->addr = grow(s->addr, &s->cap_a, s->n + 1, sizeof(*s->addr));
	s->owner = grow(s->owner, &s->cap_o, s->n + 1, sizeof(*s->owner));
	s->addr[s->n] = addr;
	s->owner[s->n] = owner;
	s->n++;
}

/* What happened at a point of the instruction sequence. */
enum ev_kind {
	EV_EXCEPTION,      /* v1 number, v2 preferred return address (if has_v2) */
	EV_EXC_RETURN,
	EV_TRACE_ON,       /* v1 reason: 0 start / filter, 1 overflow, 2 debug exit */
	EV_NO_MEMORY,      /* v1 address */
	EV_TIMESTAMP,      /* v1 value */
	EV_COND,           /* v1 enum csd_cond of the range's last instruction */
	EV_KINDS
};

static const char *const ev_names[EV_KINDS] = {
	"exception", "exception return", "trace on", "no memory", "timestamp", "condition",
};

/* Cycle-count items: where cycles were reported. */
enum cyc_kind {
	CY_RANGE_END,      /* the cycles of the range ending here (pos = its end) */
	CY_OTHER,          /* cycles reported outside a range (gap before trace on, timestamps, ...) */
	CY_NO_MEMORY,      /* csdec: cycles of atoms spent in inaccessible memory */
	/* OpenCSD: cycle-count elements (ETMv3 W atoms) that no instruction
	 * follows, before trace comes back on after traced instructions ... */
	CY_W_BEFORE_GAP,
	/* ... or before the first trace on, or at the end of the trace. */
	CY_W_UNTRACED,
};

struct event {
	uint8_t kind;
	uint8_t has_v2;
	size_t pos;        /* instructions of the own sequence before it */
	uint64_t v1, v2;
	size_t owner;
};

struct cyc_item {
	uint8_t kind;
	size_t pos;
	uint64_t cycles;
	size_t owner;
};

/* One decoder's output, flattened. */
struct side {
	struct seq seq;
	struct event *ev;
	size_t nev, cap_ev;
	struct cyc_item *cy;
	size_t ncy, cap_cy;
	size_t bad_ranges;     /* ranges that are not a walk through the image */
	int has_cycles;
};

static void side_free(struct side *s)
{
	free(s->seq.addr);
	free(s->seq.owner);
	free(s->seq.lo);
	free(s->seq.hi);
	free(s->ev);
	free(s->cy);
	memset(s, 0, sizeof(*s));
}

static void add_event(struct side *s, int kind, uint64_t v1, int has_v2, uint64_t v2, size_t owner)
{
	s->ev = grow(s->ev, &s->cap_ev, s->nev + 1, sizeof(*s->ev));
	struct event *e = &s->ev[s->nev++];
	e->kind = (uint8_t)kind;
	e->has_v2 = (uint8_t)has_v2;
	e->pos = s->seq.n;
	e->v1 = v1;
	e->v2 = v2;
	e->owner = owner;
}

static void add_cycles(struct side *s, int kind, uint64_t cycles, size_t owner)
{
	s->cy = grow(s->cy, &s->cap_cy, s->ncy + 1, sizeof(*s->cy));
	struct cyc_item *c = &s->cy[s->ncy++];
	c->kind = (uint8_t)kind;
	c->pos = s->seq.n;
	c->cycles = cycles;
	c->owner = owner;
	s->has_cycles = 1;
}

/*
 * Append the `count` instructions that start at `start` in instruction set
 * `isa`, sizes from the program image. Returns 0 if the walk ends exactly
 * at `end`, -1 if it does not or the image cannot say (a range that
 * contradicts the image is a defect of whichever decoder produced it).
 */
static int expand_range(csd_image *img, uint32_t start, uint32_t count, int isa, uint64_t end, struct seq *s,
			size_t owner)
{
	uint32_t a = start;
	for (uint32_t k = 0; k < count; k++) {
		uint8_t code[4];
		struct csdi_insn insn;
		int got = csd_image_read(img, a, code, sizeof(code));
		if (got <= 0 || csdi_isa_decode(a, code, (size_t)got, isa, &insn) <= 0)
			return -1;
		seq_push(s, a, owner);
		a += insn.size;
	}
	return a == end ? 0 : -1;
}

/* ------------------------------------------------------------------------
 * Flattening each decoder's output
 * ---------------------------------------------------------------------- */

static void flatten_csdec(const struct flow_run *fr, csd_image *img, struct side *s)
{
	for (size_t k = 0; k < fr->n; k++) {
		const struct csd_record *r = &fr->rec[k];
		int cyc = (r->flags & CSD_RECF_CYCLES) != 0;
		switch (r->type) {
		case CSD_REC_RANGE:
			if (expand_range(img, (uint32_t)r->addr, r->count, r->isa, r->end, &s->seq, k) < 0)
				s->bad_ranges++;
			add_event(s, EV_COND, r->cond, 0, 0, k);
			if (cyc)
				add_cycles(s, CY_RANGE_END, r->cycles, k);
			continue;
		case CSD_REC_EXCEPTION:
			add_event(s, EV_EXCEPTION, r->exception, 1, r->addr, k);
			break;
		case CSD_REC_EXCEPTION_RETURN:
			add_event(s, EV_EXC_RETURN, 0, 0, 0, k);
			break;
		case CSD_REC_TRACE_ON:
			add_event(s, EV_TRACE_ON,
				  r->reason == CSD_REASON_OVERFLOW ? 1 : r->reason == CSD_REASON_DEBUG_EXIT ? 2 : 0, 0, 0,
				  k);
			break;
		case CSD_REC_NO_MEMORY:
			add_event(s, EV_NO_MEMORY, r->addr, 0, 0, k);
			if (cyc)
				add_cycles(s, CY_NO_MEMORY, r->cycles, k);
			continue;
		case CSD_REC_TIMESTAMP:
			add_event(s, EV_TIMESTAMP, r->timestamp, 0, 0, k);
			break;
		default:
			break;
		}
		if (cyc)
			add_cycles(s, CY_OTHER, r->cycles, k);
	}
}

static void flatten_ocsd(const struct ocsd_decode *od, csd_image *img, struct side *s)
{
	size_t since_range = 0; /* first cycle item after the last range */
	int traced = 0;         /* instructions since the decoder (re)synchronised */
	for (size_t k = 0; k < od->n; k++) {
		const struct ocsd_elem *e = &od->el[k];
		switch (e->type) {
		case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
			if (expand_range(img, (uint32_t)e->st_addr, e->num_instr, e->isa, e->en_addr, &s->seq, k) < 0)
				s->bad_ranges++;
			add_event(s, EV_COND, e->last_exec ? CSD_COND_PASS : CSD_COND_FAIL, 0, 0, k);
			if (e->has_cc)
				add_cycles(s, CY_RANGE_END, e->cycle_count, k);
			since_range = s->ncy;
			traced = 1;
			continue;
		case OCSD_GEN_TRC_ELEM_CYCLE_COUNT:
			/* ETMv3 W atoms: OpenCSD reports them apart from the
			 * instruction they end at; the segment sums put them
			 * back together. */
			add_cycles(s, CY_OTHER, e->cycle_count, k);
			continue;
		case OCSD_GEN_TRC_ELEM_EXCEPTION:
			add_event(s, EV_EXCEPTION, e->payload, e->excep_ret_addr, e->en_addr, k);
			break;
		case OCSD_GEN_TRC_ELEM_EXCEPTION_RET:
			add_event(s, EV_EXC_RETURN, 0, 0, 0, k);
			break;
		case OCSD_GEN_TRC_ELEM_NO_SYNC:
			traced = 0;
			break;
		case OCSD_GEN_TRC_ELEM_TRACE_ON:
		case OCSD_GEN_TRC_ELEM_EO_TRACE: {
			/* Sections "W atoms before a gap" and "W atoms outside traced code". */
			int kind = e->type == OCSD_GEN_TRC_ELEM_TRACE_ON && traced ? CY_W_BEFORE_GAP : CY_W_UNTRACED;
			if (e->type == OCSD_GEN_TRC_ELEM_TRACE_ON)
				add_event(s, EV_TRACE_ON, e->payload, 0, 0, k);
			for (size_t c = since_range; c < s->ncy; c++)
				if (od->el[s->cy[c].owner].type == OCSD_GEN_TRC_ELEM_CYCLE_COUNT)
					s->cy[c].kind = (uint8_t)kind;
			since_range = s->ncy;
			break;
		}
		case OCSD_GEN_TRC_ELEM_ADDR_NACC:
			add_event(s, EV_NO_MEMORY, e->st_addr, 0, 0, k);
			break;
		case OCSD_GEN_TRC_ELEM_TIMESTAMP:
			add_event(s, EV_TIMESTAMP, e->timestamp, 0, 0, k);
			break;
		default:
			break;
		}
		if (e->has_cc)
			add_cycles(s, CY_OTHER, e->cycle_count, k);
	}
}

/* ------------------------------------------------------------------------
 * Instruction differences: csdec a[ai, ai + an) against OpenCSD b[bi, bi + bn)
 * ---------------------------------------------------------------------- */

struct hunk {
	size_t ai, an, bi, bn;
};

/* Instructions that must agree after a difference before it counts as over. */
#define RESYNC_RUN 16
/* How far ahead (both skips together) a resynchronisation is looked for. */
#define RESYNC_MAX 4096

/* OpenCSD indexes a packet in a frame-formatted buffer by an earlier byte
 * of its frame: up to this many bytes before its true offset. */
#define OCSD_INDEX_SLACK 3

/*
 * The same instruction on both sides: the same address, executed by the
 * same packet as far as the two can tell (capture offsets, where known).
 * Without the offsets, repetitive code (loops, recursion) lets a
 * resynchronisation land a period early or late.
 */
static int same_insn(const struct seq *a, size_t i, const struct seq *b, size_t j)
{
	if (a->addr[i] != b->addr[j])
		return 0;
	if (!a->lo || !b->lo)
		return 1;
	return b->hi[j] + OCSD_INDEX_SLACK >= a->lo[i] && b->lo[j] <= a->hi[i];
}

static int run_equal(const struct seq *a, size_t i, const struct seq *b, size_t j)
{
	size_t k;
	for (k = 0; k < RESYNC_RUN && i + k < a->n && j + k < b->n; k++)
		if (!same_insn(a, i + k, b, j + k))
			return 0;
	/* A shorter run only counts where both sequences end together. */
	return k == RESYNC_RUN || (i + k == a->n && j + k == b->n);
}

/*
 * From a mismatch at (i, j), find the nearest (i + di, j + dj) where both
 * sequences agree again, nearest meaning the fewest instructions skipped in
 * total. Without one, the difference runs to the end of both.
 */
static struct hunk find_hunk(const struct seq *a, size_t i, const struct seq *b, size_t j)
{
	struct hunk h = { i, a->n - i, j, b->n - j };
	for (size_t d = 1; d <= RESYNC_MAX; d++) {
		for (size_t di = 0; di <= d; di++) {
			size_t dj = d - di;
			if (i + di > a->n || j + dj > b->n)
				continue;
			if ((i + di == a->n && j + dj == b->n) ||
			    (i + di < a->n && j + dj < b->n && run_equal(a, i + di, b, j + dj))) {
				h.an = di;
				h.bn = dj;
				return h;
			}
		}
	}
	return h;
}

/*
 * Where csdec's positions (instructions before a point) fall in OpenCSD's
 * sequence. map[p] is NONE where p touches a difference (a point inside or
 * at either edge of a hunk cannot be placed on the other side); b_touched[q]
 * likewise for OpenCSD positions.
 */
struct alignment {
	size_t *map;          /* a.n + 1 entries */
	uint8_t *b_touched;   /* b.n + 1 entries */
	struct hunk *hunks;
	size_t nhunks, cap_h;
	size_t equal;
};

static void align(const struct seq *a, const struct seq *b, struct alignment *al)
{
	memset(al, 0, sizeof(*al));
	al->map = malloc((a->n + 1) * sizeof(*al->map));
	al->b_touched = calloc(b->n + 1, 1);
	if (!al->map || !al->b_touched) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	size_t i = 0, j = 0;
	while (i < a->n || j < b->n) {
		if (i < a->n && j < b->n && same_insn(a, i, b, j)) {
			al->map[i++] = j++;
			al->equal++;
			continue;
		}
		struct hunk h = find_hunk(a, i, b, j);
		al->hunks = grow(al->hunks, &al->cap_h, al->nhunks + 1, sizeof(*al->hunks));
		al->hunks[al->nhunks++] = h;
		for (size_t p = h.ai; p <= h.ai + h.an && p <= a->n; p++)
			al->map[p] = NONE;
		for (size_t q = h.bi; q <= h.bi + h.bn && q <= b->n; q++)
			al->b_touched[q] = 1;
		i += h.an;
		j += h.bn;
		/* The first equal instruction after the hunk keeps map NONE. */
		if (i < a->n && j < b->n) {
			i++;
			j++;
			al->equal++;
		}
	}
	const struct hunk *last = al->nhunks ? &al->hunks[al->nhunks - 1] : NULL;
	int end_touched = last && (last->ai + last->an == a->n || last->bi + last->bn == b->n);
	al->map[a->n] = end_touched ? NONE : b->n;
	if (end_touched)
		al->b_touched[b->n] = 1;
}

static void alignment_free(struct alignment *al)
{
	free(al->map);
	free(al->b_touched);
	free(al->hunks);
	memset(al, 0, sizeof(*al));
}

/* ------------------------------------------------------------------------
 * Comparison of one source
 * ---------------------------------------------------------------------- */

struct compare {
	const char *name;              /* for messages: "DIR id 0xNN" */
	const struct csd_snapshot_source *src;
	csd_image *img;
	const struct flow_run *fr;
	const struct ocsd_decode *od;
	struct side a, b;              /* csdec, OpenCSD */
	struct alignment al;
	uint8_t *a_cond_at, *b_cond_at; /* by OpenCSD position: a range of csdec / OpenCSD ends there */
};

#define MAX_KINDS 16

struct totals {
	const char *kind[MAX_KINDS];   /* explained kinds seen, by name */
	size_t count[MAX_KINDS];
};

struct result {
	size_t ev_compared[EV_KINDS];
	size_t ev_skipped;             /* events next to an instruction difference */
	size_t cyc_segments;           /* cycle sums compared */
	size_t cyc_equal;              /* of them, equal */
	size_t diffs, unexplained;
};

static void tally(struct totals *t, const char *kind)
{
	if (!t)
		return;
	for (size_t k = 0; k < MAX_KINDS; k++) {
		if (!t->kind[k])
			t->kind[k] = kind;
		if (strcmp(t->kind[k], kind) == 0) {
			t->count[k]++;
			return;
		}
	}
}

static const char *elem_name(uint32_t t)
{
	static const char *const names[] = {
		"unknown", "no_sync", "trace_on", "eo_trace", "pe_context", "instr_range", "i_range_nopath",
		"addr_nacc", "addr_unknown", "exception", "exception_ret", "timestamp", "cycle_count", "event",
	};
	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "other";
}

/* The csdec records and OpenCSD elements around a difference. */
static void print_context(const struct compare *c, size_t rec, size_t el)
{
	for (size_t k = rec > 5 ? rec - 5 : 0; rec != NONE && k < c->fr->n && k <= rec + 5; k++) {
		const struct csd_record *r = &c->fr->rec[k];
		fprintf(stderr, "    %s csdec %zu @%llu %s addr=0x%llx", k == rec ? ">" : " ", k,
			(unsigned long long)r->offset, csd_rec_type_name((int)r->type), (unsigned long long)r->addr);
		if (r->type == CSD_REC_RANGE)
			fprintf(stderr, " end=0x%llx n=%u isa=%u cond=%s flags=0x%x", (unsigned long long)r->end, r->count,
				r->isa, csd_cond_name(r->cond), r->flags);
		else if (r->type == CSD_REC_TIMESTAMP)
			fprintf(stderr, " ts=%llu", (unsigned long long)r->timestamp);
		else if (r->type == CSD_REC_EXCEPTION)
			fprintf(stderr, " number=%u", r->exception);
		else if (r->type == CSD_REC_NO_MEMORY)
			fprintf(stderr, " atoms=%u", r->count);
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(stderr, " cyc=%llu", (unsigned long long)r->cycles);
		fprintf(stderr, "%s%s\n", r->error ? " " : "", r->error ? r->error : "");
	}
	for (size_t k = el > 5 ? el - 5 : 0; el != NONE && k < c->od->n && k <= el + 5; k++) {
		const struct ocsd_elem *e = &c->od->el[k];
		fprintf(stderr, "    %s ocsd  %zu @%llu %s", k == el ? ">" : " ", k, (unsigned long long)e->index,
			elem_name(e->type));
		if (e->type == OCSD_GEN_TRC_ELEM_INSTR_RANGE)
			fprintf(stderr, " st=0x%llx en=0x%llx n=%u isa=%u exec=%u", (unsigned long long)e->st_addr,
				(unsigned long long)e->en_addr, e->num_instr, e->isa, e->last_exec);
		else if (e->type == OCSD_GEN_TRC_ELEM_ADDR_NACC)
			fprintf(stderr, " addr=0x%llx", (unsigned long long)e->st_addr);
		else if (e->type == OCSD_GEN_TRC_ELEM_TIMESTAMP)
			fprintf(stderr, " ts=%llu", (unsigned long long)e->timestamp);
		else if (e->type == OCSD_GEN_TRC_ELEM_EXCEPTION)
			fprintf(stderr, " number=%u ret=0x%llx", e->payload, (unsigned long long)e->en_addr);
		else
			fprintf(stderr, " p=%u", e->payload);
		if (e->has_cc || e->type == OCSD_GEN_TRC_ELEM_CYCLE_COUNT)
			fprintf(stderr, " cc=%u", e->cycle_count);
		fprintf(stderr, "\n");
	}
}

/* Count a difference: explained (kind != NULL) or not. */
static void report(const struct compare *c, struct result *res, struct totals *tot, const char *kind,
		   const char *what, size_t rec, size_t el)
{
	res->diffs++;
	if (kind)
		tally(tot, kind);
	else
		res->unexplained++;
	if (quiet || (kind && !verbose))
		return;
	fprintf(stderr, "%s: %s difference [%s]\n", c->name, what, kind ? kind : "UNEXPLAINED");
	print_context(c, rec, el);
}

/* --- explained kinds (docs/opencsd-differences.md) ---------------------- */

/* Decode the instruction at addr in isa from the image; 0 if it cannot. */
static int insn_at(const struct compare *c, uint32_t addr, int isa, struct csdi_insn *insn)
{
	uint8_t code[4];
	int got = csd_image_read(c->img, addr, code, sizeof(code));
	return got > 0 && csdi_isa_decode(addr, code, (size_t)got, isa, insn) > 0;
}

static int isa_a(const struct compare *c, size_t p)
{
	return c->fr->rec[c->a.seq.owner[p]].isa;
}

static int isa_b(const struct compare *c, size_t q)
{
	return c->od->el[c->b.seq.owner[q]].isa;
}

/* How far back a direct instruction-set change is looked for. */
#define BLX_LOOKBACK 4096

/*
 * Section "ETMv3: instruction set forgotten at the next P-header".
 * OpenCSD walks the atoms of each P-header in the instruction set of the
 * last branch address / I-sync packet, so a direct BLX (which has no
 * address packet) switches its state only until the P-header ends. The
 * hunk qualifies if, just before it, the two decoders walk the same
 * addresses in different instruction sets from an instruction E on, E is
 * the first one of an OpenCSD P-header, and csdec reached E from a direct
 * BLX that switched from OpenCSD's instruction set at E to csdec's, through
 * nothing but fall-throughs and direct branches (so no address packet came
 * in between).
 */
static int etm3_isa_after_blx(const struct compare *c, const struct hunk *h)
{
	if (c->src->config.protocol != CSD_PROTO_ETM3 || h->ai == 0 || h->bi == 0)
		return 0;
	size_t p = h->ai - 1, q = h->bi - 1;
	if (c->a.seq.addr[p] != c->b.seq.addr[q] || isa_a(c, p) == isa_b(c, q))
		return 0;
	/* E: the first of the run of equal addresses in different sets. */
	while (p > 0 && q > 0 && c->al.map[p - 1] == q - 1 && isa_a(c, p - 1) != isa_b(c, q - 1)) {
		p--;
		q--;
	}
	size_t el = c->b.seq.owner[q];
	for (size_t k = el; k-- > 0;) {
		if (c->od->el[k].type != OCSD_GEN_TRC_ELEM_INSTR_RANGE)
			continue;
		if (c->od->el[k].index == c->od->el[el].index)
			return 0; /* E is not the first of its P-header */
		break;
	}
	int right = isa_a(c, p), wrong = isa_b(c, q);
	for (size_t steps = 0; p > 0 && steps < BLX_LOOKBACK; steps++, p--) {
		struct csdi_insn insn;
		uint32_t prev = c->a.seq.addr[p - 1], next = c->a.seq.addr[p];
		if (!insn_at(c, prev, isa_a(c, p - 1), &insn))
			return 0;
		int direct = insn.cls == CSDI_INSN_DIRECT && insn.target == next;
		if (!direct && prev + insn.size != next)
			return 0; /* an indirect branch: its address packet gives the set */
		if (direct && insn.target_isa != insn.isa)
			return insn.isa == wrong && insn.target_isa == right;
	}
	return 0;
}

/* Instruction hunks. */
static const char *classify_hunk(const struct compare *c, const struct hunk *h)
{
	if (etm3_isa_after_blx(c, h))
		return "ETMv3 ISA forgotten at a P-header";
	return NULL;
}

/* Whether the instruction at addr is a PTM waypoint (its condition can be
 * traced) under the source's configuration. */
static int ptm_waypoint(const struct compare *c, uint32_t addr, int isa)
{
	uint8_t code[4];
	struct csdi_insn insn;
	int got = csd_image_read(c->img, addr, code, sizeof(code));
	if (got <= 0 || csdi_isa_decode(addr, code, (size_t)got, isa, &insn) <= 0)
		return 1; /* unknown: do not excuse anything */
	uint32_t barriers = CSDI_INSNF_ISB | ((c->src->config.etmccer & (1u << 24)) ? CSDI_INSNF_DMB_DSB : 0);
	return insn.cls != CSDI_INSN_NORMAL || (insn.flags & (barriers | CSDI_INSNF_EXCEPTION | CSDI_INSNF_EXC_RETURN));
}

/* Events at the same point that differ. */
static const char *classify_event(const struct compare *c, const struct event *ea, const struct event *eb)
{
	/* Section "Condition of a non-waypoint instruction": a PTM range that
	 * ends at a waypoint update ends at an instruction whose condition
	 * PFT never traces; csdec says unknown, OpenCSD says executed. */
	if (ea && eb && ea->kind == EV_COND && c->src->config.protocol == CSD_PROTO_PTM &&
	    ea->v1 == CSD_COND_UNKNOWN && eb->v1 == CSD_COND_PASS) {
		const struct csd_record *r = &c->fr->rec[ea->owner];
		if (r->type == CSD_REC_RANGE && !ptm_waypoint(c, (uint32_t)r->last, r->isa))
			return "condition of a non-waypoint instruction";
	}
	return NULL;
}

/* --- events ------------------------------------------------------------- */

static int event_values_equal(const struct event *x, const struct event *y)
{
	return x->v1 == y->v1 && (!x->has_v2 || !y->has_v2 || x->v2 == y->v2);
}

/*
 * Whether an event takes part in the comparison. Points next to an
 * instruction difference cannot be placed on the other side. Conditions
 * are compared only where both decoders end a range: where a range ends is
 * each decoder's own choice (OpenCSD ends an ETMv3 range after every
 * instruction, csdec only at branches and failed conditions).
 */
static int a_event_counts(const struct compare *c, const struct event *e, int kind)
{
	size_t q = c->al.map[e->pos];
	return e->kind == kind && q != NONE && (kind != EV_COND || c->b_cond_at[q]);
}

static int b_event_counts(const struct compare *c, const struct event *e, int kind)
{
	return e->kind == kind && !c->al.b_touched[e->pos] && (kind != EV_COND || c->a_cond_at[e->pos]);
}

static void compare_events(struct compare *c, struct result *res, struct totals *tot)
{
	const struct side *a = &c->a, *b = &c->b;
	c->a_cond_at = calloc(b->seq.n + 1, 1);
	c->b_cond_at = calloc(b->seq.n + 1, 1);
	if (!c->a_cond_at || !c->b_cond_at) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t k = 0; k < a->nev; k++)
		if (a->ev[k].kind == EV_COND && c->al.map[a->ev[k].pos] != NONE)
			c->a_cond_at[c->al.map[a->ev[k].pos]] = 1;
	for (size_t k = 0; k < b->nev; k++)
		if (b->ev[k].kind == EV_COND)
			c->b_cond_at[b->ev[k].pos] = 1;
	for (int kind = 0; kind < EV_KINDS; kind++) {
		size_t ia = 0, ib = 0;
		for (;;) {
			/* Next comparable event of this kind on each side. */
			while (ia < a->nev && !a_event_counts(c, &a->ev[ia], kind)) {
				res->ev_skipped += a->ev[ia].kind == kind && kind != EV_COND;
				ia++;
			}
			while (ib < b->nev && !b_event_counts(c, &b->ev[ib], kind)) {
				res->ev_skipped += b->ev[ib].kind == kind && kind != EV_COND;
				ib++;
			}
			if (ia >= a->nev && ib >= b->nev)
				break;
			const struct event *ea = ia < a->nev ? &a->ev[ia] : NULL;
			const struct event *eb = ib < b->nev ? &b->ev[ib] : NULL;
			size_t qa = ea ? c->al.map[ea->pos] : NONE;
			size_t qb = eb ? eb->pos : NONE;
			if (qa == qb && event_values_equal(ea, eb)) {
				res->ev_compared[kind]++;
				ia++;
				ib++;
				continue;
			}
			char what[96];
			if (qa == qb) {
				snprintf(what, sizeof(what), "%s (values)", ev_names[kind]);
				report(c, res, tot, classify_event(c, ea, eb), what, ea->owner, eb->owner);
				ia++;
				ib++;
			} else if (qa < qb) {
				snprintf(what, sizeof(what), "%s (csdec only)", ev_names[kind]);
				report(c, res, tot, classify_event(c, ea, NULL), what, ea->owner, NONE);
				ia++;
			} else {
				snprintf(what, sizeof(what), "%s (OpenCSD only)", ev_names[kind]);
				report(c, res, tot, classify_event(c, NULL, eb), what, NONE, eb->owner);
				ib++;
			}
		}
	}
}

/* --- cycles ------------------------------------------------------------- */

/* Cycles reported between two range ends both decoders share. */
struct segment {
	size_t q;              /* OpenCSD position of the closing range end (NONE: the tail) */
	uint64_t sum;          /* all cycles */
	uint64_t no_memory;    /* csdec: of them, in inaccessible memory */
	uint64_t w_gap;        /* OpenCSD: of them, CY_W_BEFORE_GAP */
	uint64_t w_untraced;   /* OpenCSD: of them, CY_W_UNTRACED */
	size_t first, last;    /* records / elements it spans (last NONE: to the end) */
};

static size_t segments(const struct side *s, const size_t *map, const uint8_t *common, struct segment **out)
{
	size_t n = 0, cap = 0;
	struct segment cur;
	memset(&cur, 0, sizeof(cur));
	*out = NULL;
	for (size_t k = 0; k < s->ncy; k++) {
		const struct cyc_item *it = &s->cy[k];
		cur.sum += it->cycles;
		cur.no_memory += it->kind == CY_NO_MEMORY ? it->cycles : 0;
		cur.w_gap += it->kind == CY_W_BEFORE_GAP ? it->cycles : 0;
		cur.w_untraced += it->kind == CY_W_UNTRACED ? it->cycles : 0;
		cur.last = it->owner;
		size_t q = map ? map[it->pos] : it->pos;
		if (it->kind == CY_RANGE_END && q != NONE && common[q]) {
			cur.q = q;
			*out = grow(*out, &cap, n + 1, sizeof(**out));
			(*out)[n++] = cur;
			memset(&cur, 0, sizeof(cur));
			cur.first = it->owner + 1;
		}
	}
	cur.q = NONE;
	cur.last = NONE;
	*out = grow(*out, &cap, n + 1, sizeof(**out));
	(*out)[n++] = cur;
	return n;
}

/* Cycle sums between shared range ends; sections "Cycles in inaccessible
 * memory", "W atoms before a gap" and "W atoms outside traced code". */
static void compare_cycles(struct compare *c, struct result *res, struct totals *tot)
{
	if (!c->a.has_cycles && !c->b.has_cycles)
		return;
	size_t nb = c->b.seq.n;
	uint8_t *end_a = calloc(nb + 1, 1), *common = calloc(nb + 1, 1);
	size_t *touched_before = malloc((nb + 2) * sizeof(*touched_before));
	if (!end_a || !common || !touched_before) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t k = 0; k < c->a.ncy; k++) {
		size_t q = c->al.map[c->a.cy[k].pos];
		if (c->a.cy[k].kind == CY_RANGE_END && q != NONE)
			end_a[q] = 1;
	}
	for (size_t k = 0; k < c->b.ncy; k++) {
		size_t q = c->b.cy[k].pos;
		if (c->b.cy[k].kind == CY_RANGE_END && !c->al.b_touched[q] && end_a[q])
			common[q] = 1;
	}
	touched_before[0] = 0;
	for (size_t q = 0; q <= nb; q++)
		touched_before[q + 1] = touched_before[q] + c->al.b_touched[q];

	struct segment *sa, *sb;
	size_t na = segments(&c->a, c->al.map, common, &sa);
	size_t nsb = segments(&c->b, NULL, common, &sb);
	CHECK_EQ(na, nsb);
	size_t q_prev = 0;
	for (size_t k = 0; k < na && k < nsb; k++) {
		size_t q = sa[k].q == NONE ? nb : sa[k].q;
		int near_hunk = touched_before[q + 1] - touched_before[q_prev] > 0;
		q_prev = q;
		if (near_hunk)
			continue;
		res->cyc_segments++;
		if (sa[k].sum == sb[k].sum) {
			res->cyc_equal++;
			continue;
		}
		int nacc_in_b = 0;
		for (size_t e = sb[k].first; e < c->od->n && (sb[k].last == NONE || e <= sb[k].last); e++)
			nacc_in_b |= c->od->el[e].type == OCSD_GEN_TRC_ELEM_ADDR_NACC && !c->od->el[e].has_cc;
		uint64_t w = sb[k].w_untraced;
		int explained = sa[k].sum - sa[k].no_memory == sb[k].sum - w &&
				(sa[k].no_memory == 0 || nacc_in_b) && (sa[k].no_memory || w);
		size_t rec = sa[k].last != NONE ? sa[k].last : c->fr->n ? c->fr->n - 1 : NONE;
		size_t el = sb[k].last != NONE ? sb[k].last : c->od->n ? c->od->n - 1 : NONE;
		char what[128];
		snprintf(what, sizeof(what), "cycles (csdec %llu, OpenCSD %llu)", (unsigned long long)sa[k].sum,
			 (unsigned long long)sb[k].sum);
		if (!explained) {
			report(c, res, tot, NULL, what, rec, el);
			continue;
		}
		if (sa[k].no_memory)
			report(c, res, tot, "cycles in inaccessible memory", what, rec, el);
		if (sb[k].w_untraced)
			report(c, res, tot, "W atoms outside traced code", what, rec, el);
	}
	free(sa);
	free(sb);
	free(end_a);
	free(common);
	free(touched_before);
}

/* --- one source ---------------------------------------------------------- */

static uint64_t *offsets_alloc(size_t n)
{
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return v;
}

/*
 * Where in the capture each instruction was executed. OpenCSD: the index
 * of its element (one ETMv3 atom or PTM waypoint each). csdec: a range
 * record carries the offset of the packet of its first atom, so its
 * instructions lie between that and the offset of the next range.
 */
static void place_instructions(struct compare *c)
{
	struct seq *a = &c->a.seq, *b = &c->b.seq;
	a->lo = offsets_alloc(a->n);
	a->hi = offsets_alloc(a->n);
	b->lo = offsets_alloc(b->n);
	b->hi = offsets_alloc(b->n);
	uint64_t next = UINT64_MAX;
	size_t owner = NONE;
	for (size_t p = a->n; p-- > 0;) {
		size_t k = a->owner[p];
		if (k != owner) {
			if (owner != NONE)
				next = c->fr->rec[owner].offset;
			owner = k;
		}
		a->lo[p] = c->fr->rec[k].offset;
		a->hi[p] = next;
	}
	for (size_t q = 0; q < b->n; q++)
		b->lo[q] = b->hi[q] = c->od->el[b->owner[q]].index;
}

static void compare_source(struct compare *c, csd_image *img, struct result *res, struct totals *tot)
{
	memset(res, 0, sizeof(*res));
	c->img = img;
	flatten_csdec(c->fr, img, &c->a);
	flatten_ocsd(c->od, img, &c->b);
	place_instructions(c);
	align(&c->a.seq, &c->b.seq, &c->al);
	for (size_t k = 0; k < c->al.nhunks; k++) {
		const struct hunk *h = &c->al.hunks[k];
		char what[128];
		snprintf(what, sizeof(what), "instructions (csdec %zu from #%zu, OpenCSD %zu from #%zu)", h->an, h->ai,
			 h->bn, h->bi);
		report(c, res, tot, classify_hunk(c, h), what,
		       h->ai < c->a.seq.n ? c->a.seq.owner[h->ai] : c->fr->n ? c->fr->n - 1 : NONE,
		       h->bi < c->b.seq.n ? c->b.seq.owner[h->bi] : c->od->n ? c->od->n - 1 : NONE);
	}
	compare_events(c, res, tot);
	compare_cycles(c, res, tot);
}

static void compare_free(struct compare *c)
{
	side_free(&c->a);
	side_free(&c->b);
	alignment_free(&c->al);
	free(c->a_cond_at);
	free(c->b_cond_at);
}

/* ------------------------------------------------------------------------
 * Self-tests of the comparison: it must see differences that are there
 * ---------------------------------------------------------------------- */

static void seq_from(struct seq *s, const uint32_t *v, size_t n)
{
	memset(s, 0, sizeof(*s));
	for (size_t k = 0; k < n; k++)
		seq_push(s, v[k], k);
}

/* Synthetic sequences: one instruction dropped, one added, one changed,
 * a different tail. */
static void test_align(void)
{
	uint32_t base[64], other[64];
	for (size_t k = 0; k < 64; k++)
		base[k] = 0x1000 + 4 * (uint32_t)k;
	struct seq a, b;
	struct alignment al;

	/* b lacks a[20]. */
	memcpy(other, base, 20 * sizeof(base[0]));
	memcpy(other + 20, base + 21, 43 * sizeof(base[0]));
	seq_from(&a, base, 64);
	seq_from(&b, other, 63);
	align(&a, &b, &al);
	CHECK_EQ(al.nhunks, 1);
	CHECK(al.nhunks == 1 && al.hunks[0].ai == 20 && al.hunks[0].an == 1 && al.hunks[0].bi == 20 &&
	      al.hunks[0].bn == 0);
	CHECK_EQ(al.equal, 63);
	CHECK_EQ(al.map[10], 10);
	CHECK_EQ(al.map[20], NONE);
	CHECK_EQ(al.map[21], NONE);
	CHECK_EQ(al.map[30], 29);
	CHECK_EQ(al.map[64], 63);
	alignment_free(&al);

	/* The other way round: b has an extra instruction; and a changed one. */
	align(&b, &a, &al);
	CHECK(al.nhunks == 1 && al.hunks[0].an == 0 && al.hunks[0].bn == 1 && al.hunks[0].bi == 20);
	alignment_free(&al);
	free(b.addr);
	free(b.owner);
	memcpy(other, base, sizeof(base));
	other[40] = 0x9000;
	seq_from(&b, other, 64);
	align(&a, &b, &al);
	CHECK(al.nhunks == 1 && al.hunks[0].ai == 40 && al.hunks[0].an == 1 && al.hunks[0].bn == 1);
	alignment_free(&al);
	free(b.addr);
	free(b.owner);

	/* Different tails: the hunk runs to the end, and the end is not aligned. */
	memcpy(other, base, sizeof(base));
	for (size_t k = 50; k < 64; k++)
		other[k] = 0x8000 + (uint32_t)k;
	seq_from(&b, other, 60);
	align(&a, &b, &al);
	CHECK(al.nhunks == 1 && al.hunks[0].ai == 50 && al.hunks[0].an == 14 && al.hunks[0].bn == 10);
	CHECK_EQ(al.map[64], NONE);
	CHECK_EQ(al.b_touched[60], 1);
	alignment_free(&al);
	free(a.addr);
	free(a.owner);
	free(b.addr);
	free(b.owner);
}

/* Index of the `nth` element of type `type` (from the middle of the decode). */
static size_t find_elem(const struct ocsd_decode *od, uint32_t type, size_t nth)
{
	for (size_t k = od->n / 2; k < od->n; k++)
		if (od->el[k].type == type && nth-- == 0)
			return k;
	return NONE;
}

/* One mutation of OpenCSD's output: the comparison must find exactly one
 * unexplained difference. */
static void mutation(const char *what, const struct csd_snapshot_source *src, const struct flow_run *fr,
		     const struct ocsd_decode *orig, csd_image *img, size_t at, int drop,
		     void (*change)(struct ocsd_elem *))
{
	CHECK(at != NONE);
	if (at == NONE)
		return;
	struct ocsd_decode od = *orig;
	od.el = malloc(orig->n * sizeof(*od.el));
	CHECK(od.el != NULL);
	if (!od.el)
		return;
	memcpy(od.el, orig->el, orig->n * sizeof(*od.el));
	if (drop) {
		memmove(&od.el[at], &od.el[at + 1], (od.n - at - 1) * sizeof(*od.el));
		od.n--;
	} else {
		change(&od.el[at]);
	}
	struct compare c;
	struct result res;
	memset(&c, 0, sizeof(c));
	c.name = what;
	c.src = src;
	c.fr = fr;
	c.od = &od;
	quiet = 1;
	compare_source(&c, img, &res, NULL);
	quiet = 0;
	if (res.unexplained != 1)
		fprintf(stderr, "mutation \"%s\": %zu unexplained differences, expected 1\n", what, res.unexplained);
	CHECK_EQ(res.unexplained, 1);
	compare_free(&c);
	free(od.el);
}

static void bump_cycles(struct ocsd_elem *e) { e->cycle_count += 1; }
static void flip_exec(struct ocsd_elem *e) { e->last_exec = !e->last_exec; }
static void bump_timestamp(struct ocsd_elem *e) { e->timestamp += 1; }
static void move_nacc(struct ocsd_elem *e) { e->st_addr += 2; }
static void change_reason(struct ocsd_elem *e) { e->payload ^= 1; }

/* A range walked in the other instruction set, for one more instruction. */
static void switch_isa(struct ocsd_elem *e)
{
	e->isa = e->isa == CSD_ISA_THUMB ? CSD_ISA_ARM : CSD_ISA_THUMB;
	e->num_instr = 2;
}

/* The first ETMv3 range of a P-header (after the middle of the decode). */
static size_t find_pheader_start(const struct ocsd_decode *od)
{
	size_t prev = NONE;
	for (size_t k = od->n / 2; k < od->n; k++) {
		if (od->el[k].type != OCSD_GEN_TRC_ELEM_INSTR_RANGE)
			continue;
		if (prev != NONE && od->el[prev].index != od->el[k].index)
			return k;
		prev = k;
	}
	return NONE;
}

/*
 * Mutations of a TC2 source: the PTM one (0x13), whose decode has every
 * kind of item, and an ETMv3 one, where the rule of section "ETMv3:
 * instruction set forgotten at the next P-header" must not excuse an
 * instruction set change that no direct BLX explains (TC2's ETMv3 sources
 * trace Thumb code only).
 */
static void test_mutations(const char *dir, unsigned id)
{
	csd_snapshot *snap = NULL;
	char err[512];
	CHECK_EQ(csd_snapshot_open(dir, &snap, err, sizeof(err)), 0);
	const struct csd_snapshot_source *src = NULL;
	for (size_t s = 0; snap && s < csd_snapshot_num_sources(snap); s++)
		if (csd_snapshot_source(snap, s)->config.trace_id == id)
			src = csd_snapshot_source(snap, s);
	CHECK(src != NULL);
	if (!src) {
		csd_snapshot_free(snap);
		return;
	}
	struct flow_run fr;
	struct ocsd_decode od;
	memset(&fr, 0, sizeof(fr));
	memset(&od, 0, sizeof(od));
	csd_image *img = csd_image_new();
	CHECK(csd_snapshot_load_image(snap, src->core_name, img) >= 0);
	CHECK_EQ(flow_run_snapshot(dir, id, 0, 0, &fr), 0);
	CHECK_EQ(ocsd_decode_source(snap, src, &od), 0);

	if (src->config.protocol == CSD_PROTO_ETM3) {
		mutation("ETMv3 range dropped", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_INSTR_RANGE, 3), 1,
			 NULL);
		mutation("ETMv3 ISA changed at a P-header", src, &fr, &od, img, find_pheader_start(&od), 0, switch_isa);
		goto out;
	}
	/* Dropping the second range of a pair that ends at the same place as
	 * csdec's keeps every range boundary but loses instructions. */
	mutation("range dropped", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_INSTR_RANGE, 3), 1, NULL);
	mutation("condition flipped", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_INSTR_RANGE, 5), 0, flip_exec);
	mutation("range cycles changed", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_INSTR_RANGE, 7), 0,
		 bump_cycles);
	mutation("exception return dropped", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_EXCEPTION_RET, 0), 1,
		 NULL);
	mutation("timestamp changed", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_TIMESTAMP, 0), 0,
		 bump_timestamp);
	mutation("inaccessible address changed", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_ADDR_NACC, 0), 0,
		 move_nacc);
	mutation("trace on reason changed", src, &fr, &od, img, find_elem(&od, OCSD_GEN_TRC_ELEM_TRACE_ON, 0), 0,
		 change_reason);
out:
	ocsd_decode_free(&od);
	flow_run_free(&fr);
	csd_image_free(img);
	csd_snapshot_free(snap);
}

/* ------------------------------------------------------------------------
 * Driver
 * ---------------------------------------------------------------------- */

struct grand {
	size_t sources, insns_a, insns_b, equal, ev_compared, cyc_segments, diffs, unexplained;
	struct totals kinds;
};

static void diff_source(const char *dir, const csd_snapshot *snap, const struct csd_snapshot_source *src,
			struct grand *g)
{
	unsigned id = src->config.trace_id;
	char name[1200];
	snprintf(name, sizeof(name), "%s id 0x%02x", dir, id);
	struct flow_run fr;
	struct ocsd_decode od;
	memset(&fr, 0, sizeof(fr));
	memset(&od, 0, sizeof(od));
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	if (!img)
		return;
	CHECK(csd_snapshot_load_image(snap, src->core_name, img) >= 0);
	CHECK_EQ(flow_run_snapshot(dir, id, 0, 0, &fr), 0);
	CHECK_EQ(ocsd_decode_source(snap, src, &od), 0);
	CHECK_EQ(od.oom, 0);
	CHECK_EQ(od.mem_errors, 0);

	struct compare c;
	struct result res;
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.src = src;
	c.fr = &fr;
	c.od = &od;
	compare_source(&c, img, &res, &g->kinds);
	/* Every range of either decoder must be a real walk through the image. */
	CHECK_EQ(c.a.bad_ranges, 0);
	CHECK_EQ(c.b.bad_ranges, 0);
	CHECK_EQ(res.unexplained, 0);

	size_t ev = 0;
	for (int k = 0; k < EV_KINDS; k++)
		ev += res.ev_compared[k];
	printf("%s (%s): instructions csdec %zu, OpenCSD %zu, equal %zu; events equal %zu (exc %zu, exc-ret %zu, "
	       "trace-on %zu, no-mem %zu, ts %zu, cond %zu), %zu not compared; cycle sums equal %zu of %zu; "
	       "differences %zu (%zu unexplained)\n",
	       name, src->config.protocol == CSD_PROTO_ETM3 ? "ETMv3" : "PTM", c.a.seq.n, c.b.seq.n, c.al.equal, ev,
	       res.ev_compared[EV_EXCEPTION], res.ev_compared[EV_EXC_RETURN], res.ev_compared[EV_TRACE_ON],
	       res.ev_compared[EV_NO_MEMORY], res.ev_compared[EV_TIMESTAMP], res.ev_compared[EV_COND],
	       res.ev_skipped, res.cyc_equal, res.cyc_segments,
	       res.diffs, res.unexplained);
	g->sources++;
	g->insns_a += c.a.seq.n;
	g->insns_b += c.b.seq.n;
	g->equal += c.al.equal;
	g->ev_compared += ev;
	g->cyc_segments += res.cyc_segments;
	g->diffs += res.diffs;
	g->unexplained += res.unexplained;

	compare_free(&c);
	ocsd_decode_free(&od);
	flow_run_free(&fr);
	csd_image_free(img);
}

static void diff_snapshot(const char *dir, struct grand *g)
{
	char err[512];
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", dir, err);
		return;
	}
	for (size_t s = 0; s < csd_snapshot_num_sources(snap); s++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, s);
		if (src->buffer < 0)
			continue;
		if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
			continue;
		diff_source(dir, snap, src, g);
	}
	csd_snapshot_free(snap);
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Every directory directly under `root` that holds a snapshot.ini, in name order. */
static size_t diff_shared_snapshots(const char *root, struct grand *g)
{
	DIR *d = opendir(root);
	CHECK(d != NULL);
	if (!d)
		return 0;
	char *names[1024];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < sizeof(names) / sizeof(names[0])) {
		char ini[2048];
		if (de->d_name[0] == '.')
			continue;
		snprintf(ini, sizeof(ini), "%s/%s/snapshot.ini", root, de->d_name);
		FILE *f = fopen(ini, "r");
		if (!f)
			continue;
		fclose(f);
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	CHECK(n < sizeof(names) / sizeof(names[0])); /* else some snapshots went unchecked */
	qsort(names, n, sizeof(names[0]), cmp_names);
	for (size_t k = 0; k < n; k++) {
		char dir[2048];
		snprintf(dir, sizeof(dir), "%s/%s", root, names[k]);
		diff_snapshot(dir, g);
		free(names[k]);
	}
	return n;
}

int main(void)
{
	const char *v = getenv("CSD_DIFF_VERBOSE");
	verbose = v && *v && strcmp(v, "0") != 0;
	struct grand g;
	memset(&g, 0, sizeof(g));

	test_align();
	char root[1024], tc2[1100];
	snprintf(root, sizeof(root), "%s/traces", check_shared_dir());
	snprintf(tc2, sizeof(tc2), "%s/TC2", root);
	test_mutations(tc2, 0x13);
	test_mutations(tc2, 0x10);

	size_t nsnap = diff_shared_snapshots(root, &g);
	CHECK(nsnap >= 2); /* TC2 and trace_cov_a15 at least */

	/* More snapshot directories (the trace generator's output). */
	const char *extra = getenv("CSD_DIFF_SNAPSHOTS");
	if (extra && *extra) {
		char *list = strdup(extra);
		CHECK(list != NULL);
		for (char *p = list, *next; p && *p; p = next) {
			next = strchr(p, ':');
			if (next)
				*next++ = 0;
			if (!*p)
				continue;
			/* A snapshot, or a directory of snapshots. */
			char ini[2048];
			snprintf(ini, sizeof(ini), "%s/snapshot.ini", p);
			FILE *f = fopen(ini, "r");
			if (f) {
				fclose(f);
				diff_snapshot(p, &g);
			} else {
				CHECK(diff_shared_snapshots(p, &g) > 0);
			}
		}
		free(list);
	}

	printf("total: %zu sources; instructions csdec %zu, OpenCSD %zu, equal %zu; events equal %zu; "
	       "cycle sums compared %zu; differences %zu (%zu unexplained)\n",
	       g.sources, g.insns_a, g.insns_b, g.equal, g.ev_compared, g.cyc_segments, g.diffs, g.unexplained);
	for (size_t k = 0; k < MAX_KINDS && g.kinds.kind[k]; k++)
		printf("  explained: %-32s %zu\n", g.kinds.kind[k], g.kinds.count[k]);
	CHECK(g.equal > 0);
	return check_done("test_ocsd_diff");
}
