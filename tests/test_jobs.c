/*
 * test_jobs.c - `--jobs N` changes nothing the tool prints: decode (text,
 * jsonl, --insn jsonl, capture order), packets (text, jsonl), coverage and
 * profile give byte-identical output and the same exit status with
 * --jobs 1 (the serial path) and --jobs 2, 3 and 8, on the real captures
 * (TC2: five sources in one formatted buffer; trace_cov_a15: one raw
 * source) and on every snapshot of the round-trip matrix
 * (CSD_GEN_SNAPSHOTS; coverage and profile with the program's ELF).
 * Where a --jobs above the number of sources runs no more workers than a
 * lower one, only the lower one is compared. A snapshot of one source is
 * compared for --jobs 2 (one worker decoding while the calling thread
 * prints) with decode jsonl only. The sanitizer build runs the sanitizer
 * build of the tool on every sixth snapshot of the matrix with several
 * sources (with fewer forms of decode) and of those with one.
 * Also: --jobs 0, a word, and a number above the limit are usage errors.
 *
 * Several sources whose records and packets are printed by the workers
 * (TC2's buffer repeated, so that the workers' output fills many blocks
 * and the merge holds printed records): decode in every form and packets
 * give the output of --jobs 1 with --jobs 2 and 3, and the test-only
 * environment variable CSDEC_TEST_JOBS_STATS has the tool say on stderr
 * that the workers printed ("csdec: jobs: N workers printed M items").
 * With CSDEC_TEST_JOBS_TEXT_FAIL=3 every third write of a worker's print
 * stream fails as if memory were short: the output is still that of
 * --jobs 1, the workers printing fewer items.
 *
 * One source cut into chunks (tools/chunks.c, with --jobs N >= 2 given):
 * the test-only environment variable CSDEC_TEST_CHUNK_BYTES sets the least
 * distance between cuts (so that small inputs get many chunks) and makes
 * the tool say on stderr how many chunks it joined ("csdec: chunks: N
 * joined, M by a matching state"). With it, decode (jsonl, --insn jsonl,
 * text, none), packets (jsonl, text), coverage and profile of every
 * one-source snapshot of the matrix (the sanitizer build: every sixth,
 * decode and packets jsonl and coverage) and of
 * generated one-source captures of several hundred kilobytes (PTM, PTM
 * with return stack and cycle counts, ETMv3 with timestamps; unformatted,
 * in formatter frames and as a TPIU port capture) give the output of
 * --jobs 1 with --jobs 2 and 3; the generated ones must have been joined
 * in chunks, some by a matching state. So do each of TC2's sources taken
 * alone from its formatted buffer (repeated), and a formatted capture
 * with bad frames, whose errors come out between the same records and
 * packets.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "csdec.h"

#if defined(__SANITIZE_ADDRESS__)
#define SAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SAN_BUILD 1
#endif
#endif
#ifndef SAN_BUILD
#define SAN_BUILD 0
#endif

static const char *tool;

static const char *tool_path(void)
{
	const char *t = SAN_BUILD ? getenv("CSD_TOOL_SAN") : NULL;
	if (t && *t && access(t, X_OK) != 0)
		t = NULL;
	if (!t || !*t)
		t = getenv("CSD_TOOL");
	return t;
}

/* What a run printed: a 64-bit FNV-1a hash and the size of its standard
 * output, and its exit status. */
struct result {
	uint64_t hash, size;
	int status;
};

static struct result run(const char *cmd)
{
	struct result r = { 0xcbf29ce484222325ull, 0, -1 };
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return r;
	unsigned char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
		for (size_t i = 0; i < n; i++)
			r.hash = (r.hash ^ buf[i]) * 0x100000001b3ull;
		r.size += n;
	}
	int st = pclose(p);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r;
}

static long compared, differing;

/* `args` with --jobs 1 and with each of jobs[]: the same output and status. */
static void same_output(const char *args, const int *jobs, int njobs)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "%s %s --jobs 1 2>/dev/null", tool, args);
	struct result ref = run(cmd);
	/* Exit 2 would mean the command itself is wrong: nothing compared. */
	CHECK(ref.status == 0 || ref.status == 1);
	for (int k = 0; k < njobs; k++) {
		snprintf(cmd, sizeof(cmd), "%s %s --jobs %d 2>/dev/null", tool, args, jobs[k]);
		struct result r = run(cmd);
		compared++;
		if (r.hash != ref.hash || r.size != ref.size || r.status != ref.status) {
			differing++;
			fprintf(stderr, "differs: %s --jobs %d (%llu bytes, status %d) from --jobs 1 (%llu bytes, status %d)\n",
				args, jobs[k], (unsigned long long)r.size, r.status, (unsigned long long)ref.size,
				ref.status);
		}
	}
}

