/*
 * bench_run.c - the driver of `make bench`: runs csdec's and OpenCSD's
 * harnesses (and the csdec tool) on each input, alternating them round by
 * round in child processes, and prints the table of BENCHMARKS.md.
 *
 *   bench_run [--rounds N] [--bin DIR] [--tool CSDEC] [--md FILE] [--hostile NAME=DIR]
 *             [--whole NAME=DIR]... [--ocsd-version V] [--lister TRC_PKT_LISTER] [--no-thp]
 *             NAME=SNAPSHOT_DIR...
 *   bench_run --mem-check LIMIT_MB [--bin DIR] NAME=SNAPSHOT_DIR
 *   bench_run --probe N
 *
 * Per input and round, in this order: csdec flow, OpenCSD flow, csdec
 * packets, OpenCSD packets, csdec flow-insn, `csdec decode DIR --insn
 * --format jsonl > /dev/null`. Throughput is trace bytes (and
 * instructions) over the median CPU time of the rounds; the harnesses time
 * their decode loop, the tool run is its whole user + system time. The
 * ratio to OpenCSD is the median of the rounds' own ratios (each csdec run
 * beside the OpenCSD run right after it, so that the machine's slow spells,
 * which on a shared VM move both by up to 15 %, mostly cancel), with the
 * rounds' lowest and highest beside it. A csdec flow or packets run (and a
 * hostile one) decodes its input over as many passes as make it last about
 * a second (passes_for_span), as OpenCSD's runs do in one pass. Peak memory
 * is each child's ru_maxrss (wait4), the largest over the rounds, less the
 * program image the child reports holding. After the tables of the inputs,
 * the host probe taken before each round beside its ratios, and each
 * round's four loops in cycles a byte at the clock that probe measured.
 *
 * --hostile: an input that is trace made to be slow to decode (bench_hostile.c:
 * every packet a walk through 16 MiB without a waypoint), csdec's flow
 * decoding only, run in every round right after each input's csdec flow
 * run; a second table gives its MB/s (median of all its runs) and, per
 * input, the median of the rounds' ratios of its MB/s to that input's flow
 * MB/s (paired like the OpenCSD ratio; the target: at least 0.1, a tenth of
 * normal trace's speed), with their range.
 *
 * --whole: an input (repeatable) for whole processes as users run them:
 * `csdec decode DIR --format none` against OpenCSD's flow decode from
 * process start to end (ocsd_bench flow, its user + system time, which
 * includes loading the library, the snapshot and the dumps), alternating
 * round by round; a third table gives both CPU times (medians) and the
 * median of the rounds' ratios. --ocsd-version names the library's
 * version in it. --lister adds OpenCSD's own tool to that table, in the
 * same rounds: `trc_pkt_lister -ss_dir DIR -decode_only -logfilename
 * /dev/null` (it formats every element it decodes; the file option keeps
 * it off the terminal).
 *
 * --no-thp runs every child without transparent huge pages
 * (PR_SET_THP_DISABLE, inherited by the children), to tell on a host
 * whether csdec's speed depends on its tables' huge pages; the tables say
 * so in a line above them.
 *
 * --mem-check runs csdec's flow and packet decoding and `csdec decode
 * --format none` once each and fails (exit 1) if peak RSS beyond the image
 * exceeds LIMIT_MB in any of them.
 */
/* wait4(), which reports the rusage of one child */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <spawn.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_ROUNDS 99
#define MAX_INPUTS 16

struct run {
	double seconds;        /* the harness's own timing, or CPU time of the whole tool run */
	double process_seconds; /* CPU time (user + system) of the whole child process */
	uint64_t bytes, insns, items, errors, image_bytes;
	uint64_t huge_kb;      /* the harness's anonymous memory in huge pages after its decode loop */
	long maxrss_kb;
};

/* One kind of measurement on one input, over the rounds. */
struct series {
	struct run r[MAX_ROUNDS];
	int n;
};

enum { S_CSDEC_FLOW, S_OCSD_FLOW, S_CSDEC_PKT, S_OCSD_PKT, S_CSDEC_INSN, S_TOOL_JSONL, S_COUNT };

static const char *bin_dir = "build/bench";
static const char *tool = "build/csdec";

