/* data_check.h - the data-trace round-trip check shared by
 * test_data_roundtrip.c (Unicorn runs) and test_qemu_data.c (qemu-user
 * runs): the executed instructions and data accesses of a run (log_insn,
 * log_acc, filled by the test) against `csdec decode --format jsonl` of the
 * snapshot generated from them. Needs check.h first; one test program
 * includes it once.
 */
#ifndef CSD_TESTS_DATA_CHECK_H
#define CSD_TESTS_DATA_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 200000

struct acc {
	uint32_t insn, addr;
	uint64_t value;
	uint8_t dir, size;
};

static uint32_t log_insn[MAX_ITEMS];
static struct acc log_acc[MAX_ITEMS];
static size_t n_log_insn, n_log_acc;

static int hex_key(const char *line, const char *key, uint64_t *v)
{
	const char *p = strstr(line, key);
	if (!p)
		return 0;
	*v = strtoull(p + strlen(key), NULL, 16);
	return 1;
}

/* `csdec decode --format jsonl` of dir (with --insn, or ranges) as a
 * stream of lines (pclose it), or NULL after a failed check. */
static FILE *open_decode(const char *dir, int insn_mode)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s decode %s--format jsonl %s", getenv("CSD_TOOL"), insn_mode ? "--insn " : "", dir);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	return p;
}

/* Decode dir with --insn (or ranges) and compare with the log. */
static void check_decode(const char *dir, int addr_on, int value_on, int insn_mode, const char *what)
{
	FILE *p = open_decode(dir, insn_mode);
	if (!p)
		return;
	static char line[4096];
	size_t ni = 0, na = 0, bad = 0, errors = 0;
	uint32_t last_insn = 0;
	int have_last = 0;
	while (fgets(line, sizeof line, p)) {
		uint64_t v = 0;
		if (strstr(line, "\"type\":\"error\""))
			errors++;
		if (strstr(line, "\"type\":\"insn\"")) {
			hex_key(line, "\"addr\":\"0x", &v);
			if (ni >= n_log_insn || v != log_insn[ni])
				bad++;
			ni++;
			last_insn = (uint32_t)v;
			have_last = 1;
			continue;
		}
		if (strstr(line, "\"type\":\"range\"")) {
			hex_key(line, "\"last\":\"0x", &v);
			last_insn = (uint32_t)v;
			have_last = 1;
			continue;
		}
		if (!strstr(line, "\"type\":\"data\""))
			continue;
		uint64_t insn = 0, size = 0, addr = 0, value = 0;
		hex_key(line, "\"insn\":\"0x", &insn);
		const char *s = strstr(line, "\"size\":");
		size = s ? strtoull(s + 7, NULL, 10) : 0;
		int has_addr = hex_key(line, "\"addr\":\"0x", &addr), has_value = hex_key(line, "\"value\":\"0x", &value);
		int store = strstr(line, "\"dir\":\"store\"") != NULL;
		const struct acc *e = na < n_log_acc ? &log_acc[na] : NULL;
		/* The record comes right after its instruction's (or range's). */
		if (!e || !have_last || insn != e->insn || last_insn != e->insn || size != e->size ||
		    store != (e->dir == 2) || has_addr != addr_on || has_value != value_on ||
		    (addr_on && addr != e->addr) || (value_on && value != e->value)) {
			if (bad++ < 5)
				fprintf(stderr, "%s: access %zu: got %s  want insn %#x %s %u %#x %#llx\n", what, na, line,
					e ? e->insn : 0, e && e->dir == 2 ? "store" : "load", e ? e->size : 0, e ? e->addr : 0,
					e ? (unsigned long long)e->value : 0ull);
		}
		na++;
	}
	CHECK_EQ(pclose(p), 0);
	if (insn_mode)
		CHECK_EQ(ni, n_log_insn);
	CHECK_EQ(na, n_log_acc);
	CHECK_EQ(bad, 0);
	CHECK_EQ(errors, 0);
	printf("  %-40s %zu instructions, %zu accesses%s\n", what, insn_mode ? ni : n_log_insn, na,
	       bad || na != n_log_acc ? " DIFFER" : " exact");
}

#endif
