/*
 * cmd_coverage.c - `csdec coverage`: which instructions, lines and
 * branches of a program the trace shows executed.
 *
 * Every decoded instruction is counted per address (with how often it was
 * a taken branch). The program's code comes from the --elf files: each
 * function symbol's range is walked with the library's instruction
 * classifier (mapping symbols mark literal pools and tables as data), so
 * instructions that never ran are known too. Lines come from DWARF; a
 * line's count is the highest count of its instructions. A conditional
 * branch (B<c>, CBZ/CBNZ, a branch in an IT block) is exercised both ways
 * when it was seen taken and not taken.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "cli.h"
#include "symbols.h"

struct static_insn {
	uint64_t addr;
	const struct sym_func *fn;
	const char *file;      /* NULL: no line */
	unsigned line;
	uint8_t isa, size, cond_branch;
};

struct coverage {
	struct count_map hits; /* by address: count, taken, isa, size */
	uint64_t executions;
	const char *lcov_path;
	int list_insns;
	struct static_insn *code;
	size_t ncode, capcode;
};

static void usage_coverage(FILE *out)
{
	fprintf(out,
		"Usage: csdec coverage <snapshot-dir> [--id ID]... --elf FILE[@BIAS]... [--lcov FILE] [--insns]\n"
		"       csdec coverage --trace FILE --protocol etm3|ptm [decode options] --elf FILE...\n"
		"\n"
		"What the trace shows executed of a program: per function the instructions\n"
		"executed of those present and the conditional branches exercised both ways,\n"
		"then every conditional branch that was not. The program's code, functions\n"
		"and lines come from the ELF files (symbols; DWARF line info when built\n"
		"with -g). Without an ELF, coverage is per executed instruction only.\n"
		"\n"
		"  --elf FILE[@BIAS]  the program (also its code for the decoder); may be repeated\n"
		"  --lcov FILE        write line and branch coverage as an lcov tracefile\n"
		"                     (genhtml FILE makes HTML); needs DWARF line info\n"
		"  --insns            also list every instruction with its count\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"Other options as for 'csdec decode' (--trace, --protocol, --reg, --image...).\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (coverage of what decoded\n"
		"is still reported), 2 usage or I/O error.\n");
}

static int coverage_option(void *user, int argc, char **argv, int *i)
{
	struct coverage *c = user;
	const char *a = argv[*i];
	if (strcmp(a, "--insns") == 0) {
		c->list_insns = 1;
		return 1;
	}
	if (strncmp(a, "--lcov=", 7) == 0) {
		c->lcov_path = a + 7;
		return 1;
	}
	if (strcmp(a, "--lcov") == 0) {
		if (*i + 1 >= argc)
			die_usage("--lcov needs a file name");
		c->lcov_path = argv[++*i];
		return 1;
	}
	if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0 || strcmp(a, "--insn") == 0)
		die_usage("coverage: %s is an option of decode", a);
	return 0;
}

static void on_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	(void)s;
	struct coverage *c = ctx->user;
	if (r->type != CSD_REC_INSN)
		return;
	struct count_entry *e = count_map_get(&c->hits, r->addr);
	e->count++;
	if ((r->flags & (CSD_RECF_BRANCH | CSD_RECF_TAKEN)) == (CSD_RECF_BRANCH | CSD_RECF_TAKEN))
		e->taken++;
	e->isa = r->isa;
	e->size = (uint8_t)r->size;
	c->executions++;
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

static void add_code(struct coverage *c, const struct static_insn *si)
{
	if (c->ncode == c->capcode) {
		size_t ncap = c->capcode ? c->capcode * 2 : 1024;
		struct static_insn *n = realloc(c->code, ncap * sizeof(*n));
		if (!n)
			die_io("out of memory");
		c->code = n;
		c->capcode = ncap;
	}
	c->code[c->ncode++] = *si;
}

