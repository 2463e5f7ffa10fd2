/*
 * test_viewer.c - the timeline and the folded stacks as a person looks at
 * them: speedscope's static build (npm package speedscope, found under
 * `npm root -g` or SPEEDSCOPE_DIR) served over HTTP on 127.0.0.1 (it will
 * not fetch a profile from a file: page) and loaded by headless Chromium.
 * The sandwich view lists the functions in the page: every function of the
 * sample program must be there and no error message. Screenshots of the
 * timeline's flame chart and of the flame graph stay in build/viewer/.
 * Skipped (and says so) when chromium or speedscope is not installed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"

static char dom[1 << 22];

static void look(int port, const char *profile, const char *shot)
{
	char cmd[4096];
	const char *flags = "--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=10000";
	snprintf(cmd, sizeof(cmd), "timeout 120 chromium %s --dump-dom 'http://127.0.0.1:%d/release/index.html#profileURL=/%s&view=sandwich' 2>/dev/null",
		 flags, port, profile);
	CHECK_EQ(cli_run_cmd(cmd, NULL, dom, sizeof(dom)), 0);
	static const char *const names[] = { "_start", "fib", "classify", "mix_arm" };
	size_t shown = 0;
	for (size_t i = 0; i < 4; i++) {
		char cell[64];
		snprintf(cell, sizeof(cell), ">%s<", names[i]);
		if (strstr(dom, cell))
			shown++;
		else
			fprintf(stderr, "test_viewer: %s: %s not in the page\n", profile, names[i]);
	}
	int error = strstr(dom, "Something went wrong") != NULL || strstr(dom, "Unrecognized format") != NULL;
	printf("viewer %s: %zu of 4 functions shown, %s\n", profile, shown, error ? "an error shown" : "no error");
	CHECK_EQ(shown, 4);
	CHECK(!error);
	snprintf(cmd, sizeof(cmd), "timeout 120 chromium %s --window-size=1280,720 --screenshot=%s 'http://127.0.0.1:%d/release/index.html#profileURL=/%s' >/dev/null 2>&1",
		 flags, shot, port, profile);
	CHECK_EQ(system(cmd), 0);
	struct stat st;
	CHECK(stat(shot, &st) == 0 && st.st_size > 1000);
}

int main(void)
{
	const char *tool = getenv("CSD_TOOL");
	char dir[1024], cmd[4096], release[1200], portfile[1300];
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	const char *ss = getenv("SPEEDSCOPE_DIR");
	if (ss && *ss) {
		snprintf(dir, sizeof(dir), "%s", ss);
	} else if (cli_run_cmd("npm root -g 2>/dev/null", NULL, dir, sizeof(dir)) == 0 && dir[0]) {
		dir[strcspn(dir, "\n")] = 0;
		strncat(dir, "/speedscope/dist", sizeof(dir) - strlen(dir) - 1);
	} else {
		dir[0] = 0;
	}
	snprintf(release, sizeof(release), "%s/release/index.html", dir);
	if (system("command -v chromium >/dev/null 2>&1") != 0 || access(release, R_OK) != 0) {
		printf("test_viewer: skipped (needs chromium and the npm package speedscope: %s)\n", release);
		return 0;
	}
	/* A directory served over HTTP: speedscope's build and the files to view. */
	char tmp[] = "/tmp/csd_test_viewer_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	snprintf(cmd, sizeof(cmd), "ln -s '%s/release' %s/release && mkdir -p build/viewer", dir, tmp);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s timeline examples/sample --elf examples/sample/demo.elf -o %s/timeline.json", tool, tmp);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s profile examples/sample --elf examples/sample/demo.elf --format folded > %s/stacks.folded",
		 tool, tmp);
	CHECK_EQ(system(cmd), 0);
	snprintf(portfile, sizeof(portfile), "%s/port", tmp);
	pid_t server = fork();
	if (server == 0) {
		if (chdir(tmp) != 0 || !freopen(portfile, "w", stdout))
			_exit(127);
		execl("/usr/bin/python3", "python3", "-c",
		      "import http.server as h, functools, sys\n"
		      "class Q(h.SimpleHTTPRequestHandler):\n"
		      "    def log_message(self, *a): pass\n"
		      "s = h.ThreadingHTTPServer(('127.0.0.1', 0), Q)\n"
		      "print(s.server_address[1], flush=True)\n"
		      "s.serve_forever()\n",
		      (char *)NULL);
		_exit(127);
	}
	int port = 0;
	for (int i = 0; i < 100 && port <= 0; i++) {
		FILE *f = fopen(portfile, "r");
		if (f) {
			if (fscanf(f, "%d", &port) != 1)
				port = 0;
			fclose(f);
		}
		if (port <= 0)
			nanosleep(&(struct timespec){ .tv_sec = 0, .tv_nsec = 100000000 }, NULL);
	}
	CHECK(port > 0);
	if (port > 0) {
		look(port, "timeline.json", "build/viewer/timeline.png");
		look(port, "stacks.folded", "build/viewer/flamegraph.png");
	}
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_viewer");
}
