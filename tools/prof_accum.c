/*
 * prof_accum.c - the counting and the reports of `csdec profile`.
 *
 * Each instruction is charged to its function: the ELF symbol containing
 * it, or without symbols the entry address of the call it is in (the
 * target of the last call or exception entry seen; "(unknown)" until the
 * first one, and after trace gaps the trace cannot see through).
 *
 * Calls are the taken branches with link (BL, BLX) and exception entries;
 * each source keeps a stack of the calls in progress. A call returns when
 * execution, after a taken branch (or an exception return, or trace coming
 * back on), arrives at its return address; its inclusive cost is what the
 * source executed in between. Returns that skip frames (longjmp, an
 * exception that never returns) pop everything above the frame they reach;
 * with symbols, so does a branch from another function into the middle of
 * a function that a call in progress was made from (longjmp lands after
 * its setjmp, whose own return was long ago), which is no tail call: those
 * go to a function's first instruction.
 * An exception whose handler is not traced (trace resumes at the return
 * address) is not a call, nor is a call whose first instruction falls in
 * a trace gap.
 *
 * A range of instructions is one step: only its first instruction can be
 * where a call arrives or returns, only its last a branch. With symbols,
 * instructions and cycles are counted per address (slotmap.h: a range as
 * two differences, cycles at the instruction they belong to) and summed
 * per function at the end, since a range may run from one function into
 * the next; without symbols the whole range belongs to the current call's
 * function, and per-address costs are kept only for the callgrind file.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "prof_accum.h"
#include "slotmap.h"
#include "symbols.h"

#define SOURCES 128
#define STACK_MAX 4096        /* calls in progress tracked per source */
#define RETURN_SEARCH 64      /* frames looked through for a return address */
#define FN_UNKNOWN 0u

struct fn_rec {
	uint64_t entry;            /* symbol start, or first address of the call */
	const char *name;          /* symbol name; NULL: named by its entry */
	uint64_t instr, cycles;    /* self */
	uint64_t calls;            /* times called */
};

struct edge {
	uint32_t caller, callee;
	uint64_t site;             /* address of the call (or the interrupted instruction) */
	uint64_t target;           /* callee's first instruction */
	uint64_t calls, instr, cycles; /* inclusive of the callee */
};

struct frame {
	uint64_t ret;              /* where the call returns to */
	uint64_t instr0, cycles0;  /* the source's totals when it was made */
	uint32_t edge;
	uint32_t caller;
	uint32_t ctx0;             /* folded stacks: the context before the call */
};

/* Folded stacks: a context is the chain of functions the calls in
 * progress were made from (outermost first); node 0 is the empty one. */
struct ctx_node {
	uint32_t parent, fn;
};

/* Self cost of one (context, function) pair. */
struct stack_cost {
	uint32_t ctx, fn;
	uint64_t instr, cycles;
};

struct pending_call {
	uint64_t ret, site, instr0, cycles0;
	uint32_t caller;
};

struct src_state {
	struct frame stack[STACK_MAX];
	unsigned depth;
	uint32_t cur;              /* function being executed (dynamic naming) */
	int pending;               /* a call or exception entry waits for its first instruction */
	struct pending_call pend;
	int check_return;          /* the next instruction may be a return address */
	int lost;                  /* trace gap or loss: the position may be anywhere */
	uint64_t instr, cycles;
	uint64_t last_addr;
	uint32_t last_fn;
	uint32_t ctx;              /* folded stacks: the current context */
	struct ctab diff;          /* ranges not folded yet */
	struct ctab fdiff;         /* folded stacks, with symbols: ranges by context */
};

/* Open addressing of indices (index + 1; 0 = free). */
struct index_set {
	uint32_t *slot;
	size_t cap, n;
};

struct prof {
	const struct symtab *st;
	int dynamic;               /* no symbols: functions are call targets */
	int per_address;           /* keep costs per address (callgrind) */
	struct slot_budget budget;
	struct fn_rec *fn;
	size_t nfn, capfn;
	struct index_set fn_by_entry;  /* dynamic: functions by entry */
	struct edge *edges;
	size_t nedge, capedge;
	struct index_set edge_index;   /* by (caller, callee, site) */
	struct ctab counts;            /* group: 0 (symbols) or the function */
	struct ctab cycles;
	struct src_state *src[SOURCES];
	/* folded stacks (prof_keep_stacks) */
	int stacks;
	struct ctx_node *node;
	size_t nnode, capnode;
	struct index_set node_index;   /* by (parent, fn) */
	struct stack_cost *sc;
	size_t nsc, capsc;
	struct index_set sc_index;     /* by (ctx, fn) */
	struct ctab fcounts, fcycles;  /* with symbols: group = context */
	uint64_t instr, cycles_total, other_cycles;
	unsigned sources;
	int finished;
	char err[256];
};

