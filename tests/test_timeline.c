/*
 * `csdec timeline`: the file is valid trace-event JSON whose spans are
 * balanced and nested on every track, in time order (tests/timeline_check.py
 * loads it with Python's json module and checks that), and on the test
 * program (prog_trace.h) with the instruction clock each function's spans,
 * less the spans nested in them, add up to the instructions `csdec profile`
 * gives it. Also: the same for traces cut at the end (mid-call) and at the
 * start (deep in the call stack, so returns come without their calls), the
 * --from/--to window, the event cap with its message, the run as perf.data
 * (tracks per CPU of the process, spans = the profile), and TC2.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "prog_trace.h"

static char out[1 << 21];

struct self_row {
	char name[64];
	double v;
};

struct checked {
	size_t nself;
	struct self_row self[256];
	long spans, instants, tracks, errors;
	long depth;             /* the most spans nested on one track */
	char clock[64];
};

/* Run the structural checker on path; 0 if it ran and found no error. */
static int check_file(const char *path, struct checked *c)
{
	char cmd[1024];
	memset(c, 0, sizeof(*c));
	c->errors = -1;
	snprintf(cmd, sizeof(cmd), "python3 tests/timeline_check.py %s", path);
	int rc = prog_run_cmd(cmd, out, sizeof(out));
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		struct self_row r;
		if (sscanf(l, "self %63s %lf", r.name, &r.v) == 2 && c->nself < 256)
			c->self[c->nself++] = r;
		sscanf(l, "clock %63s", c->clock);
		sscanf(l, "depth %ld", &c->depth);
		sscanf(l, "spans %ld instants %ld tracks %ld errors %ld", &c->spans, &c->instants, &c->tracks, &c->errors);
		if (strncmp(l, "error:", 6) == 0)
			fprintf(stderr, "%s: %.*s\n", path, (int)(strchr(l, '\n') ? strchr(l, '\n') - l : (long)strlen(l)), l);
	}
	return rc == 0 && c->errors == 0 ? 0 : -1;
}

static double self_of(const struct checked *c, const char *name)
{
	for (size_t i = 0; i < c->nself; i++)
		if (strcmp(c->self[i].name, name) == 0)
			return c->self[i].v;
	return -1;
}

static double self_total(const struct checked *c)
{
	double s = 0;
	for (size_t i = 0; i < c->nself; i++)
		s += c->self[i].v;
	return s;
}

/* A function row of `csdec profile`'s table (instructions, %, cycles, %,
 * calls, name): its instructions and name; 0 if the line is not one. */
static int profile_row(const char *line, unsigned long long *instr, char name[64])
{
	unsigned long long cycles, calls;
	double p1, p2;
	return sscanf(line, "%llu %lf%% %llu %lf%% %llu %63s", instr, &p1, &cycles, &p2, &calls, name) == 6;
}

static int file_has(const char *path, const char *text)
{
	FILE *f = fopen(path, "rb");
	static char buf[1 << 22];
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, text) != NULL;
}

/* The first span's start and the last end on any track, and the start of a named span. */
static int span_bounds(const char *path, double *lo, double *hi, const char *name, double *name_ts)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c \"import json,sys; e=[x for x in json.load(open('%s'))['traceEvents'] if x['ph']=='X']; "
		 "n=[x['ts'] for x in e if x['name']=='%s']; "
		 "print(min(x['ts'] for x in e), max(x['ts']+x['dur'] for x in e), min(n) if n else -1)\"",
		 path, name);
	if (prog_run_cmd(cmd, out, sizeof(out)) != 0)
		return -1;
	return sscanf(out, "%lf %lf %lf", lo, hi, name_ts) == 3 ? 0 : -1;
}

/* A copy of the trace file's bytes [from, to). */
static int cut_file(const char *src, const char *dst, long from, long to)
{
	FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
	int rc = -1;
	if (f && g && fseek(f, from, SEEK_SET) == 0) {
		long n = to - from;
		rc = 0;
		for (int c; n-- > 0 && (c = fgetc(f)) != EOF;)
			if (fputc(c, g) == EOF)
				rc = -1;
	}
	if (f)
		fclose(f);
	if (g && fclose(g) != 0)
		rc = -1;
	return rc;
}

