/*
 * The time-ordered merge of several sources' records (tools/merge.c,
 * compiled in, with a recording deliver callback), and `csdec decode` in
 * time order against capture order.
 *
 * The merge, for random inputs (several sources, timestamps per source
 * rising or sometimes going back, sources without timestamps or with a
 * late first one, long runs of one source far above the queue's cap, a
 * source whose timestamp stops, allocations that fail), against the
 * invariants of fuzz/merge_check.h (shared with fuzz/fuzz_merge.c): every
 * record once, each source's in its order, never more than
 * MERGE_QUEUE_MAX held, a note before any record that goes out while
 * another source could still give an earlier one, time order wherever no
 * note came, not a note per record. Cases made by hand pin which notes
 * come, naming whom, and when the next one may.
 *
 * The tool: the three-source PTM capture of issue 17 (0x10 stops at
 * timestamp 100, 0x11 has 10 atoms at 200, 0x12 20,000 at 300) gives each
 * source's records, in its order, as capture order does, with an order
 * note for 0x12.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* The rings' and texts' reallocator fails when told to, for the out-of-memory paths. */
static int alloc_fail;
static void *test_realloc(void *p, size_t n)
{
	return alloc_fail ? NULL : realloc(p, n);
}
#define MERGE_REALLOC test_realloc
#include "../tools/merge.c"

#include "frame_enc.h"

/* ---- The merge against a model of the sources ------------------------ */

#define MC_CHECK(cond) CHECK(cond)
#include "../fuzz/merge_check.h"

static unsigned case_failures;

static struct merge *case_begin_cfg(int nsrc, const uint8_t *ids, unsigned cfg_ts)
{
	case_failures = (unsigned)check_failures;
	return mc_begin_cfg(nsrc, ids, cfg_ts);
}

static struct merge *case_begin(int nsrc, const uint8_t *ids)
{
	return case_begin_cfg(nsrc, ids, 0);
}

static void push_ts(struct merge *m, int i, uint64_t ts)
{
	mc_push(m, i, &ts);
}

static void push_recs(struct merge *m, int i, unsigned n)
{
	while (n--)
		mc_push(m, i, NULL);
}

/* Flush and check; 1 if the case passed. */
static int case_end(struct merge *m, const char *what)
{
	mc_end(m);
	if ((unsigned)check_failures != case_failures) {
		fprintf(stderr, "merge case failed: %s\n", what);
		return 0;
	}
	return 1;
}

static unsigned total_notes(void)
{
	unsigned n = 0;
	for (int i = 0; i < mc.nsrc; i++)
		n += mc.notes[i];
	return n;
}

/* Sources that keep pace: all in time order, no note. */
static void case_in_step(void)
{
	const uint8_t ids[] = { 0x10, 0x11, 0x12, 0x13 };
	struct merge *m = case_begin(4, ids);
	uint64_t ts = 1000;
	for (int round = 0; round < 2000; round++)
		for (int i = 0; i < 4; i++) {
			push_ts(m, i, ts += (uint64_t)(round * 7 + i) % 13);
			push_recs(m, i, (unsigned)(round + i) % 40);
		}
	CHECK_EQ(total_notes(), 0);
	CHECK_EQ(mc.unsafe_out, 0);
	case_end(m, "in step");
}

/* Issue 17: 0x10 stops at 100, 0x11 has 10 records at 200, 0x12 20,000
 * at 300. 0x12's queue fills: 0x11's and 0x12's records go out ahead of
 * whatever 0x10 might still send, each source noted once. */
static void case_issue17(void)
{
	const uint8_t ids[] = { 0x10, 0x11, 0x12 };
	struct merge *m = case_begin(3, ids);
	push_recs(m, 0, 1); /* trace on, before any timestamp */
	push_ts(m, 0, 100);
	push_recs(m, 1, 1);
	push_ts(m, 1, 200);
	push_recs(m, 1, 10);
	push_recs(m, 2, 1);
	push_ts(m, 2, 300);
	push_recs(m, 2, 20000);
	CHECK_EQ(mc.notes[0], 0);
	CHECK_EQ(mc.notes[1], 1);
	CHECK_EQ(mc.notes[2], 1);
	CHECK(mc.last_reason[2] == reason_full);
	CHECK_EQ(mc.last_waiting[2], 0);
	CHECK_EQ(mc.last_waiting[1], 0);
	/* The queue full and one more pushed: exactly the excess is out. */
	CHECK_EQ(mc.pushed_n[2] - mc.delivered_n[2], MERGE_QUEUE_MAX);
	case_end(m, "issue 17");
}

