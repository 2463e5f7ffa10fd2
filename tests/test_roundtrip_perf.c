/*
 * test_roundtrip_perf.c - the round-trip matrix through perf.data: every
 * recorded test program run (tests/programs.mk) under every trace
 * configuration of tests/gen-snapshots.sh is written as a perf.data file by
 * the library's writer (src/perf_enc.c, fed by the trace generator as
 * `csdec gen --perf-data` feeds it; single sources in AUX buffers of about
 * 4 KiB; AUXTRACE_INFO versions 2 and 1 by turns), then decoded by the tool, `csdec decode FILE --format jsonl
 * --insn`, whose instructions must be, source by source, exactly the run's
 * instructions that lie in the program's image.
 *
 * Until the tool reads perf.data, it refuses the file as a snapshot
 * directory (exit status 2, "snapshot.ini: cannot open: Not a directory",
 * nothing on standard output); on exactly that the test reports itself
 * skipped. Any other outcome is compared: a reader that exists and fails is
 * a failure. The sanitizer build takes every fourth program.
 */
/* (_XOPEN_SOURCE: realpath.) */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gen.h"
#include "perf_enc.h"
#include "../tools/qemu_log.c"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#endif

#define PID 200
#define MAX_SRC 3

/* The run's instructions inside the ELF image. */
struct run {
	uint32_t *addr;
	size_t n, cap;
};