static void perf_data(const char *tool, const struct prog_run *pr);

static void program(const char *tool)
{
	struct prog_run pr;
	struct checked c;
	char cmd[2048], json[256];
	if (prog_setup(&pr) < 0) {
		CHECK(!"program fixture");
		prog_cleanup(&pr);
		return;
	}
	snprintf(json, sizeof(json), "%s/t.json", pr.dir);

	/* Instruction clock: spans' self time per function = the profile's instructions. */
	snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock insn -o %s", tool,
		 pr.trace, pr.elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "instructions") == 0);
	CHECK_EQ((long long)self_total(&c), (long long)pr.n);
	struct checked tl = c;
	snprintf(cmd, sizeof(cmd), "%s profile --trace %s " PROG_DECODE_ARGS " --elf %s --top 0", tool, pr.trace, pr.elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	size_t rows = 0, bad = 0;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long instr;
		char name[64];
		if (!profile_row(l, &instr, name))
			continue;
		rows++;
		if (self_of(&tl, name) != (double)instr && bad++ < 5)
			fprintf(stderr, "timeline %s: %g instructions in its spans; profile %llu\n", name, self_of(&tl, name),
				instr);
	}
	printf("timeline (insn clock): %ld spans, %zu functions, %zu differ from the profile\n", tl.spans, rows, bad);
	CHECK(rows >= 8);
	CHECK_EQ(rows, tl.nself);
	CHECK_EQ(bad, 0);
	CHECK(self_of(&tl, "fib") > 0 && self_of(&tl, "main") > 0);

	/* The default clock: timestamps, interpolated by cycles. */
	snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s -o %s", tool, pr.trace, pr.elf,
		 json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "timestamps") == 0);
	/* (the exception takes cycles: a span here, an instant by instructions) */
	CHECK_EQ(c.spans, tl.spans + 1);
	CHECK(file_has(json, "\"name\":\"exception SVC\""));

	/* Cut at the end, mid-call: still balanced. At the start: the trace
	 * begins deep in calls, whose callers open at the track's start. */
	struct stat sb;
	CHECK_EQ(stat(pr.trace, &sb), 0);
	char part[256];
	snprintf(part, sizeof(part), "%s/part.bin", pr.dir);
	for (int k = 2; k < 8; k += 2) {
		long at = (long)sb.st_size * k / 8;
		CHECK_EQ(cut_file(pr.trace, part, 0, at), 0);
		snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock insn -o %s", tool,
			 part, pr.elf, json);
		int rc = prog_run_cmd(cmd, out, sizeof(out));
		CHECK(rc == 0 || rc == 1);
		CHECK_EQ(check_file(json, &c), 0);
		CHECK(c.spans > 0);
		CHECK_EQ(cut_file(pr.trace, part, at, sb.st_size), 0);
		snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock insn -o %s", tool,
			 part, pr.elf, json);
		rc = prog_run_cmd(cmd, out, sizeof(out));
		CHECK(rc == 0 || rc == 1);
		CHECK_EQ(check_file(json, &c), 0);
		double lo, hi, start_ts;
		if (c.spans > 0 && span_bounds(json, &lo, &hi, "_start", &start_ts) == 0) {
			/* _start's call is never in the trace: its frame is the
			 * track's first, open from the track's start to the end */
			CHECK(start_ts == lo);
		} else {
			CHECK(!"spans and _start in a trace cut at the start");
		}
	}

	/* A window by instruction index. */
	snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock insn --from 300 --to 1000 -o %s",
		 tool, pr.trace, pr.elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	double lo = 0, hi = 0, x;
	CHECK_EQ(span_bounds(json, &lo, &hi, "main", &x), 0);
	printf("timeline --from 300 --to 1000: spans from %g to %g, %g instructions\n", lo, hi, self_total(&c));
	CHECK(lo >= 300 && lo < 400);
	CHECK(hi >= 1000 && hi < 1100);
	CHECK(self_total(&c) >= 650 && self_total(&c) < 800);
	/* and by time (the instruction clock's time is the index) */
	snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock insn --from time:300 --to time:1000 -o %s",
		 tool, pr.trace, pr.elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK_EQ(span_bounds(json, &lo, &hi, "main", &x), 0);
	CHECK(lo >= 300 && lo < 400 && hi >= 1000 && hi < 1100);

	/* The event cap: at most N events, still balanced, and said. */
	snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --max-events 40 -o %s 2>&1", tool,
		 pr.trace, pr.elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "--max-events 40 reached") != NULL);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(c.spans + c.instants <= 40 && c.spans > 0);
	CHECK(file_has(json, "\"cut\":\"--max-events 40 reached"));
	/* Exactly N where the trace has more: the cap ends the spans open
	 * when one more event would pass it, not some events before. */
	static const unsigned caps[] = { 1, 2, 3, 7 };
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		snprintf(cmd, sizeof(cmd), "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --max-events %u -o %s 2>&1",
			 tool, pr.trace, pr.elf, caps[k], json);
		CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
		CHECK_EQ(check_file(json, &c), 0);
		printf("timeline --max-events %u: %ld spans, %ld instants\n", caps[k], c.spans, c.instants);
		CHECK_EQ(c.spans + c.instants, (long)caps[k]);
	}
	/* With a window, only what the window shows counts: the spans open
	 * before it are cut at its start, none of them earlier. */
	snprintf(cmd, sizeof(cmd),
		 "%s timeline --trace %s " PROG_DECODE_ARGS " --elf %s --clock instructions --from 300 --max-events 5 -o %s 2>&1",
		 tool, pr.trace, pr.elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK_EQ(c.spans + c.instants, 5);
	CHECK_EQ(span_bounds(json, &lo, &hi, "main", &x), 0);
	CHECK(lo >= 300);
	perf_data(tool, &pr);
	prog_cleanup(&pr);
}