/* A new note only after the order was known again. */
static void case_episodes(void)
{
	const uint8_t ids[] = { 0x10, 0x12 };
	struct merge *m = case_begin(2, ids);
	push_ts(m, 0, 100);
	push_ts(m, 1, 300);
	push_recs(m, 1, MERGE_QUEUE_MAX + 5000);
	CHECK_EQ(mc.notes[1], 1);
	push_ts(m, 1, 310); /* 0x10 still behind: the same episode */
	push_recs(m, 1, MERGE_QUEUE_MAX + 5000);
	CHECK_EQ(mc.notes[1], 1);
	push_ts(m, 0, 400); /* past everything delivered: order known again */
	push_recs(m, 0, 3);
	push_ts(m, 1, 500);
	push_recs(m, 1, MERGE_QUEUE_MAX + 10);
	CHECK_EQ(mc.notes[1], 2);
	CHECK_EQ(mc.notes[0], 0);
	case_end(m, "episodes");
}

/* Timestamps that go back, a first timestamp below what was delivered. */
static void case_back_and_late(void)
{
	const uint8_t ids[] = { 0x10, 0x11, 0x12 };
	struct merge *m = case_begin(3, ids);
	push_ts(m, 0, 500);
	push_recs(m, 0, 3);
	push_recs(m, 1, 3); /* no timestamp yet: out at once */
	push_ts(m, 1, 900);
	push_recs(m, 0, 2);
	push_ts(m, 0, 1000);
	push_recs(m, 0, 2); /* 0x10's records at 500 out, 0x11 at 900 */
	CHECK_EQ(total_notes(), 0);
	push_recs(m, 2, 2);
	push_ts(m, 2, 700); /* first timestamp, below 900 delivered */
	CHECK_EQ(mc.notes[2], 1);
	CHECK(mc.last_reason[2] == reason_late);
	CHECK_EQ(mc.last_waiting[2], -1);
	push_recs(m, 2, 2);
	push_ts(m, 0, 400); /* back */
	CHECK_EQ(mc.notes[0], 1);
	CHECK(mc.last_reason[0] == reason_back);
	push_recs(m, 0, 2);
	push_ts(m, 0, 300); /* back again, same episode */
	CHECK_EQ(mc.notes[0], 1);
	push_recs(m, 0, 2);
	case_end(m, "back and late");
}

