/*
 * test_perf_data.c - the perf.data reader (csd_perf_*) and `csdec decode /
 * packets FILE` on perf.data files written by tests/perf_data_build.h.
 *
 * The trace is examples/sample's (a PTM and an ETMv3 in one formatted
 * buffer, or each source's bytes alone as raw AUX data), the program its
 * demo.elf; the snapshot decode of the same bytes is what the perf.data
 * decode must equal, record for record (offsets moved by where the bytes
 * sit in the file), with "cpu", "pid" and "tid" as the sideband says.
 * Also: cs_etm header versions 0, 1 and 2 (AUX_OUTPUT_HW_ID), an ETMv4
 * CPU named once and skipped, the build-ID cache, --symfs and --elf, AUX
 * records splitting and flagging the data (aux_lost), snapshot mode, files
 * cut at every record and at random bytes, corrupted bytes, sizes made
 * huge (under a memory limit), memory that does not grow with the file,
 * Debian's perf on the same files when it is installed, and the round-trip
 * matrix's generated traces (CSD_GEN_SNAPSHOTS) through perf.data.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "csdec.h"
#include "frame_enc.h"
#include "perf_data.h"
#include "perf_data_build.h"

#define SAMPLE "examples/sample"
#define PID 4242
#define OUT_CAP (8u << 20)

static char tmpdir[] = "/tmp/csd_test_perf_data_XXXXXX";
static const char *tool;
static char *out_a, *out_b;
static char err_text[1 << 16];

static uint8_t *trace;                  /* the sample's formatted buffer */
static size_t trace_n;
static struct csd_trace_config ptm_cfg, etm_cfg; /* its sources, from the snapshot */
static uint8_t elf_id[20];              /* demo.elf's build ID */
static unsigned elf_id_n;

static const char *tool_path(void)
{
	const char *t = NULL;
#if defined(__SANITIZE_ADDRESS__)
	t = getenv("CSD_TOOL_SAN");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	t = getenv("CSD_TOOL_SAN");
#endif
#endif
	if (t && *t && access(t, X_OK) != 0)
		t = NULL;
	if (!t || !*t)
		t = getenv("CSD_TOOL");
	return t;
}

static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

static const char *tmp(const char *name)
{
	static char bufs[8][1200];
	static int k;
	char *b = bufs[k++ & 7];
	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

/* The tool with `args` (env: assignments before it, or ""); stdout in
 * out (OUT_CAP), stderr in err_text. */
static int tool_run_env(char *out, const char *env, const char *args)
{
	char cmd[4096], errp[1200];
	snprintf(errp, sizeof(errp), "%s", tmp("stderr"));
	snprintf(cmd, sizeof(cmd), "%s timeout 300 %s %s", env, tool, args);
	int rc = cli_run_cmd(cmd, errp, out, OUT_CAP);
	cli_read_text(errp, err_text, sizeof(err_text));
	return rc;
}

static int tool_run(char *out, const char *args)
{
	return tool_run_env(out, "", args);
}

static size_t count_str(const char *text, const char *s)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, s)) != NULL; p += strlen(s))
		n++;
	return n;
}

/* ---- The sample ------------------------------------------------------- */

/* The GNU build ID note of a 32-bit ELF file's PT_NOTE segment. */
static unsigned read_build_id(const char *path, uint8_t id[20])
{
	size_t n;
	uint8_t *e = check_read_file(path, &n);
	unsigned got = 0;
	if (e && n > 52) {
		uint32_t phoff = (uint32_t)e[28] | (uint32_t)e[29] << 8 | (uint32_t)e[30] << 16 | (uint32_t)e[31] << 24;
		unsigned phnum = (unsigned)(e[44] | e[45] << 8);
		for (unsigned i = 0; i < phnum && phoff + 32 * (i + 1) <= n; i++) {
			const uint8_t *ph = e + phoff + 32 * i;
			uint32_t off = (uint32_t)ph[4] | (uint32_t)ph[5] << 8 | (uint32_t)ph[6] << 16;
			if (ph[0] != 4 || off + 36 > n)
				continue;
			const uint8_t *note = e + off;
			if (note[0] == 4 && note[4] == 20 && note[8] == 3 && memcmp(note + 12, "GNU", 4) == 0) {
				memcpy(id, note + 16, 20);
				got = 20;
			}
		}
	}
	free(e);
	return got;
}

static void load_sample(void)
{
	trace = check_read_file(SAMPLE "/trace.bin", &trace_n);
	CHECK(trace != NULL && trace_n > 1000);
	char err[256];
	csd_snapshot *snap = NULL;
	CHECK_EQ(csd_snapshot_open(SAMPLE, &snap, err, sizeof(err)), 0);
	for (size_t i = 0; snap && i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *s = csd_snapshot_source(snap, i);
		if (s->config.protocol == CSD_PROTO_PTM)
			ptm_cfg = s->config;
		else
			etm_cfg = s->config;
	}
	csd_snapshot_free(snap);
	CHECK(ptm_cfg.trace_id && etm_cfg.trace_id && ptm_cfg.trace_id != etm_cfg.trace_id);
	elf_id_n = read_build_id(SAMPLE "/demo.elf", elf_id);
	CHECK_EQ(elf_id_n, 20);
}

/* Each source's bytes alone (the formatter frames taken apart). */
static uint8_t *source_bytes(uint8_t id, size_t *n)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	uint8_t *b = malloc(trace_n);
	size_t k = 0;
	struct csd_frame_out fo;
	csd_frame_feed(fd, trace, trace_n, 0);
	csd_frame_finish(fd);
	while (csd_frame_next(fd, &fo) == 0)
		if (fo.event == CSD_FRAME_DATA && fo.bytes.id == id) {
			memcpy(b + k, fo.bytes.data, fo.bytes.size);
			k += fo.bytes.size;
		}
	csd_frame_free(fd);
	*n = k;
	return b;
}

/* What a sample file holds. */
struct shape {
	int version;            /* cs_etm header version */
	int etm4;               /* a third CPU traced by an ETMv4 (v0: also) */
	int per_cpu;            /* raw data per CPU instead of a per-thread formatted buffer */
	int mmap_bid;           /* MMAP2 carries the build ID */
	int table_bid;          /* the build-ID feature names demo.elf */
	int wrong_bid;          /* ... with another build ID */
	int split_at;           /* formatted: two AUXTRACE buffers cut here, one AUX record */
	int sessions;           /* formatted: AUX records [0,a) flags 0 and [a,n) truncated */
	int snapshot;           /* snapshot mode: OVERWRITE AUX record after the data */
	int switch_inside;      /* per-CPU: a context switch on CPU 0 during its buffer */
	int no_aux;             /* no AUX records */
	int ptm_only;           /* one CPU, the PTM */
	const char *map_name;   /* the mapped file's recorded path (default /demo.elf) */
};

static struct pdb_sid sid_of(int32_t cpu, uint64_t time)
{
	struct pdb_sid s = { PID, PID, cpu, time, 0 };
	return s;
}

static void build_sample(struct pdb *b, const struct shape *sh)
{
	uint64_t st = 1 | PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | 256 | PDB_SAMPLE_IDENTIFIER;
	pdb_init(b, st, 1, 0);
	struct pdb_cpu cpus[3] = {
		{ PDB_MAGIC_ETM3, 0, ptm_cfg.etmcr, ptm_cfg.trace_id, ptm_cfg.etmccer, ptm_cfg.etmidr, 0 },
		{ PDB_MAGIC_ETM3, 1, etm_cfg.etmcr, etm_cfg.trace_id, etm_cfg.etmccer, etm_cfg.etmidr, 0 },
		{ PDB_MAGIC_ETM4, 2, 0x1, 0x30, 0, 0, 0 },
	};
	if (sh->version == 2) {
		/* The real IDs come in HW_ID records; the metadata's are the
		 * legacy ones, flagged. */
		cpus[0].traceidr = 0x20 | UINT64_C(1) << 31;
		cpus[1].traceidr = 0x22 | UINT64_C(1) << 31;
	}
	pdb_auxtrace_info(b, sh->version, sh->snapshot, cpus, sh->ptm_only ? 1 : sh->etm4 ? 3 : 2);
	const char *name = sh->map_name ? sh->map_name : "/demo.elf";
	struct pdb_sid d = sid_of(-1, 10);
	d.ident = PDB_ID_DUMMY;
	pdb_comm(b, PID, PID, "demo", 1, &d);
	pdb_mmap2(b, PID, PID, 0x10000, 0x1000, 0, name, sh->mmap_bid ? elf_id : NULL, (uint8_t)elf_id_n, &d);
	if (sh->version == 2) {
		struct pdb_sid h0 = sid_of(0, 11), h1 = sid_of(1, 11);
		pdb_hw_id(b, ptm_cfg.trace_id | UINT64_C(1) << 56, &h0);
		pdb_hw_id(b, etm_cfg.trace_id | UINT64_C(1) << 56, &h1);
	}
	if (!sh->per_cpu) {
		struct pdb_sid s = sid_of(-1, 20);
		pdb_itrace_start(b, PID, PID, &s);
		size_t n = trace_n;
		if (sh->snapshot) {
			/* The head is at 3n: the buffer holds its last n bytes. */
			pdb_auxtrace(b, 2 * n, 0, PID, -1, trace, n);
			s.time = 30;
			pdb_aux(b, 3 * n, n, 2, &s);
		} else if (sh->split_at) {
			if (!sh->no_aux)
				pdb_aux(b, 0, n, 0, &s);
			pdb_auxtrace(b, 0, 0, PID, -1, trace, (size_t)sh->split_at);
			pdb_user(b, 68, NULL, 0);
			pdb_auxtrace(b, (uint64_t)sh->split_at, 0, PID, -1, trace + sh->split_at, n - (size_t)sh->split_at);
		} else if (sh->sessions) {
			size_t a = (n / 2) & ~(size_t)15;
			pdb_aux(b, 0, a, 0, &s);
			pdb_auxtrace(b, 0, 0, PID, -1, trace, n);
			s.time = 30;
			pdb_aux(b, a, n - a, 1, &s); /* after its data, as perf may write it */
		} else {
			if (!sh->no_aux)
				pdb_aux(b, 0, n, 0, &s);
			pdb_auxtrace(b, 0, 0, PID, -1, trace, n);
		}
	} else {
		const struct csd_trace_config *cfg[2] = { &ptm_cfg, &etm_cfg };
		for (int c = 0; c < 2; c++) {
			struct pdb_sid s = sid_of(c, 20);
			pdb_itrace_start(b, PID, PID, &s);
			if (c == 0 && sh->switch_inside) {
				/* PID out for 77, 77 in after PID. */
				s.time = 21;
				pdb_switch(b, 1, 1, 77, 77, &s);
				s.pid = s.tid = 77;
				pdb_switch(b, 1, 0, PID, PID, &s);
			}
		}
		for (int c = 0; c < 2; c++) {
			size_t n;
			uint8_t *raw = source_bytes(cfg[c]->trace_id, &n);
			struct pdb_sid s = sid_of(c, 40);
			pdb_aux(b, 0, n, 0x100, &s);
			pdb_auxtrace(b, 0, (uint32_t)c, PID, c, raw, n);
			free(raw);
		}
	}
	struct pdb_sid e = sid_of(-1, 50);
	e.ident = PDB_ID_DUMMY;
	(void)e;
	pdb_user(b, 68, NULL, 0);
	static struct pdb_build_id bid;
	bid.pid = -1;
	bid.cpumode = 2;
	memcpy(bid.id, elf_id, 20);
	if (sh->wrong_bid)
		bid.id[3] ^= 0xFF;
	bid.size = 20;
	bid.name = name;
	if (sh->table_bid || sh->wrong_bid) {
		b->bids = &bid;
		b->nbids = 1;
	}
	b->hostname = "board";
	b->arch = "armv7l";
	b->cpudesc = "ARMv7 Processor rev 5 (v7l)";
	b->nr_cpus = 4;
	b->cmdline[0] = "/usr/bin/perf";
	b->cmdline[1] = "record";
	b->cmdline[2] = "--per-thread";
	b->index = 1;
	pdb_finish(b);
}

/* Writes the file; its path stays valid for the next 15 files (tmp()'s
 * names are reused sooner). */
static const char *write_sample(const char *name, const struct shape *sh)
{
	static char paths[16][1200];
	static int k;
	char *path = paths[k++ & 15];
	snprintf(path, sizeof(paths[0]), "%s", tmp(name));
	struct pdb b;
	build_sample(&b, sh);
	CHECK_EQ(pdb_write(&b, path), 0);
	pdb_free(&b);
	return path;
}

/* ---- Comparing decodes ------------------------------------------------ */

/* One JSON line's integer value of "key" (-1 if absent). */
static long long json_int(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(line, pat);
	const char *eol = strchr(line, '\n');
	if (!p || (eol && p > eol))
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

/* The line without "cpu", "pid", "tid" and with "offset" moved by -shift;
 * into buf. */
static void normalise(const char *line, size_t n, long long shift, char *buf, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 32 < cap;) {
		if (line[i] == ',' && (strncmp(line + i, ",\"cpu\":", 7) == 0 || strncmp(line + i, ",\"pid\":", 7) == 0 ||
				       strncmp(line + i, ",\"tid\":", 7) == 0)) {
			i += 7;
			while (i < n && (line[i] == '-' || (line[i] >= '0' && line[i] <= '9')))
				i++;
			continue;
		}
		if (strncmp(line + i, "\"offset\":", 9) == 0) {
			long long v = strtoll(line + i + 9, NULL, 10);
			k += (size_t)snprintf(buf + k, cap - k, "\"offset\":%lld", v - shift);
			i += 9;
			while (i < n && line[i] >= '0' && line[i] <= '9')
				i++;
			continue;
		}
		buf[k++] = line[i++];
	}
	buf[k] = 0;
}

/* Records of trace ID `id` only (id 0: all), normalised. */
static char *filter(const char *text, unsigned id, long long shift, size_t *lines)
{
	size_t cap = strlen(text) + 1;
	char *r = malloc(cap + 64), line[4096];
	size_t k = 0;
	*lines = 0;
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		if (n < sizeof(line) - 64 && (!id || json_int(p, "id") == (long long)id)) {
			normalise(p, n, shift, line, sizeof(line));
			size_t ln = strlen(line);
			memcpy(r + k, line, ln);
			k += ln;
			r[k++] = '\n';
			(*lines)++;
		}
		p = eol ? eol + 1 : p + n;
	}
	r[k] = 0;
	return r;
}

/* Every line with trace ID id has cpu `cpu`, and pid / tid as given (-1:
 * absent). Returns the lines checked. */