static const int all_jobs[] = { 2, 3, 8 };

/* The commands on snapshot `dir` of `nsrc` sources (coverage and profile
 * with `elf`, if any). A --jobs above the number of sources runs as many
 * workers as sources, so it is compared only where it differs from a
 * lower count: up to the first count reaching nsrc. `full`: every form of
 * decode and packets; else text and jsonl decode and jsonl packets. */
static void all_commands(const char *dir, const char *elf, int nsrc, int full)
{
	static const char *const forms[] = {
		"decode %s",
		"decode %s --format jsonl",
		"packets %s --format jsonl",
		"decode %s --insn --format jsonl",
		"decode %s --order capture --format jsonl",
		"decode %s --format none",
		"packets %s",
	};
	int nj = 0;
	while (nj < 3 && (nj == 0 || all_jobs[nj - 1] < nsrc))
		nj++;
	char args[4096];
	for (size_t i = 0; i < (full ? sizeof(forms) / sizeof(forms[0]) : 3); i++) {
		snprintf(args, sizeof(args), forms[i], dir);
		same_output(args, all_jobs, nj);
	}
	snprintf(args, sizeof(args), "coverage %s --insns%s%s", dir, elf ? " --elf " : "", elf ? elf : "");
	same_output(args, all_jobs, nj);
	snprintf(args, sizeof(args), "profile %s%s%s", dir, elf ? " --elf " : "", elf ? elf : "");
	same_output(args, all_jobs, nj);
}

static int num_sources(const char *dir)
{
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(dir, &snap, NULL, 0) < 0)
		return -1;
	int n = (int)csd_snapshot_num_sources(snap);
	csd_snapshot_free(snap);
	return n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The round-trip matrix's snapshots in `snaps` ("PROGRAM--KIND"), sorted;
 * their names strdup'ed into names[0 .. return). */
static size_t list_snapshots(const char *snaps, char **names, size_t cap)
{
	DIR *d = opendir(snaps);
	CHECK(d != NULL);
	if (!d)
		return 0;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < cap;)
		if (e->d_name[0] != '.' && strstr(e->d_name, "--"))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	return n;
}

/* Where a snapshot of the matrix is, and the ELF of its program (for
 * coverage and profile), which not every program has. */
struct snapshot_paths {
	char dir[2048], elf[2048];
	int have_elf;
};

/* The paths of snapshot `name` ("PROGRAM--KIND") in `snaps`, its program
 * in `progs`. */
static void snapshot_paths(const char *snaps, const char *progs, const char *name, struct snapshot_paths *sp)
{
	char prog[1024];
	snprintf(sp->dir, sizeof(sp->dir), "%s/%s", snaps, name);
	snprintf(prog, sizeof(prog), "%s", name);
	*strstr(prog, "--") = 0;
	snprintf(sp->elf, sizeof(sp->elf), "%s/%s", progs, prog);
	struct stat sb;
	sp->have_elf = stat(sp->elf, &sb) == 0;
}

static void roundtrip_matrix(void)
{
	const char *snaps = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	CHECK(snaps != NULL && progs != NULL);
	if (!snaps || !progs)
		return;
	char *names[1024];
	size_t n = list_snapshots(snaps, names, 1024);
	CHECK(n > 0);
	long multi = 0, single = 0, seen_multi = 0, seen_single = 0;
	for (size_t i = 0; i < n; i++) {
		char args[4096];
		struct snapshot_paths sp;
		snapshot_paths(snaps, progs, names[i], &sp);
		int ns = num_sources(sp.dir);
		CHECK(ns > 0);
		/* The sanitizer build of the tool is some ten times slower:
		 * there every sixth snapshot of each kind. */
		if (ns > 1 && (!SAN_BUILD || seen_multi++ % 6 == 0)) {
			all_commands(sp.dir, sp.have_elf ? sp.elf : NULL, ns, !SAN_BUILD);
			multi++;
		} else if (ns == 1 && (!SAN_BUILD || seen_single++ % 6 == 0)) {
			snprintf(args, sizeof(args), "decode %s --format jsonl", sp.dir);
			same_output(args, all_jobs, 1);
			single++;
		}
		free(names[i]);
	}
	printf("round-trip matrix: %ld snapshots with several sources compared, %ld with one\n", multi, single);
	CHECK(multi > 0);
}

