/*
 * cmd_profile.c - `csdec profile`: where the traced instructions and
 * cycles went, per function, and who called whom.
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
 * exception that never returns) pop everything above the frame they reach.
 * An exception whose handler is not traced (trace resumes at the return
 * address) is not a call, nor is a call whose first instruction falls in
 * a trace gap.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "symbols.h"

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
};

struct profile {
	const struct symtab *st;
	int dynamic;               /* no symbols: functions are call targets */
	struct fn_rec *fn;
	size_t nfn, capfn;
	struct count_map fn_by_entry;  /* dynamic: entry -> id (aux) */
	struct count_map cost;         /* (id << 32 | addr): count, cycles */
	struct edge *edges;
	size_t nedge, capedge;
	struct count_map edge_index;   /* hash of (caller, callee, site) -> index (aux) */
	struct src_state *src[MAX_IDS];
	uint64_t instr, cycles, other_cycles;
	unsigned sources;
	/* options */
	const char *callgrind_path;
	unsigned long top;
	int by_cycles;
};

static void usage_profile(FILE *out)
{
	fprintf(out,
		"Usage: csdec profile <snapshot-dir> [--id ID]... [--elf FILE[@BIAS]]... [--top N]\n"
		"                     [--sort instr|cycles] [--callgrind FILE]\n"
		"       csdec profile --trace FILE --protocol etm3|ptm [decode options] ...\n"
		"\n"
		"Instructions and cycles per function (self), the number of calls to each,\n"
		"as a flat list of the top functions; with --callgrind also the call graph\n"
		"with inclusive costs, for KCachegrind / callgrind_annotate. Functions are\n"
		"the ELF's symbols; without --elf, the targets of the calls in the trace\n"
		"(named by address).\n"
		"\n"
		"  --top N            list the N functions with the most instructions (or\n"
		"                     cycles); 0: all (default 20)\n"
		"  --sort KEY         instr (default) or cycles\n"
		"  --callgrind FILE   write the profile in callgrind format\n"
		"                     (events: Instr Cycles; positions: instr line)\n"
		"  --elf FILE[@BIAS]  symbols and code of the program; may be repeated\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"Other options as for 'csdec decode' (--trace, --protocol, --reg, --image...).\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (the profile of what decoded\n"
		"is still written), 2 usage or I/O error.\n");
}

static int profile_option(void *user, int argc, char **argv, int *i)
{
	struct profile *p = user;
	const char *a = argv[*i], *v = NULL;
	const char *names[] = { "--callgrind", "--top", "--sort" };
	size_t which = 0;
	for (; which < 3; which++) {
		size_t n = strlen(names[which]);
		if (strncmp(a, names[which], n) == 0 && a[n] == '=') {
			v = a + n + 1;
			break;
		}
		if (strcmp(a, names[which]) == 0) {
			if (*i + 1 >= argc)
				die_usage("%s needs a value", a);
			v = argv[++*i];
			break;
		}
	}
	if (which == 3) {
		if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0 || strcmp(a, "--insn") == 0)
			die_usage("profile: %s is an option of decode", a);
		return 0;
	}
	if (which == 0) {
		p->callgrind_path = v;
	} else if (which == 1) {
		p->top = (unsigned long)parse_number(v, "--top count");
	} else if (strcmp(v, "instr") == 0 || strcmp(v, "cycles") == 0) {
		p->by_cycles = v[0] == 'c';
	} else {
		die_usage("--sort expects instr or cycles, got '%s'", v);
	}
	return 1;
}

/* ---- functions, costs, edges ---- */

static uint32_t add_fn(struct profile *p, uint64_t entry, const char *name)
{
	if (p->nfn == p->capfn) {
		size_t ncap = p->capfn ? p->capfn * 2 : 256;
		struct fn_rec *n = realloc(p->fn, ncap * sizeof(*n));
		if (!n)
			die_io("out of memory");
		p->fn = n;
		p->capfn = ncap;
	}
	if (p->nfn >= UINT32_MAX)
		die_io("too many functions");
	struct fn_rec *f = &p->fn[p->nfn];
	memset(f, 0, sizeof(*f));
	f->entry = entry;
	f->name = name;
	return (uint32_t)p->nfn++;
}

