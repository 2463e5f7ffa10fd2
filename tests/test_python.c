/*
 * test_python.c - the csdec Python package (python/csdec) under Debian's
 * /usr/bin/python3: tests/python/test_csdec.py compares its records with the
 * tool's JSON Lines on TC2, the sample and perf.data files that `csdec gen
 * --perf-data` writes from the recorded test programs (CSD_PROGRAMS; ETMv3
 * and PTM, versions 1 and 2, one and two CPUs, the mapped file moved, trace
 * lost or damaged), and its instruction count with the tool's. The package
 * loads build/libcsdec.so (CSDEC_LIB). Also:
 * `import csdec` works with PYTHONPATH=python from the built tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(void)
{
	const char *tool = getenv("CSD_TOOL");
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	if (access("/usr/bin/python3", X_OK) != 0) {
		printf("test_python: skipped (no /usr/bin/python3)\n");
		return 0;
	}
	char cmd[4096];
	/* the tool under test is the plain build: the package talks to the library */
	snprintf(cmd, sizeof(cmd),
		 "cd python/.. && PYTHONPATH=python /usr/bin/python3 -c 'import csdec; print(csdec.library_path)'");
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "PYTHONPATH=python CSDEC_LIB=build/libcsdec.so CSD_TOOL=%s /usr/bin/python3 tests/python/test_csdec.py",
		 tool);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "PYTHONPATH=python CSDEC_LIB=build/libcsdec.so /usr/bin/python3 examples/trace_summary.py %s/traces/TC2 > /dev/null",
		 check_shared_dir());
	CHECK_EQ(system(cmd), 0);
	return check_done("test_python");
}