static size_t check_keys_of(const char *text, unsigned id, int cpu, int pid, int tid, int insn_only)
{
	size_t n = 0, bad = 0;
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		if (json_int(p, "id") == (long long)id && (!insn_only || strncmp(p, "{\"type\":\"insn\"", 14) == 0)) {
			n++;
			if (json_int(p, "cpu") != cpu || json_int(p, "pid") != pid || json_int(p, "tid") != tid) {
				if (bad++ == 0)
					fprintf(stderr, "test_perf_data: id 0x%x: want cpu %d pid %d tid %d: %.200s\n", id, cpu, pid,
						tid, p);
			}
		}
		p = eol ? eol + 1 : p + strlen(p);
	}
	CHECK_EQ(bad, 0);
	return n;
}

static size_t check_keys(const char *text, unsigned id, int cpu, int pid, int tid)
{
	return check_keys_of(text, id, cpu, pid, tid, 0);
}

/* The perf.data decode of the sample equals the snapshot's. `shift`: where
 * the trace bytes start in the file (-1: compare each ID alone, offsets
 * left out: raw data moves every byte). */
static void same_as_snapshot(const char *what, const char *snap_out, const char *perf_out, long long shift)
{
	size_t na, nb;
	if (shift >= 0) {
		char *a = filter(snap_out, 0, 0, &na), *b = filter(perf_out, 0, shift, &nb);
		CHECK(na > 1000);
		if (strcmp(a, b) != 0) {
			fprintf(stderr, "test_perf_data: %s: the decode differs from the snapshot's (%zu / %zu lines)\n", what,
				na, nb);
			CHECK(0);
		}
		free(a);
		free(b);
		return;
	}
	unsigned ids[2] = { ptm_cfg.trace_id, etm_cfg.trace_id };
	for (int i = 0; i < 2; i++) {
		char *a = filter(snap_out, ids[i], 0, &na), *b = filter(perf_out, ids[i], 0, &nb);
		/* Without their offsets: instructions have none. */
		size_t ia = count_str(a, "\"type\":\"insn\""), ib = count_str(b, "\"type\":\"insn\"");
		CHECK(ia > 1000);
		CHECK_EQ(ia, ib);
		char *pa = a, *pb = b;
		size_t diff = 0;
		while (pa && pb) {
			pa = strstr(pa, "{\"type\":\"insn\"");
			pb = strstr(pb, "{\"type\":\"insn\"");
			if (!pa || !pb)
				break;
			size_t la = strcspn(pa, "\n"), lb = strcspn(pb, "\n");
			if (la != lb || memcmp(pa, pb, la) != 0)
				diff++;
			pa += la;
			pb += lb;
		}
		if (diff)
			fprintf(stderr, "test_perf_data: %s: id 0x%x: %zu instructions differ\n", what, ids[i], diff);
		CHECK_EQ(diff, 0);
		free(a);
		free(b);
	}
}

/* ---- Library ---------------------------------------------------------- */

struct walk {
	size_t events, pieces, aux, mmaps, comms, switches, hw_ids, itrace;
	uint64_t piece_bytes;
	int rc;
	struct csd_perf_event piece[8];
	struct csd_perf_event aux_ev[8];
};

static void walk_all(csd_perf *pd, struct walk *w)
{
	memset(w, 0, sizeof(*w));
	struct csd_perf_event ev = { .size = sizeof(ev) };
	int rc;
	while ((rc = csd_perf_next(pd, &ev)) == 0) {
		w->events++;
		switch (ev.type) {
		case CSD_PERF_AUX_DATA:
			if (w->pieces < 8)
				w->piece[w->pieces] = ev;
			w->pieces++;
			w->piece_bytes += ev.data_size;
			break;
		case CSD_PERF_AUX:
			if (w->aux < 8)
				w->aux_ev[w->aux] = ev;
			w->aux++;
			break;
		case CSD_PERF_MMAP:
			w->mmaps++;
			break;
		case CSD_PERF_COMM:
			w->comms++;
			break;
		case CSD_PERF_SWITCH:
			w->switches++;
			break;
		case CSD_PERF_HW_ID:
			w->hw_ids++;
			break;
		case CSD_PERF_ITRACE_START:
			w->itrace++;
			break;
		}
		if (w->events > 100000)
			break;
	}
	w->rc = rc;
}

static void check_cpu(const struct csd_perf_cpu *c, const struct csd_trace_config *want, int cpu, uint32_t from)
{
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_EQ(c->cpu, cpu);
	CHECK_EQ(c->unit, want->protocol == CSD_PROTO_PTM ? CSD_PERF_UNIT_PTM : CSD_PERF_UNIT_ETM3);
	CHECK_EQ(c->id_from, from);
	CHECK_EQ(c->config.size, sizeof(c->config));
	CHECK_EQ(c->config.protocol, want->protocol);
	CHECK_EQ(c->config.etmcr, want->etmcr);
	CHECK_EQ(c->config.etmccer, want->etmccer);
	CHECK_EQ(c->config.etmidr, want->etmidr);
	CHECK_EQ(c->config.trace_id, want->trace_id);
}

static void test_library_versions(void)
{
	for (int v = 0; v <= 2; v++) {
		struct shape sh = { .version = v, .etm4 = 1, .table_bid = 1 };
		struct pdb b;
		build_sample(&b, &sh);
		csd_perf *pd = NULL;
		char err[512];
		int rc = csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err));
		CHECK_EQ(rc, 0);
		if (rc) {
			fprintf(stderr, "version %d: %s\n", v, err);
			pdb_free(&b);
			continue;
		}
		const struct csd_perf_info *in = csd_perf_info(pd);
		CHECK_EQ(in->etm_version, (uint32_t)v);
		CHECK_EQ(in->pmu_type, PDB_PMU_TYPE);
		CHECK_EQ(in->config, 0);
		CHECK_EQ(in->snapshot, 0);
		CHECK_EQ(in->nr_attrs, 2);
		CHECK(in->sample_id_all);
		CHECK_EQ(in->sample_type, b.sample_type);
		CHECK_EQ(in->data_offset, b.data_start);
		CHECK_EQ(in->file_size, b.n);
		CHECK_STR(in->hostname, "board");
		CHECK_STR(in->arch, "armv7l");
		CHECK_STR(in->cpu_desc, "ARMv7 Processor rev 5 (v7l)");
		CHECK_STR(in->cmdline, "/usr/bin/perf record --per-thread");
		CHECK_STR(in->os_release, "");
		CHECK_EQ(in->nr_cpus_online, 4);
		CHECK_EQ(csd_perf_num_cpus(pd), 3);
		uint32_t from = v == 2 ? CSD_PERF_ID_HW_ID : CSD_PERF_ID_METADATA;
		check_cpu(csd_perf_cpu(pd, 0), &ptm_cfg, 0, from);
		check_cpu(csd_perf_cpu(pd, 1), &etm_cfg, 1, from);
		const struct csd_perf_cpu *c4 = csd_perf_cpu(pd, 2);
		CHECK(c4 && c4->unit == CSD_PERF_UNIT_ETM4 && c4->cpu == 2 && c4->traceidr == 0x30 && c4->config.protocol == 0);
		CHECK(csd_perf_cpu(pd, 3) == NULL);
		if (v == 2)
			CHECK_EQ(csd_perf_cpu(pd, 0)->traceidr, 0x20 | UINT64_C(1) << 31);
		CHECK_EQ(csd_perf_num_build_ids(pd), 1);
		const struct csd_perf_build_id *bid = csd_perf_build_id(pd, 0);
		CHECK(bid && bid->pid == -1 && bid->cpumode == 2 && bid->size == 20 && memcmp(bid->id, elf_id, 20) == 0);
		CHECK_STR(bid ? bid->filename : NULL, "/demo.elf");
		CHECK(csd_perf_build_id(pd, 1) == NULL);
		struct walk w;
		walk_all(pd, &w);
		CHECK_EQ(w.rc, CSD_EEOS);
		CHECK_EQ(w.pieces, 1);
		CHECK_EQ(w.piece_bytes, trace_n);
		CHECK_EQ(w.aux, 1);
		CHECK_EQ(w.mmaps, 1);
		CHECK_EQ(w.comms, 1);
		CHECK_EQ(w.itrace, 1);
		CHECK_EQ(w.hw_ids, v == 2 ? 2 : 0);
		const struct csd_perf_event *p = &w.piece[0];
		CHECK(p->cpu == -1 && p->tid == PID && p->pid == PID && p->aux_offset == 0 && p->aux_flags == 0);
		CHECK_EQ(p->flags, 0);
		/* The bytes are the sample's. */
		uint8_t *got = malloc(trace_n);
		CHECK_EQ(csd_perf_read(pd, p->data_offset, got, trace_n), (int)trace_n);
		CHECK(memcmp(got, trace, trace_n) == 0);
		free(got);
		CHECK_EQ(csd_perf_read(pd, b.n - 4, err, 8), CSD_EINVAL);
		/* Once more from the start: the same walk. */
		CHECK_EQ(csd_perf_rewind(pd), 0);
		struct walk w2;
		walk_all(pd, &w2);
		CHECK(w2.rc == w.rc && w2.events == w.events && w2.piece[0].data_offset == p->data_offset);
		csd_perf_free(pd);
		pdb_free(&b);
	}
}

/* The events of one file in order, with their fields. */
static void test_library_events(void)
{
	struct shape sh = { .version = 1, .mmap_bid = 1, .per_cpu = 1, .switch_inside = 1 };
	struct pdb b;
	build_sample(&b, &sh);
	csd_perf *pd = NULL;
	char err[512];
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), 0);
	if (!pd) {
		pdb_free(&b);
		return;
	}
	struct csd_perf_event small = { .size = offsetof(struct csd_perf_event, lost) };
	CHECK_EQ(csd_perf_next(pd, &small), CSD_EINVAL);
	struct csd_perf_event ev = { .size = sizeof(ev) };
	/* COMM, MMAP2, 4 switches, then per CPU: AUX, its piece. */
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_COMM && ev.pid == PID && ev.tid == PID && (ev.flags & CSD_PERF_EVF_EXEC));
	CHECK_STR(ev.comm, "demo");
	CHECK(ev.time == 10 && (ev.flags & CSD_PERF_EVF_TIME) && ev.cpu == -1 && ev.record == 3);
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_MMAP && ev.record == 10 && ev.addr == 0x10000 && ev.len == 0x1000 && ev.pgoff == 0);
	CHECK(ev.prot == 5 && ev.mmap_flags == 2 && (ev.flags & CSD_PERF_EVF_BUILD_ID) && ev.build_id_size == 20);
	CHECK(memcmp(ev.build_id, elf_id, 20) == 0 && ev.cpumode == 2);
	CHECK_STR(ev.filename, "/demo.elf");
	CHECK_STR(ev.comm, "");
	/* ITRACE_START on CPU 0, out to 77, 77 in, ITRACE_START on CPU 1. */
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_ITRACE_START && ev.cpu == 0 && ev.pid == PID && ev.tid == PID && ev.time == 20);
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_SWITCH && ev.record == 15 && (ev.flags & CSD_PERF_EVF_OUT) && ev.pid == PID);
	CHECK(ev.next_prev_pid == 77 && ev.next_prev_tid == 77 && ev.cpu == 0 && ev.time == 21);
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_SWITCH && !(ev.flags & CSD_PERF_EVF_OUT) && ev.pid == 77 && ev.next_prev_pid == PID);
	CHECK_EQ(csd_perf_next(pd, &ev), 0);
	CHECK(ev.type == CSD_PERF_ITRACE_START && ev.cpu == 1);
	for (int c = 0; c < 2; c++) {
		CHECK_EQ(csd_perf_next(pd, &ev), 0);
		CHECK(ev.type == CSD_PERF_AUX && ev.cpu == c && ev.aux_offset == 0 && ev.aux_flags == CSD_PERF_AUX_RAW);
		CHECK_EQ(csd_perf_next(pd, &ev), 0);
		CHECK(ev.type == CSD_PERF_AUX_DATA && ev.cpu == c && ev.idx == (uint32_t)c);
		CHECK(ev.flags == CSD_PERF_EVF_RAW && ev.aux_flags == CSD_PERF_AUX_RAW && ev.data_size > 500);
		CHECK_STR(csd_perf_event_name((int)ev.type), "aux_data");
	}
	CHECK_EQ(csd_perf_next(pd, &ev), CSD_EEOS);
	CHECK_EQ(csd_perf_next(pd, &ev), CSD_EEOS);
	CHECK_STR(csd_perf_event_name(0), "unknown");
	CHECK_STR(csd_perf_event_name(CSD_PERF_EVENT_COUNT), "unknown");
	CHECK_STR(csd_perf_event_name(CSD_PERF_SWITCH), "switch");
	csd_perf_free(pd);
	pdb_free(&b);
}

/* AUX records cut the data into pieces and give their flags; records
 * after the data are found too, and a record over two buffers makes the
 * second piece a continuation. */
static void test_library_pieces(void)
{
	struct {
		struct shape sh;
		size_t pieces;
	} cases[] = {
		{ { .version = 1, .sessions = 1 }, 2 },
		{ { .version = 1, .split_at = 1000 }, 2 },
		{ { .version = 1, .snapshot = 1 }, 1 },
		{ { .version = 1, .no_aux = 1 }, 1 },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pdb b;
		build_sample(&b, &cases[k].sh);
		csd_perf *pd = NULL;
		char err[512];
		CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), 0);
		if (!pd) {
			pdb_free(&b);
			continue;
		}
		struct walk w;
		walk_all(pd, &w);
		CHECK_EQ(w.rc, CSD_EEOS);
		CHECK_EQ(w.pieces, cases[k].pieces);
		CHECK_EQ(w.piece_bytes, trace_n);
		const struct csd_perf_event *p = w.piece;
		if (cases[k].sh.sessions) {
			size_t a = (trace_n / 2) & ~(size_t)15;
			CHECK(p[0].data_size == a && p[0].aux_flags == 0 && p[0].flags == 0);
			CHECK(p[1].data_size == trace_n - a && p[1].aux_flags == CSD_PERF_AUX_TRUNCATED && p[1].flags == 0);
			CHECK(p[1].data_offset == p[0].data_offset + a && p[1].aux_offset == a);
			CHECK(w.aux == 2 && w.aux_ev[1].aux_flags == 1 && w.aux_ev[1].offset > p[0].offset);
		} else if (cases[k].sh.split_at) {
			CHECK(p[0].data_size == 1000 && p[0].flags == 0);
			CHECK(p[1].aux_offset == 1000 && p[1].flags == CSD_PERF_EVF_CONTINUES && p[1].offset > p[0].offset);
		} else if (cases[k].sh.snapshot) {
			CHECK(p[0].aux_offset == 2 * trace_n && p[0].aux_flags == CSD_PERF_AUX_OVERWRITE && p[0].flags == 0);
			CHECK(csd_perf_info(pd)->snapshot);
		} else {
			CHECK(p[0].flags == CSD_PERF_EVF_NO_AUX && w.aux == 0);
		}
		csd_perf_free(pd);
		pdb_free(&b);
	}
}