/* No memory for the rings: nothing is held for long, nothing is lost. */
static void case_no_memory(void)
{
	const uint8_t ids[] = { 0x10, 0x11, 0x12 };
	struct merge *m = case_begin(3, ids);
	push_ts(m, 0, 100);
	push_recs(m, 0, 2);
	push_ts(m, 1, 200);
	push_recs(m, 1, 5); /* held: 0x10 behind */
	alloc_fail = 1;
	push_ts(m, 2, 300); /* 0x12 has no ring: out at once, after 0x11's */
	push_recs(m, 2, 5);
	CHECK_EQ(mc.notes[2], 1);
	CHECK(mc.last_reason[2] == reason_nomem);
	CHECK_EQ(mc.delivered_n[2], mc.pushed_n[2]);
	CHECK_EQ(mc.delivered_n[1], mc.pushed_n[1]);
	alloc_fail = 0;
	case_end(m, "no memory, no ring");

	/* The ring cannot grow past its first size. */
	m = case_begin(3, ids);
	push_ts(m, 0, 100);
	push_ts(m, 1, 200);
	push_recs(m, 1, 1);
	alloc_fail = 1;
	push_recs(m, 1, 5000);
	alloc_fail = 0;
	CHECK_EQ(mc.notes[1], 1);
	CHECK(mc.last_reason[1] == reason_nomem);
	CHECK(mc.pushed_n[1] - mc.delivered_n[1] < 5000);
	case_end(m, "no memory to grow");
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
static unsigned rnd_below(unsigned n)
{
	return n ? (unsigned)(rnd() % n) : 0;
}

/* Random sources and schedules. Returns the records pushed. */
static size_t case_random(unsigned n_case)
{
	uint8_t ids[MC_NSRC_MAX];
	int nsrc = 2 + (int)rnd_below(MC_NSRC_MAX - 1);
	for (int i = 0; i < nsrc; i++) {
		int fresh;
		do {
			ids[i] = (uint8_t)(1 + rnd_below(0x6f));
			fresh = 1;
			for (int k = 0; k < i; k++)
				fresh &= ids[k] != ids[i];
		} while (!fresh);
	}
	struct merge *m = case_begin_cfg(nsrc, ids, rnd_below(2) ? (unsigned)rnd_below(1u << nsrc) : 0);
	/* Per source: timestamps never, from the start or from later on
	 * (ts_from records); how often; how far they step; whether they
	 * may go back; when the source falls silent. */
	int ts_from[MC_NSRC_MAX], ts_every[MC_NSRC_MAX], back[MC_NSRC_MAX];
	unsigned step[MC_NSRC_MAX], silent_after[MC_NSRC_MAX], weight[MC_NSRC_MAX];
	uint64_t ts[MC_NSRC_MAX];
	unsigned count[MC_NSRC_MAX] = { 0 };
	int nonmono = rnd_below(4) == 0;
	/* Sometimes one slow clock for all: sources report equal
	 * timestamps, and their records equal stamps. */
	const int shared_clock = rnd_below(4) == 0;
	uint64_t clock = rnd_below(1000);
	for (int i = 0; i < nsrc; i++) {
		unsigned kind = rnd_below(5);
		ts_from[i] = kind == 0 ? -1 : kind == 1 ? (int)rnd_below(3000) : 0;
		ts_every[i] = 1 + (int)rnd_below(rnd_below(2) ? 50 : 3000);
		back[i] = nonmono && rnd_below(2);
		step[i] = 1 + rnd_below(rnd_below(2) ? 10 : 100000);
		silent_after[i] = rnd_below(3) == 0 ? rnd_below(2000) : UINT32_MAX;
		weight[i] = 1 + rnd_below(10);
		ts[i] = rnd_below(1000);
	}
	unsigned steps = rnd_below(4) == 0 ? 20000 : 1 + rnd_below(3000);
	int short_of_memory = rnd_below(8) == 0;
	for (unsigned t = 0; t < steps; t++) {
		if (short_of_memory && rnd_below(50) == 0)
			alloc_fail = !alloc_fail;
		/* Pick a source by weight; sometimes a long run of one. */
		unsigned wsum = 0, pick;
		for (int i = 0; i < nsrc; i++)
			wsum += weight[i];
		pick = rnd_below(wsum);
		int i = 0;
		while (pick >= weight[i])
			pick -= weight[i++];
		if (count[i] >= silent_after[i])
			continue;
		unsigned run = rnd_below(steps) < 2 ? MERGE_QUEUE_MAX / 2 + rnd_below(2 * MERGE_QUEUE_MAX) : 1;
		for (unsigned k = 0; k < run; k++, count[i]++) {
			if (ts_from[i] >= 0 && (int)count[i] >= ts_from[i] && rnd_below((unsigned)ts_every[i]) == 0) {
				if (shared_clock)
					ts[i] = clock += rnd_below(2);
				else if (back[i] && rnd_below(8) == 0)
					ts[i] -= rnd_below((unsigned)(ts[i] < 1000 ? ts[i] + 1 : 1000));
				else
					ts[i] += rnd_below(step[i]);
				push_ts(m, i, ts[i]);
			} else {
				mc_push(m, i, NULL);
			}
		}
	}
	alloc_fail = 0;
	size_t n = mc.n;
	char what[64];
	snprintf(what, sizeof(what), "random case %u", n_case);
	case_end(m, what);
	return n;
}

/* ---- The tool on a capture ------------------------------------------- */

static char tmpdir[] = "/tmp/csd_test_merge_XXXXXX";

/* The tool to test: the sanitizer build of it in the sanitizer build of
 * the test, else CSD_TOOL. */
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

static void write_file(const char *dir, const char *name, const void *data, size_t n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(data, 1, n, f), n);
		CHECK_EQ(fclose(f), 0);
	}
}