static long chunks_joined, chunks_matched;

/* The tool with `env` set, run on `args`: its standard error to read
 * (pclose it), or NULL. */
static FILE *tool_stderr(const char *env, const char *args)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1 >/dev/null", env, tool, args);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	return p;
}

/* How many items the workers printed in `args` with --jobs `jobs` and the
 * environment variables `env` (-1: the tool did not say). */
static long long worker_printed_env(const char *env, const char *args, int jobs)
{
	char with_jobs[4200], line[512], envs[512];
	snprintf(with_jobs, sizeof(with_jobs), "%s --jobs %d", args, jobs);
	snprintf(envs, sizeof(envs), "CSDEC_TEST_JOBS_STATS=1 %s", env);
	FILE *p = tool_stderr(envs, with_jobs);
	if (!p)
		return -1;
	long long n = -1;
	int w;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "csdec: jobs: %d workers printed %lld items", &w, &n) == 2)
			CHECK_EQ(w, jobs);
	pclose(p);
	return n;
}

static long long worker_printed(const char *args, int jobs)
{
	return worker_printed_env("", args, jobs);
}

static void worker_printing(const char *shared)
{
	const char *src = getenv("CSD_SRCDIR");
	CHECK(src != NULL);
	if (!src)
		return;
	char tmp[] = "/tmp/csd_jobsprint_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char cmd[8192], args[4096];
	snprintf(cmd, sizeof(cmd), "sh %s/bench/repeat_snapshot.sh %s/traces/TC2 %s/tc2 %dx >/dev/null", src, shared, tmp,
		 SAN_BUILD ? 3 : 24);
	CHECK_EQ(system(cmd), 0);
	static const char *const forms[] = {
		"decode %s/tc2 --format jsonl",
		"decode %s/tc2",
		"decode %s/tc2 --insn --format jsonl",
		"decode %s/tc2 --order capture --format jsonl",
		"decode %s/tc2 --data-only --format jsonl",
		"packets %s/tc2",
		"packets %s/tc2 --format jsonl",
	};
	static const int jobs[] = { 2, 3 };
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(args, sizeof(args), forms[i], tmp);
		same_output(args, jobs, 2);
		long long n = worker_printed(args, 2);
		if (!strstr(args, "--data-only"))
			CHECK(n > 1000);
		if (i == 0)
			printf("printed on the workers: %lld records of TC2 x%d in JSON Lines\n", n, SAN_BUILD ? 3 : 24);
	}
	/* Text lost on the workers as to short memory (every third write
	 * of their streams, test-only): those items are printed by the
	 * calling thread, in their place. */
	static const size_t lossy[] = { 0, 1, 5, 6 };
	for (size_t i = 0; i < sizeof(lossy) / sizeof(lossy[0]); i++) {
		snprintf(args, sizeof(args), forms[lossy[i]], tmp);
		snprintf(cmd, sizeof(cmd), "%s %s --jobs 1 2>/dev/null", tool, args);
		const struct result ref = run(cmd);
		snprintf(cmd, sizeof(cmd), "CSDEC_TEST_JOBS_TEXT_FAIL=3 %s %s --jobs 2 2>/dev/null", tool, args);
		const struct result r = run(cmd);
		compared++;
		if (r.hash != ref.hash || r.size != ref.size || r.status != ref.status) {
			differing++;
			fprintf(stderr, "differs: %s --jobs 2 with text lost on the workers\n", args);
		}
		/* Some printed there, fewer than without losses. */
		const long long lossy_n = worker_printed_env("CSDEC_TEST_JOBS_TEXT_FAIL=3", args, 2);
		CHECK(lossy_n > 0 && lossy_n < worker_printed(args, 2));
	}
	/* Nothing to print: the workers count. */
	snprintf(args, sizeof(args), "decode %s/tc2 --format none", tmp);
	CHECK_EQ(worker_printed(args, 2), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	CHECK_EQ(system(cmd), 0);
}