/* AUX records of a queue that never gets its data fill the ring of
 * pending records: the oldest go, memory stays put, the walk ends. */
static void test_library_pending_limit(void)
{
	struct pdb b;
	pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_CPU, 1, 0);
	struct pdb_cpu cpu = { PDB_MAGIC_ETM3, 0, ptm_cfg.etmcr, ptm_cfg.trace_id, ptm_cfg.etmccer, ptm_cfg.etmidr, 0 };
	pdb_auxtrace_info(&b, 1, 0, &cpu, 1);
	struct pdb_sid s = sid_of(0, 0);
	for (unsigned i = 0; i < CSDI_PERF_AUX_PENDING + 100; i++)
		pdb_aux(&b, 16 * (uint64_t)i, 16, i == CSDI_PERF_AUX_PENDING + 99 ? 0 : 4, &s);
	pdb_auxtrace(&b, 16 * (uint64_t)(CSDI_PERF_AUX_PENDING + 99), 0, -1, 0, trace, 16);
	pdb_finish(&b);
	csd_perf *pd = NULL;
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, NULL, 0), 0);
	struct walk w;
	if (pd)
		walk_all(pd, &w);
	CHECK(pd && w.rc == CSD_EEOS && w.aux == CSDI_PERF_AUX_PENDING + 100 && w.pieces == 1);
	CHECK(pd && w.piece[0].aux_flags == 0 && w.piece[0].data_size == 16 && w.piece[0].flags == 0);
	csd_perf_free(pd);
	pdb_free(&b);
}

/* Errors the API lists, and files perf.data readers meet but this one
 * does not read. */
static void test_library_refusals(void)
{
	char err[512];
	csd_perf *pd = (csd_perf *)(void *)err;
	CHECK_EQ(csd_perf_open(NULL, &pd, err, sizeof(err)), CSD_EINVAL);
	CHECK(pd == NULL);
	CHECK_EQ(csd_perf_open(tmp("missing"), &pd, err, sizeof(err)), CSD_EIO);
	CHECK(strstr(err, "missing") != NULL);
	CHECK_EQ(csd_perf_open(tmpdir, &pd, err, sizeof(err)), CSD_EIO);
	CHECK(strstr(err, "directory") != NULL);
	struct csd_perf_event ev = { .size = sizeof(ev) };
	CHECK_EQ(csd_perf_next(NULL, &ev), CSD_EINVAL);

	CHECK_EQ(csd_perf_rewind(NULL), CSD_EINVAL);
	CHECK_EQ(csd_perf_read(NULL, 0, err, 1), CSD_EINVAL);
	CHECK(csd_perf_info(NULL) == NULL && csd_perf_num_cpus(NULL) == 0 && csd_perf_cpu(NULL, 0) == NULL);
	CHECK(csd_perf_num_build_ids(NULL) == 0 && csd_perf_build_id(NULL, 0) == NULL);
	CHECK_STR(csd_perf_error(NULL), "");
	csd_perf_free(NULL);

	uint8_t h[104];
	memset(h, 0, sizeof(h));
	memcpy(h, "PERFILE2", 8);
	h[8] = 16;                                    /* pipe mode */
	CHECK_EQ(csdi_perf_open_mem(h, 16, &pd, err, sizeof(err)), CSD_EUNSUPPORTED);
	CHECK(strstr(err, "pipe") != NULL && strstr(err, "offset 0x8") != NULL);
	memcpy(h, "2ELIFREP", 8);
	CHECK_EQ(csdi_perf_open_mem(h, sizeof(h), &pd, err, sizeof(err)), CSD_EUNSUPPORTED);
	CHECK(strstr(err, "big-endian") != NULL);
	memcpy(h, "PERFFILE", 8);
	CHECK_EQ(csdi_perf_open_mem(h, sizeof(h), &pd, err, sizeof(err)), CSD_EUNSUPPORTED);
	memcpy(h, "NOTPERF!", 8);
	CHECK_EQ(csdi_perf_open_mem(h, sizeof(h), &pd, err, sizeof(err)), CSD_EFORMAT);
	CHECK(strstr(err, "offset 0x0") != NULL);

	/* No AUXTRACE_INFO, and AUX trace of another kind. */
	struct pdb b;
	pdb_init(&b, PDB_SAMPLE_TID, 1, 0);
	struct pdb_sid s = sid_of(-1, 0);
	pdb_comm(&b, 1, 1, "x", 0, &s);
	pdb_finish(&b);
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), CSD_ENOENT);
	CHECK(strstr(err, "AUXTRACE_INFO") != NULL);
	pdb_free(&b);
	pdb_init(&b, PDB_SAMPLE_TID, 1, 0);
	size_t at = pdb_begin(&b, 70, 0);
	pdb_u32(&b, 1);                               /* Intel PT */
	pdb_u32(&b, 0);
	pdb_put(&b, NULL, 64);
	pdb_end(&b, at);
	pdb_finish(&b);
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), CSD_EUNSUPPORTED);
	CHECK(strstr(err, "Intel PT") != NULL);
	pdb_free(&b);
	/* Header version 3. */
	struct pdb_cpu cpu = { PDB_MAGIC_ETM3, 0, 0, 0x10, 0, 0, 0 };
	pdb_init(&b, PDB_SAMPLE_TID, 1, 0);
	pdb_auxtrace_info(&b, 3, 0, &cpu, 1);
	pdb_finish(&b);
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), CSD_EUNSUPPORTED);
	CHECK(strstr(err, "version 3") != NULL);
	pdb_free(&b);
	/* An unusable trace ID is named, not fatal. */
	cpu.traceidr = 0x7A;
	pdb_init(&b, PDB_SAMPLE_TID, 1, 0);
	pdb_auxtrace_info(&b, 1, 0, &cpu, 1);
	pdb_finish(&b);
	CHECK_EQ(csdi_perf_open_mem(b.buf, b.n, &pd, err, sizeof(err)), 0);
	CHECK(pd && csd_perf_cpu(pd, 0)->id_from == CSD_PERF_ID_NONE);
	csd_perf_free(pd);
	pdb_free(&b);
}

/* ---- Bad files -------------------------------------------------------- */

/* The offset an error names ("offset 0xN"), or -1. */
static long long named_offset(const char *msg)
{
	const char *p = strstr(msg, "offset 0x");
	return p ? strtoll(p + 9, NULL, 16) : -1;
}

/* Open and walk a file image: 0 when all of it reads, else the error,
 * which must name an offset inside the file's first `limit` bytes. */
static int open_walk(const uint8_t *data, size_t n, size_t limit, const char *what)
{
	csd_perf *pd = NULL;
	char err[512] = "";
	int rc = csdi_perf_open_mem(data, n, &pd, err, sizeof(err));
	if (rc == 0) {
		struct walk w;
		walk_all(pd, &w);
		rc = w.rc == CSD_EEOS ? 0 : w.rc;
		snprintf(err, sizeof(err), "%s", csd_perf_error(pd));
		/* A file cut (or bent) in its features, after its records: the
		 * records are all read and the cut noted, with its offset (the
		 * session ends with it as its error, the tool exits 2). */
		if (rc == 0 && csd_perf_info(pd)->features_cut) {
			rc = CSD_EFORMAT;
			snprintf(err, sizeof(err), "%s", csd_perf_info(pd)->features_cut);
		}
		CHECK(w.events <= n);
		/* Every piece lies in the file. */
		csd_perf_free(pd);
	}
	if (rc) {
		long long off = named_offset(err);
		if (off < 0 || (size_t)off > limit) {
			fprintf(stderr, "test_perf_data: %s: error without a fitting offset: %s\n", what, err);
			CHECK(0);
		}
	}
	return rc;
}

/* Cut at every record boundary, every feature and at random bytes: an
 * error naming an offset in what is left, never a crash. */
static void test_truncated(void)
{
	struct shape sh = { .version = 1, .etm4 = 1, .table_bid = 1, .sessions = 1 };
	struct pdb b;
	build_sample(&b, &sh);
	CHECK_EQ(open_walk(b.buf, b.n, b.n, "whole"), 0);
	size_t cuts = 0, failed = 0;
	/* Record boundaries: walk the data section's headers. */
	size_t data_end = b.data_start + (size_t)(b.buf[48] | b.buf[49] << 8 | b.buf[50] << 16);
	for (size_t at = b.data_start; at < data_end;) {
		uint16_t size = (uint16_t)(b.buf[at + 6] | b.buf[at + 7] << 8);
		uint32_t type = b.buf[at];
		if (size < 8 || type == 0)
			break;
		size_t next = at + size;
		if (type == 71)
			next += (size_t)(b.buf[at + 8] | b.buf[at + 9] << 8 | b.buf[at + 10] << 16);
		size_t points[3] = { at, at + 4, at + size / 2 };
		for (int k = 0; k < 3; k++) {
			cuts++;
			int rc = open_walk(b.buf, points[k], points[k], "cut");
			failed += rc != 0;
			if (!rc)
				fprintf(stderr, "test_perf_data: cut at %zu of %zu read without an error\n", points[k], b.n);
		}
		at = next;
	}
	srand(7);
	for (int i = 0; i < 300; i++) {
		size_t cut = (size_t)rand() % b.n;
		cuts++;
		int rc = open_walk(b.buf, cut, cut, "random cut");
		failed += rc != 0;
		if (!rc)
			fprintf(stderr, "test_perf_data: cut at %zu of %zu read without an error\n", cut, b.n);
	}
	for (size_t cut = data_end; cut < b.n; cut += 7) {
		cuts++;
		int rc = open_walk(b.buf, cut, cut, "feature cut");
		failed += rc != 0;
		if (!rc)
			fprintf(stderr, "test_perf_data: cut at %zu of %zu read without an error\n", cut, b.n);
	}
	printf("test_perf_data: %zu cuts, %zu refused with an offset\n", cuts, failed);
	CHECK_EQ(failed, cuts);
	pdb_free(&b);
}

/* Random bytes changed: a result or an error with its offset, never a
 * crash, a hang or a runaway walk. */