/* The (pid, tid) pairs of the file's spans, "pid:tid ..." sorted. */
static int span_tracks(const char *path, char *buf, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c \"import json; e=json.load(open('%s'))['traceEvents']; "
		 "print(' '.join('%%d:%%d' %% k for k in sorted({(x['pid'], x['tid']) for x in e if x['ph']=='X'})))\"",
		 path);
	if (prog_run_cmd(cmd, out, sizeof(out)) != 0)
		return -1;
	size_t n = strcspn(out, "\n");
	if (n >= cap)
		return -1;
	memcpy(buf, out, n);
	buf[n] = 0;
	return 0;
}

/* The run as perf.data (csdec gen --perf-data: pid 200, one CPU per
 * source): a track per CPU in the process, named from the ELF, spans per
 * function adding up to the profile of the same file; and a version 1
 * file of small AUX buffers (a decoder per buffer). */
static void perf_data(const char *tool, const struct prog_run *pr)
{
	char cmd[2048], data[256], json[256], tracks[256];
	struct checked c;
	snprintf(data, sizeof(data), "%s/p.data", pr->dir);
	snprintf(json, sizeof(json), "%s/p.json", pr->dir);
	snprintf(cmd, sizeof(cmd), "%s gen --qemu-log %s/exec.log --elf %s --protocol ptm --protocol etm3 --timestamps "
		 "--perf-data %s 2>&1", tool, pr->dir, pr->elf, data);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);

	snprintf(cmd, sizeof(cmd), "%s timeline %s --elf %s -o %s", tool, data, pr->elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "timestamps") == 0);
	CHECK_EQ(c.tracks, 2);
	CHECK(self_of(&c, "fib") > 0 && self_of(&c, "main") > 0);
	CHECK_EQ(span_tracks(json, tracks, sizeof(tracks)), 0);
	CHECK(strcmp(tracks, "200:16 200:17") == 0);
	CHECK(file_has(json, "\"name\":\"pid 200\""));
	CHECK(file_has(json, "\"name\":\"cpu 0 (trace ID 0x10, PTM)\""));
	CHECK(file_has(json, "\"name\":\"cpu 1 (trace ID 0x11, ETMv3)\""));

	snprintf(cmd, sizeof(cmd), "%s timeline %s --elf %s --clock insn -o %s", tool, data, pr->elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "instructions") == 0);
	CHECK_EQ((long long)self_total(&c), 2 * (long long)pr->n);
	snprintf(cmd, sizeof(cmd), "%s profile %s --elf %s --top 0", tool, data, pr->elf);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	size_t rows = 0, bad = 0;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long instr;
		char name[64];
		if (!profile_row(l, &instr, name))
			continue;
		rows++;
		if (self_of(&c, name) != (double)instr && bad++ < 5)
			fprintf(stderr, "perf.data timeline %s: %g instructions in its spans; profile %llu\n", name,
				self_of(&c, name), instr);
	}
	printf("perf.data timeline (insn clock, 2 CPUs): %ld spans, %ld tracks, %zu functions, %zu differ from the profile\n",
	       c.spans, c.tracks, rows, bad);
	CHECK(rows >= 8);
	CHECK_EQ(rows, c.nself);
	CHECK_EQ(bad, 0);

	snprintf(cmd, sizeof(cmd), "%s gen --qemu-log %s/exec.log --elf %s --protocol etm3 --cycle-accurate "
		 "--perf-data %s --perf-data-version 1 --perf-aux-size 512 2>&1", tool, pr->dir, pr->elf, data);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "AUX buffers") != NULL);
	snprintf(cmd, sizeof(cmd), "%s timeline %s --elf %s -o %s", tool, data, pr->elf, json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "cycles") == 0);
	CHECK_EQ(c.tracks, 1);
	CHECK(c.spans > 0 && self_of(&c, "fib") > 0);
	CHECK_EQ(span_tracks(json, tracks, sizeof(tracks)), 0);
	CHECK(strcmp(tracks, "200:16") == 0);
	printf("perf.data timeline (version 1, small AUX buffers): %ld spans, %ld instants, clock %s\n", c.spans,
	       c.instants, c.clock);
}