/* `args` with --jobs 1 and, cut every `chunk` bytes, with --jobs 2 and 3:
 * the same output and status. Counts the chunks the tool joined. */
static void same_chunked(const char *args, long chunk)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "%s %s --jobs 1 2>/dev/null", tool, args);
	struct result ref = run(cmd);
	CHECK(ref.status == 0 || ref.status == 1);
	for (int j = 2; j <= 3; j++) {
		snprintf(cmd, sizeof(cmd), "CSDEC_TEST_CHUNK_BYTES=%ld %s %s --jobs %d 2>/dev/null", chunk, tool, args, j);
		struct result r = run(cmd);
		compared++;
		if (r.hash != ref.hash || r.size != ref.size || r.status != ref.status) {
			differing++;
			fprintf(stderr, "differs: chunks of %ld bytes: %s --jobs %d (%llu bytes, status %d) from --jobs 1 (%llu bytes, status %d)\n",
				chunk, args, j, (unsigned long long)r.size, r.status, (unsigned long long)ref.size,
				ref.status);
		}
	}
	snprintf(cmd, sizeof(cmd), "CSDEC_TEST_CHUNK_BYTES=%ld %s %s --jobs 2 2>&1 >/dev/null", chunk, tool, args);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return;
	char line[512];
	long nj = -1, nm = -1;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "csdec: chunks: %ld joined, %ld by a matching state", &nj, &nm) == 2)
			break;
	while (fgets(line, sizeof(line), p))
		;
	pclose(p);
	/* The line is there whenever chunks were set up. */
	CHECK(nj >= 0 && nm >= 0);
	if (nj > 0)
		chunks_joined += nj;
	if (nm > 0)
		chunks_matched += nm;
}

static void chunked_matrix(void)
{
	const char *snaps = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	if (!snaps || !progs)
		return;
	char *names[1024];
	size_t n = list_snapshots(snaps, names, 1024);
	long single = 0, seen = 0;
	for (size_t i = 0; i < n; i++) {
		char args[8192];
		struct snapshot_paths sp;
		snapshot_paths(snaps, progs, names[i], &sp);
		free(names[i]);
		if (num_sources(sp.dir) != 1 || (SAN_BUILD && seen++ % 6 != 0))
			continue;
		single++;
		snprintf(args, sizeof(args), "decode %s --format jsonl", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "packets %s --format jsonl", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "coverage %s --insns%s%s", sp.dir, sp.have_elf ? " --elf " : "",
			 sp.have_elf ? sp.elf : "");
		same_chunked(args, 64);
		if (SAN_BUILD)
			continue;
		snprintf(args, sizeof(args), "decode %s --insn --format jsonl", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "decode %s", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "decode %s --format none", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "packets %s", sp.dir);
		same_chunked(args, 64);
		snprintf(args, sizeof(args), "profile %s%s%s", sp.dir, sp.have_elf ? " --elf " : "",
			 sp.have_elf ? sp.elf : "");
		same_chunked(args, 64);
	}
	printf("chunks: %ld one-source snapshots of the matrix compared\n", single);
	CHECK(single > 0);
}

/* Generated one-source captures of several hundred kilobytes, cut every
 * 2000 bytes (and every 64 in the sanitizer build's smaller one). */
/* Chunks lines ("csdec: chunks: J joined, M by a matching state") of a
 * run with CSDEC_TEST_CHUNK_BYTES=chunk: J, or -1 without the line. */
static long chunk_line(const char *args, long chunk)
{
	char env[64], line[512];
	snprintf(env, sizeof(env), "CSDEC_TEST_CHUNK_BYTES=%ld", chunk);
	FILE *p = tool_stderr(env, args);
	if (!p)
		return -1;
	long nj = -1, nm = -1;
	while (fgets(line, sizeof(line), p))
		if (nj < 0 && sscanf(line, "csdec: chunks: %ld joined, %ld by a matching state", &nj, &nm) != 2)
			nj = -1;
	pclose(p);
	return nj;
}

/* `args` without --jobs (cut every 65536 bytes where it chunks): the
 * output and status of --jobs 1, which succeeds. */
