/*
 * `csdec coverage` against what is known independently:
 *
 * The test program (prog_trace.h): qemu's exec log says how often each
 * instruction ran and whether it branched; objdump says which
 * instructions each function has and which are conditional branches;
 * addr2line gives each instruction's line. From these: the per-function
 * summary, the per-instruction list, and every FN/FNDA/BRDA/DA record of
 * the lcov file. genhtml and lcov must accept the file. An ELF without
 * DWARF still gives the summary, and --lcov refuses it.
 *
 * TC2 without an ELF: per-instruction coverage only; its executed
 * addresses and counts are those of DS-5's decodes of the four sources.
 */
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ds5_dump.h"
#include "prog_trace.h"

static char out[1 << 21];

/* Expected lcov records of one line. */
struct exp_line {
	unsigned line;
	uint64_t most;         /* highest count of its instructions */
};

static void check_summary_and_insns(const struct prog_run *pr, const char *text)
{
	/* per function: name, executed, present, conditional branches (both ways, all) */
	size_t rows = 0, insn_lines = 0, insn_bad = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char name[64];
		unsigned long run, present, both, branches;
		double pct;
		unsigned long a, count, taken;
		char isa[8];
		if (sscanf(l, "%63s %lu/%lu %lf%% %lu/%lu", name, &run, &present, &pct, &both, &branches) == 6 &&
		    strcmp(name, "TOTAL") != 0) {
			unsigned long e_run = 0, e_present = 0, e_both = 0, e_br = 0;
			for (size_t i = 0; i < pr->ninsn; i++) {
				const struct prog_insn *in = &pr->insn[i];
				if (strcmp(in->func, name) != 0 || in->outside)
					continue;
				e_present++;
				e_run += in->count != 0;
				if (prog_is_cond_branch(in->mnemonic)) {
					e_br++;
					e_both += in->taken && in->taken < in->count;
				}
			}
			if (run != e_run || present != e_present || both != e_both || branches != e_br)
				fprintf(stderr, "coverage %s: %lu/%lu both %lu/%lu, expected %lu/%lu both %lu/%lu\n", name, run,
					present, both, branches, e_run, e_present, e_both, e_br);
			CHECK_EQ(run, e_run);
			CHECK_EQ(present, e_present);
			CHECK_EQ(both, e_both);
			CHECK_EQ(branches, e_br);
			rows++;
		} else if (sscanf(l, " 0x%lx %7s %lu", &a, isa, &count) == 3) {
			const struct prog_insn *in = prog_find(pr, (uint32_t)a);
			char one[512];
			snprintf(one, sizeof(one), "%.*s", (int)strcspn(l, "\n"), l);
			const char *tk = strstr(one, "(taken ");
			taken = tk ? strtoul(tk + 7, NULL, 10) : 0;
			insn_lines++;
			int ok = in && !in->outside && count == in->count && (tk != NULL) == (prog_is_cond_branch(in->mnemonic) != 0) &&
				 (!tk || taken == in->taken);
			if (!ok && insn_bad++ < 5)
				fprintf(stderr, "coverage: %.*s\n    expected count %llu taken %llu (%s)\n",
					(int)strcspn(l, "\n"), l, in ? (unsigned long long)in->count : 0ULL,
					in ? (unsigned long long)in->taken : 0ULL, in ? in->mnemonic : "not an instruction");
		}
	}
	size_t funcs = 0, inside = 0;
	for (size_t i = 0; i < pr->ninsn; i++) {
		funcs += i == 0 || strcmp(pr->insn[i].func, pr->insn[i - 1].func) != 0;
		inside += !pr->insn[i].outside;
	}
	printf("coverage summary: %zu functions (objdump: %zu), %zu instructions listed (objdump and nm: %zu), "
	       "%zu differ\n", rows, funcs, insn_lines, inside, insn_bad);
	CHECK_EQ(rows, funcs);
	CHECK_EQ(insn_lines, inside);
	CHECK_EQ(insn_bad, 0);
	/* the program has a function that never runs, a branch never taken */
	CHECK(strstr(text, "never_called                           0/2") != NULL);
	CHECK(strstr(text, "always taken") != NULL || strstr(text, "never taken") != NULL);
}