static void write_text(const char *dir, const char *name, const char *text)
{
	write_file(dir, name, text, strlen(text));
}

static int sink_file(void *ctx, const uint8_t *bytes, size_t n)
{
	return fwrite(bytes, 1, n, ctx) == n ? 0 : -1;
}

struct ptm_src {
	uint8_t id;
	uint64_t ts;
	unsigned atoms;
};

/* A-sync, I-sync at 0x8000 (A32), the timestamp, then E atoms: each one a
 * range record of the branch to itself there. */
static size_t ptm_bytes(const struct ptm_src *src, uint8_t *out, size_t cap)
{
	struct csd_trace_config c = { .size = sizeof(c), .protocol = CSD_PROTO_PTM, .etmcr = 1u << 28,
				      .etmidr = 0x411CF312, .etmccer = 0x34C01AC2, .trace_id = src->id };
	csd_ptm_encoder *enc = csd_ptm_enc_new(&c);
	CHECK(enc != NULL);
	if (!enc)
		return 0;
	struct csd_packet p;
	size_t n = 0;
	for (unsigned k = 0; k < 3 + src->atoms; k++) {
		memset(&p, 0, sizeof(p));
		if (k == 0) {
			p.type = CSD_PKT_ASYNC;
		} else if (k == 1) {
			p.type = CSD_PKT_ISYNC;
			p.addr = 0x8000;
			p.isa = CSD_ISA_ARM;
			p.reason = CSD_REASON_TRACE_ON;
			p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
		} else if (k == 2) {
			p.type = CSD_PKT_TIMESTAMP;
			p.timestamp = src->ts;
		} else {
			p.type = CSD_PKT_ATOM;
			p.atoms.num = 1;
			p.atoms.en = 1;
		}
		int len = csd_ptm_enc_packet(enc, &p, out + n, cap - n);
		CHECK(len > 0);
		if (len <= 0)
			break;
		n += (size_t)len;
	}
	csd_ptm_enc_free(enc);
	return n;
}

/* The sources' trace one after the other in one formatted buffer, each
 * with a core whose memory holds `b .` at 0x8000. */
static void make_capture(const char *dir, const struct ptm_src *src, int nsrc)
{
	char text[4096], name[64];
	size_t k = 0;
	mkdir(dir, 0700);
	const uint8_t code[] = { 0xfe, 0xff, 0xff, 0xea }; /* b . */
	write_file(dir, "mem.bin", code, sizeof(code));
	k = (size_t)snprintf(text, sizeof(text), "[snapshot]\nversion=1.0\n[device_list]\n");
	for (int i = 0; i < nsrc; i++)
		k += (size_t)snprintf(text + k, sizeof(text) - k, "device%d=cpu_%d.ini\ndevice%d=PTM_%d.ini\n", 2 * i, i,
				      2 * i + 1, i);
	snprintf(text + k, sizeof(text) - k, "[trace]\nmetadata=trace.ini\n");
	write_text(dir, "snapshot.ini", text);
	for (int i = 0; i < nsrc; i++) {
		snprintf(text, sizeof(text),
			 "[device]\nname=cpu_%d\nclass=core\ntype=Cortex-A15\n[regs]\nR15=0x0\n"
			 "[dump1]\nfile=mem.bin\naddress=0x00008000\nlength=0x4\n", i);
		snprintf(name, sizeof(name), "cpu_%d.ini", i);
		write_text(dir, name, text);
		snprintf(text, sizeof(text),
			 "[device]\nname=PTM_%d\nclass=trace_source\ntype=PTM1.1\n[regs]\nETMCR(0x000)=0x10000000\n"
			 "ETMIDR(0x079)=0x411CF312\nETMCCER(0x07A)=0x34C01AC2\nETMTRACEIDR(0x080)=0x%08X\n", i, src[i].id);
		snprintf(name, sizeof(name), "PTM_%d.ini", i);
		write_text(dir, name, text);
	}
	k = (size_t)snprintf(text, sizeof(text),
			     "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=coresight\n"
			     "[source_buffers]\n");
	for (int i = 0; i < nsrc; i++)
		k += (size_t)snprintf(text + k, sizeof(text) - k, "PTM_%d=ETB_0\n", i);
	k += (size_t)snprintf(text + k, sizeof(text) - k, "[core_trace_sources]\n");
	for (int i = 0; i < nsrc; i++)
		k += (size_t)snprintf(text + k, sizeof(text) - k, "cpu_%d=PTM_%d\n", i, i);
	write_text(dir, "trace.ini", text);

	char path[1024];
	snprintf(path, sizeof(path), "%s/trace.bin", dir);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	struct csdi_frame_enc fe;
	struct csdi_frame_enc_config fc = { .format = CSD_FRAME_ALIGNED, .id_every = 8, .sink = sink_file, .ctx = f };
	CHECK_EQ(csdi_frame_enc_init(&fe, &fc), 0);
	size_t cap = 64 * 1024;
	uint8_t *buf = malloc(cap);
	CHECK(buf != NULL);
	for (int i = 0; buf && i < nsrc; i++) {
		size_t n = ptm_bytes(&src[i], buf, cap);
		CHECK_EQ(csdi_frame_enc_data(&fe, src[i].id, buf, n), 0);
	}
	CHECK_EQ(csdi_frame_enc_flush(&fe), 0);
	free(buf);
	CHECK_EQ(fclose(f), 0);
}