static void same_by_default(const char *args)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "%s %s --jobs 1", tool, args);
	struct result ref = run(cmd);
	snprintf(cmd, sizeof(cmd), "CSDEC_TEST_CHUNK_BYTES=65536 %s %s 2>/dev/null", tool, args);
	struct result dflt = run(cmd);
	CHECK_EQ(ref.status, 0);
	compared++;
	if (dflt.hash != ref.hash || dflt.size != ref.size || dflt.status != ref.status) {
		differing++;
		fprintf(stderr, "differs: %s without --jobs from --jobs 1\n", args);
	}
}

/* Without --jobs, a one-source unformatted capture of 1 MiB or more is
 * decoded in chunks on a machine of several cores (decode only), with the
 * output of --jobs 1; a smaller one is not. */
static void chunked_default(void)
{
	const char *progs = getenv("CSD_PROGRAMS");
	if (!progs)
		return;
	char tmp[] = "/tmp/csd_chunkdef_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char cmd[16384], args[4096];
	snprintf(cmd, sizeof(cmd),
		 "%s gen --qemu-log %s/recurse-thumb-O0.log --elf %s/recurse-thumb-O0 --protocol ptm --repeat 140 "
		 "-o %s/big >/dev/null 2>&1 && %s gen --qemu-log %s/recurse-thumb-O0.log --elf %s/recurse-thumb-O0 "
		 "--protocol ptm --repeat 2 -o %s/small >/dev/null 2>&1",
		 tool, progs, progs, tmp, tool, progs, progs, tmp);
	CHECK_EQ(run(cmd).status, 0);
	struct stat sb;
	snprintf(cmd, sizeof(cmd), "%s/big/trace_0.bin", tmp);
	CHECK(stat(cmd, &sb) == 0 && sb.st_size >= 1024 * 1024);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(args, sizeof(args), "decode %s/big --format jsonl", tmp);
	long nj = chunk_line(args, 65536);
	if (cores >= 2)
		CHECK(nj > 4);
	else
		CHECK_EQ(nj, -1);
	same_by_default(args);
	snprintf(args, sizeof(args), "decode %s/big --format none", tmp);
	CHECK(cores < 2 || chunk_line(args, 65536) > 4);
	snprintf(args, sizeof(args), "packets %s/big --format jsonl", tmp);
	CHECK(cores < 2 || chunk_line(args, 65536) > 4);
	same_by_default(args);
	snprintf(args, sizeof(args), "coverage %s/big", tmp);
	CHECK_EQ(chunk_line(args, 65536), -1);
	snprintf(args, sizeof(args), "decode %s/small --format jsonl", tmp);
	CHECK_EQ(chunk_line(args, 65536), -1);
	snprintf(args, sizeof(args), "packets %s/small", tmp);
	CHECK_EQ(chunk_line(args, 65536), -1);
	printf("chunks by default: %ld joined in a one-source capture of %lld bytes (%ld cores)\n", nj,
	       (long long)sb.st_size, cores);
	/* Formatted: by the source's own bytes, threads from its 4th MiB on;
	 * none for one source of TC2's formatted buffer repeated. */
	snprintf(cmd, sizeof(cmd),
		 "%s gen --qemu-log %s/recurse-thumb-O0.log --elf %s/recurse-thumb-O0 --protocol ptm --formatted "
		 "--cycle-accurate --return-stack --repeat 220 -o %s/fmt >/dev/null 2>&1",
		 tool, progs, progs, tmp);
	CHECK_EQ(run(cmd).status, 0);
	snprintf(cmd, sizeof(cmd), "%s/fmt/trace.bin", tmp);
	CHECK(stat(cmd, &sb) == 0 && sb.st_size >= 5 * 1024 * 1024);
	snprintf(args, sizeof(args), "decode %s/fmt --format jsonl", tmp);
	long nf = chunk_line(args, 65536);
	if (cores >= 2)
		CHECK(nf > 4);
	same_by_default(args);
	const char *shared = check_shared_dir();
	snprintf(cmd, sizeof(cmd), "sh %s/bench/repeat_snapshot.sh %s/traces/TC2 %s/tc2 8x >/dev/null",
		 getenv("CSD_SRCDIR") ? getenv("CSD_SRCDIR") : ".", shared, tmp);
	CHECK_EQ(system(cmd), 0);
	snprintf(args, sizeof(args), "decode %s/tc2 --id 0x10 --format jsonl", tmp);
	CHECK(chunk_line(args, 65536) <= 0);
	printf("chunks by default: %ld joined in a formatted capture of %lld bytes\n", nf, (long long)sb.st_size);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	CHECK_EQ(system(cmd), 0);
}