/*
 * The instructions of [start, end): the mapping symbols say which
 * instruction set (or data) each address is; without them, `isa`.
 * Stops where the image has no bytes or the bytes are not an instruction
 * of the set. Each step moves forward, so it ends.
 */
static void walk(struct coverage *c, csd_image *img, const struct symtab *st, uint64_t start, uint64_t end, int isa,
		 const struct sym_func *fn)
{
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
		struct static_insn si;
		memset(&si, 0, sizeof(si));
		si.addr = a;
		si.fn = fn;
		si.isa = (uint8_t)cur;
		si.size = in.size;
		si.cond_branch = (uint8_t)is_cond_branch(&in);
		if (!symtab_line(st, a, &si.file, &si.line))
			si.file = NULL;
		add_code(c, &si);
		a += in.size;
	}
}

static void load_code(struct coverage *c, const struct options *o, const struct symtab *st)
{
	csd_image *img = cli_elf_image(o);
	uint64_t done = 0;
	for (size_t i = 0; i < symtab_num_funcs(st); i++) {
		const struct sym_func *f = symtab_func(st, i);
		uint64_t from = f->start > done ? f->start : done;
		walk(c, img, st, from, f->end, f->thumb ? CSD_ISA_THUMB : CSD_ISA_ARM, f);
		if (f->end > done)
			done = f->end;
	}
	/* No function symbols: the ranges of the line table, in the
	 * instruction set the trace executed them in. */
	if (symtab_num_funcs(st) == 0) {
		for (size_t i = 0; i + 1 < symtab_num_lines(st); i++) {
			const struct sym_line *r = symtab_line_row(st, i), *next = symtab_line_row(st, i + 1);
			const struct count_entry *h = count_map_find(&c->hits, r->addr);
			if (r->end_sequence || next->addr <= r->addr || r->addr < done)
				continue;
			int isa = symtab_code_isa(st, r->addr);
			if (isa < 0 && h)
				isa = h->isa;
			if (isa > 0)
				walk(c, img, st, r->addr, next->addr, isa, NULL);
			done = next->addr;
		}
	}
	csd_image_free(img);
}

/* ---- reports ---- */