static int prof_fail(const struct prof *pc, int rc)
{
	struct prof *p = (struct prof *)pc;
	if (rc == SLOT_LIMIT)
		snprintf(p->err, sizeof(p->err),
			 "the profile's counters would need more than %zu %s (the limit): the trace covers too much "
			 "of the memory image, or makes too many different calls",
			 p->budget.limit >> (p->budget.limit >= (1u << 20) ? 20 : 10),
			 p->budget.limit >= (1u << 20) ? "MiB" : "KiB");
	else
		snprintf(p->err, sizeof(p->err), "out of memory");
	return -1;
}

const char *prof_error(const struct prof *p)
{
	return p->err;
}

uint64_t prof_instructions(const struct prof *p)
{
	return p->instr;
}

size_t prof_memory(const struct prof *p)
{
	return p->budget.used;
}

int prof_needs_insns(const struct csd_trace_config *cfg)
{
	return cfg->protocol == CSD_PROTO_ETM3 && (cfg->etmcr >> 12 & 1);
}

/* Grow an array charged to the budget. */
static int prof_grow(struct prof *p, void **arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return SLOT_OK;
	size_t ncap = *cap ? *cap * 2 : first;
	if (ncap > p->budget.limit / elem || p->budget.used > p->budget.limit - (ncap - *cap) * elem)
		return SLOT_LIMIT;
	void *q = realloc(*arr, ncap * elem);
	if (!q)
		return SLOT_NOMEM;
	p->budget.used += (ncap - *cap) * elem;
	*arr = q;
	*cap = ncap;
	return SLOT_OK;
}

/* ---- index sets ---- */

static uint64_t mix(uint64_t k)
{
	k ^= k >> 31;
	k *= UINT64_C(0x9E3779B97F4A7C15);
	return k ^ (k >> 29);
}

static uint64_t fn_hash(const struct prof *p, uint32_t i)
{
	return mix(p->fn[i].entry);
}

static uint64_t edge_hash3(uint32_t caller, uint32_t callee, uint64_t site)
{
	return mix(site * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)caller << 32 | callee));
}

static uint64_t edge_hash(const struct prof *p, uint32_t i)
{
	const struct edge *g = &p->edges[i];
	return edge_hash3(g->caller, g->callee, g->site);
}

/* The probe sequence of h in s (s->cap > 0): set_first, then set_next
 * until a free slot. */
static size_t set_first(const struct index_set *s, uint64_t h)
{
	return (size_t)h & (s->cap - 1);
}

static size_t set_next(const struct index_set *s, size_t k)
{
	return (k + 1) & (s->cap - 1);
}

/* Store v in the first free slot of the probe sequence of h (cap is a
 * power of two with a free slot). */
static void slots_put(uint32_t *slot, size_t cap, uint64_t h, uint32_t v)
{
	size_t k = (size_t)h & (cap - 1);
	while (slot[k])
		k = (k + 1) & (cap - 1);
	slot[k] = v;
}

/* Add index+1 to s under hash h (after set_reserve). */
static void set_put(struct index_set *s, uint64_t h, uint32_t index)
{
	slots_put(s->slot, s->cap, h, index + 1);
	s->n++;
}

/* Make room for one more index; rehash with hash(p, index). */
static int set_reserve(struct prof *p, struct index_set *s, uint64_t (*hash)(const struct prof *, uint32_t))
{
	if ((s->n + 1) * 2 <= s->cap)
		return SLOT_OK;
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	if (ncap > p->budget.limit / sizeof(uint32_t) || p->budget.used > p->budget.limit - ncap * sizeof(uint32_t))
		return SLOT_LIMIT;
	uint32_t *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SLOT_NOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->slot[i])
			continue;
		slots_put(ns, ncap, hash(p, s->slot[i] - 1), s->slot[i]);
	}
	p->budget.used += ncap * sizeof(uint32_t);
	p->budget.used -= s->cap * sizeof(uint32_t);
	free(s->slot);
	s->slot = ns;
	s->cap = ncap;
	return SLOT_OK;
}

/* ---- functions, costs, edges ---- */

static int add_fn(struct prof *p, uint64_t entry, const char *name, uint32_t *id)
{
	int rc = prof_grow(p, (void **)&p->fn, &p->capfn, p->nfn, sizeof(*p->fn), 256);
	if (rc != SLOT_OK)
		return rc;
	if (p->nfn >= SLOT_GROUP_MAX)
		return SLOT_LIMIT;
	struct fn_rec *f = &p->fn[p->nfn];
	memset(f, 0, sizeof(*f));
	f->entry = entry;
	f->name = name;
	*id = (uint32_t)p->nfn++;
	return SLOT_OK;
}