static void chunked_generated(void)
{
	const char *progs = getenv("CSD_PROGRAMS");
	CHECK(progs != NULL);
	if (!progs)
		return;
	static const char *const kinds[] = {
		"--protocol ptm",
		"--protocol ptm --return-stack --cycle-accurate",
		"--protocol etm3 --timestamps",
		/* formatted: each byte's capture offset its own */
		"--protocol ptm --return-stack --cycle-accurate --formatted",
		"--protocol etm3 --timestamps --formatted=port",
	};
	char tmp[] = "/tmp/csd_chunks_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	long before = chunks_joined, matched_before = chunks_matched;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char cmd[8192], dir[4096], args[8192];
		snprintf(dir, sizeof(dir), "%s/g%zu", tmp, k);
		snprintf(cmd, sizeof(cmd),
			 "%s gen --qemu-log %s/recurse-thumb-O0.log --elf %s/recurse-thumb-O0 %s --sync-period 256 "
			 "--repeat %d -o %s 2>/dev/null",
			 tool, progs, progs, kinds[k], SAN_BUILD ? 2 : 10, dir);
		CHECK_EQ(run(cmd).status, 0);
		snprintf(args, sizeof(args), "decode %s --format jsonl", dir);
		same_chunked(args, SAN_BUILD ? 64 : 2000);
		snprintf(args, sizeof(args), "decode %s --insn --format jsonl", dir);
		same_chunked(args, 2000);
		snprintf(args, sizeof(args), "packets %s --format jsonl", dir);
		same_chunked(args, SAN_BUILD ? 64 : 2000);
		if (!SAN_BUILD) {
			snprintf(args, sizeof(args), "packets %s", dir);
			same_chunked(args, 2000);
			snprintf(args, sizeof(args), "decode %s", dir);
			same_chunked(args, 2000);
			/* The listing with symbols and lines, printed on the workers. */
			snprintf(args, sizeof(args), "decode %s --elf %s/recurse-thumb-O0", dir, progs);
			same_chunked(args, 2000);
			snprintf(args, sizeof(args), "decode %s --format none", dir);
			same_chunked(args, 2000);
			snprintf(args, sizeof(args), "coverage %s --insns", dir);
			same_chunked(args, 2000);
			snprintf(args, sizeof(args), "profile %s --elf %s/recurse-thumb-O0", dir, progs);
			same_chunked(args, 2000);
		}
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_EQ(system(cmd), 0);
	}
	rmdir(tmp);
	printf("chunks: generated captures joined %ld chunks, %ld by a matching state\n", chunks_joined - before,
	       chunks_matched - matched_before);
	CHECK(chunks_joined - before > 10);
	CHECK(chunks_matched - matched_before > 0);
}

/* One source of a formatted capture, in chunks: each of TC2's sources
 * selected alone (--id) from the capture repeated eight times, and a
 * generated formatted capture with reserved trace IDs written into frames
 * here and there, whose frame errors must come out between the records
 * where the serial decode prints them (chunks_sync). */
