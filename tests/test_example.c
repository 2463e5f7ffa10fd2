/*
 * test_example.c - examples/func_count (built by `make`) on the TC2
 * capture. The expected counts come from DS-5's instruction lists of the
 * same capture (ds5-dumps/, every instruction with a known address and
 * opcode), bucketed here by address range, or by the symbols of an ELF
 * file this test writes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "ds5_dump.h"
#include "cli_run.h"

#define MAX_ROWS 4096

static const char *const ds5_files[] = { "etmv3_0x10.txt", "etmv3_0x11.txt", "etmv3_0x12.txt", "ptmv1_0x13.txt" };

/* Every instruction DS-5 lists with a known address and opcode. */
static uint32_t *insn_addr;
static size_t n_insns;

struct row {
	unsigned long long count;
	double share;
	char addr[32];
	char name[128];
};

static struct row rows[MAX_ROWS];
static size_t n_rows;
static unsigned long long total_line;
static int total_sources;

static char tmpdir[] = "/tmp/csd_test_example_XXXXXX";

static int run(const char *cmd, char *out, size_t cap)
{
	return cli_run_cmd(cmd, NULL, out, cap);
}

static int by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void load_ds5(const char *shared)
{
	size_t cap = 0;
	for (size_t f = 0; f < sizeof(ds5_files) / sizeof(ds5_files[0]); f++) {
		char path[1024];
		struct ds5_dump d;
		snprintf(path, sizeof(path), "%s/traces/TC2/ds5-dumps/%s", shared, ds5_files[f]);
		CHECK_EQ(ds5_load(path, &d), 0);
		for (size_t i = 0; i < d.n; i++) {
			if (d.rec[i].kind != DS5_INSN)
				continue;
			if (n_insns == cap) {
				cap = cap ? 2 * cap : 32768;
				insn_addr = realloc(insn_addr, cap * sizeof(*insn_addr));
				if (!insn_addr)
					exit(1);
			}
			insn_addr[n_insns++] = d.rec[i].addr;
		}
		ds5_free(&d);
	}
	qsort(insn_addr, n_insns, sizeof(*insn_addr), by_value);
	/* The four lists hold 26215 instruction lines, 44 of them without an
	 * address or opcode (code the dump does not cover). */
	CHECK_EQ(n_insns, 26215 - 44);
}

/* Parse func_count's table: rows "COUNT SHARE% ADDR NAME", then
 * "TOTAL total of N sources". */
static void parse_table(char *out)
{
	n_rows = 0;
	total_line = 0;
	total_sources = -1;
	int header = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (!header) {
			CHECK(strstr(line, "instructions") != NULL);
			header = 1;
			continue;
		}
		struct row r;
		memset(&r, 0, sizeof(r));
		int pos = 0;
		unsigned long long total;
		int sources;
		if (sscanf(line, "%llu total of %d source", &total, &sources) == 2) {
			total_line = total;
			total_sources = sources;
			continue;
		}
		if (sscanf(line, "%llu %lf%% %31s %n", &r.count, &r.share, r.addr, &pos) == 3 && pos > 0) {
			snprintf(r.name, sizeof(r.name), "%s", line + pos);
			if (n_rows < MAX_ROWS)
				rows[n_rows++] = r;
		}
	}
	CHECK(header);
}