/* The output of a command: its lines (malloc'ed, in one buffer), *n. */
struct lines {
	char *buf;
	char **line;
	size_t n;
	int status;
};

static struct lines run_lines(const char *cmd)
{
	struct lines l = { NULL, NULL, 0, -1 };
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return l;
	size_t cap = 1 << 20, len = 0, got;
	l.buf = malloc(cap + 1);
	while (l.buf && (got = fread(l.buf + len, 1, cap - len, p)) > 0) {
		len += got;
		if (len == cap) {
			char *nb = realloc(l.buf, 2 * cap + 1);
			if (!nb)
				abort();
			l.buf = nb;
			cap *= 2;
		}
	}
	int st = pclose(p);
	l.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (!l.buf)
		return l;
	l.buf[len] = 0;
	size_t nl = 0;
	for (size_t k = 0; k < len; k++)
		nl += l.buf[k] == '\n';
	l.line = malloc((nl + 1) * sizeof(*l.line));
	if (!l.line)
		abort();
	for (char *s = l.buf, *e; *s; s = e + 1) {
		e = strchr(s, '\n');
		if (!e)
			break;
		*e = 0;
		l.line[l.n++] = s;
	}
	return l;
}

static void lines_free(struct lines *l)
{
	free(l->buf);
	free(l->line);
}

/* The "id" of a JSON line, -1 if none. */
static int json_id(const char *line)
{
	const char *k = strstr(line, "\"id\":");
	return k ? atoi(k + 5) : -1;
}

static int is_order_note(const char *line)
{
	return strncmp(line, "{\"type\":\"order\",", 16) == 0;
}

