/*
 * `csdec profile` against what is known independently:
 *
 * The test program (prog_trace.h): qemu's exec log and objdump give each
 * function's instructions executed and how often it was called (BL/BLX
 * executions and where they went); the call edges and their inclusive
 * instruction counts follow from the log by matching each call with the
 * arrival at its return address. The cycles are the generator's. The
 * callgrind file must be accepted by callgrind_annotate, whose totals and
 * inclusive cost of main must come out right.
 *
 * TC2 with a symbol-only ELF made here (functions from the BL targets in
 * DS-5's decode): each function's instructions, cycles and calls are the
 * sums over DS-5's instruction records. Without an ELF, the totals are
 * DS-5's and callgrind_annotate reads the file.
 */
#include <elf.h>
#include <unistd.h>

#include "check.h"
#include "ds5_dump.h"
#include "prog_trace.h"

static char out[1 << 21];

struct row {
	char name[64];
	unsigned long long instr, cycles, calls;
};

/* The flat list: "instr pct% cycles pct% calls name [file:line]". */
static size_t read_rows(const char *text, struct row *rows, size_t cap)
{
	size_t n = 0;
	for (const char *l = text; l && *l && n < cap; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double p1, p2;
		struct row r;
		if (sscanf(l, "%llu %lf%% %llu %lf%% %llu %63s", &r.instr, &p1, &r.cycles, &p2, &r.calls, r.name) == 6)
			rows[n++] = r;
	}
	return n;
}

static const struct row *find_row(const struct row *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

struct exp_edge {
	char caller[64], callee[64];
	uint32_t site;
	unsigned long long calls, instr;
	int seen;
};

/* The call edges of the run: a BL/BLX whose successor is not the next
 * instruction is a call; it returns when execution arrives at the
 * address after it with no deeper call open. */
static size_t expected_edges(const struct prog_run *pr, struct exp_edge *e, size_t cap)
{
	struct {
		uint32_t ret;
		size_t start, edge;
	} stack[256];
	size_t depth = 0, n = 0;
	for (size_t i = 0; i < pr->n; i++) {
		/* one return per instruction: recursive calls from the same site
		 * share the return address */
		if (depth && pr->pc[i] == stack[depth - 1].ret) {
			depth--;
			e[stack[depth].edge].instr += i - stack[depth].start - 1;
		}
		const struct prog_insn *in = prog_find(pr, pr->pc[i]);
		if (!in || i + 1 >= pr->n || (strcmp(in->mnemonic, "bl") != 0 && strcmp(in->mnemonic, "blx") != 0) ||
		    pr->pc[i + 1] == in->addr + in->size)
			continue;
		const struct prog_insn *to = prog_find(pr, pr->pc[i + 1]);
		size_t k = 0;
		while (k < n && !(e[k].site == in->addr && strcmp(e[k].callee, to ? to->func : "?") == 0))
			k++;
		if (k == n && n < cap) {
			memset(&e[n], 0, sizeof(e[n]));
			snprintf(e[n].caller, sizeof(e[n].caller), "%s", in->func);
			snprintf(e[n].callee, sizeof(e[n].callee), "%s", to ? to->func : "?");
			e[n].site = in->addr;
			n++;
		}
		if (k < n) {
			e[k].calls++;
			if (depth < 256) {
				stack[depth].ret = in->addr + in->size;
				stack[depth].start = i;
				stack[depth].edge = k;
				depth++;
			}
		}
	}
	return n;
}

/* Match the callgrind file's calls= lines with the expected edges. */
static void check_callgrind_edges(const char *path, struct exp_edge *e, size_t ne)
{
	FILE *f = fopen(path, "r");
	char line[512], fn[64] = "", cfn[64] = "";
	size_t calls_lines = 0, bad = 0;
	int events = 0, positions = 0;
	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long count, target, site, tline, sline, incl, cyc;
		events |= strcmp(line, "events: Instr Cycles\n") == 0;
		positions |= strcmp(line, "positions: instr line\n") == 0;
		if (sscanf(line, "fn=%63s", fn) == 1 || sscanf(line, "cfn=%63s", cfn) == 1)
			continue;
		if (sscanf(line, "calls=%llu %llx %llu", &count, &target, &tline) != 3)
			continue;
		if (!fgets(line, sizeof(line), f) || sscanf(line, "%llx %llu %llu %llu", &site, &sline, &incl, &cyc) != 4) {
			CHECK(!"calls= line without a cost line");
			break;
		}
		calls_lines++;
		size_t k = 0;
		while (k < ne && !(e[k].site == site && strcmp(e[k].caller, fn) == 0 && strcmp(e[k].callee, cfn) == 0))
			k++;
		if (k == ne || e[k].calls != count || e[k].instr != incl) {
			if (bad++ < 5)
				fprintf(stderr, "callgrind: %s -> %s at 0x%llx: %llu calls, %llu instr; expected %llu, %llu\n", fn,
					cfn, site, count, incl, k < ne ? e[k].calls : 0ULL, k < ne ? e[k].instr : 0ULL);
		} else {
			e[k].seen = 1;
		}
	}
	fclose(f);
	size_t seen = 0;
	for (size_t k = 0; k < ne; k++)
		seen += e[k].seen;
	printf("callgrind: %zu call edges (expected %zu), %zu differ\n", calls_lines, ne, bad);
	CHECK(events);
	CHECK(positions);
	CHECK_EQ(calls_lines, ne);
	CHECK_EQ(seen, ne);
	CHECK_EQ(bad, 0);
}