static void test_corrupted(void)
{
	struct shape sh = { .version = 1, .etm4 = 1, .table_bid = 1, .sessions = 1, .mmap_bid = 1 };
	struct pdb b;
	build_sample(&b, &sh);
	uint8_t *copy = malloc(b.n);
	size_t refused = 0;
	srand(11);
	for (int i = 0; i < 3000; i++) {
		memcpy(copy, b.buf, b.n);
		int flips = 1 + rand() % 4;
		for (int k = 0; k < flips; k++) {
			/* Mostly the headers and records: the trace bytes are
			 * the decoders' business. */
			size_t at = (size_t)rand() % (rand() % 2 ? b.data_start + 400 : b.n);
			copy[at] = (uint8_t)(rand() % 3 == 0 ? 0xFF : rand());
		}
		refused += open_walk(copy, b.n, b.n, "corrupted") != 0;
	}
	printf("test_perf_data: 3000 corrupted files, %zu refused with an offset\n", refused);
	CHECK(refused > 100);
	free(copy);
	pdb_free(&b);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Sizes in headers made huge: each is refused with its offset, and the
 * tool ends cleanly under an address-space limit. */
static void test_huge_sizes(void)
{
	struct shape sh = { .version = 1, .table_bid = 1 };
	struct pdb b;
	build_sample(&b, &sh);
	/* Where things are: the AUXTRACE_INFO and AUXTRACE records. */
	size_t info = 0, auxtrace = 0, at = b.data_start;
	while (at + 8 <= b.n && (!info || !auxtrace)) {
		uint16_t size = (uint16_t)(b.buf[at + 6] | b.buf[at + 7] << 8);
		if (b.buf[at] == 70)
			info = at;
		if (b.buf[at] == 71)
			auxtrace = at;
		at += size + (b.buf[at] == 71 ? (size_t)(b.buf[at + 8] | b.buf[at + 9] << 8 | b.buf[at + 10] << 16) : 0);
	}
	CHECK(info && auxtrace);
	size_t feat_table = b.data_start + (size_t)(b.buf[48] | b.buf[49] << 8 | b.buf[50] << 16);
	struct {
		const char *what;
		size_t at;
		uint64_t value;
	} cases[] = {
		{ "data size", 48, UINT64_C(1) << 62 },
		{ "data size wraps", 48, UINT64_MAX - 100 },
		{ "data offset", 40, UINT64_C(1) << 40 },
		{ "attr size", 16, UINT64_C(1) << 40 },
		{ "attr section size", 32, UINT64_C(1) << 40 },
		{ "attr section offset", 24, UINT64_MAX - 5 },
		{ "AUXTRACE size", auxtrace + 8, UINT64_C(1) << 60 },
		{ "AUXTRACE size 2", auxtrace + 8, UINT64_MAX },
		{ "AUXTRACE stream offset", auxtrace + 16, UINT64_MAX - 8 },
		{ "CPU blocks", info + 24, (uint64_t)PDB_PMU_TYPE << 32 | 0xFFFFFFFFu },
		{ "NR_TRC_PARAMS", info + 56, UINT64_C(1) << 50 },
		{ "CPU number", info + 48, UINT64_C(1) << 40 },
		{ "feature offset", feat_table, UINT64_C(1) << 50 },
		{ "feature size", feat_table + 8, UINT64_C(1) << 50 },
		{ "feature size 2", feat_table + 8, UINT64_MAX },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint8_t *copy = malloc(b.n);
		memcpy(copy, b.buf, b.n);
		put64(copy + cases[k].at, cases[k].value);
		int rc = open_walk(copy, b.n, b.n, cases[k].what);
		if (rc == 0)
			fprintf(stderr, "test_perf_data: huge %s was read\n", cases[k].what);
		CHECK(rc != 0);
		/* The tool, under an address-space limit. */
		const char *path = tmp("huge.data");
		FILE *f = fopen(path, "wb");
		CHECK(f && fwrite(copy, 1, b.n, f) == b.n);
		if (f)
			fclose(f);
		free(copy);
		if (k % 3 == 0 || k + 1 == sizeof(cases) / sizeof(cases[0])) {
			char args[2048];
			snprintf(args, sizeof(args), "decode %s --format none", path);
			char cmd[4096];
			/* The sanitizers' shadow memory needs more address space. */
			snprintf(cmd, sizeof(cmd), "%s timeout 60 %s %s", sanitized() ? "" : "ulimit -v 262144;", tool, args);
			int st = cli_run_cmd(cmd, tmp("stderr"), out_b, OUT_CAP);
			cli_read_text(tmp("stderr"), err_text, sizeof(err_text));
			if (st != 2 && st != 1)
				fprintf(stderr, "test_perf_data: huge %s: exit %d: %s\n", cases[k].what, st, err_text);
			CHECK(st == 2 || st == 1);
			CHECK(strstr(err_text, "offset 0x") != NULL);
		}
	}
	pdb_free(&b);
}

/* ---- The tool --------------------------------------------------------- */

static void test_tool_versions(const char *snap_insn)
{
	for (int v = 0; v <= 2; v++) {
		struct shape sh = { .version = v, .etm4 = 1 };
		char name[32], args[2048];
		snprintf(name, sizeof(name), "v%d.data", v);
		const char *path = write_sample(name, &sh);
		snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", path, tmp("root"));
		int rc = tool_run(out_b, args);
		CHECK_EQ(rc, 0);
		/* The payload's place: after the AUXTRACE record. */
		csd_perf *pd = NULL;
		CHECK_EQ(csd_perf_open(path, &pd, NULL, 0), 0);
		struct walk w;
		walk_all(pd, &w);
		csd_perf_free(pd);
		same_as_snapshot(name, snap_insn, out_b, (long long)w.piece[0].data_offset);
		check_keys(out_b, ptm_cfg.trace_id, 0, PID, PID);
		check_keys(out_b, etm_cfg.trace_id, 1, PID, PID);
		/* The ETMv4 CPU is named once. */
		CHECK_EQ(count_str(err_text, "CPU 2 is traced by an ETMv4"), 1);
		CHECK_EQ(count_str(err_text, "warning"), 1);
	}
}

/* Where the program is found: none, --symfs, the build-ID cache (both
 * layouts, from MMAP2 or the build-ID table; --buildid-dir or ~/.debug),
 * --elf; a file under --symfs with another build ID is not used. */
static void test_tool_lookups(const char *snap_insn)
{
	char args[4096], cmd[4096];
	struct shape plain = { .version = 1 };
	const char *path = write_sample("plain.data", &plain);
	/* Cut inside its feature sections (after every record): every
	 * record is printed, then the cut is named and the status is 2. */
	{
		char cut_path[1300];
		snprintf(args, sizeof(args), "decode %s --format jsonl", path);
		CHECK_EQ(tool_run(out_b, args), 0);
		char *whole = strdup(out_b);
		snprintf(cut_path, sizeof(cut_path), "%s.cut", path);
		snprintf(cmd, sizeof(cmd), "head -c $(( $(stat -c %%s %s) - 24 )) %s > %s", path, path, cut_path);
		CHECK_EQ(system(cmd), 0);
		snprintf(args, sizeof(args), "decode %s --format jsonl", cut_path);
		CHECK_EQ(tool_run(out_b, args), 2);
		CHECK(strstr(err_text, "passes the end of the file") != NULL && strstr(err_text, "offset 0x") != NULL);
		CHECK(whole && strlen(whole) > 100 && strcmp(out_b, whole) == 0);
		free(whole);
	}
	/* Given as a raw capture, it is refused rather than decoded as noise. */
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --format none", path);
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "is a perf.data file: give it without --trace") != NULL);
	snprintf(args, sizeof(args), "decode %s --format jsonl --insn", path);
	CHECK_EQ(tool_run(out_b, args), 0);
	CHECK(count_str(out_b, "\"type\":\"no_memory\"") > 0);
	CHECK_EQ(count_str(out_b, "\"type\":\"insn\""), 0);
	CHECK(strstr(err_text, "/demo.elf not found") != NULL);
	/* --symfs */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s/demo.elf %s/", tmp("root"), SAMPLE, tmp("root"));
	CHECK_EQ(system(cmd), 0);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", path, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("symfs", snap_insn, out_b, -1);
	/* --vmlinux: in every image (here the program stands for a kernel). */
	snprintf(args, sizeof(args), "decode %s --vmlinux %s/demo.elf --format jsonl --insn", path, SAMPLE);
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("--vmlinux", snap_insn, out_b, -1);
	snprintf(args, sizeof(args), "decode %s --vmlinux %s", SAMPLE, tmp("missing"));
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "--vmlinux is for perf.data input") != NULL);
	snprintf(args, sizeof(args), "decode %s --vmlinux %s", path, tmp("missing"));
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "--vmlinux") != NULL && strstr(err_text, "missing") != NULL);
	/* --elf */
	snprintf(args, sizeof(args), "decode %s --elf %s/demo.elf --format jsonl --insn", path, SAMPLE);
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("--elf", snap_insn, out_b, -1);
	/* The build-ID cache, as perf lays it out: .build-id/xx/rest is a
	 * link to ../../<path>/<id>, which holds elf. */
	char hex[41];
	for (unsigned i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", elf_id[i]);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/cache/demo.elf/%s %s/cache/.build-id/%.2s && cp %s/demo.elf %s/cache/demo.elf/%s/elf && "
		 "ln -sf ../../demo.elf/%s %s/cache/.build-id/%.2s/%s",
		 tmpdir, hex, tmpdir, hex, SAMPLE, tmpdir, hex, hex, tmpdir, hex, hex + 2);
	CHECK_EQ(system(cmd), 0);
	struct shape with_mmap_bid = { .version = 1, .mmap_bid = 1 };
	struct shape with_table_bid = { .version = 1, .table_bid = 1 };
	const char *p_mmap = write_sample("mmap_bid.data", &with_mmap_bid);
	snprintf(args, sizeof(args), "decode %s --buildid-dir %s --format jsonl --insn", p_mmap, tmp("cache"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("build-ID cache (MMAP2)", snap_insn, out_b, -1);
	const char *p_table = write_sample("table_bid.data", &with_table_bid);
	snprintf(args, sizeof(args), "decode %s --buildid-dir=%s --format jsonl --insn", p_table, tmp("cache"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("build-ID cache (table)", snap_insn, out_b, -1);
	/* ~/.debug, the <path>/<id>/elf layout only. */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/home && cp -r %s/cache %s/home/.debug && rm -r %s/home/.debug/.build-id",
		 tmpdir, tmpdir, tmpdir, tmpdir);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "HOME=%s %s decode %s --format jsonl --insn", tmp("home"), tool, p_mmap);
	CHECK_EQ(cli_run_cmd(cmd, tmp("stderr"), out_b, OUT_CAP), 0);
	same_as_snapshot("~/.debug", snap_insn, out_b, -1);
	/* Another build ID: the file under --symfs is not taken. */
	struct shape wrong = { .version = 1, .wrong_bid = 1 };
	const char *p_wrong = write_sample("wrong_bid.data", &wrong);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p_wrong, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	CHECK_EQ(count_str(out_b, "\"type\":\"insn\""), 0);
	CHECK(strstr(err_text, "build ID") != NULL && strstr(err_text, "not used") != NULL);
}

/* The lookups of the library that the tool and the Python package share
 * (after test_tool_lookups made the build-ID cache and --symfs trees). */
static void test_library_lookups(void)
{
	uint8_t id[20], other[20];
	char path[4096];
	size_t other_n = 99;
	/* The ELF's own build ID; none in a file that is not ELF. */
	CHECK_EQ(csd_elf_build_id(SAMPLE "/demo.elf", id), (int)elf_id_n);
	CHECK(memcmp(id, elf_id, elf_id_n) == 0);
	CHECK_EQ(csd_elf_build_id(SAMPLE "/snapshot.ini", id), 0);
	CHECK_EQ(csd_elf_build_id(tmp("missing"), id), CSD_EIO);
	CHECK_EQ(csd_elf_build_id(NULL, id), CSD_EINVAL);
	/* The build-ID table: by name. */
	struct shape with_table_bid = { .version = 1, .table_bid = 1 };
	csd_perf *pd = NULL;
	CHECK_EQ(csd_perf_open(write_sample("lookup.data", &with_table_bid), &pd, NULL, 0), 0);
	CHECK_EQ(csd_perf_file_build_id(pd, "/demo.elf", PID, id), 20);
	CHECK(memcmp(id, elf_id, 20) == 0);
	CHECK_EQ(csd_perf_file_build_id(pd, "/other.elf", PID, id), 0);
	CHECK_EQ(csd_perf_file_build_id(pd, NULL, PID, id), CSD_EINVAL);
	csd_perf_free(pd);
	/* The cache first: .build-id/xx/rest is a directory holding elf. */
	char cache[1200], root[1200], want[2400];
	snprintf(cache, sizeof(cache), "%s", tmp("cache"));
	snprintf(root, sizeof(root), "%s", tmp("root"));
	char hex[41];
	for (unsigned i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", elf_id[i]);
	CHECK_EQ(csd_perf_find_file("/demo.elf", elf_id, 20, root, cache, path, sizeof(path), other, &other_n), 0);
	snprintf(want, sizeof(want), "%s/.build-id/%.2s/%s/elf", cache, hex, hex + 2);
	CHECK(strcmp(path, want) == 0);
	CHECK_EQ(other_n, 0);
	/* No cache: symfs + the name, its build ID the same. */
	CHECK_EQ(csd_perf_find_file("/demo.elf", elf_id, 20, root, tmp("nocache"), path, sizeof(path), other, &other_n), 0);
	snprintf(want, sizeof(want), "%s/demo.elf", root);
	CHECK(strcmp(path, want) == 0);
	/* Another build ID: refused, with the file's own. */
	uint8_t wrong[20];
	memcpy(wrong, elf_id, 20);
	wrong[3] ^= 0xFF;
	CHECK_EQ(csd_perf_find_file("/demo.elf", wrong, 20, root, tmp("nocache"), path, sizeof(path), other, &other_n),
		 CSD_ENOENT);
	CHECK_EQ(other_n, 20);
	CHECK(memcmp(other, elf_id, 20) == 0 && strcmp(path, want) == 0);
	/* Without a build ID the file is taken as it is; not there at all. */
	CHECK_EQ(csd_perf_find_file("/demo.elf", NULL, 0, root, NULL, path, sizeof(path), other, &other_n), 0);
	CHECK_EQ(csd_perf_find_file("/gone.elf", elf_id, 20, root, tmp("nocache"), path, sizeof(path), other, &other_n),
		 CSD_ENOENT);
	CHECK_EQ(other_n, 0);
	/* A buffer too small; bad arguments. */
	CHECK_EQ(csd_perf_find_file("/demo.elf", NULL, 0, root, NULL, path, 8, other, &other_n), CSD_ENOSPC);
	CHECK_EQ(csd_perf_find_file("/demo.elf", NULL, 21, root, NULL, path, sizeof(path), other, &other_n), CSD_EINVAL);
	CHECK_EQ(csd_perf_find_file(NULL, NULL, 0, root, NULL, path, sizeof(path), other, &other_n), CSD_EINVAL);
}

static void test_tool_shapes(const char *snap_insn, const char *snap_text)
{
	char args[4096];
	/* Raw data per CPU; pid/tid from the switch records. */
	struct shape raw = { .version = 1, .per_cpu = 1 };
	const char *p = write_sample("raw.data", &raw);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("raw per CPU", snap_insn, out_b, -1);
	CHECK(check_keys(out_b, ptm_cfg.trace_id, 0, PID, PID) > 1000);
	CHECK(check_keys(out_b, etm_cfg.trace_id, 1, PID, PID) > 1000);
	/* A switch on CPU 0 during its buffer: its task is not known. */
	struct shape sw = { .version = 1, .per_cpu = 1, .switch_inside = 1 };
	p = write_sample("switch.data", &sw);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	check_keys(out_b, ptm_cfg.trace_id, 0, -1, -1);
	check_keys(out_b, etm_cfg.trace_id, 1, PID, PID);
	/* One AUX record over two AUXTRACE buffers cut inside a frame: one
	 * capture. */
	struct shape split = { .version = 1, .split_at = 1000 };
	p = write_sample("split.data", &split);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("two buffers", snap_insn, out_b, -1);
	/* Snapshot mode. */
	struct shape snapm = { .version = 1, .snapshot = 1 };
	p = write_sample("snapmode.data", &snapm);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	same_as_snapshot("snapshot mode", snap_insn, out_b, -1);
	/* Two sessions, the second truncated: an aux_lost record, exit 1. */
	struct shape sess = { .version = 1, .sessions = 1 };
	p = write_sample("sessions.data", &sess);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --insn", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 1);
	CHECK_EQ(count_str(out_b, "{\"type\":\"aux_lost\""), 1);
	const char *lost = strstr(out_b, "{\"type\":\"aux_lost\"");
	CHECK(lost && strstr(lost, "\"pid\":4242,\"tid\":4242,") && strstr(lost, "\"flags\":[\"truncated\"]}"));
	CHECK(lost && json_int(lost, "aux_offset") == (long long)((trace_n / 2) & ~(size_t)15));
	CHECK(count_str(out_b, "\"type\":\"insn\"") > 1000);
	snprintf(args, sizeof(args), "decode %s --symfs %s", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 1);
	CHECK_EQ(count_str(out_b, "  aux_lost truncated aux_offset="), 1);
	/* Text: "cpuN " before each line, a thread line per capture. */
	struct shape plain = { .version = 1 };
	p = write_sample("plain.data", &plain);
	snprintf(args, sizeof(args), "decode %s --symfs %s", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	CHECK_EQ(count_str(out_b, "cpu0 0x10  -- thread pid=4242 tid=4242\n"), 1);
	CHECK_EQ(count_str(out_b, "cpu1 0x11  -- thread pid=4242 tid=4242\n"), 1);
	size_t lines = count_str(out_b, "\n"), snap_lines = count_str(snap_text, "\n");
	CHECK_EQ(lines, snap_lines + 2);
	CHECK_EQ(count_str(out_b, "\ncpu0 0x10") + count_str(out_b, "\ncpu1 0x11") + 1, lines);
	/* packets */
	char *snap_pk = malloc(OUT_CAP);
	CHECK_EQ(tool_run(snap_pk, "packets " SAMPLE " --format jsonl"), 0);
	snprintf(args, sizeof(args), "packets %s --format jsonl", p);
	CHECK_EQ(tool_run(out_b, args), 0);
	csd_perf *pd = NULL;
	CHECK_EQ(csd_perf_open(p, &pd, NULL, 0), 0);
	struct walk w;
	walk_all(pd, &w);
	csd_perf_free(pd);
	same_as_snapshot("packets", snap_pk, out_b, (long long)w.piece[0].data_offset);
	CHECK(count_str(out_b, "{\"packet\":\"isync\",\"id\":16,\"cpu\":0,\"pid\":4242,\"tid\":4242,") > 0);
	free(snap_pk);
	/* --id, --format none */
	snprintf(args, sizeof(args), "decode %s --symfs %s --id 0x11 --format jsonl", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	CHECK(count_str(out_b, "\"id\":17,\"cpu\":1") > 100 && count_str(out_b, "\"id\":16") == 0);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format none", p, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	CHECK(strstr(out_b, " instructions, ") != NULL && strstr(out_b, " 0 errors\n") != NULL);
}

/* ---- --jobs ------------------------------------------------------------ */

/* A busy per-CPU recording: in each of six rounds, raw trace for CPU 0
 * and CPU 1 (a session each), with sideband between them that the
 * decode reads: context switches to other threads (the thread table),
 * the file mapped again (the image grows while pieces are in flight), an
 * exec of another process, and a truncated AUX record (an aux_lost line
 * after what was decoded before it). */
static void build_busy(struct pdb *b)
{
	pdb_init(b, 1 | PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | 256 | PDB_SAMPLE_IDENTIFIER, 1, 0);
	struct pdb_cpu cpus[2] = {
		{ PDB_MAGIC_ETM3, 0, ptm_cfg.etmcr, ptm_cfg.trace_id, ptm_cfg.etmccer, ptm_cfg.etmidr, 0 },
		{ PDB_MAGIC_ETM3, 1, etm_cfg.etmcr, etm_cfg.trace_id, etm_cfg.etmccer, etm_cfg.etmidr, 0 },
	};
	pdb_auxtrace_info(b, 1, 0, cpus, 2);
	struct pdb_sid d = sid_of(-1, 10);
	d.ident = PDB_ID_DUMMY;
	pdb_comm(b, PID, PID, "demo", 1, &d);
	pdb_mmap2(b, PID, PID, 0x10000, 0x1000, 0, "/demo.elf", NULL, 0, &d);
	size_t n[2];
	uint8_t *raw[2] = { source_bytes(ptm_cfg.trace_id, &n[0]), source_bytes(etm_cfg.trace_id, &n[1]) };
	n[0] &= ~(size_t)7; /* (AUXTRACE buffers are padded to 8 bytes) */
	n[1] &= ~(size_t)7;
	uint64_t t = 20, aux_off[2] = { 0, 0 };
	for (int c = 0; c < 2; c++) {
		struct pdb_sid s = sid_of(c, t++);
		pdb_itrace_start(b, PID, PID, &s);
	}
	for (int round = 0; round < 6; round++) {
		for (int c = 0; c < 2; c++) {
			struct pdb_sid s = sid_of(c, t++);
			if (round == 2 && c == 1) {
				/* The mapping again, while CPU 0's piece decodes. */
				pdb_mmap2(b, PID, PID, 0x10000, 0x1000, 0, "/demo.elf", NULL, 0, &d);
			}
			if (round == 3 && c == 0) {
				/* Another process, new to the thread table. */
				struct pdb_sid x = sid_of(c, t++);
				pdb_comm(b, 900 + round, 900 + round, "other", 1, &x);
			}
			/* Out to a thread of PID not seen before, and back. */
			pdb_switch(b, 1, 1, PID, PID + 1 + round, &s);
			s.tid = PID + 1 + round;
			pdb_switch(b, 1, 0, PID, PID, &s);
			s = sid_of(c, t++);
			pdb_aux(b, aux_off[c], n[c], round == 4 && c == 1 ? 0x101 : 0x100, &s);
			pdb_auxtrace(b, aux_off[c], (uint32_t)c, PID, c, raw[c], n[c]);
			aux_off[c] += n[c];
		}
	}
	free(raw[0]);
	free(raw[1]);
	pdb_user(b, 68, NULL, 0);
	b->hostname = "board";
	b->arch = "armv7l";
	b->nr_cpus = 2;
	b->cmdline[0] = "/usr/bin/perf";
	b->cmdline[1] = "record";
	b->index = 1;
	pdb_finish(b);
}

/* The joins of the chunked runs (CSDEC_TEST_CHUNK_BYTES: the tool says
 * them on stderr), added up over the tests. */
static unsigned long chunk_joins, chunk_matches;

static void add_chunk_stats(const char *err)
{
	for (const char *p = err; (p = strstr(p, "csdec: chunks: ")) != NULL; p++) {
		unsigned long j, m;
		if (sscanf(p, "csdec: chunks: %lu joined, %lu by a matching state", &j, &m) == 2) {
			chunk_joins += j;
			chunk_matches += m;
		}
	}
}

/* `args` (%s: the file) with --jobs 1 and --jobs 2, 3, and --jobs 2 with
 * a source cut into chunks of a few hundred bytes wherever it is the only
 * one decoding (CSDEC_TEST_CHUNK_BYTES): the same stdout and exit status. */
static void same_with_jobs(const char *fmt, const char *path_in)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s", path_in); /* (tmp()'s names are reused) */
	char args[4096], a[4200];
	snprintf(args, sizeof(args), fmt, path);
	snprintf(a, sizeof(a), "%s --jobs 1", args);
	int rc1 = tool_run(out_a, a);
	if (strlen(out_a) < 30)
		fprintf(stderr, "test_perf_data: %s: %zu bytes\n", a, strlen(out_a));
	CHECK(strlen(out_a) >= 30); /* (--format none: one line of counts) */
	static const int jobs[] = { 2, 3 };
	for (int k = 0; k < 2; k++) {
		snprintf(a, sizeof(a), "%s --jobs %d", args, jobs[k]);
		int rc = tool_run(out_b, a);
		if (rc != rc1 || strcmp(out_a, out_b) != 0)
			fprintf(stderr, "test_perf_data: %s: differs from --jobs 1 (status %d against %d)\n", a, rc, rc1);
		CHECK_EQ(rc, rc1);
		CHECK(strcmp(out_a, out_b) == 0);
	}
	snprintf(a, sizeof(a), "%s --jobs 2", args);
	const int rc = tool_run_env(out_b, "CSDEC_TEST_CHUNK_BYTES=300", a);
	add_chunk_stats(err_text);
	if (rc != rc1 || strcmp(out_a, out_b) != 0)
		fprintf(stderr, "test_perf_data: %s in chunks: differs from --jobs 1 (status %d against %d)\n", a, rc,
			rc1);
	CHECK_EQ(rc, rc1);
	CHECK(strcmp(out_a, out_b) == 0);
}

/* Bad bytes in a perf.data file that workers decode and print: copies of
 * `path` with a few bytes changed anywhere (headers, sideband, trace),
 * each decoded (--symfs symfs) with --jobs 1 and 2 (the second with env
 * before it, or ""): exit 0, 1 or 2 (never a crash or a sanitizer's report), and the
 * same output. */
static void jobs_corrupted(const char *path_in, const char *symfs, const char *env)
{
	char path[1200], bad[1200], args[4096];
	snprintf(path, sizeof(path), "%s", path_in);
	snprintf(bad, sizeof(bad), "%s", tmp("jobs-bad.data"));
	size_t n;
	uint8_t *orig = check_read_file(path, &n);
	CHECK(orig != NULL && n > 1024);
	if (!orig || n <= 1024) {
		free(orig);
		return;
	}
	uint8_t *copy = malloc(n);
	CHECK(copy != NULL);
	const int files = !copy ? 0 : sanitized() ? 8 : 40;
	int differ = 0, failed = 0;
	srand(21);
	for (int i = 0; i < files; i++) {
		memcpy(copy, orig, n);
		for (int k = 1 + rand() % 4; k > 0; k--)
			copy[(size_t)rand() % n] = (uint8_t)rand();
		FILE *f = fopen(bad, "wb");
		CHECK(f && fwrite(copy, 1, n, f) == n);
		if (f)
			fclose(f);
		snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --jobs 1", bad, symfs);
		const int rc1 = tool_run(out_a, args);
		snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --jobs 2", bad, symfs);
		const int rc2 = tool_run_env(out_b, env, args);
		failed += rc1 < 0 || rc1 > 2 || rc2 < 0 || rc2 > 2;
		differ += rc1 != rc2 || strcmp(out_a, out_b) != 0;
	}
	printf("test_perf_data: %d corrupted copies of %s with --jobs 1 and 2%s%s: %d failed, %d differ\n", files,
	       strrchr(path, '/') ? strrchr(path, '/') + 1 : path, *env ? ", " : "", env, failed, differ);
	CHECK_EQ(failed, 0);
	CHECK_EQ(differ, 0);
	free(copy);
	free(orig);
}

static void test_tool_jobs(void)
{
	struct pdb b;
	build_busy(&b);
	char busy[1200];
	snprintf(busy, sizeof(busy), "%s", tmp("busy.data"));
	CHECK_EQ(pdb_write(&b, busy), 0);
	pdb_free(&b);
	char fmt[2048];
	/* The decode itself: both CPUs, six sessions each, the threads
	 * switched in and out between them, one aux_lost line. */
	snprintf(fmt, sizeof(fmt), "decode %%s --symfs %s --format jsonl", tmp("root"));
	char args[4096];
	snprintf(args, sizeof(args), fmt, busy);
	CHECK_EQ(tool_run(out_a, args), 1);
	CHECK_EQ(count_str(out_a, "{\"type\":\"aux_lost\""), 1);
	CHECK(count_str(out_a, "\"id\":16,\"cpu\":0") > 100);
	CHECK(count_str(out_a, "\"id\":17,\"cpu\":1") > 100);
	const char *forms[] = {
		"decode %%s --symfs %s --format jsonl",
		"decode %%s --symfs %s --format jsonl --insn",
		"decode %%s --symfs %s --format jsonl --order time",
		"decode %%s --symfs %s",
		"decode %%s --symfs %s --format none",
		"packets %%s --format jsonl",
		"coverage %%s --symfs %s --elf %s/demo.elf --insns",
		"profile %%s --symfs %s --elf %s/demo.elf",
		"timeline %%s --symfs %s --elf %s/demo.elf -o -",
	};
	char root[1200];
	snprintf(root, sizeof(root), "%s", tmp("root"));
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(fmt, sizeof(fmt), forms[i], root, root);
		same_with_jobs(fmt, busy);
	}
	jobs_corrupted(busy, root, "");
	/* The sample's shapes: per thread, formatted (both CPUs' IDs in one
	 * queue), raw per CPU, a switch inside a buffer, two sessions. */
	const struct shape shapes[] = {
		{ .version = 1 },
		{ .version = 1, .per_cpu = 1 },
		{ .version = 1, .per_cpu = 1, .switch_inside = 1 },
		{ .version = 1, .sessions = 1 },
		{ .version = 2, .split_at = 1000 },
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const char *p = write_sample("jobs-shape.data", &shapes[i]);
		snprintf(fmt, sizeof(fmt), "decode %%s --symfs %s --format jsonl --insn", tmp("root"));
		same_with_jobs(fmt, p);
		snprintf(fmt, sizeof(fmt), "decode %%s --symfs %s", tmp("root"));
		same_with_jobs(fmt, p);
	}
}

static void test_tool_refusals(void)
{
	char args[2048];
	/* Pipe mode: recognised, refused by name. */
	uint8_t h[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	FILE *f = fopen(tmp("pipe.data"), "wb");
	CHECK(f && fwrite(h, 1, 16, f) == 16);
	if (f)
		fclose(f);
	snprintf(args, sizeof(args), "decode %s", tmp("pipe.data"));
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "pipe-mode perf.data") != NULL && strstr(err_text, "offset 0x8") != NULL);
	/* --symfs is for perf.data */
	snprintf(args, sizeof(args), "decode %s --symfs /", SAMPLE);
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "--symfs is for perf.data input") != NULL);
	/* A truncated file: what was there, then the error with its offset. */
	struct shape sh = { .version = 1, .split_at = 1008 };
	struct pdb b;
	build_sample(&b, &sh);
	size_t cut = b.n - 2000; /* in the second buffer's trace */
	f = fopen(tmp("cut.data"), "wb");
	CHECK(f && fwrite(b.buf, 1, cut, f) == cut);
	if (f)
		fclose(f);
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl", tmp("cut.data"), tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 2);
	CHECK(strstr(err_text, "truncated") != NULL);
	long long off = named_offset(err_text);
	CHECK(off > 0 && (size_t)off <= cut);
	/* The first buffer was decoded. */
	CHECK(count_str(out_b, "\"type\":\"range\"") > 10);
	pdb_free(&b);
}