/* The function of the symbol containing addr (symbols). */
static uint32_t static_fn(const struct prof *p, uint64_t addr)
{
	const struct sym_func *f = symtab_find(p->st, addr);
	return f ? (uint32_t)symtab_func_index(p->st, f) + 1 : FN_UNKNOWN;
}

/* The function a call entering at addr goes to. */
static int callee_fn(struct prof *p, uint64_t addr, uint32_t *id)
{
	if (!p->dynamic) {
		*id = static_fn(p, addr);
		return SLOT_OK;
	}
	struct index_set *s = &p->fn_by_entry;
	if (s->cap) {
		for (size_t k = set_first(s, mix(addr)); s->slot[k]; k = set_next(s, k))
			if (p->fn[s->slot[k] - 1].entry == addr) {
				*id = s->slot[k] - 1;
				return SLOT_OK;
			}
	}
	int rc = set_reserve(p, s, fn_hash);
	if (rc == SLOT_OK)
		rc = add_fn(p, addr, NULL, id);
	if (rc != SLOT_OK)
		return rc;
	set_put(s, mix(addr), *id);
	return SLOT_OK;
}

static int get_edge(struct prof *p, uint32_t caller, uint32_t callee, uint64_t site, uint64_t target, uint32_t *id)
{
	struct index_set *s = &p->edge_index;
	uint64_t h = edge_hash3(caller, callee, site);
	if (s->cap) {
		for (size_t k = set_first(s, h); s->slot[k]; k = set_next(s, k)) {
			const struct edge *g = &p->edges[s->slot[k] - 1];
			if (g->caller == caller && g->callee == callee && g->site == site) {
				*id = s->slot[k] - 1;
				return SLOT_OK;
			}
		}
	}
	int rc = set_reserve(p, s, edge_hash);
	if (rc == SLOT_OK)
		rc = prof_grow(p, (void **)&p->edges, &p->capedge, p->nedge, sizeof(*p->edges), 256);
	if (rc == SLOT_OK && p->nedge >= UINT32_MAX - 1)
		rc = SLOT_LIMIT;
	if (rc != SLOT_OK)
		return rc;
	struct edge *g = &p->edges[p->nedge];
	memset(g, 0, sizeof(*g));
	g->caller = caller;
	g->callee = callee;
	g->site = site;
	g->target = target;
	*id = (uint32_t)p->nedge++;
	set_put(s, h, *id);
	return SLOT_OK;
}

/* ---- folded stacks ---- */

static uint64_t pair_hash(uint32_t a, uint32_t b)
{
	return mix((uint64_t)a << 32 | b) ^ a;
}

static uint64_t node_hash(const struct prof *p, uint32_t i)
{
	return pair_hash(p->node[i].parent, p->node[i].fn);
}

static uint64_t sc_hash(const struct prof *p, uint32_t i)
{
	return pair_hash(p->sc[i].ctx, p->sc[i].fn);
}

/* The context `parent` extended by a call made from function fn. */
static int child_ctx(struct prof *p, uint32_t parent, uint32_t fn, uint32_t *id)
{
	struct index_set *s = &p->node_index;
	uint64_t h = pair_hash(parent, fn);
	if (s->cap)
		for (size_t k = set_first(s, h); s->slot[k]; k = set_next(s, k)) {
			const struct ctx_node *n = &p->node[s->slot[k] - 1];
			if (n->parent == parent && n->fn == fn) {
				*id = s->slot[k] - 1;
				return SLOT_OK;
			}
		}
	int rc = set_reserve(p, s, node_hash);
	if (rc == SLOT_OK)
		rc = prof_grow(p, (void **)&p->node, &p->capnode, p->nnode, sizeof(*p->node), 256);
	if (rc == SLOT_OK && p->nnode >= SLOT_GROUP_MAX)
		rc = SLOT_LIMIT; /* contexts are slot groups */
	if (rc != SLOT_OK)
		return rc;
	p->node[p->nnode].parent = parent;
	p->node[p->nnode].fn = fn;
	*id = (uint32_t)p->nnode++;
	set_put(s, h, *id);
	return SLOT_OK;
}

