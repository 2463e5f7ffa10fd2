/*
 * cov_accum.c - the counting and the reports of `csdec coverage`.
 *
 * Executions are counted per 2-byte slot of the address space
 * (slotmap.h): ranges as differences folded into counts when their source
 * ends, instruction records directly. Taken branches are counted at the
 * branch. The program's instructions are bits per slot too (where one
 * starts, whether it is a conditional branch, its instruction set), set by
 * walking each function symbol's range once; the function an instruction
 * belongs to is the one whose walk found it (a list of spans), its line
 * the line table's. So the memory is a few bits to a few bytes per
 * instruction of the code that ran or was given, whatever the trace.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "cov_accum.h"
#include "slotmap.h"
#include "symbols.h"

/* Groups of the code bits. */
enum { CODE_START, CODE_COND, CODE_T32, CODE_TEE };

/* Addresses [start, end) were walked for function fn (index; SIZE_MAX: none). */
struct span {
	uint64_t start, end;
	size_t fn;
};

struct cov {
	const struct symtab *st;
	struct slot_budget budget;
	struct ctab counts;        /* group 0: executions per instruction */
	struct ctab taken;         /* group 0: of them, taken branches */
	struct btab isa;           /* group index << 28: ran as T32 / ThumbEE there */
	struct ctab *diff[ACCUM_SOURCES]; /* per source: ranges not folded yet */
	uint64_t executions;
	struct btab code;          /* the program's instructions (CODE_*) */
	uint64_t ncode;
	struct span *spans;
	size_t nspans, capspans;
	char err[256];
};

/* One instruction of the program. */
struct sinsn {
	uint64_t addr;
	int isa;
	int cond_branch;
	const struct sym_func *fn;
};

static int cov_fail(const struct cov *cc, int rc)
{
	struct cov *c = (struct cov *)cc;
	if (rc == SLOT_LIMIT)
		snprintf(c->err, sizeof(c->err),
			 "the counters of the instructions executed would need more than %zu %s (the limit): "
			 "the trace covers too much of the memory image",
			 c->budget.limit >> (c->budget.limit >= (1u << 20) ? 20 : 10),
			 c->budget.limit >= (1u << 20) ? "MiB" : "KiB");
	else
		snprintf(c->err, sizeof(c->err), "out of memory");
	return -1;
}

struct cov *cov_new(const struct symtab *st, size_t mem_limit)
{
	struct cov *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->st = st;
	c->budget.limit = mem_limit;
	ctab_init(&c->counts, &c->budget);
	ctab_init(&c->taken, &c->budget);
	btab_init(&c->isa, &c->budget);
	btab_init(&c->code, &c->budget);
	return c;
}

void cov_free(struct cov *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < ACCUM_SOURCES; i++)
		if (c->diff[i]) {
			ctab_free(c->diff[i]);
			free(c->diff[i]);
		}
	ctab_free(&c->counts);
	ctab_free(&c->taken);
	btab_free(&c->isa);
	btab_free(&c->code);
	free(c->spans);
	free(c);
}

const char *cov_error(const struct cov *c)
{
	return c->err;
}

uint64_t cov_executions(const struct cov *c)
{
	return c->executions;
}

size_t cov_memory(const struct cov *c)
{
	return c->budget.used;
}