/* The function a call entering at addr goes to. */
static uint32_t callee_fn(struct profile *p, uint64_t addr)
{
	if (!p->dynamic) {
		const struct sym_func *f = symtab_find(p->st, addr);
		return f ? (uint32_t)symtab_func_index(p->st, f) + 1 : FN_UNKNOWN;
	}
	struct count_entry *e = count_map_get(&p->fn_by_entry, addr);
	if (!e->count) {
		e->count = 1;
		e->aux = add_fn(p, addr, NULL);
	}
	return e->aux;
}

static uint64_t mix3(uint32_t a, uint32_t b, uint64_t c)
{
	uint64_t k = c * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)a << 32 | b);
	return k ^ (k >> 31);
}

static uint32_t get_edge(struct profile *p, uint32_t caller, uint32_t callee, uint64_t site, uint64_t target)
{
	/* Probe keys until the triple is found or a free one comes. */
	for (uint64_t key = mix3(caller, callee, site);; key++) {
		struct count_entry *e = count_map_get(&p->edge_index, key);
		if (e->count) {
			struct edge *g = &p->edges[e->aux];
			if (g->caller == caller && g->callee == callee && g->site == site)
				return e->aux;
			continue;
		}
		if (p->nedge == p->capedge) {
			size_t ncap = p->capedge ? p->capedge * 2 : 256;
			struct edge *n = realloc(p->edges, ncap * sizeof(*n));
			if (!n)
				die_io("out of memory");
			p->edges = n;
			p->capedge = ncap;
		}
		struct edge *g = &p->edges[p->nedge];
		memset(g, 0, sizeof(*g));
		g->caller = caller;
		g->callee = callee;
		g->site = site;
		g->target = target;
		e->count = 1;
		e->aux = (uint32_t)p->nedge++;
		return e->aux;
	}
}

static struct src_state *source(struct profile *p, uint8_t id)
{
	if (!p->src[id % MAX_IDS]) {
		p->src[id % MAX_IDS] = calloc(1, sizeof(struct src_state));
		if (!p->src[id % MAX_IDS])
			die_io("out of memory");
		p->sources++;
	}
	return p->src[id % MAX_IDS];
}

static struct frame *frame_at(struct src_state *s, unsigned k)
{
	return &s->stack[k];
}

static void pop_frame(struct profile *p, struct src_state *s)
{
	struct frame *f = frame_at(s, --s->depth);
	struct edge *g = &p->edges[f->edge];
	g->instr += s->instr - f->instr0;
	g->cycles += s->cycles - f->cycles0;
}

static void push_frame(struct profile *p, struct src_state *s, const struct frame *f)
{
	(void)p;
	/* Deeper calls are counted but not followed (no inclusive cost): the
	 * outer calls, which a profile is read for, keep theirs. */
	if (s->depth < STACK_MAX)
		*frame_at(s, s->depth++) = *f;
}