static uint64_t field(const char *line, const char *key)
{
	const char *p = strstr(line, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Run argv in a child; with `parse` its stdout is read for the RESULT line,
 * otherwise it goes to /dev/null. Exits on failure. The child is started
 * with posix_spawn, which does not copy this process's address space: a
 * fork would charge the child for page-table copies and copy-on-write
 * faults of bench_run's own memory before the exec, which are not the
 * measured program's (on a virtual machine, a few milliseconds). */
static struct run run_child(char *const argv[], int parse)
{
	struct run r;
	int fds[2];
	memset(&r, 0, sizeof(r));
	if (pipe(fds) < 0) {
		perror("pipe");
		exit(2);
	}
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0 ||
	    (parse ? posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO)
		   : posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)) != 0 ||
	    posix_spawn_file_actions_addclose(&fa, fds[0]) != 0 ||
	    posix_spawn_file_actions_addclose(&fa, fds[1]) != 0) {
		fprintf(stderr, "bench_run: cannot set up a child\n");
		exit(2);
	}
	pid_t pid;
	int err = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err != 0) {
		fprintf(stderr, "bench_run: cannot run %s: %s\n", argv[0], strerror(err));
		exit(2);
	}
	close(fds[1]);
	char buf[4096];
	size_t len = 0;
	ssize_t got;
	while ((got = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)got;
		if (len == sizeof(buf) - 1)
			len = 0; /* only the last line matters; keep reading */
	}
	buf[len] = 0;
	close(fds[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		exit(2);
	}
	/* csdec exits 1 when the trace had errors; that is a result, not a failure. */
	if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && !(WEXITSTATUS(status) == 1 && !parse))) {
		fprintf(stderr, "bench_run: %s %s failed (status 0x%x)\n", argv[0], argv[1], status);
		exit(2);
	}
	r.maxrss_kb = ru.ru_maxrss;
	r.process_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
			    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	if (!parse) {
		r.seconds = r.process_seconds;
		return r;
	}
	const char *line = strstr(buf, "RESULT ");
	if (!line) {
		fprintf(stderr, "bench_run: no RESULT line from %s %s\n", argv[0], argv[1]);
		exit(2);
	}
	r.bytes = field(line, " bytes=");
	r.insns = field(line, " insns=");
	r.items = field(line, " items=");
	r.errors = field(line, " errors=");
	r.image_bytes = field(line, " image_bytes=");
	r.huge_kb = field(line, " huge_kb=");
	const char *s = strstr(line, " seconds=");
	r.seconds = s ? strtod(s + 9, NULL) : 0;
	return r;
}

static struct run run_harness(const char *name, const char *mode, const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", bin_dir, name);
	char *argv[] = { path, (char *)mode, (char *)dir, NULL };
	return run_child(argv, 1);
}

/* csdec_bench decoding `passes` times over, reporting one pass. */
static struct run run_csdec_passes(const char *mode, const char *dir, int passes)
{
	char path[4096], np[16];
	snprintf(path, sizeof(path), "%s/csdec_bench", bin_dir);
	snprintf(np, sizeof(np), "%d", passes);
	char *argv[] = { path, (char *)mode, (char *)dir, np, NULL };
	return run_child(argv, 1);
}

/* How many passes make a csdec run last CSDEC_SPAN_SECONDS, from one pass
 * run for it (not counted). The OpenCSD runs last one to four seconds, so
 * that their time is an average over the host's slow and fast spells; a
 * single csdec pass of a tenth of that caught one spell, and a round's
 * ratio went from 13x to 24x on the same input (BENCHMARKS.md, History). */
#define CSDEC_SPAN_SECONDS 1.0
static int passes_for_span(const char *mode, const char *dir)
{
	const struct run r = run_harness("csdec_bench", mode, dir);
	if (r.seconds <= 0)
		return 1;
	const double n = CSDEC_SPAN_SECONDS / r.seconds + 0.5;
	return n < 1 ? 1 : n > 100 ? 100 : (int)n;
}

static struct run run_tool_jsonl(const char *dir)
{
	char *argv[] = { (char *)tool, "decode", (char *)dir, "--insn", "--format", "jsonl", NULL };
	return run_child(argv, 0);
}

static struct run run_tool_none(const char *dir)
{
	char *argv[] = { (char *)tool, "decode", (char *)dir, "--format", "none", NULL };
	return run_child(argv, 0);
}

static struct run run_lister(const char *lister, const char *dir)
{
	char *argv[] = { (char *)lister, "-ss_dir", (char *)dir, "-decode_only", "-logfilename", "/dev/null", NULL };
	return run_child(argv, 0);
}

/*
 * Host probe: how much of the core's issue width this process gets. On a
 * shared host another thread can run on the same core (SMT), and it takes
 * issue slots, not clock: a chain of dependent operations (latency-bound)
 * keeps its speed, independent operations (throughput-bound) lose up to
 * half. csdec's loops run several instructions per cycle and lose with the
 * second; OpenCSD's, bound by loads and branches, less (BENCHMARKS.md,
 * "History"). The probe times both kinds in this process's CPU time;
 * probe_width() is their ratio, which falls as the core's other thread
 * takes more (compare runs by it, not by its absolute value). It also
 * times a chain of dependent adds, one a cycle on any core: the clock the
 * process ran at (*ghz; not timed when NULL). Hosts of one machine kind differ in
 * it, and csdec and OpenCSD take a lower clock differently (BENCHMARKS.md,
 * "History").
 */