static void chunked_formatted(const char *shared)
{
	const char *src = getenv("CSD_SRCDIR"), *progs = getenv("CSD_PROGRAMS");
	CHECK(src != NULL && progs != NULL);
	if (!src || !progs)
		return;
	char tmp[] = "/tmp/csd_chunkfmt_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char cmd[8192], args[4096];
	long before = chunks_joined, matched_before = chunks_matched;
	snprintf(cmd, sizeof(cmd), "sh %s/bench/repeat_snapshot.sh %s/traces/TC2 %s/tc2 %dx >/dev/null", src, shared, tmp,
		 SAN_BUILD ? 2 : 8);
	CHECK_EQ(system(cmd), 0);
	static const char *const ids[] = { "0x10", "0x11", "0x12", "0x13" };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(args, sizeof(args), "decode %s/tc2 --id %s --format jsonl", tmp, ids[i]);
		same_chunked(args, 256);
		snprintf(args, sizeof(args), "packets %s/tc2 --id %s --format jsonl", tmp, ids[i]);
		same_chunked(args, 256);
		if (SAN_BUILD)
			continue;
		snprintf(args, sizeof(args), "packets %s/tc2 --id %s", tmp, ids[i]);
		same_chunked(args, 256);
		snprintf(args, sizeof(args), "decode %s/tc2 --id %s", tmp, ids[i]);
		same_chunked(args, 256);
		snprintf(args, sizeof(args), "decode %s/tc2 --id %s --format none", tmp, ids[i]);
		same_chunked(args, 1024);
		snprintf(args, sizeof(args), "coverage %s/tc2 --id %s", tmp, ids[i]);
		same_chunked(args, 1024);
	}
	const long tc2_joined = chunks_joined - before;
	/* Frame errors in a generated formatted capture. */
	snprintf(cmd, sizeof(cmd),
		 "%s gen --qemu-log %s/recurse-thumb-O0.log --elf %s/recurse-thumb-O0 --protocol ptm --formatted "
		 "--sync-period 256 --repeat %d -o %s/bad 2>/dev/null",
		 tool, progs, progs, SAN_BUILD ? 2 : 6, tmp);
	CHECK_EQ(run(cmd).status, 0);
	char path[4200];
	snprintf(path, sizeof(path), "%s/bad/trace.bin", tmp); /* (formatted: one buffer) */
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	long corrupted = 0;
	if (f) {
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		/* A reserved ID (0x79) in the first byte of every 97th frame. */
		for (long at = 16 * 40; at + 16 <= size; at += 16 * 97) {
			fseek(f, at, SEEK_SET);
			fputc(0x79 << 1 | 1, f);
			corrupted++;
		}
		fclose(f);
	}
	CHECK(corrupted > 10);
	snprintf(args, sizeof(args), "decode %s/bad --format jsonl", tmp);
	same_chunked(args, 512);
	snprintf(cmd, sizeof(cmd), "%s %s --jobs 1 2>/dev/null | grep -c frame_error", tool, args);
	FILE *p = popen(cmd, "r");
	long nerr = 0;
	CHECK(p && fscanf(p, "%ld", &nerr) == 1);
	if (p)
		pclose(p);
	CHECK(nerr >= corrupted);
	snprintf(args, sizeof(args), "packets %s/bad --format jsonl", tmp);
	same_chunked(args, 512);
	if (!SAN_BUILD) {
		snprintf(args, sizeof(args), "decode %s/bad", tmp);
		same_chunked(args, 512);
		snprintf(args, sizeof(args), "packets %s/bad", tmp);
		same_chunked(args, 512);
	}
	printf("chunks: formatted captures joined %ld chunks (TC2 %ld), %ld by a matching state; %ld frame errors\n",
	       chunks_joined - before, tc2_joined, chunks_matched - matched_before, nerr);
	CHECK(tc2_joined > (SAN_BUILD ? 4 : 20));
	CHECK(chunks_matched - matched_before > 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	CHECK_EQ(system(cmd), 0);
}

static void usage_errors(void)
{
	static const char *const bad[] = { "0", "two", "257", "-1", "" };
	char cmd[4096];
	const char *shared = check_shared_dir();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s decode %s/traces/TC2 --format none --jobs '%s' 2>/dev/null", tool, shared,
			 bad[i]);
		CHECK_EQ(run(cmd).status, 2);
	}
	snprintf(cmd, sizeof(cmd), "%s decode %s/traces/TC2 --format none --jobs=4 2>/dev/null", tool, shared);
	CHECK_EQ(run(cmd).status, 0);
}

int main(void)
{
	tool = tool_path();
	CHECK(tool != NULL);
	if (!tool)
		return check_done("test_jobs");
	const char *shared = check_shared_dir();
	char dir[2048];
	usage_errors();
	snprintf(dir, sizeof(dir), "%s/traces/TC2", shared);
	int ns = num_sources(dir);
	CHECK(ns >= 5);
	all_commands(dir, NULL, ns, 1);
	snprintf(dir, sizeof(dir), "%s/traces/trace_cov_a15", shared);
	all_commands(dir, NULL, num_sources(dir), 1);
	worker_printing(shared);
	roundtrip_matrix();
	chunked_generated();
	chunked_formatted(shared);
	chunked_default();
	chunked_matrix();
	printf("%ld runs compared with --jobs 1, %ld differ\n", compared, differing);
	CHECK(compared > 0);
	CHECK_EQ(differing, 0);
	return check_done("test_jobs");
}