int cov_record(struct cov *c, unsigned src, const struct csd_record *r)
{
	int rc = SLOT_OK;
	uint64_t at;
	if (r->type == CSD_REC_RANGE) {
		if (!r->count)
			return 0;
		struct ctab **d = &c->diff[src % ACCUM_SOURCES];
		if (!*d) {
			*d = malloc(sizeof(**d));
			if (!*d)
				return cov_fail(c, SLOT_NOMEM);
			ctab_init(*d, &c->budget);
		}
		rc = slot_range(*d, r->isa, 0, r->addr, r->end);
		at = r->last;
		if (rc == SLOT_OK)
			c->executions += r->count;
	} else if (r->type == CSD_REC_INSN) {
		rc = ctab_add(&c->counts, 0, r->addr, 1);
		if (rc == SLOT_OK && slot_isa_index(r->isa) != SLOT_ISA_A32)
			rc = btab_set(&c->isa, slot_isa_index(r->isa) << 28, r->addr);
		at = r->addr;
		if (rc == SLOT_OK)
			c->executions++;
	} else {
		return 0;
	}
	if (rc == SLOT_OK && (r->flags & (CSD_RECF_BRANCH | CSD_RECF_TAKEN)) == (CSD_RECF_BRANCH | CSD_RECF_TAKEN))
		rc = ctab_add(&c->taken, 0, at, 1);
	return rc == SLOT_OK ? 0 : cov_fail(c, rc);
}

int cov_source_end(struct cov *c, unsigned src, csd_image *img)
{
	struct ctab *d = c->diff[src % ACCUM_SOURCES];
	if (!d)
		return 0;
	int rc = slot_fold(d, img, &c->counts, &c->isa, 1u << SLOT_ISA_T32 | 1u << SLOT_ISA_TEE);
	return rc == SLOT_OK ? 0 : cov_fail(c, rc);
}

/* ---- the program's code ---- */

static int is_cond_branch(const struct csdi_insn *in)
{
	if (in->cls == CSDI_INSN_NORMAL)
		return 0;
	if (in->flags & CSDI_INSNF_COND)
		return 1;
	/* CBZ / CBNZ: conditional without a condition field */
	return in->size == 2 && (in->isa == CSD_ISA_THUMB || in->isa == CSD_ISA_THUMBEE) &&
	       (in->opcode & 0xF500u) == 0xB100u;
}

/* The instruction set an address ran in (T32, else ThumbEE, else A32:
 * only T32 and ThumbEE are marked, A32 code is most of a program's and
 * needs no bits), or 0 if it did not run. */
static int executed_isa(const struct cov *c, uint64_t addr)
{
	if (btab_test(&c->isa, SLOT_ISA_T32 << 28, addr))
		return CSD_ISA_THUMB;
	if (btab_test(&c->isa, SLOT_ISA_TEE << 28, addr))
		return CSD_ISA_THUMBEE;
	return ctab_get(&c->counts, 0, addr) ? CSD_ISA_ARM : 0;
}

/*
 * The instructions of [start, end): the mapping symbols say which
 * instruction set (or data) each address is; without them, `isa`.
 * Stops where the image has no bytes or the bytes are not an instruction
 * of the set. Each step moves forward, so it ends.
 */
static int walk(struct cov *c, csd_image *img, uint64_t start, uint64_t end, int isa)
{
	const struct symtab *st = c->st;
	uint64_t a = start;
	uint8_t itstate = 0;
	while (a < end) {
		int map_isa = symtab_code_isa(st, a);
		if (map_isa == 0) {
			uint64_t next = symtab_next_map(st, a);
			if (next >= end)
				break;
			a = next;
			itstate = 0;
			continue;
		}
		int cur = map_isa > 0 ? map_isa : isa;
		uint64_t align = cur == CSD_ISA_ARM ? 4 : 2;
		if (a & (align - 1)) {
			a = (a + align - 1) & ~(align - 1);
			continue;
		}
		uint8_t buf[4];
		int got = csd_image_read(img, a, buf, sizeof(buf));
		struct csdi_insn in;
		if (got <= 0 || csdi_isa_decode((uint32_t)a, buf, (size_t)got, cur, &in) < 0)
			break;
		if (cur != CSD_ISA_ARM) {
			csdi_insn_apply_it(&in, itstate);
			itstate = (in.flags & CSDI_INSNF_IT) ? csdi_it_start(in.opcode) : csdi_it_advance(itstate);
		}
		int rc = btab_set(&c->code, CODE_START, a);
		if (rc == SLOT_OK && is_cond_branch(&in))
			rc = btab_set(&c->code, CODE_COND, a);
		if (rc == SLOT_OK && cur != CSD_ISA_ARM)
			rc = btab_set(&c->code, cur == CSD_ISA_THUMBEE ? CODE_TEE : CODE_T32, a);
		if (rc != SLOT_OK)
			return cov_fail(c, rc);
		c->ncode++;
		a += in.size;
	}
	return 0;
}