/* "1,467" as callgrind_annotate prints numbers. */
static void with_commas(unsigned long long v, char *buf, size_t cap)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%llu", v);
	size_t k = 0;
	for (int i = 0; i < n && k + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = 0;
}


/* ---- folded stacks ---- */

struct stack_line {
	char path[512];
	unsigned long long weight;
};

static size_t find_stack(const struct stack_line *st, size_t n, const char *path)
{
	size_t k = 0;
	while (k < n && strcmp(st[k].path, path) != 0)
		k++;
	return k;
}

/* "a;b;c 123" lines; -1 if a line has another form or a stack repeats. */
static long read_folded(const char *text, struct stack_line *st, size_t cap)
{
	size_t n = 0;
	for (const char *l = text; *l; ) {
		const char *e = strchr(l, '\n'), *sp;
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[600];
		if (len >= sizeof(line) || n == cap)
			return -1;
		memcpy(line, l, len);
		line[len] = 0;
		if (!(sp = strrchr(line, ' ')) || sp == line || !sp[1] || strspn(sp + 1, "0123456789") != strlen(sp + 1))
			return -1;
		line[sp - line] = 0;
		if (find_stack(st, n, line) < n || strlen(line) >= sizeof(st[n].path))
			return -1;
		snprintf(st[n].path, sizeof(st[n].path), "%s", line);
		st[n].weight = strtoull(sp + 1, NULL, 10);
		n++;
		l = e ? e + 1 : l + len;
	}
	return (long)n;
}

/* The innermost function of a folded stack. */
static const char *leaf_of(const char *path)
{
	const char *s = strrchr(path, ';');
	return s ? s + 1 : path;
}

/* Sum of the weights of the stacks ending in fn. */
static unsigned long long leaf_sum(const struct stack_line *st, size_t n, const char *fn)
{
	unsigned long long sum = 0;
	for (size_t k = 0; k < n; k++)
		if (strcmp(leaf_of(st[k].path), fn) == 0)
			sum += st[k].weight;
	return sum;
}

static unsigned long long weight_sum(const struct stack_line *st, size_t n)
{
	unsigned long long sum = 0;
	for (size_t k = 0; k < n; k++)
		sum += st[k].weight;
	return sum;
}

/* The stacks of the qemu run, by instructions: a BL/BLX that leaves the
 * next instruction is a call from its function; the call ends when
 * execution arrives at the address after it. */
