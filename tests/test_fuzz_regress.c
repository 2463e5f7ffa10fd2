/*
 * Replays fuzz/regress/ through the fuzz harnesses' entry points, built
 * here without libFuzzer (the harness sources are included with their
 * entry points renamed), so every input that once broke an invariant
 * stays fixed under plain gcc and under ASan/UBSan.
 *
 * fuzz/regress/<harness>/NAME      must pass;
 * fuzz/regress/<harness>/open/NAME inputs of bugs not fixed yet: run and
 *                                  reported, not counted as failures.
 * Each input runs in a child process, since a harness aborts on a broken
 * invariant. The directory comes from CSD_FUZZ_REGRESS (set by
 * tests/fuzz.mk), else fuzz/regress relative to the working directory.
 * The harnesses of the tool's code need files of tools/, which
 * tests/fuzz.mk links in (FUZZ_TOOLS_ALL).
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define LLVMFuzzerTestOneInput fuzz_frame_entry
#include "../fuzz/fuzz_frame.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_etm3_pkt_entry
#include "../fuzz/fuzz_etm3_pkt.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_ptm_pkt_entry
#include "../fuzz/fuzz_ptm_pkt.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_etm3_flow_entry
#include "../fuzz/fuzz_etm3_flow.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_ptm_flow_entry
#include "../fuzz/fuzz_ptm_flow.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_snapshot_entry
#include "../fuzz/fuzz_snapshot.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_image_entry
#include "../fuzz/fuzz_image.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_merge_entry
#include "../fuzz/fuzz_merge.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_qemu_log_entry
#include "../fuzz/fuzz_qemu_log.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_gen_entry
#include "../fuzz/fuzz_gen.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_print_entry
#include "../fuzz/fuzz_print.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_symbols_entry
#include "../fuzz/fuzz_symbols.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_accum_entry
#include "../fuzz/fuzz_accum.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_perf_data_entry
#include "../fuzz/fuzz_perf_data.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_exec_log_entry
#include "../fuzz/fuzz_exec_log.c"
#undef LLVMFuzzerTestOneInput

typedef int (*entry_fn)(const uint8_t *data, size_t size);

static const struct {
	const char *name;
	entry_fn entry;
} harnesses[] = {
	{ "frame", fuzz_frame_entry },
	{ "etm3_pkt", fuzz_etm3_pkt_entry },
	{ "ptm_pkt", fuzz_ptm_pkt_entry },
	{ "etm3_flow", fuzz_etm3_flow_entry },
	{ "ptm_flow", fuzz_ptm_flow_entry },
	{ "snapshot", fuzz_snapshot_entry },
	{ "image", fuzz_image_entry },
	{ "merge", fuzz_merge_entry },
	{ "qemu_log", fuzz_qemu_log_entry },
	{ "gen", fuzz_gen_entry },
	{ "print", fuzz_print_entry },
	{ "symbols", fuzz_symbols_entry },
	{ "accum", fuzz_accum_entry },
	{ "perf_data", fuzz_perf_data_entry },
	{ "exec_log", fuzz_exec_log_entry },
};

static unsigned replayed, open_failing, open_passing;

/* Run entry on data in a child; 1 if it returned normally. A quiet child
 * keeps its diagnostics to itself. */
static int run_isolated(entry_fn entry, const uint8_t *data, size_t size, int quiet)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		if (quiet && !freopen("/dev/null", "w", stderr))
			_exit(1);
		entry(data, size);
		exit(0); /* not _exit: LeakSanitizer checks the child at exit */
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static uint8_t *load(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf)
			break;
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	*size = n;
	return buf;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order, through entry. */
static void replay_dir(const char *dir, entry_fn entry, int open_bugs)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < sizeof(names) / sizeof(names[0]))
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[2048];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		free(names[i]);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		size_t size = 0;
		uint8_t *data = load(path, &size);
		CHECK(data != NULL);
		if (!data)
			continue;
		int ok = run_isolated(entry, data, size, open_bugs);
		free(data);
		if (open_bugs) {
			if (ok) {
				open_passing++;
				printf("note: %s passes now: move it out of open/ if its bug is fixed\n", path);
			} else {
				open_failing++;
				printf("open bug still reproduces: %s\n", path);
			}
			continue;
		}
		replayed++;
		if (!ok)
			fprintf(stderr, "regression input fails: %s\n", path);
		CHECK(ok);
	}
}

int main(void)
{
	const char *root = getenv("CSD_FUZZ_REGRESS");
	if (!root || !*root)
		root = "fuzz/regress";
	for (size_t h = 0; h < sizeof(harnesses) / sizeof(harnesses[0]); h++) {
		char dir[1024];
		/* The degenerate inputs every harness must take. */
		static const uint8_t zeros[FUZZ_HDR_SIZE + 8];
		CHECK(run_isolated(harnesses[h].entry, zeros, 0, 0));
		CHECK(run_isolated(harnesses[h].entry, zeros, sizeof(zeros), 0));
		snprintf(dir, sizeof(dir), "%s/%s", root, harnesses[h].name);
		replay_dir(dir, harnesses[h].entry, 0);
		snprintf(dir, sizeof(dir), "%s/%s/open", root, harnesses[h].name);
		replay_dir(dir, harnesses[h].entry, 1);
	}
	printf("test_fuzz_regress: %u inputs replayed; open bugs: %u still failing, %u passing\n", replayed,
	       open_failing, open_passing);
	CHECK(replayed > 0);
	return check_done("test_fuzz_regress");
}