static uint64_t hits_at(const struct coverage *c, uint64_t addr, uint64_t *taken)
{
	const struct count_entry *e = count_map_find(&c->hits, addr);
	if (taken)
		*taken = e ? e->taken : 0;
	return e ? e->count : 0;
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

struct fn_sum {
	uint64_t present, run, branches, both;
};

static void print_summary(FILE *out, const struct coverage *c, const struct symtab *st)
{
	size_t nf = symtab_num_funcs(st);
	struct fn_sum *sum = calloc(nf ? nf : 1, sizeof(*sum)), total;
	uint64_t inside = 0, taken;
	if (!sum)
		die_io("out of memory");
	memset(&total, 0, sizeof(total));
	for (size_t i = 0; i < c->ncode; i++) {
		const struct static_insn *si = &c->code[i];
		uint64_t n = hits_at(c, si->addr, &taken);
		struct fn_sum *fs = si->fn ? &sum[symtab_func_index(st, si->fn)] : &total;
		fs->present++;
		fs->run += n != 0;
		inside += n != 0;
		if (si->cond_branch) {
			fs->branches++;
			fs->both += taken && taken < n;
		}
	}
	fprintf(out, "%" PRIu64 " instructions executed, at %zu addresses\n", c->executions, c->hits.n);
	if (nf) {
		fprintf(out, "\n%-32s %16s %7s %16s\n", "Function", "Insns run/all", "%", "Branches both/all");
		for (size_t i = 0; i < nf; i++) {
			const struct fn_sum *fs = &sum[i];
			if (!fs->present)
				continue;
			fprintf(out, "%-32s %7" PRIu64 "/%-8" PRIu64 " %6.1f%% %7" PRIu64 "/%-8" PRIu64 "\n",
				symtab_func(st, i)->name, fs->run, fs->present,
				100.0 * (double)fs->run / (double)fs->present, fs->both, fs->branches);
			total.present += fs->present;
			total.run += fs->run;
			total.branches += fs->branches;
			total.both += fs->both;
		}
	}
	if (total.present) {
		fprintf(out, "%-32s %7" PRIu64 "/%-8" PRIu64 " %6.1f%% %7" PRIu64 "/%-8" PRIu64 "\n", "TOTAL", total.run,
			total.present, 100.0 * (double)total.run / (double)total.present, total.both, total.branches);
		if (c->hits.n > inside)
			fprintf(out, "%zu executed addresses are outside the ELF's code\n", (size_t)(c->hits.n - inside));
		int header = 0;
		for (size_t i = 0; i < c->ncode; i++) {
			const struct static_insn *si = &c->code[i];
			uint64_t n = hits_at(c, si->addr, &taken);
			if (!si->cond_branch || (taken && taken < n))
				continue;
			if (!header)
				fprintf(out, "\nConditional branches not exercised both ways:\n");
			header = 1;
			fprintf(out, "  0x%08" PRIx64 "  %-14s (%" PRIu64 " times, taken %" PRIu64 ")", si->addr,
				branch_state(n, taken), n, taken);
			print_where(out, st, si->addr);
			fputc('\n', out);
		}
	} else {
		fprintf(out, "No program code known (give the program with --elf): coverage is per\n"
			     "executed instruction only (--insns lists them).\n");
	}
	if (total.present && !symtab_has_lines(st))
		fprintf(out, "No DWARF line info %s: no line coverage.\n",
			symtab_reads_lines() ? "in the ELF files (build with -g)" : "(csdec was built without libdw)");
	free(sum);
}

static void print_insns(FILE *out, const struct coverage *c, const struct symtab *st)
{
	uint64_t taken;
	fprintf(out, "\nInstructions:\n");
	if (c->ncode) {
		for (size_t i = 0; i < c->ncode; i++) {
			const struct static_insn *si = &c->code[i];
			uint64_t n = hits_at(c, si->addr, &taken);
			fprintf(out, "  0x%08" PRIx64 "  %-3s %10" PRIu64, si->addr, csd_isa_name(si->isa), n);
			if (si->cond_branch)
				fprintf(out, "  branch %s (taken %" PRIu64 ")", branch_state(n, taken), taken);
			print_where(out, st, si->addr);
			fputc('\n', out);
		}
		return;
	}
	size_t n;
	struct count_entry *v = count_map_sorted(&c->hits, &n);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "  0x%08" PRIx64 "  %-3s %10" PRIu64, v[i].key, csd_isa_name(v[i].isa), v[i].count);
		if (v[i].taken)
			fprintf(out, "  taken %" PRIu64, v[i].taken);
		print_where(out, st, v[i].key);
		fputc('\n', out);
	}
	free(v);
}

/* ---- lcov ---- */