#define PROBE_ITERS 4000000u
static double thread_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double probe_width(double *ghz)
{
	uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, x = 1;
	double t0 = thread_seconds();
	for (unsigned i = 0; i < PROBE_ITERS; i++) {
		/* Six independent adds per iteration (the empty asm keeps
		 * each one, and the compiler from merging or vectorising;
		 * few enough that all stay in registers). */
		a += 1, b += 3, c += 5, d += 7, e += 9, f += 11;
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
	}
	double t1 = thread_seconds();
	for (unsigned i = 0; i < PROBE_ITERS; i++) {
		x = x * 3 + 1;  /* each step waits for the one before */
		__asm__ volatile("" : "+r"(x));
	}
	double t2 = thread_seconds();
	uint64_t y = 0;
	for (unsigned i = 0; ghz && i < PROBE_ITERS; i++) {
		/* Four adds, each waiting for the one before (the loop's own
		 * count runs beside them). */
		y += 1;
		__asm__ volatile("" : "+r"(y));
		y += 1;
		__asm__ volatile("" : "+r"(y));
		y += 1;
		__asm__ volatile("" : "+r"(y));
		y += 1;
		__asm__ volatile("" : "+r"(y));
	}
	double t3 = thread_seconds();
	if (a + b + c + d + e + f + x + y == 0)
		fprintf(stderr, "\n");  /* (uses the results) */
	if (ghz)
		*ghz = t3 > t2 ? 4.0 * PROBE_ITERS / (t3 - t2) / 1e9 : 0;
	return t1 > t0 ? (t2 - t1) / (t1 - t0) : 0;
}

/*
 * What a mispredicted branch costs this host, in cycles at clock ghz: a
 * loop that branches on random bits (half its branches mispredicted)
 * against the same loop branching on a pattern the predictor learns, the
 * difference per mispredicted branch. csdec's loops branch on the trace's
 * bytes (which packet comes next, where a run of headers ends), OpenCSD's
 * spend more of their time on instructions; so where hosts differ in what
 * a mispredict costs against their width, the two take it differently
 * (BENCHMARKS.md, "History").
 */