static int cmp_u(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

static void check_lcov(const struct prog_run *pr, const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	/* Expected, from objdump + addr2line + qemu. Lines of the program file. */
	unsigned lines[4096];
	size_t nl = 0;
	for (size_t i = 0; i < pr->ninsn && nl < 4096; i++)
		if (pr->insn[i].line && !pr->insn[i].outside)
			lines[nl++] = pr->insn[i].line;
	qsort(lines, nl, sizeof(lines[0]), cmp_u);
	size_t nuniq = 0;
	for (size_t i = 0; i < nl; i++)
		if (i == 0 || lines[i] != lines[i - 1])
			lines[nuniq++] = lines[i];

	char line[512];
	size_t da = 0, da_bad = 0, brda = 0, brda_bad = 0, fnda = 0, fnda_bad = 0, records = 0;
	unsigned lf = 0, lh = 0, exp_lh = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned ln, block, branch;
		unsigned long long cnt;
		char name[64], cs[32];
		if (sscanf(line, "DA:%u,%llu", &ln, &cnt) == 2) {
			uint64_t most = 0;
			int present = 0;
			for (size_t i = 0; i < pr->ninsn; i++)
				if (pr->insn[i].line == ln && !pr->insn[i].outside) {
					present = 1;
					most = pr->insn[i].count > most ? pr->insn[i].count : most;
				}
			da++;
			if (!present || most != cnt) {
				if (da_bad++ < 5)
					fprintf(stderr, "lcov DA:%u,%llu, expected %llu%s\n", ln, cnt, (unsigned long long)most,
						present ? "" : " (no instruction has that line)");
			}
		} else if (sscanf(line, "BRDA:%u,%u,%u,%31s", &ln, &block, &branch, cs) == 4) {
			/* the block-th conditional branch of the line, in address order */
			const struct prog_insn *in = NULL;
			unsigned k = 0;
			for (size_t i = 0; i < pr->ninsn && !in; i++)
				if (pr->insn[i].line == ln && prog_is_cond_branch(pr->insn[i].mnemonic) && k++ == block)
					in = &pr->insn[i];
			brda++;
			char want[32];
			if (in && in->count == 0)
				snprintf(want, sizeof(want), "-");
			else if (in)
				snprintf(want, sizeof(want), "%llu",
					 (unsigned long long)(branch == 0 ? in->taken : in->count - in->taken));
			if (!in || strcmp(cs, want) != 0) {
				if (brda_bad++ < 5)
					fprintf(stderr, "lcov %.*s: expected %s\n", (int)strcspn(line, "\n"), line,
						in ? want : "no such branch");
			}
		} else if (sscanf(line, "FNDA:%llu,%63s", &cnt, name) == 2) {
			uint64_t e = 0;
			int found = 0;
			for (size_t i = 0; i < pr->ninsn && !found; i++)
				if (strcmp(pr->insn[i].func, name) == 0) {
					found = 1;
					e = pr->insn[i].count;
				}
			fnda++;
			if (!found || e != cnt) {
				if (fnda_bad++ < 5)
					fprintf(stderr, "lcov FNDA:%llu,%s, expected %llu\n", cnt, name, (unsigned long long)e);
			}
		} else if (sscanf(line, "LF:%u", &ln) == 1) {
			lf = ln;
		} else if (sscanf(line, "LH:%u", &ln) == 1) {
			lh = ln;
		} else if (strncmp(line, "end_of_record", 13) == 0) {
			records++;
		}
	}
	fclose(f);
	/* every line with an instruction has a DA record */
	for (size_t i = 0; i < nuniq; i++) {
		int hit = 0;
		for (size_t j = 0; j < pr->ninsn && !hit; j++)
			hit = pr->insn[j].line == lines[i] && pr->insn[j].count;
		exp_lh += hit;
	}
	size_t exp_brda = 0, funcs = 0;
	for (size_t i = 0; i < pr->ninsn; i++) {
		exp_brda += 2 * (pr->insn[i].line && !pr->insn[i].outside && prog_is_cond_branch(pr->insn[i].mnemonic));
		funcs += i == 0 || strcmp(pr->insn[i].func, pr->insn[i - 1].func) != 0;
	}
	printf("lcov: %zu DA (expected %zu), %zu BRDA (expected %zu), %zu FNDA (expected %zu); %zu / %zu / %zu differ\n",
	       da, nuniq, brda, exp_brda, fnda, funcs, da_bad, brda_bad, fnda_bad);
	CHECK_EQ(records, 1);
	CHECK_EQ(da, nuniq);
	CHECK_EQ(da_bad, 0);
	CHECK_EQ(lf, nuniq);
	CHECK_EQ(lh, exp_lh);
	CHECK_EQ(brda, exp_brda);
	CHECK_EQ(brda_bad, 0);
	CHECK_EQ(fnda, funcs);
	CHECK_EQ(fnda_bad, 0);
}