static void tc2(const char *tool)
{
	char cmd[2048], json[] = "/tmp/csd_test_timeline_XXXXXX";
	struct checked c;
	int fd = mkstemp(json);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "%s timeline %s/traces/TC2 -o %s", tool, check_shared_dir(), json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	CHECK(strcmp(c.clock, "timestamps") == 0);
	CHECK_EQ(c.tracks, 4);
	CHECK(c.spans > 100 && c.instants > 100);
	CHECK(file_has(json, "\"name\":\"trace gap\""));
	snprintf(cmd, sizeof(cmd), "%s timeline %s/traces/TC2 --clock insn -o %s", tool, check_shared_dir(), json);
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	CHECK_EQ(check_file(json, &c), 0);
	snprintf(cmd, sizeof(cmd), "%s profile %s/traces/TC2", tool, check_shared_dir());
	CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
	unsigned long long total = 0;
	CHECK(sscanf(out, "%llu instructions", &total) == 1);
	printf("tc2 timeline: %ld spans, %ld instants, %ld tracks; %g instructions in spans (profile %llu)\n", c.spans,
	       c.instants, c.tracks, self_total(&c), total);
	CHECK_EQ((long long)self_total(&c), (long long)total);
	unlink(json);
}

/* Every round-trip program (tests/gen-snapshots.sh), traced by a PTM with
 * cycles and by an ETMv3: the instruction-clock spans of each function add
 * up to its instructions in `csdec profile`, every span balanced. */