static int stack_cost_add(struct prof *p, uint32_t ctx, uint32_t fn, uint64_t instr, uint64_t cycles)
{
	struct index_set *s = &p->sc_index;
	uint64_t h = pair_hash(ctx, fn);
	if (s->cap)
		for (size_t k = set_first(s, h); s->slot[k]; k = set_next(s, k)) {
			struct stack_cost *c = &p->sc[s->slot[k] - 1];
			if (c->ctx == ctx && c->fn == fn) {
				c->instr += instr;
				c->cycles += cycles;
				return SLOT_OK;
			}
		}
	int rc = set_reserve(p, s, sc_hash);
	if (rc == SLOT_OK)
		rc = prof_grow(p, (void **)&p->sc, &p->capsc, p->nsc, sizeof(*p->sc), 256);
	if (rc == SLOT_OK && p->nsc >= UINT32_MAX - 1)
		rc = SLOT_LIMIT;
	if (rc != SLOT_OK)
		return rc;
	struct stack_cost *c = &p->sc[p->nsc];
	c->ctx = ctx;
	c->fn = fn;
	c->instr = instr;
	c->cycles = cycles;
	set_put(s, h, (uint32_t)p->nsc++);
	return SLOT_OK;
}

int prof_keep_stacks(struct prof *p)
{
	if (p->stacks)
		return 0;
	int rc = prof_grow(p, (void **)&p->node, &p->capnode, 0, sizeof(*p->node), 256);
	if (rc != SLOT_OK)
		return prof_fail(p, rc);
	p->node[0].parent = 0;
	p->node[0].fn = FN_UNKNOWN;
	p->nnode = 1;
	p->stacks = 1;
	return 0;
}

struct prof *prof_new(const struct symtab *st, int per_address, size_t mem_limit)
{
	struct prof *p = calloc(1, sizeof(*p));
	uint32_t id;
	if (!p)
		return NULL;
	p->st = st;
	p->dynamic = symtab_num_funcs(st) == 0;
	p->per_address = per_address;
	p->budget.limit = mem_limit;
	ctab_init(&p->counts, &p->budget);
	ctab_init(&p->cycles, &p->budget);
	ctab_init(&p->fcounts, &p->budget);
	ctab_init(&p->fcycles, &p->budget);
	if (add_fn(p, 0, NULL, &id) != SLOT_OK) { /* FN_UNKNOWN */
		prof_free(p);
		return NULL;
	}
	for (size_t i = 0; !p->dynamic && i < symtab_num_funcs(st); i++)
		if (add_fn(p, symtab_func(st, i)->start, symtab_func(st, i)->name, &id) != SLOT_OK) {
			prof_free(p);
			return NULL;
		}
	return p;
}

void prof_free(struct prof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < SOURCES; i++)
		if (p->src[i]) {
			ctab_free(&p->src[i]->diff);
			ctab_free(&p->src[i]->fdiff);
			free(p->src[i]);
		}
	free(p->fn);
	free(p->edges);
	free(p->fn_by_entry.slot);
	free(p->edge_index.slot);
	ctab_free(&p->counts);
	ctab_free(&p->cycles);
	ctab_free(&p->fcounts);
	ctab_free(&p->fcycles);
	free(p->node);
	free(p->node_index.slot);
	free(p->sc);
	free(p->sc_index.slot);
	free(p);
}

static struct src_state *source(struct prof *p, unsigned id)
{
	struct src_state **s = &p->src[id % SOURCES];
	if (!*s) {
		*s = calloc(1, sizeof(struct src_state));
		if (!*s)
			return NULL;
		ctab_init(&(*s)->diff, &p->budget);
		ctab_init(&(*s)->fdiff, &p->budget);
		p->sources++;
	}
	return *s;
}

static void pop_frame(struct prof *p, struct src_state *s)
{
	struct frame *f = &s->stack[--s->depth];
	struct edge *g = &p->edges[f->edge];
	g->instr += s->instr - f->instr0;
	g->cycles += s->cycles - f->cycles0;
}

static int push_frame(struct prof *p, struct src_state *s, struct frame *f)
{
	/* Deeper calls are counted but not followed (no inclusive cost, and
	 * their stacks stay at the deepest one followed): the outer calls,
	 * which a profile is read for, keep theirs. */
	if (s->depth >= STACK_MAX)
		return SLOT_OK;
	f->ctx0 = s->ctx;
	if (p->stacks) {
		int rc = child_ctx(p, s->ctx, f->caller, &s->ctx);
		if (rc != SLOT_OK)
			return rc;
	}
	s->stack[s->depth++] = *f;
	return SLOT_OK;
}

/* With symbols: execution came from another function to `first`, inside a
 * function (not at its entry) that the call in progress at *frame was made
 * from: 1, that frame found (the frames from it up have ended without
 * their returns). */
static int unwound_to(const struct prof *p, const struct src_state *s, uint64_t first, unsigned *frame)
{
	const uint32_t fn = static_fn(p, first);
	if (fn == FN_UNKNOWN || fn == s->last_fn || p->fn[fn].entry == first)
		return 0;
	unsigned i = s->depth, looked = 0;
	while (i > 0 && looked++ < RETURN_SEARCH)
		if (s->stack[--i].caller == fn) {
			*frame = i;
			return 1;
		}
	return 0;
}