/* Damaged ELF files (cut short, header and symbol table bytes changed)
 * are refused or read as far as they make sense: never a crash (the
 * sanitizer build of this test runs the sanitizer build of the tool). */
static void hostile_elfs(const char *tool, const struct prog_run *pr)
{
	char path[256], cmd[1024];
	FILE *f = fopen(pr->elf, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	static uint8_t elf[1 << 20], bad[1 << 20];
	size_t n = fread(elf, 1, sizeof(elf), f);
	fclose(f);
	CHECK(n > 1000 && n < sizeof(elf));
	/* where the section headers and the symbol table are */
	Elf32_Ehdr eh;
	memcpy(&eh, elf, sizeof(eh));
	uint32_t symoff = 0, symsize = 0;
	for (unsigned i = 0; i < eh.e_shnum && eh.e_shoff + (i + 1) * sizeof(Elf32_Shdr) <= n; i++) {
		Elf32_Shdr sh;
		memcpy(&sh, elf + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB) {
			symoff = sh.sh_offset;
			symsize = sh.sh_size;
		}
	}
	CHECK(symsize > 0);
	snprintf(path, sizeof(path), "%s/bad.elf", pr->dir);
	uint32_t seed = 12345;
	int crashes = 0, runs = 0;
	for (int v = 0; v < 48; v++) {
		size_t len = n;
		memcpy(bad, elf, n);
		if (v < 8) {
			static const size_t cuts[] = { 0, 10, 51, 52, 200 };
			len = v < 5 ? cuts[v] : v == 5 ? n / 2 : v == 6 ? eh.e_shoff + 100 : n - 1;
		} else {
			for (int k = 0; k < 4; k++) {
				seed = seed * 1103515245u + 12345u;
				uint32_t r = seed >> 8;
				size_t at;
				switch (r % 3) {
				case 0: /* ELF header */
					at = 16 + (r >> 2) % (sizeof(eh) - 16);
					break;
				case 1: /* section headers */
					at = eh.e_shoff + (r >> 2) % (eh.e_shnum * sizeof(Elf32_Shdr));
					break;
				default: /* symbols */
					at = symoff + (r >> 2) % symsize;
					break;
				}
				if (at < n)
					bad[at] = (uint8_t)(seed >> 24 ^ (r & 0x80 ? 0xFF : 0x01));
			}
		}
		f = fopen(path, "wb");
		CHECK(f != NULL);
		if (!f)
			return;
		CHECK_EQ(fwrite(bad, 1, len, f), len);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "%s coverage --trace %s " PROG_DECODE_ARGS " --elf %s --insns >/dev/null 2>&1",
			 tool, pr->trace, path);
		int rc = prog_run_cmd(cmd, out, sizeof(out));
		runs++;
		if (rc < 0 || rc > 2) {
			if (crashes++ < 3)
				fprintf(stderr, "coverage with damaged ELF variant %d: status %d\n", v, rc);
		}
	}
	printf("damaged ELF files: %d runs, %d crashes\n", runs, crashes);
	CHECK_EQ(crashes, 0);
}

