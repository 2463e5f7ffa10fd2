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

static void roundtrip_matrix(void)
{
	const char *snaps = getenv("CSD_GEN_SNAPSHOTS"), *progs = getenv("CSD_PROGRAMS");
	CHECK(snaps != NULL && progs != NULL);
	if (!snaps || !progs)
		return;
	DIR *d = opendir(snaps);
	CHECK(d != NULL);
	if (!d)
		return;
	char *names[1024];
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 1024;)
		if (e->d_name[0] != '.' && strstr(e->d_name, "--"))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	CHECK(n > 0);
	long multi = 0, single = 0, seen_multi = 0, seen_single = 0;
	for (size_t i = 0; i < n; i++) {
		char dir[2048], elf[2048], prog[1024], args[4096];
		snprintf(dir, sizeof(dir), "%s/%s", snaps, names[i]);
		snprintf(prog, sizeof(prog), "%s", names[i]);
		*strstr(prog, "--") = 0;
		snprintf(elf, sizeof(elf), "%s/%s", progs, prog);
		struct stat sb;
		int have_elf = stat(elf, &sb) == 0;
		int ns = num_sources(dir);
		CHECK(ns > 0);
		/* The sanitizer build of the tool is some ten times slower:
		 * there every sixth snapshot of each kind. */
		if (ns > 1 && (!SAN_BUILD || seen_multi++ % 6 == 0)) {
			all_commands(dir, have_elf ? elf : NULL, ns, !SAN_BUILD);
			multi++;
		} else if (ns == 1 && (!SAN_BUILD || seen_single++ % 6 == 0)) {
			snprintf(args, sizeof(args), "decode %s --format jsonl", dir);
			same_output(args, all_jobs, 1);
			single++;
		}
		free(names[i]);
	}
	printf("round-trip matrix: %ld snapshots with several sources compared, %ld with one\n", multi, single);
	CHECK(multi > 0);
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
	roundtrip_matrix();
	printf("%ld runs compared with --jobs 1, %ld differ\n", compared, differing);
	CHECK(compared > 0);
	CHECK_EQ(differing, 0);
	return check_done("test_jobs");
}