/* Instructions first..last (n of them, [first, end) of instruction set
 * isa), the last one's flags, and the cycles of them all. */
static int on_insns(struct prof *p, struct src_state *s, const struct csd_record *r, uint64_t first, uint64_t last,
		    uint64_t end, uint64_t n, uint64_t cyc)
{
	int rc;
	if (s->pending) {
		s->pending = 0;
		/* Execution resumed at the return address: nothing of the
		 * handler was traced, so there is no call to show. */
		if (first != s->pend.ret) {
			uint32_t callee, edge;
			if ((rc = callee_fn(p, first, &callee)) != SLOT_OK ||
			    (rc = get_edge(p, s->pend.caller, callee, s->pend.site, first, &edge)) != SLOT_OK)
				return prof_fail(p, rc);
			struct frame f;
			f.ret = s->pend.ret;
			f.instr0 = s->pend.instr0;
			f.cycles0 = s->pend.cycles0;
			f.caller = s->pend.caller;
			f.edge = edge;
			p->edges[edge].calls++;
			p->fn[callee].calls++;
			if ((rc = push_frame(p, s, &f)) != SLOT_OK)
				return prof_fail(p, rc);
			s->cur = callee;
		}
		s->lost = 0;
	} else if (s->check_return) {
		unsigned i = s->depth, looked = 0, found = 0;
		while (i > 0 && looked++ < RETURN_SEARCH)
			if (s->stack[--i].ret == first) {
				found = 1;
				break;
			}
		if (!found && !s->lost && !p->dynamic)
			found = unwound_to(p, s, first, &i);
		if (found) {
			uint32_t caller = s->stack[i].caller;
			s->ctx = s->stack[i].ctx0;
			while (s->depth > i)
				pop_frame(p, s);
			s->cur = caller;
		} else if (s->lost) {
			s->cur = FN_UNKNOWN;
		}
		s->lost = 0;
	}
	s->check_return = 0;

	uint32_t group = p->dynamic ? s->cur : 0;
	if (p->dynamic) {
		p->fn[s->cur].instr += n;
		p->fn[s->cur].cycles += cyc;
	}
	if (!p->dynamic || p->per_address) {
		if (r->type == CSD_REC_RANGE)
			rc = slot_range(&s->diff, r->isa, group, first, end);
		else
			rc = ctab_add(&p->counts, group, first, 1);
		if (rc == SLOT_OK && cyc)
			rc = ctab_add(&p->cycles, group, last, (int64_t)cyc);
		if (rc != SLOT_OK)
			return prof_fail(p, rc);
	}
	if (p->stacks) {
		if (p->dynamic)
			rc = stack_cost_add(p, s->ctx, s->cur, n, cyc);
		else if (r->type == CSD_REC_RANGE)
			rc = slot_range(&s->fdiff, r->isa, s->ctx, first, end);
		else
			rc = ctab_add(&p->fcounts, s->ctx, first, 1);
		if (rc == SLOT_OK && cyc && !p->dynamic)
			rc = ctab_add(&p->fcycles, s->ctx, last, (int64_t)cyc);
		if (rc != SLOT_OK)
			return prof_fail(p, rc);
	}
	s->instr += n;
	s->cycles += cyc;
	p->instr += n;
	p->cycles_total += cyc;
	s->last_addr = last;
	s->last_fn = p->dynamic ? s->cur : static_fn(p, last);

	uint32_t taken = CSD_RECF_BRANCH | CSD_RECF_TAKEN;
	if ((r->flags & taken) == taken && (r->flags & CSD_RECF_LINK)) {
		s->pending = 1;
		s->pend.ret = end;
		s->pend.site = last;
		s->pend.caller = s->last_fn;
		s->pend.instr0 = s->instr;
		s->pend.cycles0 = s->cycles;
	} else if ((r->flags & taken) == taken) {
		s->check_return = 1;
	}
	return 0;
}

