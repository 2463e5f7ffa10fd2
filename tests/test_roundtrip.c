/*
 * Round trip through real program runs: every test program (ARM and Thumb,
 * -O0 and -O2) was run under qemu-arm, which logged each instruction it
 * executed; `csdec gen` turned each run into trace under every
 * configuration (tests/gen-snapshots.sh: PTM, PTM cycle-accurate, PTM with
 * return stack, ETMv3, ETMv3 cycle-accurate, timestamps, several sources in
 * one formatted buffer). Decoding each snapshot must give back exactly the
 * logged instructions that lie in the program's image (code outside it -
 * qemu's emulated kuser helpers - is not traceable), for every source, in
 * instruction and in range mode. Range mode also without the ETMv3
 * segment memo, which must not change a record.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flow_run.h"
#include "../tools/qemu_log.c"

struct expect {
	uint32_t *addr;
	uint8_t *isa;
	size_t n;
};

/* The run's instructions inside the ELF image. */
static int load_expected(const char *progdir, const char *prog, struct expect *e)
{
	char path[2048];
	snprintf(path, sizeof(path), "%s/%s", progdir, prog);
	csd_image *img = csd_image_new();
	if (csd_image_add_elf(img, path, 0) <= 0) {
		csd_image_free(img);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s.log", progdir, prog);
	FILE *f = fopen(path, "r");
	if (!f) {
		csd_image_free(img);
		return -1;
	}
	static struct qemu_log_reader rd;
	qemu_log_reader_init_file(&rd, f);
	struct qemu_log_insn qi;
	size_t cap = 0;
	memset(e, 0, sizeof(*e));
	int r;
	while ((r = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
		if (r != QEMU_LOG_INSN)
			continue;
		uint8_t b;
		if (csd_image_read(img, qi.addr, &b, 1) != 1)
			continue;
		if (e->n == cap) {
			cap = cap ? 2 * cap : 65536;
			e->addr = realloc(e->addr, cap * sizeof(*e->addr));
			e->isa = realloc(e->isa, cap);
			if (!e->addr || !e->isa)
				abort();
		}
		e->addr[e->n] = qi.addr;
		e->isa[e->n] = qi.isa;
		e->n++;
	}
	fclose(f);
	csd_image_free(img);
	return 0;
}

/* Compare the decode of source `id` with the run; returns mismatches. */
static size_t compare(const char *snap, unsigned id, uint32_t flags, const struct expect *e, uint64_t *decoded)
{
	struct flow_run fr;
	memset(&fr, 0, sizeof(fr));
	CHECK_EQ(flow_run_snapshot(snap, id, flags, 7, &fr), 0);
	size_t k = 0, bad = 0, errors = 0;
	for (size_t i = 0; i < fr.n; i++) {
		const struct csd_record *r = &fr.rec[i];
		if (r->type == CSD_REC_ERROR || r->type == CSD_REC_NO_MEMORY) {
			if (errors++ == 0)
				fprintf(stderr, "%s id 0x%x: %s at offset %llu\n", snap, id, csd_rec_type_name((int)r->type),
					(unsigned long long)r->offset);
		}
		if (r->type != CSD_REC_INSN && r->type != CSD_REC_RANGE)
			continue;
		uint32_t count = r->type == CSD_REC_INSN ? 1 : r->count;
		for (uint32_t j = 0; j < count; j++, k++) {
			/* A range is straight-line code: its first instruction is
			 * where the run is, each next one follows the previous
			 * one in memory, and its last is at r->last. */
			int ok = k < e->n && e->isa[k] == r->isa;
			if (ok && j == 0)
				ok = e->addr[k] == r->addr;
			if (ok && j > 0)
				ok = e->addr[k] - e->addr[k - 1] == 2 || e->addr[k] - e->addr[k - 1] == 4;
			if (ok && j + 1 == count && r->type == CSD_REC_RANGE)
				ok = e->addr[k] == r->last;
			if (!ok) {
				if (bad++ == 0)
					fprintf(stderr, "%s id 0x%x: instruction %zu of the run (0x%x) is not where record %zu says\n",
						snap, id, k, k < e->n ? e->addr[k] : 0, i);
				break;
			}
		}
		if (bad)
			break;
	}
	if (!bad && k != e->n) {
		fprintf(stderr, "%s id 0x%x: decoded %zu instructions, the run has %zu\n", snap, id, k, e->n);
		bad++;
	}
	*decoded += k;
	flow_run_free(&fr);
	return bad + errors;
}

/* The ETMv3 segment memo changes no record: range mode with and without
 * it, fed in different pieces, gives the same records field by field.
 * Returns mismatches. */
static size_t compare_memo(const char *snap, unsigned id)
{
	struct flow_run a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK_EQ(flow_run_snapshot_mode(snap, id, CSD_FLOW_MEMO_AT_ONCE, 4093, FLOW_RUN_MIXED, &a), 0);
	CHECK_EQ(flow_run_snapshot(snap, id, CSD_FLOW_NO_MEMO, 5, &b), 0);
	size_t bad = a.n != b.n;
	for (size_t i = 0; !bad && i < a.n; i++)
		if (!flow_run_same(&a.rec[i], &b.rec[i])) {
			fprintf(stderr, "%s id 0x%x: record %zu differs without the memo\n", snap, id, i);
			bad++;
		}
	if (a.n != b.n)
		fprintf(stderr, "%s id 0x%x: %zu records, %zu without the memo\n", snap, id, a.n, b.n);
	flow_run_free(&a);
	flow_run_free(&b);
	return bad;
}

int main(void)
{
	const char *gendir = getenv("CSD_GEN_SNAPSHOTS");
	const char *progdir = getenv("CSD_PROGRAMS");
	if (!gendir || !progdir) {
		fprintf(stderr, "CSD_GEN_SNAPSHOTS / CSD_PROGRAMS not set (run through make test)\n");
		return 1;
	}
	DIR *d = opendir(gendir);
	CHECK(d != NULL);
	if (!d)
		return check_done("test_roundtrip");
	struct dirent *de;
	size_t snapshots = 0, sources = 0;
	uint64_t decoded = 0;
	char last_prog[256] = "";
	struct expect e = { 0 };
	while ((de = readdir(d))) {
		const char *sep = strstr(de->d_name, "--");
		if (de->d_name[0] == '.' || !sep || (size_t)(sep - de->d_name) >= sizeof(last_prog))
			continue;
		char prog[256];
		memcpy(prog, de->d_name, (size_t)(sep - de->d_name));
		prog[sep - de->d_name] = 0;
		if (strcmp(prog, last_prog) != 0) {
			free(e.addr);
			free(e.isa);
			CHECK_EQ(load_expected(progdir, prog, &e), 0);
			CHECK(e.n > 100);
			snprintf(last_prog, sizeof(last_prog), "%s", prog);
		}
		char snap[2048];
		snprintf(snap, sizeof(snap), "%s/%s", gendir, de->d_name);
		char err[256];
		csd_snapshot *s = NULL;
		CHECK_EQ(csd_snapshot_open(snap, &s, err, sizeof(err)), 0);
		if (!s)
			continue;
		snapshots++;
		for (size_t i = 0; i < csd_snapshot_num_sources(s); i++) {
			unsigned id = csd_snapshot_source(s, i)->config.trace_id;
			/* Instruction mode for every source, range mode too. */
			CHECK_EQ(compare(snap, id, CSD_FLOW_INSN, &e, &decoded), 0);
			CHECK_EQ(compare(snap, id, 0, &e, &decoded), 0);
			CHECK_EQ(compare_memo(snap, id), 0);
			sources++;
		}
		csd_snapshot_free(s);
	}
	closedir(d);
	free(e.addr);
	free(e.isa);
	printf("test_roundtrip: %zu snapshots, %zu sources, %llu instructions decoded equal to the runs\n", snapshots,
	       sources, (unsigned long long)decoded);
	CHECK(snapshots >= 7 * 36);
	return check_done("test_roundtrip");
}