/* Memory does not grow with the file: 40 and 400 copies of the sample's
 * buffer decode in about the same peak. The peak is measured by
 * /usr/bin/time, a small process: a child forked from this test would
 * count the test's own memory too. */
static long decode_peak(const char *path, int jobs, const char *format)
{
	char cmd[4096];
	/* The sanitizer holds freed memory back (256 MiB by default):
	 * decoders made afresh per capture would look like growth. */
	snprintf(cmd, sizeof(cmd),
		 "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=1 /usr/bin/time -f %%M %s decode %s --symfs %s "
		 "--format %s --jobs %d 2>&1 >/dev/null", tool, path, tmp("root"), format, jobs);
	char text[256];
	if (cli_run_cmd(cmd, NULL, text, sizeof(text)) != 0)
		return -1;
	return strtol(text, NULL, 10);
}

static void test_memory_flat(void)
{
	if (access("/usr/bin/time", X_OK) != 0) {
		printf("test_perf_data: /usr/bin/time not installed: peak memory not measured\n");
		return;
	}
	long peak[2];
	int copies[2] = { 40, 400 };
	for (int k = 0; k < 2; k++) {
		struct pdb b;
		pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME, 1, 0);
		struct pdb_cpu cpus[2] = {
			{ PDB_MAGIC_ETM3, 0, ptm_cfg.etmcr, ptm_cfg.trace_id, ptm_cfg.etmccer, ptm_cfg.etmidr, 0 },
			{ PDB_MAGIC_ETM3, 1, etm_cfg.etmcr, etm_cfg.trace_id, etm_cfg.etmccer, etm_cfg.etmidr, 0 },
		};
		pdb_auxtrace_info(&b, 1, 0, cpus, 2);
		struct pdb_sid s = sid_of(-1, 1);
		pdb_comm(&b, PID, PID, "demo", 1, &s);
		pdb_mmap2(&b, PID, PID, 0x10000, 0x1000, 0, "/demo.elf", NULL, 0, &s);
		for (int i = 0; i < copies[k]; i++) {
			pdb_aux(&b, (uint64_t)i * trace_n, trace_n, 0, &s);
			pdb_auxtrace(&b, (uint64_t)i * trace_n, 0, PID, -1, trace, trace_n);
		}
		pdb_finish(&b);
		char name[32];
		snprintf(name, sizeof(name), "copies%d.data", copies[k]);
		CHECK_EQ(pdb_write(&b, tmp(name)), 0);
		pdb_free(&b);
	}
	/* Serially, and with the queue's decoders on two workers: flat. A
	 * worker's output waiting for the calling thread is bounded, not
	 * flat: up to 12 MiB each (jobs.c's OUT_BYTES) while a worker is
	 * ahead on a later buffer, which a longer run reaches further. */
	static const struct {
		int jobs;
		const char *format;
		long slack_kib;
	} runs[] = { { 1, "jsonl", 0 }, { 2, "none", 0 }, { 2, "jsonl", 2 * 12 * 1024 } };
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		for (int k = 0; k < 2; k++) {
			char name[32];
			snprintf(name, sizeof(name), "copies%d.data", copies[k]);
			peak[k] = decode_peak(tmp(name), runs[r].jobs, runs[r].format);
		}
		printf("test_perf_data: --jobs %d --format %s: peak resident %ld KiB for 40 buffers, %ld KiB for 400\n",
		       runs[r].jobs, runs[r].format, peak[0], peak[1]);
		CHECK(peak[0] > 0 && peak[1] > 0);
		CHECK(peak[1] < peak[0] + 2048 + runs[r].slack_kib);
	}
	/* One queue's 40 buffers: decoders of successive buffers on the
	 * workers at once (each reset for its next buffer), their records
	 * handed on in order. */
	const char *forms[] = {
		"decode %%s --symfs %s --format jsonl",
		"decode %%s --symfs %s",
		"decode %%s --symfs %s --format none",
		"profile %%s --symfs %s --elf %s/demo.elf",
	};
	char fmt[2048], root[1200], one_queue[1200];
	snprintf(root, sizeof(root), "%s", tmp("root"));
	snprintf(one_queue, sizeof(one_queue), "%s", tmp("copies40.data"));
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(fmt, sizeof(fmt), forms[i], root, root);
		same_with_jobs(fmt, one_queue);
	}
}