/* One step of a xorshift generator (13, 7, 17): the probes' random bits. */
static inline uint64_t xorshift64(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

#define PROBE_BRANCHES 1000000u
static __attribute__((noinline)) double probe_branch_loop(int random)
{
	/* random: on a bit of the xorshift state; else on the count's bit 4
	 * (runs of 16 either way), the state made all the same. */
	uint64_t s = 0x9E3779B97F4A7C15ull, n0 = 0, n1 = 0;
	const double t0 = thread_seconds();
	for (unsigned i = 0; i < PROBE_BRANCHES; i++) {
		s = xorshift64(s);
		const uint64_t bit = (random ? s >> 32 : (uint64_t)i >> 4) & 1;
		/* (A volatile asm in each arm: the compiler makes no
		 * conditional move of them.) */
		if (bit) {
			n0 += 1;
			__asm__ volatile("" : "+r"(n0));
		} else {
			n1 += 3;
			__asm__ volatile("" : "+r"(n1));
		}
	}
	const double t1 = thread_seconds();
	if (n0 + n1 + s == 0)
		fprintf(stderr, "\n");  /* (uses the results) */
	return t1 - t0;
}

static double probe_mispredict(double ghz)
{
	const double rnd = probe_branch_loop(1), pat = probe_branch_loop(0);
	return rnd > pat ? (rnd - pat) * ghz * 1e9 / (PROBE_BRANCHES / 2) : 0;
}

/*
 * What a load costs this host, in cycles at clock ghz, where the lines
 * loaded are spread over 4 MiB at random: the size of an ETMv3 decoder's
 * segment memo (etm3_memo.h), whose lookups after a branch packet go to
 * such a line, one waiting for the next. One chain through the lines in a
 * random order (each line's first word is the index of the next), in
 * 2 MiB pages where the system gives them, as csdec asks for its memo.
 * Hosts of one kind may differ in their caches and in where memory is.
 */
#define PROBE_SET_LINES (((size_t)4 << 20) / 64)
#define PROBE_LOADS 1000000u
static double probe_load_latency(double ghz)
{
	static uint64_t *set;
	if (!set) {
		void *p = NULL;
		uint32_t *order = malloc(PROBE_SET_LINES * sizeof(*order));
		if (!order || posix_memalign(&p, (size_t)2 << 20, PROBE_SET_LINES * 64) != 0) {
			free(order);
			return 0;
		}
#ifdef MADV_HUGEPAGE
		madvise(p, PROBE_SET_LINES * 64, MADV_HUGEPAGE);
#endif
		set = p;
		/* A single cycle through all lines (Sattolo's shuffle), from a
		 * fixed seed so that every run walks the same order. */
		for (size_t i = 0; i < PROBE_SET_LINES; i++)
			order[i] = (uint32_t)i;
		uint64_t x = 0x2545F4914F6CDD1Dull;
		for (size_t i = PROBE_SET_LINES - 1; i > 0; i--) {
			x = xorshift64(x);
			const size_t j = (size_t)(x % i);
			const uint32_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < PROBE_SET_LINES; i++)
			set[(size_t)order[i] * 8] = order[(i + 1) % PROBE_SET_LINES];
		free(order);
	}
	/* (A first walk brings the lines in as far as they fit.) */
	uint64_t k = 0;
	for (unsigned i = 0; i < PROBE_SET_LINES; i++)
		k = set[k * 8];
	const double t0 = thread_seconds();
	for (unsigned i = 0; i < PROBE_LOADS; i++)
		k = set[k * 8];
	const double t1 = thread_seconds();
	if (k == PROBE_SET_LINES)
		fprintf(stderr, "\n");  /* (uses the result) */
	return (t1 - t0) * ghz * 1e9 / PROBE_LOADS;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1), which it sorts. */
static double median_sorted(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median_seconds(const struct series *s)
{
	double v[MAX_ROUNDS];
	for (int i = 0; i < s->n; i++)
		v[i] = s->r[i].seconds;
	return median_sorted(v, s->n);
}

/* OpenCSD's time over csdec's, round by round (the two ran one after the
 * other, so a slow spell of the machine is mostly in both): the median and
 * the extremes of those ratios. */
static double round_ratio(const struct series *c, const struct series *o, int i)
{
	return c->r[i].seconds > 0 ? o->r[i].seconds / c->r[i].seconds : 0;
}

static void round_ratios(const struct series *c, const struct series *o, double *med, double *lo, double *hi)
{
	double v[MAX_ROUNDS];
	for (int i = 0; i < c->n; i++)
		v[i] = round_ratio(c, o, i);
	*med = median_sorted(v, c->n);
	*lo = v[0];
	*hi = v[c->n - 1];
}

/* Peak RSS beyond the image, in MiB, the largest of the rounds. */
static double peak_mb(const struct series *s)
{
	double worst = 0;
	for (int i = 0; i < s->n; i++) {
		double mb = ((double)s->r[i].maxrss_kb * 1024.0 - (double)s->r[i].image_bytes) / (1024.0 * 1024.0);
		if (mb > worst)
			worst = mb;
	}
	return worst;
}

static void row(FILE *out, const char *input, const char *what, const struct series *c, const struct series *o,
		uint64_t bytes, uint64_t insns)
{
	double tc = median_seconds(c);
	char ic[32] = "", io[32] = "";   /* instructions/s: empty for packet rows */
	if (insns)
		snprintf(ic, sizeof(ic), "%.1f", (double)insns / tc / 1e6);
	fprintf(out, "| %s | %s | %.1f | %s | %.1f |", input, what, (double)bytes / tc / 1e6, ic, peak_mb(c));
	if (o) {
		double to = median_seconds(o);
		if (insns)
			snprintf(io, sizeof(io), "%.2f", (double)insns / to / 1e6);
		double med, lo, hi;
		round_ratios(c, o, &med, &lo, &hi);
		fprintf(out, " %.2f | %s | %.1f | **%.1fx** | %.1fx - %.1fx |\n", (double)bytes / to / 1e6, io,
			peak_mb(o), med, lo, hi);
	} else {
		fprintf(out, " | | | | |\n");
	}
}

/* What the host probe saw before one input's round. */
struct probe {
	double width[2];        /* before the csdec flow [0] and packets [1] run */
	double ghz;             /* the rest: before the flow run */
	double miss;
	double load;
	uint64_t huge_kb;       /* the csdec flow run's huge pages */
	double cycles_byte[4];  /* cycles a byte at that clock: csdec flow, OpenCSD flow, csdec packets, OpenCSD packets */
};

/* Each round's ratios (flow [0], packets [1]) beside the host probe taken
 * right before its csdec run: a round with a lower width ran on a core
 * whose other thread took more of it; the clock, a mispredict's and a
 * load's cost, from the probe before the flow run; the huge pages the
 * csdec flow run held after its decode loop. */
static void probe_table(FILE *out, const char *const *names, int n, int rounds, struct probe pr[][MAX_ROUNDS],
			double ratio[][2][MAX_ROUNDS])
{
	fprintf(out, "\n| input | round | host width before flow | flow csdec / OpenCSD | host width before packets | "
		     "packets csdec / OpenCSD | core clock (GHz) | mispredicted branch (cycles) | "
		     "load in 4 MiB (cycles) | csdec flow in huge pages (MiB) |\n"
		     "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (int i = 0; i < n; i++)
		for (int r = 0; r < rounds; r++) {
			const struct probe *p = &pr[i][r];
			fprintf(out, "| %s | %d | %.2f | %.1fx | %.2f | %.1fx | %.2f | %.1f | %.0f | %.0f |\n", names[i],
				r + 1, p->width[0], ratio[i][0][r], p->width[1], ratio[i][1][r], p->ghz, p->miss, p->load,
				(double)p->huge_kb / 1024);
		}
}

/* Each round's loops in cycles a byte at the clock its probe measured:
 * the same count on two hosts means the loop runs alike there and only
 * the clock differs; more on one host means its core takes that loop
 * worse (BENCHMARKS.md, "How to reproduce"). */
static void cycles_table(FILE *out, const char *const *names, int n, int rounds, struct probe pr[][MAX_ROUNDS])
{
	fprintf(out, "\n| input | round | core clock (GHz) | csdec flow (cycles a byte) | OpenCSD flow | "
		     "csdec packets | OpenCSD packets |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (int i = 0; i < n; i++)
		for (int r = 0; r < rounds; r++) {
			const struct probe *p = &pr[i][r];
			fprintf(out, "| %s | %d | %.2f | %.2f | %.1f | %.2f | %.1f |\n", names[i], r + 1, p->ghz,
				p->cycles_byte[0], p->cycles_byte[1], p->cycles_byte[2], p->cycles_byte[3]);
		}
}

static void header(FILE *out)
{
	fprintf(out, "| input | what | csdec MB/s | csdec Minsn/s | csdec peak MB | OpenCSD MB/s | "
		     "OpenCSD Minsn/s | OpenCSD peak MB | csdec / OpenCSD | rounds' range |\n");
	fprintf(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
}

/* The hostile input's row: its flow decoding h (all runs), and per input
 * the rounds' ratios of its MB/s to the input's flow MB/s (hr[i]: the
 * hostile runs beside input i's flow runs c[i]). */
static void hostile_table(FILE *out, const char *name, const struct series *h, const struct series *hr,
			  const struct series *c, const char *const *names, int n)
{
	const double mbs = (double)h->r[0].bytes / median_seconds(h) / 1e6;
	fprintf(out, "\n| input | what | csdec MB/s | csdec Minsn/s | csdec peak MB |");
	for (int i = 0; i < n; i++)
		fprintf(out, " / %s flow | rounds' range |", names[i]);
	fprintf(out, "\n| --- | --- | ---: | ---: | ---: |");
	for (int i = 0; i < n; i++)
		fprintf(out, " ---: | ---: |");
	fprintf(out, "\n| %s (%.1f MB) | flow decode | %.1f | %.1f | %.1f |", name, (double)h->r[0].bytes / 1e6, mbs,
		(double)h->r[0].insns / median_seconds(h) / 1e6, peak_mb(h));
	for (int i = 0; i < n; i++) {
		/* (round_ratios gives c's time over hr's: MB/s of hr over c's
		 * once the byte counts are in.) */
		double med, lo, hi;
		round_ratios(&hr[i], &c[i], &med, &lo, &hi);
		const double k = (double)h->r[0].bytes / (double)c[i].r[0].bytes;
		med *= k;
		lo *= k;
		hi *= k;
		fprintf(out, " %s%.2f%s | %.2f - %.2f |", med >= 0.1 ? "" : "**", med, med >= 0.1 ? "" : "** (below 0.1)",
			lo, hi);
	}
	fprintf(out, "\n");
}

/* s with each run's seconds set to the whole process's CPU time. */
static struct series process_times(const struct series *s)
{
	struct series p = *s;
	for (int r = 0; r < p.n; r++)
		p.r[r].seconds = p.r[r].process_seconds;
	return p;
}

/* The whole-process table: per input, the tool's runs t[i], OpenCSD's
 * o[i] and, with l, trc_pkt_lister's l[i] (their process_seconds),
 * alternating. */
static void whole_table(FILE *out, const char *ocsd_version, struct series *t, struct series *o,
			const struct series *l, const char *const *names, int n)
{
	fprintf(out, "\n| input | csdec decode --format none, CPU ms | OpenCSD %s flow decode (ocsd_bench), "
		     "CPU ms | csdec / OpenCSD | rounds' range |", ocsd_version);
	if (l)
		fprintf(out, " trc_pkt_lister %s -decode_only, CPU ms | csdec / trc_pkt_lister | rounds' range |",
			ocsd_version);
	fprintf(out, "\n| --- | ---: | ---: | ---: | ---: |%s\n", l ? " ---: | ---: | ---: |" : "");
	for (int i = 0; i < n; i++) {
		const struct series tc = process_times(&t[i]), oc = process_times(&o[i]);
		double med, lo, hi;
		round_ratios(&tc, &oc, &med, &lo, &hi);
		fprintf(out, "| %s (%.2f MB) | %.1f | %.1f | **%.1fx** | %.1fx - %.1fx |", names[i],
			(double)oc.r[0].bytes / 1e6, median_seconds(&tc) * 1e3, median_seconds(&oc) * 1e3, med, lo, hi);
		if (l) {
			const struct series lc = process_times(&l[i]);
			round_ratios(&tc, &lc, &med, &lo, &hi);
			fprintf(out, " %.1f | **%.1fx** | %.1fx - %.1fx |", median_seconds(&lc) * 1e3, med, lo, hi);
		}
		fprintf(out, "\n");
	}
}

static int mem_check(double limit_mb, const char *name, const char *dir)
{
	int fail = 0;
	uint64_t image = 0;
	static const char *const modes[] = { "flow", "packets" };
	for (int m = 0; m < 2; m++) {
		struct series s = { .n = 1 };
		s.r[0] = run_harness("csdec_bench", modes[m], dir);
		if (s.r[0].image_bytes > image)
			image = s.r[0].image_bytes;
		double mb = peak_mb(&s);
		printf("%s: csdec %s: %.1f MB of trace in %.2f s, peak RSS %.1f MB, image %.2f MB, beyond the image %.1f MB"
		       " (limit %.0f): %s\n",
		       name, modes[m], (double)s.r[0].bytes / 1e6, s.r[0].seconds, (double)s.r[0].maxrss_kb / 1024.0,
		       (double)s.r[0].image_bytes / (1024.0 * 1024.0), mb, limit_mb, mb <= limit_mb ? "ok" : "FAIL");
		if (mb > limit_mb)
			fail = 1;
	}
	/* The tool as users run it, records decoded but not printed. */
	char *argv[] = { (char *)tool, "decode", (char *)dir, "--format", "none", NULL };
	struct series t = { .n = 1 };
	t.r[0] = run_child(argv, 0);
	double mb = ((double)t.r[0].maxrss_kb * 1024.0 - (double)image) / (1024.0 * 1024.0);
	printf("%s: csdec decode --format none: %.2f s CPU, peak RSS %.1f MB, beyond the image %.1f MB (limit %.0f): %s\n",
	       name, t.r[0].seconds, (double)t.r[0].maxrss_kb / 1024.0, mb, limit_mb, mb <= limit_mb ? "ok" : "FAIL");
	if (mb > limit_mb)
		fail = 1;
	return fail;
}

int main(int argc, char **argv)
{
	int rounds = 5;
	const char *md = NULL;
	double mem_limit = -1;
	const char *names[MAX_INPUTS], *dirs[MAX_INPUTS];
	int ninputs = 0;
	char *hostile = NULL, *hostile_dir = NULL;
	const char *whole_names[MAX_INPUTS], *whole_dirs[MAX_INPUTS];
	int nwhole = 0;
	const char *ocsd_version = "";
	const char *lister = NULL;
	int no_thp = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--rounds") == 0 && i + 1 < argc) {
			rounds = atoi(argv[++i]);
			if (rounds < 1 || rounds > MAX_ROUNDS) {
				fprintf(stderr, "bench_run: --rounds 1..%d\n", MAX_ROUNDS);
				return 2;
			}
		} else if (strcmp(a, "--bin") == 0 && i + 1 < argc) {
			bin_dir = argv[++i];
		} else if (strcmp(a, "--tool") == 0 && i + 1 < argc) {
			tool = argv[++i];
		} else if (strcmp(a, "--md") == 0 && i + 1 < argc) {
			md = argv[++i];
		} else if (strcmp(a, "--hostile") == 0 && i + 1 < argc && strchr(argv[i + 1], '=')) {
			hostile = argv[++i];
			hostile_dir = strchr(hostile, '=');
			*hostile_dir++ = 0;
		} else if (strcmp(a, "--whole") == 0 && i + 1 < argc && strchr(argv[i + 1], '=') && nwhole < MAX_INPUTS) {
			char *eq = strchr(argv[++i], '=');
			*eq = 0;
			whole_names[nwhole] = argv[i];
			whole_dirs[nwhole] = eq + 1;
			nwhole++;
		} else if (strcmp(a, "--ocsd-version") == 0 && i + 1 < argc) {
			ocsd_version = argv[++i];
		} else if (strcmp(a, "--lister") == 0 && i + 1 < argc) {
			lister = argv[++i];
		} else if (strcmp(a, "--no-thp") == 0) {
			/* Every child without transparent huge pages (the
			 * setting is inherited across fork and exec), and the
			 * probe's own 4 MiB set too: whether a host's speed
			 * depends on them. */
#if defined(__linux__) && defined(PR_SET_THP_DISABLE)
			if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
				fprintf(stderr, "bench_run: --no-thp: %s\n", strerror(errno));
				return 2;
			}
			no_thp = 1;
#else
			fprintf(stderr, "bench_run: --no-thp needs Linux\n");
			return 2;
#endif
		} else if (strcmp(a, "--probe") == 0 && i + 1 < argc) {
			/* The host probe alone, N times: whether the core is shared now. */
			const int n = atoi(argv[++i]);
			for (int k = 0; k < n && k < 100000; k++) {
				double ghz;
				const double w = probe_width(&ghz);
				const double miss = probe_mispredict(ghz);
				printf("host width %.3f, core clock %.2f GHz, a mispredicted branch %.1f cycles, "
				       "a load in 4 MiB %.0f cycles\n",
				       w, ghz, miss, probe_load_latency(ghz));
			}
			return 0;
		} else if (strcmp(a, "--mem-check") == 0 && i + 1 < argc) {
			mem_limit = atof(argv[++i]);
		} else if (strchr(a, '=') && a[0] != '-' && ninputs < MAX_INPUTS) {
			char *eq = strchr(argv[i], '=');
			*eq = 0;
			names[ninputs] = argv[i];
			dirs[ninputs] = eq + 1;
			ninputs++;
		} else {
			fprintf(stderr, "usage: bench_run [--rounds N] [--bin DIR] [--tool CSDEC] [--md FILE] "
					"[--hostile NAME=DIR] [--whole NAME=DIR]... [--ocsd-version V] [--lister PATH] [--no-thp] NAME=DIR...\n"
					"       bench_run --mem-check LIMIT_MB [--bin DIR] NAME=DIR\n");
			return 2;
		}
	}
	if (ninputs == 0 && (nwhole == 0 || mem_limit >= 0)) {
		fprintf(stderr, "bench_run: no input\n");
		return 2;
	}
	if (mem_limit >= 0)
		return mem_check(mem_limit, names[0], dirs[0]);

	FILE *mdf = md ? fopen(md, "w") : NULL;
	if (md && !mdf) {
		fprintf(stderr, "bench_run: cannot write %s\n", md);
		return 2;
	}
	if (ninputs) {
		if (no_thp) {
			printf("Without transparent huge pages (--no-thp).\n\n");
			if (mdf)
				fprintf(mdf, "Without transparent huge pages (--no-thp).\n\n");
		}
		header(stdout);
		if (mdf)
			header(mdf);
	}
	/* The hostile input's runs: all, and beside each input's flow runs. */
	/* (Its runs as long as the flow runs they are compared with.) */
	const int hostile_passes = hostile ? passes_for_span("flow", hostile_dir) : 1;
	static struct series h_all, h_beside[MAX_INPUTS], flow[MAX_INPUTS];
	/* The host probe before each round's csdec runs, and that round's ratios */
	static struct probe pr[MAX_INPUTS][MAX_ROUNDS];
	static double ratio[MAX_INPUTS][2][MAX_ROUNDS];
	for (int in = 0; in < ninputs; in++) {
		static struct series s[S_COUNT];
		memset(s, 0, sizeof(s));
		const int flow_passes = passes_for_span("flow", dirs[in]);
		const int pkt_passes = passes_for_span("packets", dirs[in]);
		fprintf(stderr, "%s: csdec runs of %d (flow) and %d (packets) passes\n", names[in], flow_passes,
			pkt_passes);
		for (int r = 0; r < rounds; r++) {
			struct probe *p = &pr[in][r];
			p->width[0] = probe_width(&p->ghz);
			p->miss = probe_mispredict(p->ghz);
			p->load = probe_load_latency(p->ghz);
			s[S_CSDEC_FLOW].r[r] = run_csdec_passes("flow", dirs[in], flow_passes);
			p->huge_kb = s[S_CSDEC_FLOW].r[r].huge_kb;
			if (hostile) {
				h_beside[in].r[r] = run_csdec_passes("flow", hostile_dir, hostile_passes);
				h_beside[in].n = r + 1;
				if (h_all.n < MAX_ROUNDS)
					h_all.r[h_all.n++] = h_beside[in].r[r];
			}
			s[S_OCSD_FLOW].r[r] = run_harness("ocsd_bench", "flow", dirs[in]);
			p->width[1] = probe_width(NULL);
			s[S_CSDEC_PKT].r[r] = run_csdec_passes("packets", dirs[in], pkt_passes);
			s[S_OCSD_PKT].r[r] = run_harness("ocsd_bench", "packets", dirs[in]);
			s[S_CSDEC_INSN].r[r] = run_harness("csdec_bench", "flow-insn", dirs[in]);
			s[S_TOOL_JSONL].r[r] = run_tool_jsonl(dirs[in]);
			for (int k = 0; k < S_COUNT; k++)
				s[k].n = r + 1;
			static const int loops[4] = { S_CSDEC_FLOW, S_OCSD_FLOW, S_CSDEC_PKT, S_OCSD_PKT };
			for (int k = 0; k < 4; k++) {
				const struct run *lr = &s[loops[k]].r[r];
				p->cycles_byte[k] = lr->bytes ? lr->seconds * p->ghz * 1e9 / (double)lr->bytes : 0;
			}
			/* the tool run reports nothing itself: same input, same image */
			s[S_TOOL_JSONL].r[r].image_bytes = s[S_CSDEC_INSN].r[r].image_bytes;
		}
		const struct run *cf = &s[S_CSDEC_FLOW].r[0], *of = &s[S_OCSD_FLOW].r[0];
		flow[in] = s[S_CSDEC_FLOW];
		for (int r = 0; r < rounds; r++) {
			ratio[in][0][r] = round_ratio(&s[S_CSDEC_FLOW], &s[S_OCSD_FLOW], r);
			ratio[in][1][r] = round_ratio(&s[S_CSDEC_PKT], &s[S_OCSD_PKT], r);
		}
		const struct run *cp = &s[S_CSDEC_PKT].r[0], *op = &s[S_OCSD_PKT].r[0];
		char label[256];
		snprintf(label, sizeof(label), "%s (%.1f MB)", names[in], (double)cf->bytes / 1e6);
		for (int k = 0; k < 2; k++) {
			FILE *out = k ? mdf : stdout;
			if (!out)
				continue;
			row(out, label, "flow decode", &s[S_CSDEC_FLOW], &s[S_OCSD_FLOW], cf->bytes, cf->insns);
			row(out, label, "packets only", &s[S_CSDEC_PKT], &s[S_OCSD_PKT], cp->bytes, 0);
			row(out, label, "flow, per-insn records", &s[S_CSDEC_INSN], NULL, cf->bytes, s[S_CSDEC_INSN].r[0].insns);
			row(out, label, "`csdec decode --insn --format jsonl`", &s[S_TOOL_JSONL], NULL, cf->bytes,
			    s[S_CSDEC_INSN].r[0].insns);
		}
		fprintf(stderr, "%s: instructions csdec %" PRIu64 " / OpenCSD %" PRIu64 "; packets csdec %" PRIu64
				" / OpenCSD %" PRIu64 "; csdec errors %" PRIu64 "\n",
			names[in], cf->insns, of->insns, cp->items, op->items, cf->errors);
	}
	if (ninputs)
		for (int k = 0; k < 2; k++)
			if (k ? mdf != NULL : 1) {
				probe_table(k ? mdf : stdout, names, ninputs, rounds, pr, ratio);
				cycles_table(k ? mdf : stdout, names, ninputs, rounds, pr);
			}
	if (hostile) {
		for (int k = 0; k < 2; k++)
			if (k ? mdf != NULL : 1)
				hostile_table(k ? mdf : stdout, hostile, &h_all, h_beside, flow, names, ninputs);
		fprintf(stderr, "%s: instructions csdec %" PRIu64 "; csdec errors %" PRIu64 "\n", hostile,
			h_all.r[0].insns, h_all.r[0].errors);
	}
	if (nwhole) {
		static struct series wt[MAX_INPUTS], wo[MAX_INPUTS], wl[MAX_INPUTS];
		for (int in = 0; in < nwhole; in++) {
			for (int r = 0; r < rounds; r++) {
				wt[in].r[r] = run_tool_none(whole_dirs[in]);
				wo[in].r[r] = run_harness("ocsd_bench", "flow", whole_dirs[in]);
				if (lister)
					wl[in].r[r] = run_lister(lister, whole_dirs[in]);
				wt[in].n = wo[in].n = wl[in].n = r + 1;
			}
		}
		for (int k = 0; k < 2; k++)
			if (k ? mdf != NULL : 1)
				whole_table(k ? mdf : stdout, ocsd_version, wt, wo, lister ? wl : NULL, whole_names, nwhole);
	}
	if (mdf)
		fclose(mdf);
	return 0;
}