static size_t expected_stacks(const struct prog_run *pr, struct stack_line *st, size_t cap)
{
	const char *callers[256];
	uint32_t rets[256];
	size_t depth = 0, n = 0;
	for (size_t i = 0; i < pr->n; i++) {
		if (depth && pr->pc[i] == rets[depth - 1])
			depth--;
		const struct prog_insn *in = prog_find(pr, pr->pc[i]);
		const char *fn = in ? in->func : "(unknown)";
		char path[512];
		size_t len = 0;
		for (size_t d = 0; d < depth && len < sizeof(path); d++)
			len += (size_t)snprintf(path + len, sizeof(path) - len, "%s;", callers[d]);
		if (len < sizeof(path))
			snprintf(path + len, sizeof(path) - len, "%s", fn);
		size_t k = find_stack(st, n, path);
		if (k == n && n < cap) {
			snprintf(st[n].path, sizeof(st[n].path), "%s", path);
			st[n++].weight = 0;
		}
		if (k < n)
			st[k].weight++;
		if (in && i + 1 < pr->n && (strcmp(in->mnemonic, "bl") == 0 || strcmp(in->mnemonic, "blx") == 0) &&
		    pr->pc[i + 1] != in->addr + in->size && depth < 256) {
			callers[depth] = in->func;
			rets[depth++] = in->addr + in->size;
		}
	}
	return n;
}