static int add_span(struct cov *c, uint64_t start, uint64_t end, size_t fn)
{
	if (c->nspans == c->capspans) {
		size_t ncap = c->capspans ? c->capspans * 2 : 64;
		struct span *n = realloc(c->spans, ncap * sizeof(*n));
		if (!n)
			return cov_fail(c, SLOT_NOMEM);
		c->spans = n;
		c->capspans = ncap;
	}
	c->spans[c->nspans].start = start;
	c->spans[c->nspans].end = end;
	c->spans[c->nspans].fn = fn;
	c->nspans++;
	return 0;
}

int cov_load_code(struct cov *c, csd_image *img)
{
	const struct symtab *st = c->st;
	uint64_t done = 0;
	for (size_t i = 0; i < symtab_num_funcs(st); i++) {
		const struct sym_func *f = symtab_func(st, i);
		uint64_t from = f->start > done ? f->start : done;
		if (from < f->end && (add_span(c, from, f->end, i) < 0 ||
				      walk(c, img, from, f->end, f->thumb ? CSD_ISA_THUMB : CSD_ISA_ARM) < 0))
			return -1;
		if (f->end > done)
			done = f->end;
	}
	/* No function symbols: the ranges of the line table, in the
	 * instruction set the trace executed them in. */
	if (symtab_num_funcs(st) == 0) {
		for (size_t i = 0; i + 1 < symtab_num_lines(st); i++) {
			const struct sym_line *r = symtab_line_row(st, i), *next = symtab_line_row(st, i + 1);
			if (r->end_sequence || next->addr <= r->addr || r->addr < done)
				continue;
			int isa = symtab_code_isa(st, r->addr);
			if (isa < 0)
				isa = executed_isa(c, r->addr);
			if (isa > 0 && walk(c, img, r->addr, next->addr, isa) < 0)
				return -1;
			done = next->addr;
		}
	}
	return 0;
}