static const struct row *find_row(const char *name)
{
	for (size_t i = 0; i < n_rows; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

/* The table's shares and total agree with its rows, and rows come in
 * descending count order. */
static void check_table_sums(void)
{
	unsigned long long sum = 0;
	for (size_t i = 0; i < n_rows; i++) {
		sum += rows[i].count;
		double share = 100.0 * (double)rows[i].count / (double)n_insns;
		CHECK(rows[i].share > share - 0.006 && rows[i].share < share + 0.006);
		if (i && strcmp(rows[i].addr, "-") != 0) /* "(no symbol)" comes last */
			CHECK(rows[i - 1].count >= rows[i].count);
	}
	CHECK_EQ(sum, n_insns);
	CHECK_EQ(total_line, n_insns);
	CHECK_EQ(total_sources, 5); /* TC2: ETM_0..2, PTM_0 and PTM_1 (no trace) */
}

/* Per address range of `range` bytes. */
static void check_ranges(const char *tool, const char *tc2, unsigned range, char *out, size_t cap)
{
	char cmd[4096];
	if (range)
		snprintf(cmd, sizeof(cmd), "%s --range %u %s", tool, range, tc2);
	else
		snprintf(cmd, sizeof(cmd), "%s %s", tool, tc2);
	CHECK_EQ(run(cmd, out, cap), 0);
	parse_table(out);
	if (!range)
		range = 4096;
	check_table_sums();
	/* Every bucket DS-5's instructions fall into is a row with their
	 * count (insn_addr is sorted, so a bucket is a run). */
	size_t buckets = 0;
	for (size_t i = 0; i < n_insns;) {
		uint32_t start = insn_addr[i] / range * range;
		size_t j = i;
		while (j < n_insns && insn_addr[j] / range * range == start)
			j++;
		buckets++;
		char name[64];
		snprintf(name, sizeof(name), "0x%08x-0x%08x", start, start + range - 1);
		const struct row *r = find_row(name);
		CHECK(r != NULL);
		if (r)
			CHECK_EQ(r->count, j - i);
		i = j;
	}
	CHECK_EQ(n_rows, buckets);
}

/* ---- ELF with symbols -------------------------------------------------- */

struct sym {
	const char *name;
	uint32_t value, size;
	uint8_t type;           /* STT_FUNC 2, STT_OBJECT 1 */
	uint16_t shndx;         /* 0: undefined */
};

/* Hot code of the TC2 capture (kernel text around 0xc003f000-0xc0045000). */
static const struct sym syms[] = {
	{ "hot_a", 0xc003f001, 0x800, 2, 0xfff1 },  /* Thumb: bit 0 set */
	{ "hot_b", 0xc003f800, 0, 2, 0xfff1 },      /* size 0: up to hot_c */
	{ "data_obj", 0xc0040000, 0x100, 1, 0xfff1 }, /* not a function */
	{ "hot_c", 0xc0040400, 0x1c00, 2, 0xfff1 },
	{ "alias_c", 0xc0040400, 0, 2, 0xfff1 },    /* alias of hot_c without size */
	{ "undef_d", 0xc0043000, 0x100, 2, 0 },     /* undefined: ignored */
	{ "last_e", 0xc0044000, 0x1000, 2, 0xfff1 },
};

/* What func_count must count for each symbol: [start, end) by hand. */
static const struct {
	const char *name;
	uint32_t start, end;
} want_funcs[] = {
	{ "hot_a", 0xc003f000, 0xc003f800 },
	{ "hot_b", 0xc003f800, 0xc0040400 },
	{ "hot_c", 0xc0040400, 0xc0042000 },
	{ "last_e", 0xc0044000, 0xc0045000 },
};

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

/* ELF32 LE, no program headers; sections: null, .symtab, .strtab, .shstrtab. */
static size_t make_elf(uint8_t *buf, size_t cap)
{
	size_t nsyms = sizeof(syms) / sizeof(syms[0]) + 1;
	char strtab[512] = "";
	size_t strsize = 1;
	uint8_t symtab[16 * 16];
	memset(symtab, 0, sizeof(symtab));
	for (size_t i = 1; i < nsyms; i++) {
		const struct sym *s = &syms[i - 1];
		uint8_t *e = symtab + 16 * i;
		put32(e, (uint32_t)strsize);
		put32(e + 4, s->value);
		put32(e + 8, s->size);
		e[12] = (uint8_t)(1 << 4 | s->type); /* STB_GLOBAL */
		put16(e + 14, s->shndx);
		memcpy(strtab + strsize, s->name, strlen(s->name) + 1);
		strsize += strlen(s->name) + 1;
	}
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";
	size_t off_sym = 52, off_str = off_sym + 16 * nsyms, off_shstr = off_str + strsize;
	size_t off_sh = (off_shstr + sizeof(shstr) + 3) & ~(size_t)3;
	size_t total = off_sh + 4 * 40;
	if (total > cap)
		return 0;
	memset(buf, 0, total);
	memcpy(buf, "\177ELF\1\1\1", 7);
	put16(buf + 16, 2);          /* ET_EXEC */
	put16(buf + 18, 40);         /* EM_ARM */
	put32(buf + 20, 1);
	put32(buf + 32, (uint32_t)off_sh);
	put16(buf + 40, 52);
	put16(buf + 46, 40);
	put16(buf + 48, 4);
	put16(buf + 50, 3);
	memcpy(buf + off_sym, symtab, 16 * nsyms);
	memcpy(buf + off_str, strtab, strsize);
	memcpy(buf + off_shstr, shstr, sizeof(shstr));
	uint8_t *sh = buf + off_sh;
	put32(sh + 40 + 0, 1);       /* .symtab */
	put32(sh + 40 + 4, 2);
	put32(sh + 40 + 16, (uint32_t)off_sym);
	put32(sh + 40 + 20, (uint32_t)(16 * nsyms));
	put32(sh + 40 + 24, 2);      /* sh_link: .strtab */
	put32(sh + 40 + 28, 1);      /* sh_info: first global symbol */
	put32(sh + 40 + 36, 16);
	put32(sh + 80 + 0, 9);       /* .strtab */
	put32(sh + 80 + 4, 3);
	put32(sh + 80 + 16, (uint32_t)off_str);
	put32(sh + 80 + 20, (uint32_t)strsize);
	put32(sh + 120 + 0, 17);     /* .shstrtab */
	put32(sh + 120 + 4, 3);
	put32(sh + 120 + 16, (uint32_t)off_shstr);
	put32(sh + 120 + 20, sizeof(shstr));
	return total;
}

static int write_bytes(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(b, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

static void check_symbols(const char *tool, const char *tc2, char *out, size_t cap)
{
	static uint8_t elf[4096];
	char path[600], cmd[4096];
	size_t n = make_elf(elf, sizeof(elf));
	CHECK(n > 0);
	snprintf(path, sizeof(path), "%s/syms.elf", tmpdir);
	CHECK_EQ(write_bytes(path, elf, n), 0);
	snprintf(cmd, sizeof(cmd), "%s %s %s", tool, tc2, path);
	CHECK_EQ(run(cmd, out, cap), 0);
	parse_table(out);
	check_table_sums();
	unsigned long long in_funcs = 0;
	for (size_t f = 0; f < sizeof(want_funcs) / sizeof(want_funcs[0]); f++) {
		unsigned long long want = 0;
		for (size_t i = 0; i < n_insns; i++)
			want += insn_addr[i] >= want_funcs[f].start && insn_addr[i] < want_funcs[f].end;
		CHECK(want > 0); /* the symbols were put where the trace is */
		in_funcs += want;
		const struct row *r = find_row(want_funcs[f].name);
		CHECK(r != NULL);
		if (r) {
			CHECK_EQ(r->count, want);
			char addr[16];
			snprintf(addr, sizeof(addr), "0x%08x", want_funcs[f].start);
			CHECK_STR(r->addr, addr);
		}
	}
	const struct row *none = find_row("(no symbol)");
	CHECK(none != NULL);
	if (none)
		CHECK_EQ(none->count, n_insns - in_funcs);
	CHECK(find_row("data_obj") == NULL);
	CHECK(find_row("undef_d") == NULL);
	CHECK(find_row("alias_c") == NULL);
	CHECK_EQ(n_rows, sizeof(want_funcs) / sizeof(want_funcs[0]) + 1);

	/* A truncated ELF is refused, not read past its end. */
	snprintf(path, sizeof(path), "%s/cut.elf", tmpdir);
	CHECK_EQ(write_bytes(path, elf, n - 100), 0);
	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1", tool, tc2, path);
	CHECK_EQ(run(cmd, out, cap), 1);
	CHECK(strstr(out, "symbol table") != NULL);
}

int main(void)
{
	const char *srcdir = getenv("CSD_SRCDIR");
	const char *shared = check_shared_dir();
	char tool[1024], tc2[1024], cmd[4096];
	static char out[1 << 20];
	snprintf(tool, sizeof(tool), "%s/build/examples/func_count", srcdir && *srcdir ? srcdir : ".");
	snprintf(tc2, sizeof(tc2), "%s/traces/TC2", shared);
	CHECK(mkdtemp(tmpdir) != NULL);
	load_ds5(shared);

	check_ranges(tool, tc2, 0, out, sizeof(out));
	check_ranges(tool, tc2, 1000, out, sizeof(out)); /* ranges need not be powers of two */
	check_symbols(tool, tc2, out, sizeof(out));

	/* --id keeps one source: ETM_2 (0x12) alone. */
	snprintf(cmd, sizeof(cmd), "%s --id 0x12 %s", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	parse_table(out);
	CHECK_EQ(total_sources, 1);
	struct ds5_dump d;
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/TC2/ds5-dumps/etmv3_0x12.txt", shared);
	CHECK_EQ(ds5_load(path, &d), 0);
	unsigned long long want = 0;
	for (size_t i = 0; i < d.n; i++)
		want += d.rec[i].kind == DS5_INSN;
	ds5_free(&d);
	CHECK_EQ(total_line, want);

	/* Usage and input errors. */
	snprintf(cmd, sizeof(cmd), "%s --help", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strncmp(out, "Usage: func_count", 17) == 0);
	snprintf(cmd, sizeof(cmd), "%s 2>/dev/null", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	snprintf(cmd, sizeof(cmd), "%s %s/nothing 2>/dev/null", tool, tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	snprintf(cmd, sizeof(cmd), "%s --range 0 %s 2>/dev/null", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	free(insn_addr);
	return check_done("test_example");
}
