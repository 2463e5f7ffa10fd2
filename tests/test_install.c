/*
 * test_install.c - `make install PREFIX=<tmp>` puts the library, header,
 * tool, libcsdec.pc and man page where the contract says; a program built
 * with pkg-config against the installed library links the shared library
 * (SONAME libcsdec.so.0) and runs; DESTDIR stages without changing the
 * paths in libcsdec.pc; `make uninstall` removes every file again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "csdec.h"
#include "cli_run.h"

static char tmpdir[] = "/tmp/csd_test_install_XXXXXX";
static const char *srcdir;

/* The inner make must not see the outer one's jobserver or variables. */
#define MAKE_ENV "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES "

static const char *const installed[] = {
	"bin/csdec", "lib/libcsdec.a", "lib/libcsdec.so.0.1.0", "lib/libcsdec.so.0", "lib/libcsdec.so",
	"include/csdec.h", "lib/pkgconfig/libcsdec.pc", "share/man/man1/csdec.1",
	"lib/python3/dist-packages/csdec/__init__.py", "lib/python3/dist-packages/csdec/_lib.py",
	"lib/python3/dist-packages/csdec/_trace.py", "lib/python3/dist-packages/csdec/_perf.py",
	"lib/python3/dist-packages/csdec/_paths.py",
};
#define N_INSTALLED (sizeof(installed) / sizeof(installed[0]))

static int run(const char *cmd, char *out, size_t cap)
{
	return cli_run_cmd(cmd, NULL, out, cap);
}

static const char *at(const char *root, const char *rel)
{
	static char buf[4][2200];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
	return buf[k];
}

static int same_file_contents(const char *a, const char *b)
{
	char cmd[2200], out[64];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s' && echo same", a, b);
	return run(cmd, out, sizeof(out)) == 0 && strcmp(out, "same\n") == 0;
}

static void check_symlink(const char *path, const char *target)
{
	char buf[256];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	CHECK(n > 0);
	if (n > 0) {
		buf[n] = 0;
		CHECK_STR(buf, target);
	}
}

static void check_tree(const char *root_arg)
{
	char root[1024]; /* at() reuses its buffers */
	snprintf(root, sizeof(root), "%s", root_arg);
	struct stat st;
	for (size_t i = 0; i < N_INSTALLED; i++) {
		int ok = stat(at(root, installed[i]), &st) == 0 && S_ISREG(st.st_mode);
		if (!ok)
			fprintf(stderr, "test_install: missing %s\n", at(root, installed[i]));
		CHECK(ok);
	}
	CHECK(access(at(root, "bin/csdec"), X_OK) == 0);
	check_symlink(at(root, "lib/libcsdec.so"), "libcsdec.so.0.1.0");
	check_symlink(at(root, "lib/libcsdec.so.0"), "libcsdec.so.0.1.0");
	CHECK(same_file_contents(at(root, "include/csdec.h"), at(srcdir, "include/csdec.h")));
	CHECK(same_file_contents(at(root, "share/man/man1/csdec.1"), at(srcdir, "docs/csdec.1")));
}