int prof_record(struct prof *p, unsigned src, const struct csd_record *r)
{
	struct src_state *s = source(p, src);
	if (!s)
		return prof_fail(p, SLOT_NOMEM);
	switch (r->type) {
	case CSD_REC_RANGE:
		if (!r->count)
			return 0;
		return on_insns(p, s, r, r->addr, r->last, r->end, r->count,
				(r->flags & CSD_RECF_CYCLES) ? r->cycles : 0);
	case CSD_REC_INSN:
		return on_insns(p, s, r, r->addr, r->addr, r->addr + r->size, 1,
				(r->flags & CSD_RECF_CYCLES) ? r->cycles : 0);
	case CSD_REC_EXCEPTION:
		/* Entry to a handler: a call from the interrupted function,
		 * returning to the preferred return address. */
		s->pending = 1;
		s->pend.ret = r->addr;
		s->pend.site = s->instr ? s->last_addr : r->addr;
		s->pend.caller = s->instr ? s->last_fn : FN_UNKNOWN;
		s->pend.instr0 = s->instr;
		s->pend.cycles0 = s->cycles;
		s->check_return = 0;
		break;
	case CSD_REC_EXCEPTION_RETURN:
		s->check_return = 1;
		break;
	case CSD_REC_TRACE_ON:
	case CSD_REC_NO_MEMORY:
	case CSD_REC_ADDRESS_UNKNOWN:
	case CSD_REC_NOSYNC:
	case CSD_REC_ISA_UNSUPPORTED:
	case CSD_REC_ERROR:
		/* Where execution continues says nothing about a call whose
		 * first instruction the gap hid. */
		s->pending = 0;
		s->check_return = 1;
		s->lost = 1;
		break;
	default:
		break;
	}
	if (r->flags & CSD_RECF_CYCLES)
		p->other_cycles += r->cycles;
	return 0;
}

int prof_source_end(struct prof *p, unsigned src, csd_image *img)
{
	struct src_state *s = p->src[src % SOURCES];
	if (!s)
		return 0;
	int rc = slot_fold(&s->diff, img, &p->counts, NULL, 0);
	if (rc == SLOT_OK && p->stacks)
		rc = slot_fold(&s->fdiff, img, &p->fcounts, NULL, 0);
	return rc == SLOT_OK ? 0 : prof_fail(p, rc);
}

/* Values of group in [from, to), in address order, through fn. */
typedef void (*cost_fn)(void *ctx, uint64_t addr, uint64_t count);

static void each_value(const struct ctab *t, const uint64_t *keys, size_t nkeys, uint32_t group, uint64_t from,
		       uint64_t to, cost_fn fn, void *ctx)
{
	for (size_t k = slot_keys_lower(keys, nkeys, slot_key(group, from)); k < nkeys; k++) {
		uint64_t base = slot_key_addr(keys[k]);
		if (slot_key_group(keys[k]) != group || base >= to)
			break;
		const struct count_chunk *c = ctab_find(t, keys[k]);
		for (unsigned j = 0; j < SLOT_CHUNK; j++) {
			uint64_t a = base + 2 * j, v = (uint64_t)count_chunk_get(c, j);
			if (!v || a < from)
				continue;
			if (a >= to)
				break;
			fn(ctx, a, v);
		}
	}
}

static void add_instr(void *ctx, uint64_t addr, uint64_t v)
{
	struct prof *p = ctx;
	p->fn[static_fn(p, addr)].instr += v;
}

static void add_cycles(void *ctx, uint64_t addr, uint64_t v)
{
	struct prof *p = ctx;
	p->fn[static_fn(p, addr)].cycles += v;
}

/* With symbols: the costs per (context, address) become costs per
 * (context, function of the address). */
static int fold_table(struct prof *p, const struct ctab *t, int cycles)
{
	size_t nk;
	int failed = 0;
	uint64_t *keys = ctab_keys(t, &nk, &failed);
	if (failed)
		return prof_fail(p, SLOT_NOMEM);
	int rc = SLOT_OK;
	for (size_t k = 0; k < nk && rc == SLOT_OK; k++) {
		const struct count_chunk *c = ctab_find(t, keys[k]);
		uint64_t base = slot_key_addr(keys[k]);
		for (unsigned j = 0; j < SLOT_CHUNK && rc == SLOT_OK; j++) {
			uint64_t v = (uint64_t)count_chunk_get(c, j);
			if (v)
				rc = stack_cost_add(p, slot_key_group(keys[k]), static_fn(p, base + 2 * j), cycles ? 0 : v,
						    cycles ? v : 0);
		}
	}
	free(keys);
	return rc == SLOT_OK ? 0 : prof_fail(p, rc);
}

static int fold_stacks(struct prof *p)
{
	if (fold_table(p, &p->fcounts, 0) < 0 || fold_table(p, &p->fcycles, 1) < 0)
		return -1;
	ctab_free(&p->fcounts);
	ctab_free(&p->fcycles);
	return 0;
}