static void roundtrip_programs(const char *tool)
{
	const char *snaps = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	CHECK(snaps != NULL && progs != NULL);
	if (!snaps || !progs)
		return;
	static const char *const configs[] = { "ptm-ca", "etm3" };
	char dirs[] = "/tmp/csd_timeline_rt_XXXXXX", cmd[4096], json[256], list[1024];
	CHECK(mkdtemp(dirs) != NULL);
	snprintf(json, sizeof(json), "%s/t.json", dirs);
	snprintf(list, sizeof(list), "ls %s", progs);
	static char names[1 << 16];
	CHECK_EQ(prog_run_cmd(list, names, sizeof(names)), 0);
	size_t runs = 0, functions = 0, bad = 0, outside = 0;
	for (char *l = names, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			break;
		*nl = 0;
		char prog[128];
		if (strchr(l, '.') || strlen(l) >= sizeof(prog))
			continue; /* the ELF files have no extension */
		memcpy(prog, l, strlen(l) + 1);
		for (size_t k = 0; k < 2; k++) {
			char snap[1024];
			struct stat sb;
			snprintf(snap, sizeof(snap), "%s/%s--%s", snaps, prog, configs[k]);
			if (stat(snap, &sb) != 0)
				continue;
			snprintf(cmd, sizeof(cmd), "%s timeline %s --elf %s/%s --clock insn -o %s", tool, snap, progs, prog,
				 json);
			CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
			struct checked c;
			CHECK_EQ(check_file(json, &c), 0);
			/* longjmp ends calls without their returns: they end
			 * where it lands, so the spans nest no deeper than the
			 * program's calls (test_profile, longjmp_stacks). */
			if (strncmp(prog, "longjmp", 7) == 0 && c.depth > 40) {
				fprintf(stderr, "%s: spans nested %ld deep\n", snap, c.depth);
				CHECK(c.depth <= 40);
			}
			snprintf(cmd, sizeof(cmd), "%s profile %s --elf %s/%s --top 0", tool, snap, progs, prog);
			CHECK_EQ(prog_run_cmd(cmd, out, sizeof(out)), 0);
			/* The profile counts an instruction to the symbol of its
			 * address; the timeline to the frame it ran in. They part
			 * only where a function branches (not calls) into code no
			 * symbol covers (glibc's strcmp has its exit before its
			 * symbol): the profile's "(unknown)" then holds exactly
			 * what the functions' spans hold beyond their rows. */
			size_t rows = 0, unknown_rows = 0;
			double over = 0, unknown = 0;
			int differs = 0;
			for (const char *r = out; r && *r; r = strchr(r, '\n') ? strchr(r, '\n') + 1 : NULL) {
				unsigned long long instr;
				char name[64];
				if (!profile_row(r, &instr, name))
					continue;
				rows++;
				double spans = self_of(&c, name);
				if (strcmp(name, "(unknown)") == 0) {
					unknown_rows++;
					unknown = (double)instr - (spans > 0 ? spans : 0);
					continue;
				}
				if (spans != (double)instr) {
					differs = 1;
					over += spans - (double)instr;
					if (spans < (double)instr && bad++ < 5)
						fprintf(stderr, "%s: %s: %g instructions in its spans; profile %llu\n", snap, name,
							spans, instr);
				}
			}
			CHECK(rows > 0);
			CHECK_EQ(rows - unknown_rows + (self_of(&c, "(unknown)") >= 0), c.nself);
			if (over != unknown && bad++ < 5)
				fprintf(stderr, "%s: spans hold %g instructions beyond the profile's rows, (unknown) %g\n", snap,
					over, unknown);
			outside += differs;
			functions += rows;
			runs++;
		}
	}
	printf("round-trip programs: %zu timelines, %zu functions, %zu differ from the profile; %zu timelines "
	       "with code outside any symbol counted to the function that branched there\n",
	       runs, functions, bad, outside);
	CHECK(runs >= 24);
	CHECK_EQ(bad, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dirs);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	const char *tool = prog_tool();
	if (system("python3 -c 'import json' 2>/dev/null") != 0) {
		printf("test_timeline: skipped (no python3 to read the JSON)\n");
		return 0;
	}
	program(tool);
	roundtrip_programs(tool);
	tc2(tool);
	return check_done("test_timeline");
}