static void on_insn(struct profile *p, struct src_state *s, const struct csd_record *r)
{
	uint64_t cyc = (r->flags & CSD_RECF_CYCLES) ? r->cycles : 0;
	if (s->pending) {
		s->pending = 0;
		/* Execution resumed at the return address: nothing of the
		 * handler was traced, so there is no call to show. */
		if (r->addr != s->pend.ret) {
			uint32_t callee = callee_fn(p, r->addr);
			struct frame f;
			f.ret = s->pend.ret;
			f.instr0 = s->pend.instr0;
			f.cycles0 = s->pend.cycles0;
			f.caller = s->pend.caller;
			f.edge = get_edge(p, s->pend.caller, callee, s->pend.site, r->addr);
			p->edges[f.edge].calls++;
			p->fn[callee].calls++;
			push_frame(p, s, &f);
			s->cur = callee;
		}
		s->lost = 0;
	} else if (s->check_return) {
		unsigned i = s->depth, looked = 0, found = 0;
		while (i > 0 && looked++ < RETURN_SEARCH)
			if (frame_at(s, --i)->ret == r->addr) {
				found = 1;
				break;
			}
		if (found) {
			uint32_t caller = frame_at(s, i)->caller;
			while (s->depth > i)
				pop_frame(p, s);
			s->cur = caller;
		} else if (s->lost) {
			s->cur = FN_UNKNOWN;
		}
		s->lost = 0;
	}
	s->check_return = 0;

	uint32_t fid = p->dynamic ? s->cur : callee_fn(p, r->addr);
	struct count_entry *c = count_map_get(&p->cost, (uint64_t)fid << 32 | (r->addr & 0xFFFFFFFFu));
	c->count++;
	c->cycles += cyc;
	p->fn[fid].instr++;
	p->fn[fid].cycles += cyc;
	s->instr++;
	s->cycles += cyc;
	p->instr++;
	p->cycles += cyc;
	s->last_addr = r->addr;
	s->last_fn = fid;

	uint32_t taken = CSD_RECF_BRANCH | CSD_RECF_TAKEN;
	if ((r->flags & taken) == taken && (r->flags & CSD_RECF_LINK)) {
		s->pending = 1;
		s->pend.ret = r->addr + r->size;
		s->pend.site = r->addr;
		s->pend.caller = fid;
		s->pend.instr0 = s->instr;
		s->pend.cycles0 = s->cycles;
	} else if ((r->flags & taken) == taken) {
		s->check_return = 1;
	}
}