/* ---- Debian's perf on the same files ---------------------------------- */

/* One record of `perf report -D`: "CPU TIME 0xOFFSET [0xSIZE]:
 * PERF_RECORD_NAME details". */
struct perf_line {
	unsigned long long offset;
	long long cpu;
	unsigned long long time;
	char name[32];
	char rest[256];
	int used;
};

static size_t parse_perf_dump(const char *text, struct perf_line *lines, size_t cap)
{
	size_t n = 0;
	for (const char *p = text; *p && n < cap;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[512];
		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = 0;
			struct perf_line *l = &lines[n];
			unsigned long long cpu;
			int at = 0;
			if (sscanf(line, "%llu %llu 0x%llx [0x%*x]: PERF_RECORD_%31s%n", &cpu, &l->time, &l->offset, l->name,
				   &at) == 4) {
				l->cpu = cpu == 4294967295ull ? -1 : (long long)cpu;
				snprintf(l->rest, sizeof(l->rest), "%s", line + at);
				l->used = 0;
				n++;
			}
		}
		p = eol ? eol + 1 : p + len;
	}
	return n;
}

static unsigned long long field(const char *rest, const char *key)
{
	const char *p = strstr(rest, key);
	return p ? strtoull(p + strlen(key), NULL, 0) : ~0ull;
}

/* Our events of one file against perf's dump of it: every record perf
 * shows of the kinds csd_perf reads is an event at that offset with the
 * same fields, and the other way round. */
static void compare_with_perf_dump(const char *path, const char *dump)
{
	static struct perf_line lines[256];
	size_t n = parse_perf_dump(dump, lines, 256);
	CHECK(n >= 5);
	csd_perf *pd = NULL;
	CHECK_EQ(csd_perf_open(path, &pd, NULL, 0), 0);
	if (!pd)
		return;
	struct csd_perf_event ev = { .size = sizeof(ev) };
	size_t matched = 0, bad = 0;
	uint64_t piece_sum = 0, piece_record = 0;
	struct perf_line *piece_line = NULL;
	while (csd_perf_next(pd, &ev) == 0) {
		struct perf_line *l = NULL;
		for (size_t i = 0; i < n; i++)
			if (lines[i].offset == ev.offset)
				l = &lines[i];
		if (!l) {
			fprintf(stderr, "test_perf_data: %s: perf shows no record at 0x%llx (%s)\n", path,
				(unsigned long long)ev.offset, csd_perf_event_name((int)ev.type));
			bad++;
			continue;
		}
		const char *want = ev.type == CSD_PERF_AUX_DATA ? "AUXTRACE" : ev.type == CSD_PERF_AUX ? "AUX" :
				   ev.type == CSD_PERF_COMM ? "COMM" : ev.type == CSD_PERF_ITRACE_START ? "ITRACE_START" :
				   ev.type == CSD_PERF_MMAP ? (ev.record == 10 ? "MMAP2" : "MMAP") :
				   ev.type == CSD_PERF_SWITCH ? (ev.record == 15 ? "SWITCH_CPU_WIDE" : "SWITCH") : "?";
		int ok = strcmp(l->name, want) == 0;
		if (ev.type != CSD_PERF_AUX_DATA) {
			ok = ok && l->cpu == ev.cpu && (!(ev.flags & CSD_PERF_EVF_TIME) || l->time == ev.time);
			l->used = 1;
		}
		switch (ev.type) {
		case CSD_PERF_AUX_DATA:
			if (piece_line && piece_record != ev.offset) {
				uint64_t size = field(piece_line->rest, "size: ");
				ok = ok && piece_sum <= size && size - piece_sum < 8;
			}
			if (piece_record != ev.offset) {
				piece_sum = 0;
				ok = ok && field(l->rest, "offset: ") == ev.aux_offset;
			}
			piece_record = ev.offset;
			piece_line = l;
			piece_sum += ev.data_size;
			ok = ok && (long long)field(l->rest, "tid: ") == ev.tid && strstr(l->rest, ev.cpu == -1 ? "cpu: -1" : "cpu: ");
			l->used = 1;
			break;
		case CSD_PERF_AUX:
			ok = ok && field(l->rest, "offset: ") == ev.aux_offset && field(l->rest, "size: ") == ev.aux_size &&
			     field(l->rest, "flags: ") == ev.aux_flags;
			break;
		case CSD_PERF_COMM: {
			char want_text[128];
			snprintf(want_text, sizeof(want_text), "%s%s:%d/%d", ev.flags & CSD_PERF_EVF_EXEC ? "exec: " : "",
				 ev.comm, ev.pid, ev.tid);
			ok = ok && strstr(l->rest, want_text) != NULL;
			break;
		}
		case CSD_PERF_ITRACE_START:
			ok = ok && (long long)field(l->rest, "pid: ") == ev.pid && (long long)field(l->rest, "tid: ") == ev.tid;
			break;
		case CSD_PERF_MMAP: {
			char want_text[512];
			snprintf(want_text, sizeof(want_text), "%d/%d: [0x%llx(0x%llx) @ 0x%llx ", ev.pid, ev.tid,
				 (unsigned long long)ev.addr, (unsigned long long)ev.len, (unsigned long long)ev.pgoff);
			if (ev.pgoff == 0)
				snprintf(want_text, sizeof(want_text), "%d/%d: [0x%llx(0x%llx) @ 0 ", ev.pid, ev.tid,
					 (unsigned long long)ev.addr, (unsigned long long)ev.len);
			const char *fn = strrchr(l->rest, ' ');
			ok = ok && strstr(l->rest, want_text) != NULL && fn && strcmp(fn + 1, ev.filename) == 0;
			if (ev.flags & CSD_PERF_EVF_BUILD_ID) {
				char hex[48];
				for (unsigned i = 0; i < ev.build_id_size; i++)
					sprintf(hex + 2 * i, "%02x", ev.build_id[i]);
				ok = ok && strstr(l->rest, hex) != NULL;
			}
			break;
		}
		case CSD_PERF_SWITCH: {
			char want_text[64];
			snprintf(want_text, sizeof(want_text), "%d/%d", ev.next_prev_pid, ev.next_prev_tid);
			ok = ok && strstr(l->rest, ev.flags & CSD_PERF_EVF_OUT ? "OUT" : "IN") != NULL &&
			     (ev.record != 15 || strstr(l->rest, want_text) != NULL);
			break;
		}
		default:
			break;
		}
		if (!ok) {
			fprintf(stderr, "test_perf_data: %s: %s at 0x%llx differs from perf's: %s%s\n", path,
				csd_perf_event_name((int)ev.type), (unsigned long long)ev.offset, l->name, l->rest);
			bad++;
		}
		matched++;
	}
	if (piece_line) {
		uint64_t size = field(piece_line->rest, "size: ");
		CHECK(piece_sum <= size && size - piece_sum < 8);
	}
	static const char *const kinds[] = { "AUXTRACE", "AUX", "COMM", "ITRACE_START", "MMAP", "MMAP2", "SWITCH",
					     "SWITCH_CPU_WIDE" };
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (strcmp(lines[i].name, kinds[k]) == 0 && !lines[i].used) {
				fprintf(stderr, "test_perf_data: %s: perf's %s at 0x%llx is no event\n", path, lines[i].name,
					lines[i].offset);
				bad++;
			}
	CHECK_EQ(bad, 0);
	CHECK(matched >= 5);
	csd_perf_free(pd);
}

/* Branches csdec and perf find in the PTM's trace: where a range ends and
 * the next begins, when that is not the next instruction (perf does not
 * split a range at a branch not taken). Sorted "from to" lines. */
static char *csdec_branches(const char *ranges)
{
	size_t cap = strlen(ranges) / 4 + 64, k = 0;
	char *r = malloc(cap);
	long long last = -1;
	r[0] = 0;
	for (const char *p = ranges; *p;) {
		const char *eol = strchr(p, '\n');
		if (strncmp(p, "{\"type\":\"trace_on\"", 18) == 0)
			last = -1;
		if (strncmp(p, "{\"type\":\"range\"", 15) == 0) {
			long long a = strtoll(strstr(p, "\"addr\":\"") + 8, NULL, 16);
			if (last >= 0 && !(a > last && a - last <= 4) && k + 40 < cap)
				k += (size_t)snprintf(r + k, cap - k, "%llx %llx\n", last, a);
			last = strtoll(strstr(p, "\"last\":\"") + 8, NULL, 16);
		}
		p = eol ? eol + 1 : p + strlen(p);
	}
	return r;
}

static char *perf_branches(const char *script)
{
	size_t cap = strlen(script) + 64, k = 0;
	char *r = malloc(cap);
	r[0] = 0;
	for (const char *p = script; *p;) {
		const char *eol = strchr(p, '\n');
		unsigned long long from, to;
		if (sscanf(p, " %llx => %llx", &from, &to) == 2 && from && to && !(to > from && to - from <= 4) &&
		    k + 40 < cap)
			k += (size_t)snprintf(r + k, cap - k, "%llx %llx\n", from, to);
		p = eol ? eol + 1 : p + strlen(p);
	}
	return r;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t sort_lines(char *text, char ***out)
{
	size_t n = count_str(text, "\n"), k = 0;
	char **v = malloc((n + 1) * sizeof(*v));
	for (char *p = text; *p && k < n;) {
		char *eol = strchr(p, '\n');
		v[k++] = p;
		*eol = 0;
		p = eol + 1;
	}
	qsort(v, k, sizeof(*v), cmp_line);
	*out = v;
	return k;
}

static void test_with_perf(void)
{
	char cmd[4096];
	if (cli_run_cmd("perf version 2>/dev/null", NULL, out_b, 256) != 0 || strncmp(out_b, "perf version", 12) != 0) {
		printf("test_perf_data: perf is not installed: the files are not checked against it\n");
		return;
	}
	printf("test_perf_data: checking against %s", out_b);
	struct {
		const char *name;
		struct shape sh;
	} files[] = {
		{ "p-v1.data", { .version = 1, .table_bid = 1 } },
		{ "p-v0.data", { .version = 0 } },
		{ "p-mmapbid.data", { .version = 1, .mmap_bid = 1 } },
		{ "p-raw.data", { .version = 1, .per_cpu = 1, .switch_inside = 1 } },
		{ "p-sessions.data", { .version = 1, .sessions = 1 } },
		{ "p-split.data", { .version = 1, .split_at = 1000 } },
		{ "p-snap.data", { .version = 1, .snapshot = 1 } },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *path = write_sample(files[i].name, &files[i].sh);
		snprintf(cmd, sizeof(cmd), "HOME=%s timeout 120 perf report -D -i %s 2>/dev/null", tmpdir, path);
		int rc = cli_run_cmd(cmd, NULL, out_b, OUT_CAP);
		CHECK_EQ(rc, 0);
		compare_with_perf_dump(path, out_b);
	}
	/* The PTM decoded by both. */
	struct shape ptm = { .version = 1, .ptm_only = 1 };
	const char *path = write_sample("p-ptm.data", &ptm);
	snprintf(cmd, sizeof(cmd), "HOME=%s timeout 120 perf script --itrace=b -F ip,addr --symfs=%s -i %s 2>/dev/null", tmpdir,
		 tmp("root"), path);
	CHECK_EQ(cli_run_cmd(cmd, NULL, out_b, OUT_CAP), 0);
	char *pb = perf_branches(out_b);
	char args[2048];
	snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl", path, tmp("root"));
	CHECK_EQ(tool_run(out_b, args), 0);
	char *cb = csdec_branches(out_b);
	char **va, **vb;
	size_t na = sort_lines(pb, &va), nb = sort_lines(cb, &vb);
	printf("test_perf_data: PTM branches taken: perf %zu, csdec %zu\n", na, nb);
	CHECK(na > 100);
	CHECK_EQ(na, nb);
	size_t diff = 0;
	for (size_t i = 0; i < na && i < nb; i++)
		if (strcmp(va[i], vb[i]) != 0 && diff++ < 5)
			fprintf(stderr, "test_perf_data: branch %zu: perf %s, csdec %s\n", i, va[i], vb[i]);
	CHECK_EQ(diff, 0);
	free(va);
	free(vb);
	free(pb);
	free(cb);
}

/* ---- The round-trip matrix through perf.data -------------------------- */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* MMAP2 records for the executable PT_LOAD segments of a 32-bit ELF file,
 * as the kernel maps them (page-aligned). */
static int mmap_elf(struct pdb *b, const char *elf_path, const char *name, int32_t pid, const struct pdb_sid *s)
{
	size_t n;
	uint8_t *e = check_read_file(elf_path, &n);
	int maps = 0;
	if (e && n > 52 && memcmp(e, "\177ELF", 4) == 0 && e[4] == 1) {
		uint32_t phoff = rd32(e + 28);
		unsigned phnum = (unsigned)(e[44] | e[45] << 8);
		for (unsigned i = 0; i < phnum && phoff + 32 * (i + 1) <= n; i++) {
			const uint8_t *ph = e + phoff + 32 * i;
			if (rd32(ph) != 1 || !(rd32(ph + 24) & 1))
				continue;
			uint32_t off = rd32(ph + 4), vaddr = rd32(ph + 8), filesz = rd32(ph + 16);
			uint32_t addr = vaddr & ~0xFFFu;
			pdb_mmap2(b, pid, pid, addr, vaddr + filesz - addr, off & ~0xFFFu, name, NULL, 0, s);
			maps++;
		}
	}
	free(e);
	return maps;
}

/* A generated snapshot as perf.data: its one buffer, formatted per thread
 * or raw per CPU, the program mapped from its ELF file. */
static int snapshot_to_perf(const char *snap_dir, const char *prog_dir, const char *prog, const char *out)
{
	char err[256], elf[2048], name[512];
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(snap_dir, &snap, err, sizeof(err)) != 0 || csd_snapshot_num_buffers(snap) != 1) {
		csd_snapshot_free(snap);
		return -1;
	}
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, 0);
	size_t n;
	uint8_t *bytes = check_read_file(buf->path, &n);
	int raw = buf->frame_format == CSD_FRAME_RAW, port = buf->frame_format == CSD_FRAME_PORT;
	struct pdb_cpu cpus[8];
	int ncpus = 0;
	for (size_t i = 0; i < csd_snapshot_num_sources(snap) && ncpus < 8; i++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
		struct pdb_cpu c = { PDB_MAGIC_ETM3, ncpus, src->config.etmcr, src->config.trace_id, src->config.etmccer,
				     src->config.etmidr, 0 };
		cpus[ncpus++] = c;
	}
	csd_snapshot_free(snap);
	if (!bytes || port || !ncpus) {
		free(bytes);
		return -1;
	}
	/* The generator's context ID is 0x2a: the process is 42. */
	const int32_t pid = 42;
	struct pdb b;
	pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | PDB_SAMPLE_IDENTIFIER, 1, 0);
	pdb_auxtrace_info(&b, 1, 0, cpus, ncpus);
	struct pdb_sid s = { pid, pid, -1, 1, PDB_ID_DUMMY };
	pdb_comm(&b, pid, pid, prog, 1, &s);
	snprintf(elf, sizeof(elf), "%s/%s", prog_dir, prog);
	snprintf(name, sizeof(name), "/%s", prog);
	int maps = mmap_elf(&b, elf, name, pid, &s);
	if (raw) {
		/* Per CPU, with a switch during the buffer: the process
		 * comes from the trace's context ID. */
		struct pdb_sid c0 = { 1, 1, 0, 2, 0 };
		pdb_itrace_start(&b, 1, 1, &c0);
		pdb_switch(&b, 1, 1, pid, pid, &c0);
		pdb_aux(&b, 0, n, 0x100, &c0);
		pdb_auxtrace(&b, 0, 0, -1, 0, bytes, n);
	} else {
		struct pdb_sid t = { pid, pid, -1, 2, 0 };
		pdb_itrace_start(&b, pid, pid, &t);
		pdb_aux(&b, 0, n, 0, &t);
		pdb_auxtrace(&b, 0, 0, pid, -1, bytes, n);
	}
	pdb_finish(&b);
	int rc = maps > 0 ? pdb_write(&b, out) : -1;
	pdb_free(&b);
	free(bytes);
	return rc;
}