static void program(const char *tool)
{
	struct prog_run pr;
	char cmd[2048], info[256];
	if (prog_setup(&pr) < 0) {
		CHECK(!"program fixture");
		prog_cleanup(&pr);
		return;
	}
	snprintf(info, sizeof(info), "%s/cov.info", pr.dir);
	snprintf(cmd, sizeof(cmd), "%s coverage --trace %s " PROG_DECODE_ARGS " --elf %s --lcov %s --insns", tool,
		 pr.trace, pr.elf, info);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	char executions[64];
	snprintf(executions, sizeof(executions), "%zu instructions executed", pr.n);
	CHECK(strstr(out, executions) != NULL);
	check_summary_and_insns(&pr, out);
	check_lcov(&pr, info);

	/* The ecosystem's tools read it. */
	snprintf(cmd, sizeof(cmd), "lcov --summary %s --rc lcov_branch_coverage=1 2>&1", info);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "lines......:") != NULL);
	CHECK(strstr(out, "branches...:") != NULL);
	snprintf(cmd, sizeof(cmd), "genhtml --quiet --branch-coverage -o %s/html %s 2>&1", pr.dir, info);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	char page[512];
	struct stat sb;
	snprintf(page, sizeof(page), "%s/html/index.html", pr.dir);
	CHECK_EQ(stat(page, &sb), 0);
	/* genhtml's page of the source file shows the line counts */
	snprintf(cmd, sizeof(cmd), "cat %s/html/*/prog.c.gcov.html", pr.dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "collatz_steps") != NULL);

	/* Without DWARF: the summary, and --lcov is refused (exit 2). */
	char stripped[256];
	snprintf(stripped, sizeof(stripped), "%s/nodebug.elf", pr.dir);
	snprintf(cmd, sizeof(cmd), "arm-linux-gnueabihf-strip --strip-debug -o %s %s", stripped, pr.elf);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s coverage --trace %s " PROG_DECODE_ARGS " --elf %s", tool, pr.trace, stripped);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "No DWARF line info") != NULL);
	CHECK(strstr(out, "collatz_steps") != NULL);
	snprintf(cmd, sizeof(cmd), "%s coverage --trace %s " PROG_DECODE_ARGS " --elf %s --lcov %s/x.info 2>&1", tool,
		 pr.trace, stripped, pr.dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "DWARF") != NULL);
	/* The same when libdw cannot be loaded (CSD_TEST_NO_LIB makes it
	 * fail), with a warning that says why. */
	snprintf(cmd, sizeof(cmd), "CSD_TEST_NO_LIB=libdw %s coverage --trace %s " PROG_DECODE_ARGS " --elf %s 2>&1", tool,
		 pr.trace, pr.elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "warning: ") != NULL && strstr(out, "no DWARF line info") != NULL);
	CHECK(strstr(out, "No DWARF line info") != NULL);
	CHECK(strstr(out, "collatz_steps") != NULL);
	snprintf(cmd, sizeof(cmd), "CSD_TEST_NO_LIB=libdw %s coverage --trace %s " PROG_DECODE_ARGS " --elf %s --lcov %s/y.info 2>&1",
		 tool, pr.trace, pr.elf, pr.dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "no DWARF line info") != NULL && strstr(out, "--lcov needs DWARF line info") != NULL);
	hostile_elfs(tool, &pr);
	prog_cleanup(&pr);
}