int prof_finish(struct prof *p)
{
	if (p->finished)
		return 0;
	p->finished = 1;
	/* Calls still in progress when the trace ends cost what ran until then. */
	for (size_t i = 0; i < SOURCES; i++)
		while (p->src[i] && p->src[i]->depth)
			pop_frame(p, p->src[i]);
	if (p->dynamic)
		return 0;
	size_t nk, nc;
	int failed = 0;
	uint64_t *keys = ctab_keys(&p->counts, &nk, &failed);
	uint64_t *ckeys = ctab_keys(&p->cycles, &nc, &failed);
	if (failed) {
		free(keys);
		free(ckeys);
		return prof_fail(p, SLOT_NOMEM);
	}
	each_value(&p->counts, keys, nk, 0, 0, UINT64_MAX, add_instr, p);
	each_value(&p->cycles, ckeys, nc, 0, 0, UINT64_MAX, add_cycles, p);
	free(keys);
	free(ckeys);
	return p->stacks ? fold_stacks(p) : 0;
}

/* ---- output ---- */

static void fn_name(const struct prof *p, uint32_t id, char *buf, size_t cap)
{
	if (id == FN_UNKNOWN)
		snprintf(buf, cap, "(unknown)");
	else if (p->fn[id].name)
		snprintf(buf, cap, "%s", p->fn[id].name);
	else
		snprintf(buf, cap, "0x%08" PRIx64, p->fn[id].entry);
}

static unsigned line_of(const struct prof *p, uint64_t addr, const char **file)
{
	unsigned line = 0;
	const char *f = NULL;
	if (!symtab_line(p->st, addr, &f, &line)) {
		f = NULL;
		line = 0;
	}
	if (file)
		*file = f ? f : "???";
	return line;
}

static const struct prof *sort_ctx;
static int sort_by_cycles;