static void program_folded(const char *tool, const struct prog_run *pr, const struct row *rows, size_t nrows,
			   unsigned long long total_cycles)
{
	static struct stack_line got[512], want[512];
	char cmd[2048];
	/* by instructions: exactly the stacks of the run */
	snprintf(cmd, sizeof(cmd), "%s profile --trace %s " PROG_DECODE_ARGS " --elf %s --format folded --weight instr",
		 tool, pr->trace, pr->elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	long ng = read_folded(out, got, 512);
	size_t nw = expected_stacks(pr, want, 512), bad = 0;
	CHECK(ng > 0);
	CHECK_EQ((size_t)ng, nw);
	for (size_t k = 0; ng > 0 && k < nw; k++) {
		size_t j = find_stack(got, (size_t)ng, want[k].path);
		if ((j == (size_t)ng || got[j].weight != want[k].weight) && bad++ < 5)
			fprintf(stderr, "folded %s: %llu; expected %llu\n", want[k].path, j < (size_t)ng ? got[j].weight : 0ULL,
				want[k].weight);
	}
	printf("folded (instr): %ld stacks (expected %zu), %zu differ\n", ng, nw, bad);
	CHECK_EQ(bad, 0);
	CHECK(find_stack(want, nw, "_start;main;fib;fib;fib") < nw);
	CHECK_EQ(weight_sum(got, ng > 0 ? (size_t)ng : 0), pr->n);
	/* by cycles (the default, the trace has them): every function's
	 * stacks add up to its cycles in the profile */
	snprintf(cmd, sizeof(cmd), "%s profile --trace %s " PROG_DECODE_ARGS " --elf %s --format folded", tool,
		 pr->trace, pr->elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	ng = read_folded(out, got, 512);
	CHECK(ng > 0);
	if (ng <= 0)
		return;
	CHECK_EQ(weight_sum(got, (size_t)ng), total_cycles);
	for (size_t i = 0; i < nrows; i++)
		CHECK_EQ(leaf_sum(got, (size_t)ng, rows[i].name), rows[i].cycles);
}

static void program(const char *tool)
{
	struct prog_run pr;
	char cmd[2048], cg[256];
	if (prog_setup(&pr) < 0) {
		CHECK(!"program fixture");
		prog_cleanup(&pr);
		return;
	}
	snprintf(cg, sizeof(cg), "%s/callgrind.out", pr.dir);
	snprintf(cmd, sizeof(cmd), "%s profile --trace %s " PROG_DECODE_ARGS " --elf %s --top 0 --callgrind %s", tool,
		 pr.trace, pr.elf, cg);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	struct row rows[64];
	size_t nrows = read_rows(out, rows, 64);
	unsigned long long in_insns = 0, outside = 0, total = 0;
	CHECK(sscanf(out, "%llu instructions, %llu cycles in them (+%llu", &total, &in_insns, &outside) == 3);
	CHECK_EQ(total, pr.n);
	/* every cycle of the generated trace is somewhere */
	CHECK_EQ(in_insns + outside, pr.gen_cycles);

	/* per function: instructions executed (qemu) and calls (BL/BLX that went there) */
	size_t checked = 0, bad = 0;
	unsigned long long cyc_sum = 0;
	for (size_t i = 0; i < pr.ninsn; i++) {
		if (i && strcmp(pr.insn[i].func, pr.insn[i - 1].func) == 0)
			continue;
		unsigned long long instr = 0, calls = 0;
		for (size_t j = 0; j < pr.n; j++) {
			const struct prog_insn *in = prog_find(&pr, pr.pc[j]);
			if (in && strcmp(in->func, pr.insn[i].func) == 0)
				instr++;
			if (!in || j + 1 >= pr.n || (strcmp(in->mnemonic, "bl") != 0 && strcmp(in->mnemonic, "blx") != 0))
				continue;
			const struct prog_insn *to = prog_find(&pr, pr.pc[j + 1]);
			if (to && pr.pc[j + 1] != in->addr + in->size && strcmp(to->func, pr.insn[i].func) == 0)
				calls++;
		}
		const struct row *r = find_row(rows, nrows, pr.insn[i].func);
		if (!instr && !calls) {
			CHECK(r == NULL);
			continue;
		}
		checked++;
		if (!r || r->instr != instr || r->calls != calls) {
			if (bad++ < 5)
				fprintf(stderr, "profile %s: %llu instr, %llu calls; expected %llu, %llu\n", pr.insn[i].func,
					r ? r->instr : 0ULL, r ? r->calls : 0ULL, instr, calls);
		}
	}
	for (size_t i = 0; i < nrows; i++)
		cyc_sum += rows[i].cycles;
	printf("profile: %zu functions (expected %zu), %zu differ\n", nrows, checked, bad);
	CHECK_EQ(nrows, checked);
	CHECK_EQ(bad, 0);
	CHECK_EQ(cyc_sum, in_insns);
	CHECK(find_row(rows, nrows, "fib") && find_row(rows, nrows, "fib")->calls == 41);
	program_folded(tool, &pr, rows, nrows, in_insns);

	struct exp_edge edges[64];
	size_t ne = expected_edges(&pr, edges, 64);
	check_callgrind_edges(cg, edges, ne);

	/* callgrind_annotate reads it: totals, and main's inclusive count is
	 * everything from its first instruction until it returns. */
	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=yes %s", cg);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	char num[32], want[96];
	with_commas(pr.n, num, sizeof(num));
	snprintf(want, sizeof(want), "%s (100.0%%)", num);
	CHECK(strstr(out, want) != NULL);
	CHECK(strstr(out, "PROGRAM TOTALS") != NULL);
	size_t first = 0, last = 0;
	for (size_t j = 0; j < pr.n; j++) {
		const struct prog_insn *in = prog_find(&pr, pr.pc[j]);
		if (in && strcmp(in->func, "main") == 0) {
			if (!first)
				first = j + 1;
			last = j + 1;
		}
	}
	with_commas(last - first + 1, num, sizeof(num));
	snprintf(want, sizeof(want), "\n%s (", num);
	const char *m = strstr(out, want);
	CHECK(m != NULL && strstr(m, ":main") != NULL && strstr(m, ":main") < strchr(m + 1, '\n'));
	if (!m)
		fprintf(stderr, "callgrind_annotate: no line with main's inclusive %s:\n%.3000s\n", num, out);
	prog_cleanup(&pr);
}

/* ---- TC2 ---- */

struct tc2_fn {
	uint32_t start, size;
	unsigned long long instr, cycles, calls;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static struct tc2_fn *tc2_find(struct tc2_fn *fn, size_t n, uint32_t addr)
{
	struct tc2_fn *hit = NULL;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fn[mid].start <= addr) {
			hit = &fn[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return hit && addr < hit->start + hit->size ? hit : NULL;
}

/* An ELF with only a symbol table: FUNC symbols f_<start> (Thumb). */
static int write_symbol_elf(const char *path, const struct tc2_fn *fn, size_t n)
{
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";
	size_t strsz = 1 + n * 11, symsz = (n + 1) * sizeof(Elf32_Sym);
	char *str = calloc(1, strsz);
	Elf32_Sym *sym = calloc(n + 1, sizeof(*sym));
	FILE *f = fopen(path, "wb");
	int rc = -1;
	if (!str || !sym || !f)
		goto out;
	for (size_t i = 0; i < n; i++) {
		snprintf(str + 1 + i * 11, 11, "f_%08x", fn[i].start);
		sym[i + 1].st_name = (Elf32_Word)(1 + i * 11);
		sym[i + 1].st_value = fn[i].start | 1u;
		sym[i + 1].st_size = fn[i].size;
		sym[i + 1].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym[i + 1].st_shndx = SHN_ABS;
	}
	Elf32_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_ARM;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf32_Shdr);
	eh.e_shnum = 4;
	eh.e_shstrndx = 3;
	size_t off_sym = sizeof(eh), off_str = off_sym + symsz, off_shstr = off_str + strsz;
	eh.e_shoff = (Elf32_Off)((off_shstr + sizeof(shstr) + 3) & ~(size_t)3);
	Elf32_Shdr sh[4];
	memset(sh, 0, sizeof(sh));
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_SYMTAB;
	sh[1].sh_offset = (Elf32_Off)off_sym;
	sh[1].sh_size = (Elf32_Word)symsz;
	sh[1].sh_link = 2;
	sh[1].sh_info = 1;
	sh[1].sh_entsize = sizeof(Elf32_Sym);
	sh[2].sh_name = 9;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = (Elf32_Off)off_str;
	sh[2].sh_size = (Elf32_Word)strsz;
	sh[3].sh_name = 17;
	sh[3].sh_type = SHT_STRTAB;
	sh[3].sh_offset = (Elf32_Off)off_shstr;
	sh[3].sh_size = sizeof(shstr);
	static const char pad[4];
	if (fwrite(&eh, sizeof(eh), 1, f) == 1 && fwrite(sym, symsz, 1, f) == 1 && fwrite(str, strsz, 1, f) == 1 &&
	    fwrite(shstr, sizeof(shstr), 1, f) == 1 && fwrite(pad, eh.e_shoff - off_shstr - sizeof(shstr), 1, f) <= 1 &&
	    fwrite(sh, sizeof(sh), 1, f) == 1)
		rc = 0;
out:
	if (f && fclose(f) != 0)
		rc = -1;
	free(str);
	free(sym);
	return rc;
}

static void tc2(const char *tool)
{
	static const char *dumps[] = { "etmv3_0x10.txt", "etmv3_0x11.txt", "etmv3_0x12.txt", "ptmv1_0x13.txt" };
	char dir[1024], path[1200], cmd[2600], elf[] = "/tmp/csd_test_profile_XXXXXX";
	struct ds5_dump d[4];
	uint32_t targets[4096];
	size_t nt = 0;
	unsigned long long all_instr = 0, all_cycles = 0;
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	/* Call targets: a BL/BLX that passed, followed directly (timestamps
	 * aside) by a known instruction. */
	for (size_t k = 0; k < 4; k++) {
		snprintf(path, sizeof(path), "%s/ds5-dumps/%s", dir, dumps[k]);
		CHECK_EQ(ds5_load(path, &d[k]), 0);
		for (size_t i = 0; i + 1 < d[k].n; i++) {
			const struct ds5_rec *r = &d[k].rec[i];
			if (r->kind == DS5_INSN) {
				all_instr++;
				all_cycles += r->value;
			}
			if (r->kind != DS5_INSN || strncmp(r->mnemonic, "BL", 2) != 0 || r->cond_fail ||
			    (r->mnemonic[2] != 0 && r->mnemonic[2] != 'X'))
				continue;
			size_t j = i + 1;
			while (j < d[k].n && d[k].rec[j].kind == DS5_TIMESTAMP)
				j++;
			if (j < d[k].n && d[k].rec[j].kind == DS5_INSN && nt < 4096)
				targets[nt++] = d[k].rec[j].addr;
		}
		const struct ds5_rec *r = &d[k].rec[d[k].n - 1];
		if (r->kind == DS5_INSN) {
			all_instr++;
			all_cycles += r->value;
		}
	}
	qsort(targets, nt, sizeof(targets[0]), cmp_u32);
	struct tc2_fn fn[4096];
	size_t nf = 0;
	for (size_t i = 0; i < nt; i++)
		if (nf == 0 || targets[i] != fn[nf - 1].start) {
			memset(&fn[nf], 0, sizeof(fn[nf]));
			fn[nf++].start = targets[i];
		}
	for (size_t i = 0; i < nf; i++) /* up to the next one, at most 4 KiB */
		fn[i].size = i + 1 < nf && fn[i + 1].start - fn[i].start < 0x1000 ? fn[i + 1].start - fn[i].start : 0x1000;
	/* DS-5's sums per function */
	unsigned long long unknown_instr = 0;
	for (size_t k = 0; k < 4; k++) {
		for (size_t i = 0; i < d[k].n; i++) {
			const struct ds5_rec *r = &d[k].rec[i];
			if (r->kind != DS5_INSN)
				continue;
			struct tc2_fn *f = tc2_find(fn, nf, r->addr);
			if (f) {
				f->instr++;
				f->cycles += r->value;
			} else {
				unknown_instr++;
			}
			if (strncmp(r->mnemonic, "BL", 2) != 0 || r->cond_fail || (r->mnemonic[2] != 0 && r->mnemonic[2] != 'X'))
				continue;
			size_t j = i + 1;
			while (j < d[k].n && d[k].rec[j].kind == DS5_TIMESTAMP)
				j++;
			if (j < d[k].n && d[k].rec[j].kind == DS5_INSN && (f = tc2_find(fn, nf, d[k].rec[j].addr)) != NULL)
				f->calls++;
		}
		ds5_free(&d[k]);
	}
	int fd = mkstemp(elf);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ(write_symbol_elf(elf, fn, nf), 0);
	snprintf(cmd, sizeof(cmd), "%s profile %s --elf %s --top 0", tool, dir, elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	static struct row rows[4096];
	size_t nrows = read_rows(out, rows, 4096), bad = 0, compared = 0;
	for (size_t i = 0; i < nf; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f_%08x", fn[i].start);
		const struct row *r = find_row(rows, nrows, name);
		if (!fn[i].instr && !fn[i].calls) {
			CHECK(r == NULL);
			continue;
		}
		compared++;
		if (!r || r->instr != fn[i].instr || r->cycles != fn[i].cycles || r->calls != fn[i].calls) {
			if (bad++ < 5)
				fprintf(stderr, "tc2 profile %s: %llu instr %llu cycles %llu calls; DS-5 %llu %llu %llu\n", name,
					r ? r->instr : 0ULL, r ? r->cycles : 0ULL, r ? r->calls : 0ULL, fn[i].instr,
					fn[i].cycles, fn[i].calls);
		}
	}
	const struct row *u = find_row(rows, nrows, "(unknown)");
	printf("tc2 profile: %zu functions from %zu call targets compared with DS-5, %zu differ; %llu instructions "
	       "outside them\n", compared, nf, bad, unknown_instr);
	CHECK(compared > 50);
	CHECK_EQ(bad, 0);
	CHECK_EQ(nrows, compared + (unknown_instr != 0));
	CHECK(unknown_instr == 0 || (u && u->instr == unknown_instr));
	/* Folded stacks: by cycles, every function's stacks add up to DS-5's
	 * cycles of it, and all of them to all cycles. */
	static struct stack_line st[8192];
	snprintf(cmd, sizeof(cmd), "%s profile %s --elf %s --format folded", tool, dir, elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	long ns = read_folded(out, st, 8192);
	CHECK(ns > 0);
	size_t fbad = 0;
	for (size_t i = 0; ns > 0 && i < nf; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f_%08x", fn[i].start);
		if (leaf_sum(st, (size_t)ns, name) != fn[i].cycles && fbad++ < 5)
			fprintf(stderr, "tc2 folded %s: %llu cycles; DS-5 %llu\n", name, leaf_sum(st, (size_t)ns, name),
				fn[i].cycles);
	}
	printf("tc2 folded: %ld stacks, %zu functions differ from DS-5\n", ns, fbad);
	CHECK_EQ(fbad, 0);
	CHECK_EQ(ns > 0 ? weight_sum(st, (size_t)ns) : 0, all_cycles);
	unlink(elf);

	/* No ELF: functions are call targets; totals are DS-5's. */
	char cg[] = "/tmp/csd_test_profile_cg_XXXXXX";
	fd = mkstemp(cg);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "%s profile %s --callgrind %s", tool, dir, cg);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	unsigned long long ti = 0, tcyc = 0;
	CHECK(sscanf(out, "%llu instructions, %llu cycles in them", &ti, &tcyc) == 2);
	CHECK_EQ(ti, all_instr);
	CHECK_EQ(tcyc, all_cycles);
	snprintf(cmd, sizeof(cmd), "%s profile %s --format folded", tool, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	ns = read_folded(out, st, 8192);
	CHECK(ns > 0);
	CHECK_EQ(ns > 0 ? weight_sum(st, (size_t)ns) : 0, all_cycles);
	snprintf(cmd, sizeof(cmd), "%s profile %s --format folded --weight instr", tool, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	ns = read_folded(out, st, 8192);
	CHECK_EQ(ns > 0 ? weight_sum(st, (size_t)ns) : 0, all_instr);
	snprintf(cmd, sizeof(cmd), "callgrind_annotate %s", cg);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	char num[32];
	with_commas(all_instr, num, sizeof(num));
	CHECK(strstr(out, num) != NULL);
	unlink(cg);
}

/*
 * longjmp (tests/programs/longjmp.c): each round's longjmp leaves the calls
 * of descend(), throw_error() and longjmp itself without their returns.
 * They end where execution lands in a function that a call in progress was
 * made from, so main(), which is not recursive, is never inside itself and
 * no stack is deeper than the program's: main, try_descend, descend at most
 * 22 deep (10 + round), throw_error and the C library's longjmp or printf
 * below them.
 */
static void longjmp_stacks(const char *tool)
{
	const char *gen = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	CHECK(gen != NULL && progs != NULL);
	if (!gen || !progs)
		return;
	static const char *const runs[][2] = { { "longjmp-arm-O2--multi", "longjmp-arm-O2" },
					       { "longjmp-thumb-O0--ts", "longjmp-thumb-O0" } };
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		char cmd[2048];
		snprintf(cmd, sizeof(cmd), "%s profile %s/%s --elf %s/%s --format folded", tool, gen, runs[k][0], progs,
			 runs[k][1]);
		CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
		size_t stacks = 0, deepest = 0, main_twice = 0;
		for (const char *l = out; *l;) {
			/* "frame;frame;... count" */
			const size_t n = strcspn(l, "\n"), len = strcspn(l, " \n");
			char stack[4096];
			snprintf(stack, sizeof(stack), "%.*s", (int)(len < sizeof(stack) ? len : sizeof(stack) - 1), l);
			size_t depth = 0, mains = 0;
			char *save = NULL;
			for (char *f = strtok_r(stack, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
				depth++;
				mains += strcmp(f, "main") == 0;
			}
			stacks++;
			deepest = depth > deepest ? depth : deepest;
			main_twice += mains > 1;
			l += n + (l[n] != 0);
		}
		printf("profile %s (longjmp): %zu stacks, the deepest %zu frames, %zu with main inside main\n",
		       runs[k][0], stacks, deepest, main_twice);
		CHECK(stacks > 10);
		CHECK_EQ(main_twice, 0);
		CHECK(deepest <= 40);
	}
}

int main(void)
{
	const char *tool = prog_tool();
	program(tool);
	tc2(tool);
	longjmp_stacks(tool);
	return check_done("test_profile");
}