static int cmp_addr(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* TC2, no ELF: the executed addresses and counts of DS-5's four decodes. */
static void tc2(const char *tool)
{
	static const char *dumps[] = { "etmv3_0x10.txt", "etmv3_0x11.txt", "etmv3_0x12.txt", "ptmv1_0x13.txt" };
	char dir[1024], path[1200], cmd[2400];
	uint32_t *addrs = NULL;
	size_t n = 0, cap = 0;
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	for (size_t k = 0; k < 4; k++) {
		struct ds5_dump d;
		snprintf(path, sizeof(path), "%s/ds5-dumps/%s", dir, dumps[k]);
		CHECK_EQ(ds5_load(path, &d), 0);
		for (size_t i = 0; i < d.n; i++) {
			if (d.rec[i].kind != DS5_INSN)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 65536;
				addrs = realloc(addrs, cap * sizeof(*addrs));
				if (!addrs)
					exit(1);
			}
			addrs[n++] = d.rec[i].addr;
		}
		ds5_free(&d);
	}
	qsort(addrs, n, sizeof(*addrs), cmp_addr);
	snprintf(cmd, sizeof(cmd), "%s coverage %s --insns", tool, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	char executions[64];
	snprintf(executions, sizeof(executions), "%zu instructions executed", n);
	CHECK(strstr(out, executions) != NULL);
	CHECK(strstr(out, "No program code known") != NULL);
	/* --insns: address and count, in address order */
	size_t i = 0, listed = 0, bad = 0;
	for (const char *l = strstr(out, "\nInstructions:\n"); l && *l; l = strchr(l + 1, '\n')) {
		unsigned long a, count;
		char isa[8];
		if (sscanf(l + 1, " 0x%lx %7s %lu", &a, isa, &count) != 3)
			continue;
		size_t j = i;
		while (j < n && addrs[j] == addrs[i])
			j++;
		if (i >= n || a != addrs[i] || count != j - i) {
			if (bad++ < 3)
				fprintf(stderr, "tc2 coverage: 0x%lx x%lu, DS-5 0x%x x%zu\n", a, count, i < n ? addrs[i] : 0,
					j - i);
		}
		listed++;
		i = j;
	}
	printf("tc2 coverage: %zu addresses listed, %zu differ from DS-5\n", listed, bad);
	CHECK(listed > 1000);
	CHECK_EQ(i, n);
	CHECK_EQ(bad, 0);
	/* lcov needs lines */
	snprintf(cmd, sizeof(cmd), "%s coverage %s --lcov /dev/null 2>/dev/null", tool, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 2);
	free(addrs);
}

/*
 * A program built from a path relative to its build directory (the
 * round-trip programs: tests/programs/NAME.c, DW_AT_comp_dir the
 * repository): the lcov file names the source by its full path, so
 * genhtml finds it from any directory.
 */
static void relative_sources(const char *tool)
{
	const char *gen = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	char cwd[1024];
	CHECK(gen != NULL && progs != NULL && getcwd(cwd, sizeof(cwd)) != NULL);
	if (!gen || !progs)
		return;
	char dir[] = "/tmp/csd_cov_rel_XXXXXX", cmd[4096], want[1200];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(cmd, sizeof(cmd), "%s coverage %s/recurse-thumb-O0--ts --elf %s/recurse-thumb-O0 --lcov %s/r.info >/dev/null",
		 tool, gen, progs, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "grep '^SF:' %s/r.info", dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "SF:%s/tests/programs/recurse.c\n", cwd);
	if (!strstr(out, want))
		fprintf(stderr, "lcov source names: %s(expected %s)\n", out, want);
	CHECK(strstr(out, want) != NULL);
	snprintf(cmd, sizeof(cmd), "cd / && genhtml --quiet -o %s/html %s/r.info 2>&1", dir, dir);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	const char *tool = prog_tool();
	program(tool);
	tc2(tool);
	relative_sources(tool);
	return check_done("test_coverage");
}