/* The tool's stdout into a file; its exit status. */
static int tool_to_file(const char *args, const char *file)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "timeout 300 %s %s >%s 2>%s", tool, args, file, tmp("stderr"));
	int st = system(cmd);
	cli_read_text(tmp("stderr"), err_text, sizeof(err_text));
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Both decodes, line by line: the perf.data one without "cpu", "pid",
 * "tid" and its offsets `shift` lower is the snapshot's. Every record of
 * source i (trace ID ids[i]) has cpu i and the pid and tid given (-1:
 * none), from its first instruction on. Returns the records compared. */
static size_t same_decode_files(const char *what, const char *snap_file, const char *perf_file, long long shift,
				const unsigned *ids, int nids, int pid, int tid)
{
	FILE *a = fopen(snap_file, "r"), *b = fopen(perf_file, "r");
	static char la[8192], lb[8192], nb[8192];
	size_t n = 0, diff = 0, bad_keys = 0;
	int seen_range[8] = { 0 };
	CHECK(a && b);
	while (a && b) {
		char *ga = fgets(la, sizeof(la), a), *gb = fgets(lb, sizeof(lb), b);
		if (!ga || !gb) {
			diff += !ga != !gb;
			break;
		}
		normalise(lb, strlen(lb), shift, nb, sizeof(nb));
		if (strcmp(la, nb) != 0 && diff++ == 0)
			fprintf(stderr, "test_perf_data: %s: record %zu differs:\n  %s  %s", what, n, la, lb);
		long long id = json_int(lb, "id");
		for (int i = 0; i < nids; i++) {
			if (id != (long long)ids[i])
				continue;
			seen_range[i] |= strncmp(lb, "{\"type\":\"range\"", 15) == 0;
			if (json_int(lb, "cpu") != i || (seen_range[i] && (json_int(lb, "pid") != pid || json_int(lb, "tid") != tid)))
				if (bad_keys++ == 0)
					fprintf(stderr, "test_perf_data: %s: want cpu %d pid %d tid %d: %s", what, i, pid, tid, lb);
		}
		n++;
	}
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	if (diff)
		fprintf(stderr, "test_perf_data: %s: %zu of %zu records differ\n", what, diff, n);
	CHECK_EQ(diff, 0);
	CHECK_EQ(bad_keys, 0);
	return n;
}

/* --jobs where the trace names the process: a generated PTM capture
 * (context ID 0x2a) given as two CPUs' raw trace, four rounds of a piece
 * each, where process 42 becomes known (a COMM record) in the second
 * round and its program is mapped in the third, each while CPU 0's piece
 * of the round may still be decoding: records decoded before either must
 * not see them, however far the workers are. */
static void test_tool_jobs_context(void)
{
	const char *gendir = getenv("CSD_GEN_SNAPSHOTS"), *progdir = getenv("CSD_PROGRAMS");
	if (!gendir || !progdir) {
		printf("test_perf_data: no generated snapshots (CSD_GEN_SNAPSHOTS): --jobs with context IDs not run\n");
		return;
	}
	const char *prog = "recurse-arm-O0";
	char snap[2048], elf[2048], name[512], err[256];
	snprintf(snap, sizeof(snap), "%s/%s--ptm-rs", gendir, prog);
	snprintf(elf, sizeof(elf), "%s/%s", progdir, prog);
	snprintf(name, sizeof(name), "/%s", prog);
	csd_snapshot *sn = NULL;
	CHECK_EQ(csd_snapshot_open(snap, &sn, err, sizeof(err)), 0);
	if (!sn)
		return;
	const struct csd_snapshot_source *src = csd_snapshot_source(sn, 0);
	struct pdb_cpu cpus[2];
	for (int c = 0; c < 2; c++) {
		struct pdb_cpu pc = { PDB_MAGIC_ETM3, c, src->config.etmcr, (uint32_t)(0x10 + 2 * c), src->config.etmccer,
				      src->config.etmidr, 0 };
		cpus[c] = pc;
	}
	size_t n;
	uint8_t *bytes = check_read_file(csd_snapshot_buffer(sn, 0)->path, &n);
	csd_snapshot_free(sn);
	CHECK(bytes != NULL);
	if (!bytes)
		return;
	n &= ~(size_t)7; /* (AUXTRACE buffers are padded to 8 bytes) */
	struct pdb b;
	pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | PDB_SAMPLE_IDENTIFIER, 1, 0);
	pdb_auxtrace_info(&b, 1, 0, cpus, 2);
	uint64_t t = 1, off[2] = { 0, 0 };
	for (int c = 0; c < 2; c++) {
		struct pdb_sid s = { 1, 1, c, t++, 0 };
		pdb_itrace_start(&b, 1, 1, &s);
		pdb_switch(&b, 1, 1, 5, 5, &s); /* the task switched: not known */
	}
	for (int round = 0; round < 4; round++) {
		for (int c = 0; c < 2; c++) {
			/* Between the two CPUs' pieces: CPU 0's is in flight. */
			struct pdb_sid d = { 42, 42, -1, t++, PDB_ID_DUMMY };
			if (round == 1 && c == 1)
				pdb_comm(&b, 42, 42, prog, 0, &d);
			if (round == 2 && c == 1)
				CHECK(mmap_elf(&b, elf, name, 42, &d) > 0);
			struct pdb_sid s = { 42, 42, c, t++, 0 };
			pdb_aux(&b, off[c], n, 0x100, &s);
			pdb_auxtrace(&b, off[c], (uint32_t)c, -1, c, bytes, n);
			off[c] += n;
		}
	}
	pdb_finish(&b);
	char path[1200];
	snprintf(path, sizeof(path), "%s", tmp("jobs-context.data"));
	CHECK_EQ(pdb_write(&b, path), 0);
	pdb_free(&b);
	free(bytes);
	char fmt[2400];
	snprintf(fmt, sizeof(fmt), "decode %%s --symfs %s --format jsonl", progdir);
	same_with_jobs(fmt, path);
	/* Both the unknown process and process 42 are in it. */
	char args[4096];
	snprintf(args, sizeof(args), fmt, path);
	tool_run(out_a, args);
	CHECK(count_str(out_a, "\"pid\":42,") > 100);
	CHECK(count_str(out_a, "\"cpu\":0,\"offset\"") > 0 && count_str(out_a, "\"cpu\":1,\"offset\"") > 0);
	snprintf(fmt, sizeof(fmt), "decode %%s --symfs %s", progdir);
	same_with_jobs(fmt, path);
}

/* Formatter frames collected in memory. */
struct frames_out {
	uint8_t *p;
	size_t n, cap;
};

static int frames_collect(void *ctx, const uint8_t *bytes, size_t n)
{
	struct frames_out *o = ctx;
	if (o->cap - o->n < n) {
		size_t cap = o->cap ? 2 * o->cap : 65536;
		while (cap - o->n < n)
			cap *= 2;
		uint8_t *q = realloc(o->p, cap);
		if (!q)
			return -1;
		o->p = q;
		o->cap = cap;
	}
	memcpy(o->p + o->n, bytes, n);
	o->n += n;
	return 0;
}

/* A generated raw PTM capture (timestamps, context ID 0x2a in every
 * I-sync) of trace ID `id`: its bytes and configuration. */
static uint8_t *held_source(const char *progdir, const char *prog, unsigned id, size_t *n,
			    struct csd_trace_config *cfg)
{
	char cmd[8192], dir[1200], err[256];
	snprintf(dir, sizeof(dir), "%s", tmp(id == 0x10 ? "held-10" : "held-11"));
	snprintf(cmd, sizeof(cmd),
		 "%s gen --qemu-log %s/%s.log --elf %s/%s --protocol ptm --timestamps --context-id-bytes 1 "
		 "--sync-period 256 --repeat 4 --trace-id 0x%x -o %s >/dev/null 2>&1",
		 tool, progdir, prog, progdir, prog, id, dir);
	CHECK_EQ(system(cmd), 0);
	csd_snapshot *sn = NULL;
	CHECK_EQ(csd_snapshot_open(dir, &sn, err, sizeof(err)), 0);
	if (!sn)
		return NULL;
	*cfg = csd_snapshot_source(sn, 0)->config;
	uint8_t *bytes = check_read_file(csd_snapshot_buffer(sn, 0)->path, n);
	csd_snapshot_free(sn);
	CHECK(bytes != NULL);
	return bytes;
}

/* Every second I-sync of raw PTM trace (a generated capture: context ID
 * 0x2a in every I-sync, one byte after header, address and information
 * byte) made to name context 0x2b; returns how many were. */
static unsigned second_context(const struct csd_trace_config *cfg, uint8_t *raw, size_t n)
{
	csd_ptm_pkt_decoder *pd = csd_ptm_pkt_new(cfg);
	struct csd_bytes by = { .data = raw, .size = n };
	CHECK_EQ(csd_ptm_pkt_feed(pd, &by), 0);
	csd_ptm_pkt_finish(pd);
	struct csd_packet p;
	unsigned isyncs = 0, patched = 0;
	while (csd_ptm_pkt_next(pd, &p) == 0) {
		if (p.type != CSD_PKT_ISYNC || isyncs++ % 2 == 0)
			continue;
		CHECK(p.offset + 6 < n && raw[p.offset + 6] == 0x2a);
		if (p.offset + 6 < n && raw[p.offset + 6] == 0x2a) {
			raw[p.offset + 6] = 0x2b;
			patched++;
		}
	}
	csd_ptm_pkt_free(pd);
	return patched;
}

/* One source decoding alone, cut into chunks (--jobs 2, chunks of a few
 * hundred bytes): a CPU's PTM trace (timestamps, a sync every 256 bytes)
 * in one AUX record, raw and in formatter frames, its I-syncs naming
 * processes 42 and 43 in turn. Each chunk prints its records with the
 * process and thread its own decode gives them; the output is the same
 * as with --jobs 1 only if the joins compare and carry that view
 * (process, thread, the listing's last thread line) as well as the
 * decoder's state. Chunks must join by a matching state here. */