int main(void)
{
	char cmd[4096], prefix[600], stage[600];
	static char out[1 << 16], expect[1 << 16];
	srcdir = getenv("CSD_SRCDIR");
	const char *shared = check_shared_dir();
	if (!srcdir) {
		fprintf(stderr, "CSD_SRCDIR is not set (run through make test)\n");
		return 1;
	}
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(prefix, sizeof(prefix), "%s/usr", tmpdir);

	snprintf(cmd, sizeof(cmd), MAKE_ENV "make -s -C '%s' install PREFIX='%s' 2>&1", srcdir, prefix);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	if (out[0])
		fprintf(stderr, "%s", out);
	check_tree(prefix);

	/* The installed tool and shared library. */
	snprintf(cmd, sizeof(cmd), "'%s/bin/csdec' --version", prefix);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_STR(out, "csdec 0.1.0\n");
	snprintf(cmd, sizeof(cmd), "readelf -d '%s/lib/libcsdec.so.0.1.0' | grep SONAME", prefix);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "[libcsdec.so.0]") != NULL);

	/* The installed Python package loads the installed library. */
	if (access("/usr/bin/python3", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd),
			 "cd / && env -u CSDEC_LIB PYTHONPATH='%s/lib/python3/dist-packages' /usr/bin/python3 -c "
			 "'import csdec; print(csdec.library_path)'",
			 prefix);
		CHECK_EQ(run(cmd, out, sizeof(out)), 0);
		snprintf(expect, sizeof(expect), "%s/lib/libcsdec.so.0\n", prefix);
		CHECK_STR(out, expect);
	}

	/* pkg-config sees the installed library. */
	char pc[2048];
	snprintf(pc, sizeof(pc), "PKG_CONFIG_PATH='%s/lib/pkgconfig' PKG_CONFIG_LIBDIR= pkg-config", prefix);
	snprintf(cmd, sizeof(cmd), "%s --modversion libcsdec", pc);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(expect, sizeof(expect), "%s\n", csd_version());
	CHECK_STR(out, expect);
	snprintf(cmd, sizeof(cmd), "%s --cflags libcsdec", pc);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(expect, sizeof(expect), "-I%s/include \n", prefix);
	CHECK_STR(out, expect);
	snprintf(cmd, sizeof(cmd), "%s --libs libcsdec", pc);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(expect, sizeof(expect), "-L%s/lib -lcsdec \n", prefix);
	CHECK_STR(out, expect);

	/* The example, built against the installed library only, links the
	 * shared library, runs from it, and prints what the in-tree build
	 * (static library) prints. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && cc -std=c11 -Wall -Werror -o func_count '%s/examples/func_count.c' "
		 "$(%s --cflags --libs libcsdec) 2>&1",
		 tmpdir, srcdir, pc);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "readelf -d '%s/func_count' | grep NEEDED", tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "[libcsdec.so.0]") != NULL);
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s/lib' '%s/func_count' '%s/traces/TC2'", prefix, tmpdir, shared);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "'%s/build/examples/func_count' '%s/traces/TC2'", srcdir, shared);
	CHECK_EQ(run(cmd, expect, sizeof(expect)), 0);
	CHECK(strstr(out, "total of") != NULL);
	CHECK_STR(out, expect);
	/* The loader takes libcsdec.so.0 from the installed tree. */
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s/lib' ldd '%s/func_count' | grep libcsdec", prefix, tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(expect, sizeof(expect), "libcsdec.so.0 => %s/lib/libcsdec.so.0 (", prefix);
	CHECK(strstr(out, expect) != NULL);

	/* Static linking through pkg-config works too. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && cc -std=c11 -o func_count_static '%s/examples/func_count.c' "
		 "$(%s --cflags libcsdec) '%s/lib/libcsdec.a' && ./func_count_static --help",
		 tmpdir, srcdir, pc, prefix);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strncmp(out, "Usage: func_count", 17) == 0);

	/* DESTDIR stages the tree; the .pc keeps the final paths. */
	snprintf(stage, sizeof(stage), "%s/stage", tmpdir);
	snprintf(cmd, sizeof(cmd), MAKE_ENV "make -s -C '%s' install DESTDIR='%s' PREFIX=/opt/csdec 2>&1", srcdir,
		 stage);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	check_tree(at(stage, "opt/csdec"));
	snprintf(cmd, sizeof(cmd), "grep -c '^prefix=/opt/csdec$' '%s/opt/csdec/lib/pkgconfig/libcsdec.pc'", stage);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_STR(out, "1\n");
	snprintf(cmd, sizeof(cmd), "grep -c '%s' '%s/opt/csdec/lib/pkgconfig/libcsdec.pc'", stage, stage);
	run(cmd, out, sizeof(out));
	CHECK_STR(out, "0\n");

	/* uninstall leaves no file behind. */
	snprintf(cmd, sizeof(cmd), MAKE_ENV "make -s -C '%s' uninstall DESTDIR='%s' PREFIX=/opt/csdec 2>&1", srcdir,
		 stage);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "find '%s' ! -type d | wc -l", stage);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_STR(out, "0\n");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_install");
}