static int cmp_by_line(const void *a, const void *b)
{
	const struct static_insn *x = *(const struct static_insn *const *)a, *y = *(const struct static_insn *const *)b;
	int k = strcmp(x->file, y->file);
	if (k)
		return k;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One SF record per source file: FN/FNDA per function starting there, a
 * BRDA pair (taken, not taken) per conditional branch numbered in address
 * order within its line, DA per line (the highest count of its
 * instructions). */
static int write_lcov(const char *path, const struct coverage *c)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	size_t n = 0;
	const struct static_insn **v = malloc((c->ncode ? c->ncode : 1) * sizeof(*v));
	if (!v)
		die_io("out of memory");
	for (size_t i = 0; i < c->ncode; i++)
		if (c->code[i].file && c->code[i].line)
			v[n++] = &c->code[i];
	qsort(v, n, sizeof(*v), cmp_by_line);
	for (size_t i = 0; i < n;) {
		const char *file = v[i]->file;
		size_t j = i;
		while (j < n && strcmp(v[j]->file, file) == 0)
			j++;
		fprintf(f, "TN:\nSF:%s\n", file);
		/* functions whose first instruction is in this file */
		unsigned fnf = 0, fnh = 0;
		for (size_t k = i; k < j; k++) {
			if (!v[k]->fn || v[k]->addr != v[k]->fn->start)
				continue;
			fprintf(f, "FN:%u,%s\n", v[k]->line, v[k]->fn->name);
		}
		for (size_t k = i; k < j; k++) {
			if (!v[k]->fn || v[k]->addr != v[k]->fn->start)
				continue;
			uint64_t cnt = hits_at(c, v[k]->addr, NULL);
			fprintf(f, "FNDA:%" PRIu64 ",%s\n", cnt, v[k]->fn->name);
			fnf++;
			fnh += cnt != 0;
		}
		fprintf(f, "FNF:%u\nFNH:%u\n", fnf, fnh);
		unsigned brf = 0, brh = 0, block = 0, prev_line = 0;
		for (size_t k = i; k < j; k++) {
			if (!v[k]->cond_branch)
				continue;
			block = v[k]->line == prev_line ? block + 1 : 0;
			prev_line = v[k]->line;
			uint64_t taken, cnt = hits_at(c, v[k]->addr, &taken);
			if (cnt)
				fprintf(f, "BRDA:%u,%u,0,%" PRIu64 "\nBRDA:%u,%u,1,%" PRIu64 "\n", v[k]->line, block, taken,
					v[k]->line, block, cnt - taken);
			else
				fprintf(f, "BRDA:%u,%u,0,-\nBRDA:%u,%u,1,-\n", v[k]->line, block, v[k]->line, block);
			brf += 2;
			brh += (taken != 0) + (cnt - taken != 0);
		}
		fprintf(f, "BRF:%u\nBRH:%u\n", brf, brh);
		unsigned lf = 0, lh = 0;
		for (size_t k = i; k < j;) {
			unsigned line = v[k]->line;
			uint64_t most = 0;
			for (; k < j && v[k]->line == line; k++) {
				uint64_t cnt = hits_at(c, v[k]->addr, NULL);
				most = cnt > most ? cnt : most;
			}
			fprintf(f, "DA:%u,%" PRIu64 "\n", line, most);
			lf++;
			lh += most != 0;
		}
		fprintf(f, "LF:%u\nLH:%u\nend_of_record\n", lf, lh);
		i = j;
	}
	free(v);
	return fclose(f) == 0 ? 0 : -1;
}

int csd_cmd_coverage(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	struct coverage c;
	memset(&c, 0, sizeof(c));
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_coverage, coverage_option, &c);
	struct symtab *st = cli_load_symbols(&o);
	if (c.lcov_path && !symtab_has_lines(st))
		die_usage("--lcov needs DWARF line info: %s", !symtab_reads_lines() ? "csdec was built without libdw"
			  : o.n_elfs ? "an --elf file built with -g" : "an --elf file built with -g (no --elf given)");
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stderr; /* only frame errors are printed by the pipeline */
	ctx.on_record = on_record;
	ctx.user = &c;
	o.insn = 1;
	int status = cli_run(&o, &ctx, SLOT_FLOW);
	if (status == EXIT_USAGE) {
		symtab_free(st);
		count_map_free(&c.hits);
		return status;
	}
	load_code(&c, &o, st);
	print_summary(stdout, &c, st);
	if (c.list_insns)
		print_insns(stdout, &c, st);
	if (c.lcov_path && write_lcov(c.lcov_path, &c) < 0) {
		fprintf(stderr, "%s: %s: cannot write\n", prog, c.lcov_path);
		status = EXIT_USAGE;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: write error\n", prog);
		status = EXIT_USAGE;
	}
	free(c.code);
	count_map_free(&c.hits);
	symtab_free(st);
	return status;
}