static void chunked_context(const char *progdir, int timestamps)
{
	const char *prog = "bare_mix-arm-O0";
	char cmd[8192], dir[1200], err[256];
	snprintf(dir, sizeof(dir), "%s", tmp("chunked-10"));
	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s && %s gen --qemu-log %s/%s.log --elf %s/%s --protocol ptm %s --context-id-bytes 1 "
		 "--sync-period 256 --repeat 24 --trace-id 0x10 -o %s >/dev/null 2>&1",
		 dir, tool, progdir, prog, progdir, prog, timestamps ? "--timestamps" : "", dir);
	CHECK_EQ(system(cmd), 0);
	csd_snapshot *sn = NULL;
	CHECK_EQ(csd_snapshot_open(dir, &sn, err, sizeof(err)), 0);
	if (!sn)
		return;
	const struct csd_trace_config cfg = csd_snapshot_source(sn, 0)->config;
	size_t n;
	uint8_t *raw = check_read_file(csd_snapshot_buffer(sn, 0)->path, &n);
	csd_snapshot_free(sn);
	CHECK(raw != NULL);
	if (!raw)
		return;
	/* Every second I-sync names context 0x2b (process 43), the others
	 * 0x2a (42). */
	const unsigned patched = second_context(&cfg, raw, n);
	CHECK(patched >= 40);
	/* The same bytes in formatter frames. */
	struct frames_out fo = { NULL, 0, 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { .format = CSD_FRAME_ALIGNED, .sink = frames_collect, .ctx = &fo };
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, raw, n), 0);
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	const unsigned long joins0 = chunk_joins, matches0 = chunk_matches;
	for (int formatted = 0; formatted < 2; formatted++) {
		const uint8_t *data = formatted ? fo.p : raw;
		const size_t total = (formatted ? fo.n : n) & ~(size_t)15;
		struct pdb_cpu cpu = { PDB_MAGIC_ETM3, 0, cfg.etmcr, cfg.trace_id, cfg.etmccer, cfg.etmidr, 0 };
		struct pdb b;
		pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | PDB_SAMPLE_IDENTIFIER, 1, 0);
		pdb_auxtrace_info(&b, 1, 0, &cpu, 1);
		/* Both processes run the program. */
		char elf[1200], name[256];
		snprintf(elf, sizeof(elf), "%s/%s", progdir, prog);
		snprintf(name, sizeof(name), "/%s", prog);
		struct pdb_sid d = { 42, 42, -1, 1, PDB_ID_DUMMY };
		pdb_comm(&b, 42, 42, prog, 0, &d);
		CHECK(mmap_elf(&b, elf, name, 42, &d) > 0);
		d.time = 2;
		pdb_comm(&b, 43, 43, "other", 0, &d);
		CHECK(mmap_elf(&b, elf, name, 43, &d) > 0);
		struct pdb_sid s = { 1, 1, 0, 3, 0 };
		pdb_itrace_start(&b, 1, 1, &s);
		s.time = 4;
		pdb_aux(&b, 0, total, formatted ? 0 : 0x100, &s);
		pdb_auxtrace(&b, 0, 0, -1, 0, data, total);
		pdb_finish(&b);
		char path[1200];
		snprintf(path, sizeof(path), "%s", tmp("chunked-context.data"));
		CHECK_EQ(pdb_write(&b, path), 0);
		pdb_free(&b);
		static const char *const forms[] = {
			"decode %%s --symfs %s --format jsonl", "decode %%s --symfs %s",
			"decode %%s --symfs %s --format none", "decode %%s --symfs %s --format jsonl --insn",
			"decode %%s --symfs %s --order capture",
			"packets %%s", "coverage %%s --symfs %s --elf %s/%s --insns",
			"profile %%s --symfs %s --elf %s/%s", "timeline %%s --symfs %s --elf %s/%s -o -",
		};
		for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
			const unsigned long j0 = chunk_joins, m0 = chunk_matches;
			char fmt[2400];
			snprintf(fmt, sizeof(fmt), forms[i], progdir, progdir, prog);
			same_with_jobs(fmt, path);
			/* Printed records: most chunks join by a matching
			 * state, view included (one that is not kept up to
			 * date never matches). */
			if (strncmp(forms[i], "decode", 6) != 0 || strstr(forms[i], "none"))
				continue;
			if (chunk_matches - m0 < (chunk_joins - j0) / 2 || chunk_joins - j0 < 10)
				fprintf(stderr, "test_perf_data: %s: %lu chunks joined, %lu by a matching state\n",
					forms[i], chunk_joins - j0, chunk_matches - m0);
			CHECK(chunk_joins - j0 >= 10);
			CHECK(chunk_matches - m0 >= (chunk_joins - j0) / 2);
		}
		char args[4096];
		snprintf(args, sizeof(args), "decode %s --symfs %s", path, progdir);
		tool_run(out_a, args);
		CHECK(count_str(out_a, "not accessible") == 0);
		const size_t pid42 = count_str(out_a, "-- thread pid=42"), pid43 = count_str(out_a, "-- thread pid=43");
		printf("test_perf_data: one source in chunks (%s, %s): thread lines pid 42: %zu, pid 43: %zu\n",
		       formatted ? "formatted" : "raw", timestamps ? "timestamps" : "no timestamps", pid42, pid43);
		CHECK(pid42 >= 40 && pid43 >= 40);
		if (timestamps)
			jobs_corrupted(path, progdir, "CSDEC_TEST_CHUNK_BYTES=300");
	}
	printf("test_perf_data: one source in chunks, %s: %lu chunks joined, %lu by a matching state (%u I-syncs "
	       "changed)\n",
	       timestamps ? "timestamps" : "no timestamps", chunk_joins - joins0, chunk_matches - matches0, patched);
	CHECK(chunk_joins - joins0 >= 20);
	CHECK(chunk_matches - matches0 >= 10);
	free(fo.p);
	free(raw);
}

static void test_tool_chunked_context(void)
{
	const char *progdir = getenv("CSD_PROGRAMS");
	if (!progdir) {
		printf("test_perf_data: no generated programs (CSD_PROGRAMS): chunked perf.data source not run\n");
		return;
	}
	chunked_context(progdir, 1);
	chunked_context(progdir, 0);
}

/* Merged by timestamps, where the merge holds records past sideband: a
 * record's process is what the thread table knew when the record was
 * decoded. CPU 0's buffer holds the formatted trace of two PTM sources,
 * IDs 0x10 and 0x11, with timestamps; 0x10's I-syncs alternate context
 * IDs 0x2a and 0x2b (a context record at each), and its bytes run ahead
 * of 0x11's, so the merge holds 0x10's latest records for 0x11's
 * timestamps. The buffer comes in AUXTRACE buffers of one AUX record,
 * and process 43 (0x2b) becomes known between two of them. The records
 * naming process 43 are then the same in time order as in capture order
 * (where nothing is held), and the output the same with --jobs 1, 2 and
 * 3 (the workers print perf.data's records). */
static void test_tool_held_context(void)
{
	const char *progdir = getenv("CSD_PROGRAMS");
	if (!progdir) {
		printf("test_perf_data: no generated programs (CSD_PROGRAMS): held records' process not checked\n");
		return;
	}
	const char *prog = "bare_mix-arm-O0";
	struct csd_trace_config cfg[2];
	size_t n[2] = { 0, 0 };
	uint8_t *raw[2] = { held_source(progdir, prog, 0x10, &n[0], &cfg[0]),
			    held_source(progdir, prog, 0x11, &n[1], &cfg[1]) };
	if (!raw[0] || !raw[1]) {
		free(raw[0]);
		free(raw[1]);
		return;
	}
	/* Every second I-sync of 0x10 names context 0x2b. */
	const unsigned patched = second_context(&cfg[0], raw[0], n[0]);
	CHECK(patched >= 4);
	/* 0x10 a kilobyte ahead, then both in 64-byte turns. */
	struct frames_out fo = { NULL, 0, 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { .format = CSD_FRAME_ALIGNED, .sink = frames_collect, .ctx = &fo };
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	size_t at[2] = { 0, 0 };
	const size_t lead = n[0] < 1024 ? n[0] : 1024;
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, raw[0], lead), 0);
	at[0] = lead;
	while (at[0] < n[0] || at[1] < n[1]) {
		for (int c = 0; c < 2; c++) {
			size_t k = n[c] - at[c] < 64 ? n[c] - at[c] : 64;
			if (k)
				CHECK_EQ(csdi_frame_enc_data(&enc, (uint8_t)(0x10 + c), raw[c] + at[c], k), 0);
			at[c] += k;
		}
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	free(raw[0]);
	free(raw[1]);
	struct pdb_cpu cpus[2];
	for (int c = 0; c < 2; c++) {
		struct pdb_cpu pc = { PDB_MAGIC_ETM3, c, cfg[c].etmcr, cfg[c].trace_id, cfg[c].etmccer, cfg[c].etmidr, 0 };
		cpus[c] = pc;
	}
	/* The AUX record's data in eight AUXTRACE buffers; process 43 made
	 * known after the fourth. */
	const size_t total = fo.n & ~(size_t)15, piece = (total / 8) & ~(size_t)15;
	struct pdb b;
	pdb_init(&b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | PDB_SAMPLE_IDENTIFIER, 1, 0);
	pdb_auxtrace_info(&b, 1, 0, cpus, 2);
	struct pdb_sid d = { 42, 42, -1, 1, PDB_ID_DUMMY };
	pdb_comm(&b, 42, 42, prog, 0, &d);
	struct pdb_sid s = { 1, 1, 0, 2, 0 };
	pdb_itrace_start(&b, 1, 1, &s);
	pdb_switch(&b, 1, 1, 5, 5, &s); /* the task switched: not known */
	s.time = 3;
	pdb_aux(&b, 0, total, 0, &s);
	for (size_t k = 0, off = 0; off < total; k++) {
		const size_t len = k == 7 ? total - off : piece;
		pdb_auxtrace(&b, off, 0, -1, 0, fo.p + off, len);
		off += len;
		if (k == 3) {
			d.time = 4;
			pdb_comm(&b, 43, 43, "other", 0, &d);
		}
	}
	pdb_finish(&b);
	free(fo.p);
	char path[1200];
	snprintf(path, sizeof(path), "%s", tmp("held-context.data"));
	CHECK_EQ(pdb_write(&b, path), 0);
	pdb_free(&b);
	char fmt[2400], args[4096];
	snprintf(fmt, sizeof(fmt), "decode %%s --format jsonl");
	same_with_jobs(fmt, path);
	snprintf(args, sizeof(args), fmt, path);
	tool_run(out_a, args);
	const size_t time_order = count_str(out_a, "\"pid\":43,"), named_42 = count_str(out_a, "\"pid\":42,");
	snprintf(args, sizeof(args), "decode %s --format jsonl --order capture", path);
	tool_run(out_b, args);
	const size_t capture_order = count_str(out_b, "\"pid\":43,");
	printf("test_perf_data: held records: %zu name process 43 in time order, %zu in capture order (%zu name 42; %u I-syncs changed)\n",
	       time_order, capture_order, named_42, patched);
	CHECK(capture_order > 50 && named_42 > 50);
	CHECK_EQ(time_order, capture_order);
	same_with_jobs("decode %s", path);
	/* The workers printed the records. */
	setenv("CSDEC_TEST_JOBS_STATS", "1", 1);
	snprintf(args, sizeof(args), "decode %s --format jsonl --jobs 2", path);
	tool_run(out_b, args);
	unsigned long long printed = 0;
	const char *st = strstr(err_text, "workers printed ");
	CHECK(st && sscanf(st, "workers printed %llu", &printed) == 1);
	CHECK(printed > 1000);
	unsetenv("CSDEC_TEST_JOBS_STATS");
}

static void test_roundtrip_matrix(void)
{
	const char *gendir = getenv("CSD_GEN_SNAPSHOTS"), *progdir = getenv("CSD_PROGRAMS");
	DIR *d = gendir && progdir ? opendir(gendir) : NULL;
	if (!d) {
		printf("test_perf_data: no generated snapshots (CSD_GEN_SNAPSHOTS): the matrix is not run\n");
		return;
	}
	struct dirent *de;
	size_t files = 0, records = 0, seen = 0;
	/* Under the sanitizers (ten times slower) every fourth; the plain
	 * build runs them all. */
	size_t step = sanitized() ? 4 : 1;
	while ((de = readdir(d))) {
		const char *sep = strstr(de->d_name, "--");
		if (!sep || (strcmp(sep, "--ts") != 0 && strcmp(sep, "--ptm-rs") != 0) || seen++ % step)
			continue;
		char prog[256], snap[2048], args[4096];
		snprintf(prog, sizeof(prog), "%.*s", (int)(sep - de->d_name), de->d_name);
		snprintf(snap, sizeof(snap), "%s/%s", gendir, de->d_name);
		const char *path = tmp("matrix.data");
		CHECK_EQ(snapshot_to_perf(snap, progdir, prog, path), 0);
		snprintf(args, sizeof(args), "decode %s --format jsonl --order capture", snap);
		CHECK_EQ(tool_to_file(args, tmp("matrix-snap.jsonl")), 0);
		snprintf(args, sizeof(args), "decode %s --symfs %s --format jsonl --order capture", path, progdir);
		CHECK_EQ(tool_to_file(args, tmp("matrix-perf.jsonl")), 0);
		csd_perf *pd = NULL;
		CHECK_EQ(csd_perf_open(path, &pd, NULL, 0), 0);
		struct walk w;
		if (pd)
			walk_all(pd, &w);
		unsigned ids[8];
		int nids = 0;
		for (size_t i = 0; pd && i < csd_perf_num_cpus(pd) && nids < 8; i++)
			ids[nids++] = csd_perf_cpu(pd, i)->config.trace_id;
		csd_perf_free(pd);
		/* Per thread the thread is known; per CPU (raw) the process
		 * comes from the context ID, the thread does not. */
		int raw = strcmp(sep, "--ptm-rs") == 0;
		size_t k = same_decode_files(de->d_name, tmp("matrix-snap.jsonl"), tmp("matrix-perf.jsonl"),
					     pd ? (long long)w.piece[0].data_offset : 0, ids, nids, 42, raw ? -1 : 42);
		if (check_failures) {
			char keep[600];
			snprintf(keep, sizeof(keep), "%s.data", de->d_name);
			rename(path, tmp(keep));
		}
		CHECK(k > 5);
		records += k;
		files++;
	}
	closedir(d);
	printf("test_perf_data: %zu generated snapshots through perf.data, %zu records the same\n", files, records);
	CHECK(files * step >= 2 * 36);
}

int main(void)
{
	tool = tool_path();
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	CHECK(mkdtemp(tmpdir) != NULL);
	out_a = malloc(OUT_CAP);
	out_b = malloc(OUT_CAP);
	load_sample();
	char args[1024];
	snprintf(args, sizeof(args), "mkdir -p %s && cp %s/demo.elf %s/", tmp("root"), SAMPLE, tmp("root"));
	CHECK_EQ(system(args), 0);
	snprintf(args, sizeof(args), "decode %s --format jsonl --insn", SAMPLE);
	CHECK_EQ(tool_run(out_a, args), 0);
	char *snap_text = malloc(OUT_CAP);
	snprintf(args, sizeof(args), "decode %s", SAMPLE);
	CHECK_EQ(tool_run(snap_text, args), 0);

	test_library_versions();
	test_library_events();
	test_library_pieces();
	test_library_pending_limit();
	test_library_refusals();
	test_truncated();
	test_corrupted();
	test_huge_sizes();
	test_tool_versions(out_a);
	test_tool_lookups(out_a);
	test_library_lookups();
	test_tool_shapes(out_a, snap_text);
	test_tool_jobs();
	test_tool_refusals();
	test_memory_flat();
	test_with_perf();
	test_roundtrip_matrix();
	test_tool_jobs_context();
	test_tool_held_context();
	test_tool_chunked_context();
	/* The chunked runs of same_with_jobs: sources were cut, and chunks
	 * joined by a matching state (their text, process and thread as the
	 * serial decode's). */
	printf("test_perf_data: chunked --jobs 2: %lu chunks joined, %lu by a matching state\n", chunk_joins,
	       chunk_matches);
	CHECK(chunk_joins > 0);
	CHECK(chunk_matches > 0);

	free(snap_text);
	free(out_a);
	free(out_b);
	free(trace);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (getenv("CSD_TEST_KEEP"))
		printf("test_perf_data: files kept in %s\n", tmpdir);
	else
		CHECK_EQ(system(cmd), 0);
	return check_done("test_perf_data");
}