static int load_run(const char *elf, csd_image *img, struct run *r)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s.log", elf);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	static struct qemu_log_reader rd;
	qemu_log_reader_init_file(&rd, f);
	struct qemu_log_insn qi;
	int lr;
	while ((lr = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
		uint8_t b;
		if (lr != QEMU_LOG_INSN || csd_image_read(img, qi.addr, &b, 1) != 1)
			continue;
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 65536;
			r->addr = realloc(r->addr, r->cap * sizeof(*r->addr));
			if (!r->addr)
				abort();
		}
		r->addr[r->n++] = qi.addr;
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing the file */

struct config {
	const char *name;
	unsigned nsrc;
	struct {
		int ptm;
		uint32_t etmcr;
	} src[MAX_SRC];
	uint8_t first_id;
	uint32_t sync_period;
};

#define CA (1u << 12)
#define TS (1u << 28)
#define RS (1u << 29)
#define CID(n) ((uint32_t)(n) << 14)

/* tests/gen-snapshots.sh's configurations. */
static const struct config configs[] = {
	{ "ptm", 1, { { 1, 0 } }, 0x10, 1024 },
	{ "ptm-ca", 1, { { 1, CA } }, 0x10, 1024 },
	{ "ptm-rs", 1, { { 1, RS | CID(3) } }, 0x10, 1024 },
	{ "etm3", 1, { { 0, 0 } }, 0x10, 256 },
	{ "etm3-ca", 1, { { 0, CA | CID(1) } }, 0x10, 1024 },
	{ "ts", 2, { { 1, CA | TS }, { 0, CA | TS } }, 0x20, 1024 },
	{ "multi", 3, { { 1, 0 }, { 0, 0 }, { 1, RS } }, 0x10, 1024 },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

struct source {
	struct csdi_perf_enc *enc;
	uint8_t id;
};

static int src_sink(void *ctx, const uint8_t *b, size_t n)
{
	struct source *s = ctx;
	return csdi_perf_enc_trace(s->enc, s->id, b, n);
}

static int src_sync(void *ctx)
{
	struct source *s = ctx;
	return csdi_perf_enc_sync_point(s->enc);
}

static int file_write_at(void *ctx, uint64_t off, const void *buf, size_t n)
{
	FILE *f = ctx;
	if (fseeko(f, (off_t)off, SEEK_SET) != 0)
		return CSD_EIO;
	return fwrite(buf, 1, n, f) == n ? 0 : CSD_EIO;
}

static int file_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
	FILE *f = ctx;
	if (fseeko(f, (off_t)off, SEEK_SET) != 0)
		return CSD_EIO;
	return fread(buf, 1, n, f) == n ? 0 : CSD_EIO;
}

/* Write the perf.data of one program run under configuration c; the
 * sources' trace IDs go to ids[]. Returns 0 or -1. */
static int write_perf(const char *elf, csd_image *img, const struct config *c, unsigned version, const char *out,
		      uint8_t *ids)
{
	static struct csdi_perf_elf pe;
	char err[512], exe[PATH_MAX];
	if (csdi_perf_elf_read(elf, &pe, err, sizeof(err)) < 0 || !realpath(elf, exe)) {
		fprintf(stderr, "%s: %s\n", elf, err);
		return -1;
	}
	const char *base = strrchr(exe, '/');
	static const char *cmdline[6] = { "/usr/bin/perf", "record", "-e", "cs_etm//u", "--per-thread", NULL };
	cmdline[5] = exe;
	struct csdi_perf_enc_config pc;
	memset(&pc, 0, sizeof(pc));
	pc.version = version;
	pc.nsources = c->nsrc;
	for (unsigned i = 0; i < c->nsrc; i++) {
		struct csd_trace_config *t = &pc.sources[i];
		t->size = sizeof(*t);
		t->protocol = c->src[i].ptm ? CSD_PROTO_PTM : CSD_PROTO_ETM3;
		t->etmcr = c->src[i].etmcr;
		t->etmidr = c->src[i].ptm ? 0x411CF312u : 0x410CF250u;
		t->etmccer = c->src[i].ptm ? 0x34C01AC2u : 0x344008F2u;
		t->trace_id = (uint8_t)(c->first_id + i);
		ids[i] = t->trace_id;
	}
	pc.exe_path = exe;
	pc.elf = &pe;
	pc.comm = base ? base + 1 : exe;
	pc.pid = pc.tid = PID;
	pc.cmdline = cmdline;
	pc.cmdline_n = 6;
	pc.cpudesc = "ARMv7 Processor rev 1 (v7l)";
	pc.arch = "armv7l";
	pc.aux_size = 4096;
	FILE *f = fopen(out, "w+b");
	if (!f)
		return -1;
	pc.io.write_at = file_write_at;
	pc.io.read_at = file_read_at;
	pc.io.ctx = f;
	int rc = 0;
	struct source src[MAX_SRC];
	struct csdi_gen *gen[MAX_SRC] = { NULL };
	struct csdi_perf_enc *enc = csdi_perf_enc_new(&pc, &rc);
	for (unsigned i = 0; enc && i < c->nsrc; i++) {
		struct csdi_gen_config gc;
		memset(&gc, 0, sizeof(gc));
		gc.trace = pc.sources[i];
		gc.sync_period = c->sync_period;
		gc.context_id = PID;
		gc.sync_point = src_sync;
		src[i].enc = enc;
		src[i].id = ids[i];
		gen[i] = csdi_gen_new(&gc, img, src_sink, &src[i]);
		if (!gen[i])
			rc = -1;
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s.log", elf);
	FILE *lf = fopen(path, "r");
	if (enc && rc == 0 && lf) {
		static struct qemu_log_reader rd;
		qemu_log_reader_init_file(&rd, lf);
		struct qemu_log_insn qi;
		int lr;
		while (rc == 0 && (lr = qemu_log_next(&rd, &qi)) != QEMU_LOG_END)
			for (unsigned i = 0; lr == QEMU_LOG_INSN && rc == 0 && i < c->nsrc; i++)
				rc = csdi_gen_insn(gen[i], qi.addr, qi.isa);
		for (unsigned i = 0; rc == 0 && i < c->nsrc; i++)
			rc = csdi_gen_finish(gen[i]);
		if (rc == 0)
			rc = csdi_perf_enc_finish(enc);
	} else {
		rc = -1;
	}
	if (lf)
		fclose(lf);
	for (unsigned i = 0; i < c->nsrc; i++)
		csdi_gen_free(gen[i]);
	csdi_perf_enc_free(enc);
	if (fclose(f) != 0)
		rc = -1;
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Decoding it with the tool */

/* The value after "key": in a JSON line, as a number (0x.. strings too). */
static int json_num(const char *line, const char *key, unsigned long *v)
{
	const char *p = strstr(line, key);
	if (!p)
		return 0;
	p += strlen(key);
	if (*p == '"')
		p++;
	char *end;
	*v = strtoul(p, &end, 0);
	return end != p;
}

/* Compare the tool's instructions of each source with the run. Returns
 * the tool's exit status (-1: not run). */
static int decode_compare(const char *tool, const char *file, const char *errfile, const uint8_t *ids, unsigned nsrc,
			  const struct run *r, const char *name, size_t *decoded, int *out_lines, size_t *mismatches)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "'%s' decode '%s' --format jsonl --insn 2>'%s'", tool, file, errfile);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t k[MAX_SRC] = { 0 }, bad = 0;
	static char line[4096];
	*out_lines = 0;
	while (fgets(line, sizeof(line), p)) {
		(*out_lines)++;
		if (!strstr(line, "\"type\":\"insn\""))
			continue;
		unsigned long id = 0, addr = 0;
		if (!json_num(line, "\"id\":", &id) || !json_num(line, "\"addr\":", &addr)) {
			if (bad++ == 0)
				fprintf(stderr, "%s: an instruction line without id or addr: %s", name, line);
			continue;
		}
		unsigned s = 0;
		while (s < nsrc && ids[s] != id)
			s++;
		if (s == nsrc) {
			if (bad++ == 0)
				fprintf(stderr, "%s: an instruction of trace ID 0x%lx, not a source of the file\n", name, id);
			continue;
		}
		if (k[s] >= r->n || r->addr[k[s]] != addr) {
			if (bad++ == 0)
				fprintf(stderr, "%s id 0x%x: instruction %zu at 0x%lx, the run has 0x%x\n", name, ids[s], k[s],
					addr, k[s] < r->n ? r->addr[k[s]] : 0);
		}
		k[s]++;
	}
	int st = pclose(p);
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	for (unsigned s = 0; s < nsrc; s++) {
		if (k[s] != r->n && bad++ == 0 && *out_lines)
			fprintf(stderr, "%s id 0x%x: %zu instructions decoded, the run has %zu\n", name, ids[s], k[s], r->n);
		*decoded += k[s];
	}
	*mismatches = bad;
	return status;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *progdir = getenv("CSD_PROGRAMS"), *tool = getenv("CSD_TOOL");
	if (!progdir || !tool) {
		fprintf(stderr, "CSD_PROGRAMS / CSD_TOOL not set (run through make test)\n");
		return 1;
	}
	char tmp[] = "/tmp/csd_test_roundtrip_perf_XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	char file[128], errfile[128];
	snprintf(file, sizeof(file), "%s/run.data", tmp);
	snprintf(errfile, sizeof(errfile), "%s/decode.err", tmp);

	DIR *d = opendir(progdir);
	CHECK(d != NULL);
	if (!d)
		return check_done("test_roundtrip_perf");
	char *progs[256];
	size_t nprogs = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nprogs < 256) {
		size_t len = strlen(de->d_name);
		if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0)
			progs[nprogs++] = strndup(de->d_name, len - 4);
	}
	closedir(d);
	qsort(progs, nprogs, sizeof(progs[0]), cmp_str);
	CHECK(nprogs >= 36);

	size_t files = 0, sources = 0, decoded = 0;
	int skipped = 0;
	for (size_t p = 0; p < nprogs && !skipped; p++) {
#ifdef UNDER_SANITIZER
		/* Every fourth program: the writer's and generator's memory
		 * checks need no more, and the rest is the plain tool. */
		if (p % 4)
			continue;
#endif
		char elf[2048], name[2200];
		snprintf(elf, sizeof(elf), "%s/%s", progdir, progs[p]);
		csd_image *img = csd_image_new();
		CHECK(csd_image_add_elf(img, elf, 0) > 0);
		struct run r = { 0 };
		CHECK_EQ(load_run(elf, img, &r), 0);
		CHECK(r.n > 100);
		for (size_t c = 0; c < NCONFIGS && !skipped; c++) {
			uint8_t ids[MAX_SRC];
			/* Versions 2 and 1 by turns: each configuration in both. */
			unsigned version = 1 + (unsigned)((p + c) % 2);
			snprintf(name, sizeof(name), "%s--%s v%u", progs[p], configs[c].name, version);
			CHECK_EQ(write_perf(elf, img, &configs[c], version, file, ids), 0);
			int lines = 0;
			size_t before = decoded, mismatches = 0;
			int st = decode_compare(tool, file, errfile, ids, configs[c].nsrc, &r, name, &decoded, &lines,
						&mismatches);
			if (files == 0 && st == 2 && lines == 0) {
				char err[1024] = "";
				FILE *ef = fopen(errfile, "r");
				if (ef) {
					size_t got = fread(err, 1, sizeof(err) - 1, ef);
					err[got] = 0;
					fclose(ef);
				}
				if (strstr(err, "snapshot.ini: cannot open: Not a directory")) {
					printf("test_roundtrip_perf: skipped: reader not available (csdec decode takes %s for a "
					       "snapshot directory: %.*s)\n", file, (int)strcspn(err, "\n"), err);
					skipped = 1;
					decoded = before;
					break;
				}
			}
			if (st != 0) {
				char err[1024] = "";
				FILE *ef = fopen(errfile, "r");
				if (ef) {
					size_t got = fread(err, 1, sizeof(err) - 1, ef);
					err[got] = 0;
					fclose(ef);
				}
				fprintf(stderr, "%s: csdec decode exited with %d: %s\n", name, st, err);
			}
			CHECK_EQ(st, 0);
			CHECK_EQ(mismatches, 0);
			files++;
			sources += configs[c].nsrc;
		}
		free(r.addr);
		csd_image_free(img);
	}
	for (size_t p = 0; p < nprogs; p++)
		free(progs[p]);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
	if (skipped)
		return check_failures ? check_done("test_roundtrip_perf") : 0;
	printf("test_roundtrip_perf: %zu perf.data files, %zu sources, %zu instructions decoded equal to the runs\n", files,
	       sources, decoded);
#ifdef UNDER_SANITIZER
	CHECK(files >= NCONFIGS * 9);
#else
	CHECK(files >= NCONFIGS * 36);
#endif
	return check_done("test_roundtrip_perf");
}