/* The program's instruction at addr (its start bit is set). */
static void code_insn(const struct cov *c, uint64_t addr, struct sinsn *si)
{
	si->addr = addr;
	si->cond_branch = btab_test(&c->code, CODE_COND, addr);
	si->isa = btab_test(&c->code, CODE_T32, addr)	? CSD_ISA_THUMB
		  : btab_test(&c->code, CODE_TEE, addr) ? CSD_ISA_THUMBEE
							: CSD_ISA_ARM;
	si->fn = NULL;
	size_t lo = 0, hi = c->nspans; /* the last span starting at or before addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->spans[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < c->spans[lo - 1].end)
		si->fn = symtab_func(c->st, c->spans[lo - 1].fn);
}

/* Calls fn for each of the program's instructions in [from, to), in
 * address order; keys are the sorted chunk keys of the start bits. */
struct code_walk {
	const struct cov *c;
	const uint64_t *keys;
	size_t nkeys;
};

typedef int (*code_fn)(void *ctx, const struct sinsn *si);

static int each_code(const struct code_walk *w, uint64_t from, uint64_t to, code_fn fn, void *ctx)
{
	for (size_t k = slot_keys_lower(w->keys, w->nkeys, slot_key(CODE_START, from)); k < w->nkeys; k++) {
		uint64_t base = slot_key_addr(w->keys[k]);
		if (slot_key_group(w->keys[k]) != CODE_START || base >= to)
			break;
		const uint64_t *bits = btab_find(&w->c->code, w->keys[k]);
		for (unsigned j = 0; j < SLOT_CHUNK; j++) {
			uint64_t a = base + 2 * j;
			if (!(bits[j / 64] >> (j % 64) & 1) || a < from)
				continue;
			if (a >= to)
				break;
			struct sinsn si;
			code_insn(w->c, a, &si);
			int rc = fn(ctx, &si);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int code_keys(const struct cov *c, struct code_walk *w)
{
	int failed = 0;
	w->c = c;
	w->keys = btab_keys(&c->code, &w->nkeys, &failed);
	return failed ? cov_fail(c, SLOT_NOMEM) : 0;
}

/* ---- reports ---- */

static uint64_t hits_at(const struct cov *c, uint64_t addr, uint64_t *taken)
{
	if (taken)
		*taken = (uint64_t)ctab_get(&c->taken, 0, addr);
	return (uint64_t)ctab_get(&c->counts, 0, addr);
}

static void print_where(FILE *out, const struct symtab *st, uint64_t addr)
{
	const struct sym_func *f = symtab_find(st, addr);
	const char *file;
	unsigned line;
	if (f && addr != f->start)
		fprintf(out, "  <%s+0x%" PRIx64 ">", f->name, addr - f->start);
	else if (f)
		fprintf(out, "  <%s>", f->name);
	if (symtab_line(st, addr, &file, &line))
		fprintf(out, "  %s:%u", file, line);
}

static const char *branch_state(uint64_t count, uint64_t taken)
{
	if (count == 0)
		return "never executed";
	if (taken == 0)
		return "never taken";
	if (taken == count)
		return "always taken";
	return "both ways";
}

/* Executed addresses: how many, and each in order through fn when not NULL. */
typedef void (*exec_fn)(void *ctx, uint64_t addr, uint64_t count);

static int each_executed(const struct cov *c, exec_fn fn, void *ctx, size_t *n)
{
	size_t nk = 0;
	int failed = 0;
	uint64_t *keys = ctab_keys(&c->counts, &nk, &failed);
	if (failed)
		return cov_fail(c, SLOT_NOMEM);
	*n = 0;
	for (size_t k = 0; k < nk; k++) {
		const struct count_chunk *cc = ctab_find(&c->counts, keys[k]);
		for (unsigned j = 0; j < SLOT_CHUNK; j++) {
			uint64_t v = (uint64_t)count_chunk_get(cc, j);
			if (!v)
				continue;
			++*n;
			if (fn)
				fn(ctx, slot_key_addr(keys[k]) + 2 * j, v);
		}
	}
	free(keys);
	return 0;
}

struct fn_sum {
	uint64_t present, run, branches, both;
};

struct summary_ctx {
	const struct cov *c;
	struct fn_sum *sum, total;
	uint64_t inside;
	FILE *out;
	int header;
};

static int sum_insn(void *ctx, const struct sinsn *si)
{
	struct summary_ctx *s = ctx;
	uint64_t taken, n = hits_at(s->c, si->addr, &taken);
	struct fn_sum *fs = si->fn ? &s->sum[symtab_func_index(s->c->st, si->fn)] : &s->total;
	fs->present++;
	fs->run += n != 0;
	s->inside += n != 0;
	if (si->cond_branch) {
		fs->branches++;
		fs->both += taken && taken < n;
	}
	return 0;
}

static int unexercised(void *ctx, const struct sinsn *si)
{
	struct summary_ctx *s = ctx;
	uint64_t taken, n = hits_at(s->c, si->addr, &taken);
	if (!si->cond_branch || (taken && taken < n))
		return 0;
	if (!s->header)
		fprintf(s->out, "\nConditional branches not exercised both ways:\n");
	s->header = 1;
	fprintf(s->out, "  0x%08" PRIx64 "  %-14s (%" PRIu64 " times, taken %" PRIu64 ")", si->addr,
		branch_state(n, taken), n, taken);
	print_where(s->out, s->c->st, si->addr);
	fputc('\n', s->out);
	return 0;
}

int cov_print_summary(const struct cov *c, FILE *out)
{
	const struct symtab *st = c->st;
	size_t nf = symtab_num_funcs(st), addresses = 0;
	struct summary_ctx s;
	struct code_walk w;
	memset(&s, 0, sizeof(s));
	s.c = c;
	s.out = out;
	if (each_executed(c, NULL, NULL, &addresses) < 0 || code_keys(c, &w) < 0)
		return -1;
	s.sum = calloc(nf ? nf : 1, sizeof(*s.sum));
	if (!s.sum) {
		free((void *)w.keys);
		return cov_fail(c, SLOT_NOMEM);
	}
	each_code(&w, 0, UINT64_MAX, sum_insn, &s);
	fprintf(out, "%" PRIu64 " instructions executed, at %zu addresses\n", c->executions, addresses);
	if (nf) {
		fprintf(out, "\n%-32s %16s %7s %16s\n", "Function", "Insns run/all", "%", "Branches both/all");
		for (size_t i = 0; i < nf; i++) {
			const struct fn_sum *fs = &s.sum[i];
			if (!fs->present)
				continue;
			fprintf(out, "%-32s %7" PRIu64 "/%-8" PRIu64 " %6.1f%% %7" PRIu64 "/%-8" PRIu64 "\n",
				symtab_func(st, i)->name, fs->run, fs->present,
				100.0 * (double)fs->run / (double)fs->present, fs->both, fs->branches);
			s.total.present += fs->present;
			s.total.run += fs->run;
			s.total.branches += fs->branches;
			s.total.both += fs->both;
		}
	}
	if (s.total.present) {
		fprintf(out, "%-32s %7" PRIu64 "/%-8" PRIu64 " %6.1f%% %7" PRIu64 "/%-8" PRIu64 "\n", "TOTAL",
			s.total.run, s.total.present, 100.0 * (double)s.total.run / (double)s.total.present,
			s.total.both, s.total.branches);
		if (addresses > s.inside)
			fprintf(out, "%zu executed addresses are outside the ELF's code\n", (size_t)(addresses - s.inside));
		each_code(&w, 0, UINT64_MAX, unexercised, &s);
	} else {
		fprintf(out, "No program code known (give the program with --elf): coverage is per\n"
			     "executed instruction only (--insns lists them).\n");
	}
	if (s.total.present && !symtab_has_lines(st))
		fprintf(out, "No DWARF line info %s: no line coverage.\n",
			symtab_reads_lines() ? "in the ELF files (build with -g)" : "(csdec was built without libdw)");
	free(s.sum);
	free((void *)w.keys);
	return 0;
}

struct insns_ctx {
	const struct cov *c;
	FILE *out;
};

static int list_code(void *ctx, const struct sinsn *si)
{
	struct insns_ctx *x = ctx;
	uint64_t taken, n = hits_at(x->c, si->addr, &taken);
	fprintf(x->out, "  0x%08" PRIx64 "  %-3s %10" PRIu64, si->addr, csd_isa_name(si->isa), n);
	if (si->cond_branch)
		fprintf(x->out, "  branch %s (taken %" PRIu64 ")", branch_state(n, taken), taken);
	print_where(x->out, x->c->st, si->addr);
	fputc('\n', x->out);
	return 0;
}

static void list_executed(void *ctx, uint64_t addr, uint64_t count)
{
	struct insns_ctx *x = ctx;
	uint64_t taken = (uint64_t)ctab_get(&x->c->taken, 0, addr);
	fprintf(x->out, "  0x%08" PRIx64 "  %-3s %10" PRIu64, addr, csd_isa_name(executed_isa(x->c, addr)), count);
	if (taken)
		fprintf(x->out, "  taken %" PRIu64, taken);
	print_where(x->out, x->c->st, addr);
	fputc('\n', x->out);
}

int cov_print_insns(const struct cov *c, FILE *out)
{
	struct insns_ctx x = { c, out };
	fprintf(out, "\nInstructions:\n");
	if (c->ncode) {
		struct code_walk w;
		if (code_keys(c, &w) < 0)
			return -1;
		each_code(&w, 0, UINT64_MAX, list_code, &x);
		free((void *)w.keys);
		return 0;
	}
	size_t n;
	return each_executed(c, list_executed, &x, &n);
}

/* ---- lcov ---- */

/*
 * The records go by source file, then line, then address. The line
 * table's rows, sorted so, give that order without a list of the
 * instructions: row k covers [its address, the next row's) (as
 * symtab_line() finds rows), and the instructions in it are found from
 * the start bits.
 */
static const struct symtab *row_sort_st;
static const uint32_t *row_sort_rank;

static int cmp_rows(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct sym_line *rx = symtab_line_row(row_sort_st, x), *ry = symtab_line_row(row_sort_st, y);
	uint32_t fx = row_sort_rank[rx->file], fy = row_sort_rank[ry->file];
	if (fx != fy)
		return fx < fy ? -1 : 1;
	if (rx->line != ry->line)
		return rx->line < ry->line ? -1 : 1;
	return x < y ? -1 : x > y;
}

static const struct symtab *file_sort_st;

static int cmp_files(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return strcmp(symtab_file(file_sort_st, x), symtab_file(file_sort_st, y));
}

enum lcov_pass { PASS_COUNT, PASS_FN, PASS_FNDA, PASS_BRDA, PASS_DA };

struct lcov_ctx {
	const struct cov *c;
	FILE *f;
	enum lcov_pass pass;
	unsigned line;             /* of the current row */
	uint64_t insns;
	unsigned fnf, fnh, brf, brh, block, prev_line;
	uint64_t most;
	int line_has;
};

static int lcov_insn(void *ctx, const struct sinsn *si)
{
	struct lcov_ctx *x = ctx;
	uint64_t taken, cnt;
	switch (x->pass) {
	case PASS_COUNT:
		x->insns++;
		break;
	case PASS_FN:
		if (si->fn && si->addr == si->fn->start)
			fprintf(x->f, "FN:%u,%s\n", x->line, si->fn->name);
		break;
	case PASS_FNDA:
		if (!si->fn || si->addr != si->fn->start)
			break;
		cnt = hits_at(x->c, si->addr, NULL);
		fprintf(x->f, "FNDA:%" PRIu64 ",%s\n", cnt, si->fn->name);
		x->fnf++;
		x->fnh += cnt != 0;
		break;
	case PASS_BRDA:
		if (!si->cond_branch)
			break;
		x->block = x->line == x->prev_line ? x->block + 1 : 0;
		x->prev_line = x->line;
		cnt = hits_at(x->c, si->addr, &taken);
		if (cnt)
			fprintf(x->f, "BRDA:%u,%u,0,%" PRIu64 "\nBRDA:%u,%u,1,%" PRIu64 "\n", x->line, x->block, taken,
				x->line, x->block, cnt - taken);
		else
			fprintf(x->f, "BRDA:%u,%u,0,-\nBRDA:%u,%u,1,-\n", x->line, x->block, x->line, x->block);
		x->brf += 2;
		x->brh += (taken != 0) + (cnt - taken != 0);
		break;
	case PASS_DA:
		cnt = hits_at(x->c, si->addr, NULL);
		x->most = cnt > x->most ? cnt : x->most;
		x->line_has = 1;
		break;
	}
	return 0;
}

/* The program's instructions of row order[k] through lcov_insn. */
static void lcov_row(const struct code_walk *w, const size_t *order, size_t k, size_t nrows, struct lcov_ctx *x)
{
	const struct symtab *st = w->c->st;
	size_t i = order[k];
	const struct sym_line *r = symtab_line_row(st, i);
	uint64_t to = i + 1 < nrows ? symtab_line_row(st, i + 1)->addr : UINT64_MAX;
	x->line = r->line;
	each_code(w, r->addr, to, lcov_insn, x);
}

/* One SF record per source file: FN/FNDA per function starting there, a
 * BRDA pair (taken, not taken) per conditional branch numbered in address
 * order within its line, DA per line (the highest count of its
 * instructions). */
int cov_write_lcov(const struct cov *c, FILE *f)
{
	const struct symtab *st = c->st;
	size_t nrows = symtab_num_lines(st), n = 0;
	uint32_t nfiles = 0;
	struct code_walk w;
	if (code_keys(c, &w) < 0)
		return -1;
	for (size_t i = 0; i < nrows; i++)
		if (symtab_line_row(st, i)->file >= nfiles)
			nfiles = symtab_line_row(st, i)->file + 1;
	size_t *order = malloc((nrows ? nrows : 1) * sizeof(*order));
	uint32_t *files = malloc((nfiles ? nfiles : 1) * sizeof(*files));
	uint32_t *rank = malloc((nfiles ? nfiles : 1) * sizeof(*rank));
	if (!order || !files || !rank) {
		free(order);
		free(files);
		free(rank);
		free((void *)w.keys);
		return cov_fail(c, SLOT_NOMEM);
	}
	for (uint32_t i = 0; i < nfiles; i++)
		files[i] = i;
	file_sort_st = st;
	if (nfiles)
		qsort(files, nfiles, sizeof(*files), cmp_files);
	for (uint32_t i = 0; i < nfiles; i++)
		rank[files[i]] = i;
	/* Rows that give instructions a line: not an end of sequence, not
	 * line 0, and not hidden by a later row at the same address. */
	for (size_t i = 0; i < nrows; i++) {
		const struct sym_line *r = symtab_line_row(st, i);
		if (r->end_sequence || !r->line || (i + 1 < nrows && symtab_line_row(st, i + 1)->addr == r->addr))
			continue;
		order[n++] = i;
	}
	row_sort_st = st;
	row_sort_rank = rank;
	if (n)
		qsort(order, n, sizeof(*order), cmp_rows);
	for (size_t i = 0; i < n;) {
		uint32_t file = symtab_line_row(st, order[i])->file;
		size_t j = i;
		while (j < n && symtab_line_row(st, order[j])->file == file)
			j++;
		struct lcov_ctx x;
		memset(&x, 0, sizeof(x));
		x.c = c;
		x.f = f;
		x.pass = PASS_COUNT;
		for (size_t k = i; k < j; k++)
			lcov_row(&w, order, k, nrows, &x);
		if (!x.insns) {
			i = j;
			continue;
		}
		fprintf(f, "TN:\nSF:%s\n", symtab_file(st, file));
		/* functions whose first instruction is in this file */
		x.pass = PASS_FN;
		for (size_t k = i; k < j; k++)
			lcov_row(&w, order, k, nrows, &x);
		x.pass = PASS_FNDA;
		for (size_t k = i; k < j; k++)
			lcov_row(&w, order, k, nrows, &x);
		fprintf(f, "FNF:%u\nFNH:%u\n", x.fnf, x.fnh);
		x.pass = PASS_BRDA;
		for (size_t k = i; k < j; k++)
			lcov_row(&w, order, k, nrows, &x);
		fprintf(f, "BRF:%u\nBRH:%u\n", x.brf, x.brh);
		unsigned lf = 0, lh = 0;
		x.pass = PASS_DA;
		for (size_t k = i; k < j;) {
			unsigned line = symtab_line_row(st, order[k])->line;
			x.most = 0;
			x.line_has = 0;
			for (; k < j && symtab_line_row(st, order[k])->line == line; k++)
				lcov_row(&w, order, k, nrows, &x);
			if (!x.line_has)
				continue;
			fprintf(f, "DA:%u,%" PRIu64 "\n", line, x.most);
			lf++;
			lh += x.most != 0;
		}
		fprintf(f, "LF:%u\nLH:%u\nend_of_record\n", lf, lh);
		i = j;
	}
	free(order);
	free(files);
	free(rank);
	free((void *)w.keys);
	return 0;
}