static void on_record(struct run_ctx *ctx, struct source_slot *slot, const struct csd_record *r)
{
	struct profile *p = ctx->user;
	struct src_state *s = source(p, slot->id);
	switch (r->type) {
	case CSD_REC_INSN:
		on_insn(p, s, r);
		return;
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
}

/* ---- output ---- */

static void fn_name(const struct profile *p, uint32_t id, char *buf, size_t cap)
{
	if (id == FN_UNKNOWN)
		snprintf(buf, cap, "(unknown)");
	else if (p->fn[id].name)
		snprintf(buf, cap, "%s", p->fn[id].name);
	else
		snprintf(buf, cap, "0x%08" PRIx64, p->fn[id].entry);
}

static unsigned line_of(const struct profile *p, uint64_t addr, const char **file)
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

static const struct profile *sort_ctx;

static int cmp_fn_cost(const void *a, const void *b)
{
	const struct fn_rec *x = &sort_ctx->fn[*(const uint32_t *)a], *y = &sort_ctx->fn[*(const uint32_t *)b];
	uint64_t kx = sort_ctx->by_cycles ? x->cycles : x->instr, ky = sort_ctx->by_cycles ? y->cycles : y->instr;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_top(FILE *out, struct profile *p)
{
	uint32_t *order = malloc((p->nfn ? p->nfn : 1) * sizeof(*order));
	size_t n = 0;
	char name[256];
	if (!order)
		die_io("out of memory");
	for (size_t i = 0; i < p->nfn; i++)
		if (p->fn[i].instr || p->fn[i].calls)
			order[n++] = (uint32_t)i;
	sort_ctx = p;
	qsort(order, n, sizeof(*order), cmp_fn_cost);
	fprintf(out, "%" PRIu64 " instructions, %" PRIu64 " cycles in them (+%" PRIu64
		" cycles outside instructions: trace off, gaps), %u source%s, %zu functions\n",
		p->instr, p->cycles, p->other_cycles, p->sources, p->sources == 1 ? "" : "s", n);
	if (p->dynamic)
		fprintf(out, "No symbols (--elf): functions are the call targets seen in the trace.\n");
	fprintf(out, "\n%12s %7s %12s %7s %8s  %s\n", "Instr", "%", "Cycles", "%", "Calls", "Function");
	size_t shown = p->top && p->top < n ? (size_t)p->top : n;
	for (size_t i = 0; i < shown; i++) {
		const struct fn_rec *f = &p->fn[order[i]];
		const char *file;
		fn_name(p, order[i], name, sizeof(name));
		fprintf(out, "%12" PRIu64 " %6.2f%% %12" PRIu64 " %6.2f%% %8" PRIu64 "  %s", f->instr, pct(f->instr, p->instr),
			f->cycles, pct(f->cycles, p->cycles), f->calls, name);
		unsigned line = order[i] == FN_UNKNOWN ? 0 : line_of(p, f->entry, &file);
		if (line)
			fprintf(out, "  %s:%u", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line);
		fputc('\n', out);
	}
	if (shown < n)
		fprintf(out, "(%zu more; --top 0 lists all)\n", n - shown);
	free(order);
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

/*
 * Callgrind format (valgrind docs, "Callgrind Format Specification"):
 * per function its file (fl=) and name (fn=), cost lines "position
 * costs" with positions "instr line", then per call a cfl=/cfn= pair,
 * "calls=COUNT TARGET-POSITION" and the call site's position with the
 * inclusive cost of those calls.
 */
static int write_callgrind(const char *path, struct profile *p, int argc, char **argv)
{
	FILE *f = fopen(path, "w");
	char name[256];
	if (!f)
		return -1;
	fprintf(f, "# callgrind format\nversion: 1\ncreator: csdec %s\ncmd: csdec", csd_version());
	for (int i = 0; i < argc; i++) {
		fputc(' ', f);
		for (const char *c = argv[i]; *c; c++)
			fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
	}
	fprintf(f, "\npositions: instr line\nevents: Instr Cycles\nsummary: %" PRIu64 " %" PRIu64 "\n", p->instr,
		p->cycles);
	size_t ncost, e = 0;
	struct count_entry *cost = count_map_sorted(&p->cost, &ncost); /* by function, then address */
	if (p->nedge)
		qsort(p->edges, p->nedge, sizeof(*p->edges), cmp_edge_caller);
	for (size_t i = 0; i < ncost || e < p->nedge;) {
		uint32_t fid = i < ncost ? (uint32_t)(cost[i].key >> 32) : p->edges[e].caller;
		if (e < p->nedge && p->edges[e].caller < fid)
			fid = p->edges[e].caller;
		const char *file;
		line_of(p, fid == FN_UNKNOWN ? 0 : p->fn[fid].entry, &file);
		fn_name(p, fid, name, sizeof(name));
		fprintf(f, "\nfl=%s\nfn=%s\n", fid == FN_UNKNOWN ? "???" : file, name);
		for (; i < ncost && (uint32_t)(cost[i].key >> 32) == fid; i++) {
			uint64_t addr = cost[i].key & 0xFFFFFFFFu;
			fprintf(f, "0x%" PRIx64 " %u %" PRIu64 " %" PRIu64 "\n", addr, line_of(p, addr, NULL), cost[i].count,
				cost[i].cycles);
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
	free(cost);
	return fclose(f) == 0 ? 0 : -1;
}

int csd_cmd_profile(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.top = 20;
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_profile, profile_option, &p);
	struct symtab *st = cli_load_symbols(&o);
	p.st = st;
	p.dynamic = symtab_num_funcs(st) == 0;
	add_fn(&p, 0, NULL); /* FN_UNKNOWN */
	for (size_t i = 0; !p.dynamic && i < symtab_num_funcs(st); i++)
		add_fn(&p, symtab_func(st, i)->start, symtab_func(st, i)->name);
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stderr; /* only frame errors are printed by the pipeline */
	ctx.on_record = on_record;
	ctx.user = &p;
	o.insn = 1;
	int status = cli_run(&o, &ctx, SLOT_FLOW);
	if (status != EXIT_USAGE) {
		/* Calls still in progress when the trace ends cost what ran until then. */
		for (size_t i = 0; i < MAX_IDS; i++)
			while (p.src[i] && p.src[i]->depth)
				pop_frame(&p, p.src[i]);
		print_top(stdout, &p);
		if (p.callgrind_path && write_callgrind(p.callgrind_path, &p, argc, argv) < 0) {
			fprintf(stderr, "%s: %s: cannot write\n", prog, p.callgrind_path);
			status = EXIT_USAGE;
		}
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "%s: write error\n", prog);
			status = EXIT_USAGE;
		}
	}
	for (size_t i = 0; i < MAX_IDS; i++)
		free(p.src[i]);
	free(p.fn);
	free(p.edges);
	count_map_free(&p.fn_by_entry);
	count_map_free(&p.cost);
	count_map_free(&p.edge_index);
	symtab_free(st);
	return status;
}