static int cmp_fn_cost(const void *a, const void *b)
{
	const struct fn_rec *x = &sort_ctx->fn[*(const uint32_t *)a], *y = &sort_ctx->fn[*(const uint32_t *)b];
	uint64_t kx = sort_by_cycles ? x->cycles : x->instr, ky = sort_by_cycles ? y->cycles : y->instr;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

int prof_print_top(const struct prof *p, FILE *out, unsigned long top, int by_cycles)
{
	uint32_t *order = malloc((p->nfn ? p->nfn : 1) * sizeof(*order));
	size_t n = 0;
	char name[256];
	if (!order)
		return prof_fail(p, SLOT_NOMEM);
	for (size_t i = 0; i < p->nfn; i++)
		if (p->fn[i].instr || p->fn[i].calls)
			order[n++] = (uint32_t)i;
	sort_ctx = p;
	sort_by_cycles = by_cycles;
	if (n)
		qsort(order, n, sizeof(*order), cmp_fn_cost);
	fprintf(out, "%" PRIu64 " instructions, %" PRIu64 " cycles in them (+%" PRIu64
		" cycles outside instructions: trace off, gaps), %u source%s, %zu functions\n",
		p->instr, p->cycles_total, p->other_cycles, p->sources, p->sources == 1 ? "" : "s", n);
	if (p->dynamic)
		fprintf(out, "No symbols (--elf): functions are the call targets seen in the trace.\n");
	fprintf(out, "\n%12s %7s %12s %7s %8s  %s\n", "Instr", "%", "Cycles", "%", "Calls", "Function");
	size_t shown = top && top < n ? (size_t)top : n;
	for (size_t i = 0; i < shown; i++) {
		const struct fn_rec *f = &p->fn[order[i]];
		const char *file;
		fn_name(p, order[i], name, sizeof(name));
		fprintf(out, "%12" PRIu64 " %6.2f%% %12" PRIu64 " %6.2f%% %8" PRIu64 "  %s", f->instr,
			pct(f->instr, p->instr), f->cycles, pct(f->cycles, p->cycles_total), f->calls, name);
		unsigned line = order[i] == FN_UNKNOWN ? 0 : line_of(p, f->entry, &file);
		if (line)
			fprintf(out, "  %s:%u", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line);
		fputc('\n', out);
	}
	if (shown < n)
		fprintf(out, "(%zu more; --top 0 lists all)\n", n - shown);
	free(order);
	return 0;
}

static int cmp_edge_caller(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->callee < y->callee ? -1 : x->callee > y->callee;
}

struct cost_lines {
	struct prof *p;
	FILE *f;
	uint32_t group;
	int unknown_only;          /* symbols: only addresses outside every function */
};

static void cost_line(void *ctx, uint64_t addr, uint64_t count)
{
	struct cost_lines *x = ctx;
	if (x->unknown_only && static_fn(x->p, addr) != FN_UNKNOWN)
		return;
	fprintf(x->f, "0x%" PRIx64 " %u %" PRIu64 " %" PRIu64 "\n", addr, line_of(x->p, addr, NULL), count,
		(uint64_t)ctab_get(&x->p->cycles, x->group, addr));
}

/*
 * Callgrind format (valgrind docs, "Callgrind Format Specification"):
 * per function its file (fl=) and name (fn=), cost lines "position
 * costs" with positions "instr line", then per call a cfl=/cfn= pair,
 * "calls=COUNT TARGET-POSITION" and the call site's position with the
 * inclusive cost of those calls.
 */
int prof_write_callgrind(struct prof *p, FILE *f, int argc, char **argv)
{
	char name[256];
	size_t nk;
	int failed = 0;
	uint64_t *keys = ctab_keys(&p->counts, &nk, &failed);
	if (failed)
		return prof_fail(p, SLOT_NOMEM);
	fprintf(f, "# callgrind format\nversion: 1\ncreator: csdec %s\ncmd: csdec", csd_version());
	for (int i = 0; i < argc; i++) {
		fputc(' ', f);
		for (const char *c = argv[i]; *c; c++)
			fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
	}
	fprintf(f, "\npositions: instr line\nevents: Instr Cycles\nsummary: %" PRIu64 " %" PRIu64 "\n", p->instr,
		p->cycles_total);
	if (p->nedge)
		qsort(p->edges, p->nedge, sizeof(*p->edges), cmp_edge_caller);
	size_t e = 0;
	for (uint32_t fid = 0; fid < p->nfn; fid++) {
		if (!p->fn[fid].instr && !(e < p->nedge && p->edges[e].caller == fid))
			continue;
		const char *file;
		line_of(p, fid == FN_UNKNOWN ? 0 : p->fn[fid].entry, &file);
		fn_name(p, fid, name, sizeof(name));
		fprintf(f, "\nfl=%s\nfn=%s\n", fid == FN_UNKNOWN ? "???" : file, name);
		struct cost_lines x = { p, f, p->dynamic ? fid : 0, 0 };
		if (p->dynamic) {
			each_value(&p->counts, keys, nk, fid, 0, UINT64_MAX, cost_line, &x);
		} else if (fid == FN_UNKNOWN) {
			x.unknown_only = 1;
			each_value(&p->counts, keys, nk, 0, 0, UINT64_MAX, cost_line, &x);
		} else {
			const struct sym_func *sf = symtab_func(p->st, fid - 1), *next = symtab_func(p->st, fid);
			uint64_t to = next && next->start < sf->end ? next->start : sf->end;
			each_value(&p->counts, keys, nk, 0, sf->start, to, cost_line, &x);
		}
		for (; e < p->nedge && p->edges[e].caller == fid; e++) {
			const struct edge *g = &p->edges[e];
			const char *cfile;
			line_of(p, g->callee == FN_UNKNOWN ? 0 : p->fn[g->callee].entry, &cfile);
			fn_name(p, g->callee, name, sizeof(name));
			fprintf(f, "cfl=%s\ncfn=%s\ncalls=%" PRIu64 " 0x%" PRIx64 " %u\n0x%" PRIx64 " %u %" PRIu64 " %" PRIu64 "\n",
				g->callee == FN_UNKNOWN ? "???" : cfile, name, g->calls, g->target, line_of(p, g->target, NULL),
				g->site, line_of(p, g->site, NULL), g->instr, g->cycles);
		}
	}
	free(keys);
	/* The edge index refers to the order before the sort. */
	free(p->edge_index.slot);
	memset(&p->edge_index, 0, sizeof(p->edge_index));
	return 0;
}

/* A name as one frame of a folded line: ';' separates frames and the
 * line ends at a newline. */
static void put_frame_name(const struct prof *p, FILE *f, uint32_t fn)
{
	char name[256];
	fn_name(p, fn, name, sizeof(name));
	for (char *c = name; *c; c++)
		if (*c == ';' || (unsigned char)*c < 0x20)
			*c = '_';
	fputs(name, f);
}

/*
 * Folded ("collapsed") stacks, as flamegraph.pl, inferno and speedscope
 * read them: one line per call stack, the functions outermost first
 * separated by ';', a space and the self cost of the innermost one.
 */
int prof_write_folded(const struct prof *p, FILE *f, int by_cycles)
{
	static uint32_t chain[STACK_MAX + 1];
	if (!p->stacks)
		return 0;
	for (size_t i = 0; i < p->nsc; i++) {
		const struct stack_cost *c = &p->sc[i];
		uint64_t w = by_cycles ? c->cycles : c->instr;
		if (!w)
			continue;
		size_t n = 0;
		for (uint32_t x = c->ctx; x && n <= STACK_MAX; x = p->node[x].parent)
			chain[n++] = p->node[x].fn;
		while (n)
			put_frame_name(p, f, chain[--n]), fputc(';', f);
		put_frame_name(p, f, c->fn);
		fprintf(f, " %" PRIu64 "\n", w);
	}
	return 0; /* write errors: the caller's flush */
}

uint64_t prof_cycles(const struct prof *p)
{
	return p->cycles_total;
}