static void check_tool(void)
{
	const char *tool = tool_path();
	CHECK(tool != NULL);
	if (!tool)
		return;
	CHECK(mkdtemp(tmpdir) != NULL);
	char dir[600], cmd[2048];
	snprintf(dir, sizeof(dir), "%s/issue17", tmpdir);
	const struct ptm_src src[] = { { 0x10, 100, 0 }, { 0x11, 200, 10 }, { 0x12, 300, 20000 } };
	make_capture(dir, src, 3);

	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl", tool, dir);
	struct lines tl = run_lines(cmd);
	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl --order capture", tool, dir);
	struct lines cl = run_lines(cmd);
	CHECK_EQ(tl.status, 0);
	CHECK_EQ(cl.status, 0);
	/* Each source's records, in its order, in both orders; every atom
	 * of 0x12 one range record. */
	for (int s = 0; s < 3; s++) {
		size_t a = 0, b = 0, ranges = 0, pairs = 0, same = 0;
		for (;;) {
			while (a < tl.n && (json_id(tl.line[a]) != src[s].id || is_order_note(tl.line[a])))
				a++;
			while (b < cl.n && json_id(cl.line[b]) != src[s].id)
				b++;
			if (a == tl.n || b == cl.n)
				break;
			pairs++;
			same += strcmp(tl.line[a], cl.line[b]) == 0;
			ranges += strncmp(tl.line[a], "{\"type\":\"range\",", 16) == 0;
			a++;
			b++;
		}
		CHECK_EQ(same, pairs);
		CHECK_EQ(a, tl.n); /* neither has more */
		CHECK_EQ(b, cl.n);
		CHECK_EQ(ranges, src[s].atoms);
	}
	/* The order notes: 0x12 (its queue full) and 0x11 (out ahead of
	 * what 0x10 might still send), once each; none in capture order. */
	size_t notes = 0;
	for (size_t k = 0; k < tl.n; k++)
		if (is_order_note(tl.line[k])) {
			notes++;
			CHECK(json_id(tl.line[k]) == 0x11 || json_id(tl.line[k]) == 0x12);
			CHECK(strstr(tl.line[k], "\"reason\":\"queue full: records delivered before the time order was "
						 "known\",\"waiting\":16}") != NULL);
		}
	CHECK_EQ(notes, 2);
	for (size_t k = 0; k < cl.n; k++)
		CHECK(!is_order_note(cl.line[k]));
	CHECK(tl.n == cl.n + notes);
	lines_free(&tl);
	lines_free(&cl);

	/* The text listing says it once per source, naming the laggard. */
	snprintf(cmd, sizeof(cmd), "%s decode %s | grep -e '-- order'", tool, dir);
	tl = run_lines(cmd);
	CHECK_EQ(tl.n, 2);
	CHECK(tl.n == 2 && strcmp(tl.line[1], "0x12  -- order: queue full: records delivered before the time order "
					      "was known (0x10's timestamps lag behind)") == 0);
	lines_free(&tl);

	/* The shipped sample: the PTM's first timestamp comes after the
	 * ETM's first ones in the capture. Set up to give timestamps, it
	 * holds the ETM's records back from its first record on, so the
	 * output is in time order without a note. */
	const char *src_dir = getenv("CSD_SRCDIR");
	CHECK(src_dir != NULL);
	snprintf(cmd, sizeof(cmd), "%s decode %s/examples/sample --format jsonl", tool, src_dir ? src_dir : ".");
	tl = run_lines(cmd);
	CHECK_EQ(tl.status, 0);
	CHECK(tl.n > 1000);
	uint64_t last_ts[MAX_IDS] = { 0 }, prev = 0;
	int seen[MAX_IDS] = { 0 };
	size_t backwards = 0;
	for (size_t k = 0; k < tl.n; k++) {
		CHECK(!is_order_note(tl.line[k]));
		int id = json_id(tl.line[k]);
		if (id < 0 || id >= MAX_IDS)
			continue;
		const char *ts = strstr(tl.line[k], "\"type\":\"timestamp\"") ? strstr(tl.line[k], "\"timestamp\":") : NULL;
		if (ts) {
			last_ts[id] = strtoull(ts + 12, NULL, 0);
			seen[id] = 1;
		}
		if (!seen[id])
			continue;
		backwards += last_ts[id] < prev;
		if (last_ts[id] > prev)
			prev = last_ts[id];
	}
	CHECK_EQ(backwards, 0);
	lines_free(&tl);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	case_in_step();
	case_issue17();
	case_episodes();
	case_back_and_late();
	case_no_memory();
	memset(mc_notes_by_reason, 0, sizeof(mc_notes_by_reason));
	mc_unsafe_total = 0;
	rng_state = 0x9E3779B97F4A7C15u;
	size_t records = 0;
	unsigned passed = 0, cases = 400;
	for (unsigned c = 0; c < cases; c++) {
		unsigned before = (unsigned)check_failures;
		records += case_random(c);
		passed += (unsigned)check_failures == before;
	}
	printf("test_merge: %u of %u random cases passed, %zu records, %lu out ahead of a lagging source; notes: "
	       "%lu queue full, %lu out of memory, %lu timestamp back, %lu late first timestamp\n",
	       passed, cases, records, mc_unsafe_total, mc_notes_by_reason[0], mc_notes_by_reason[1],
	       mc_notes_by_reason[2], mc_notes_by_reason[3]);
	/* The random inputs reach every way out of order. */
	for (int k = 0; k < 4; k++)
		CHECK(mc_notes_by_reason[k] > 0);
	check_tool();
	return check_done("test_merge");
}
