/* cli_run.h - running the csdec tool from a test: a shell command's exit
 * status with its standard output and standard error captured. */
#ifndef CSD_TEST_CLI_RUN_H
#define CSD_TEST_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Run `cmd` under sh with stderr in err_path (if not NULL); return its exit
 * status (-1 if it did not exit normally: a signal, a timeout's kill, or if
 * the command does not fit) and
 * up to cap - 1 bytes of its stdout, NUL-terminated. */
static inline int cli_run_cmd(const char *cmd, const char *err_path, char *out, size_t cap)
{
	char full[8192];
	int len = err_path ? snprintf(full, sizeof(full), "{ %s ; } 2>%s", cmd, err_path)
			   : snprintf(full, sizeof(full), "%s", cmd);
	if (len < 0 || (size_t)len >= sizeof(full))
		return -1; /* a cut command must not run */
	FILE *p = popen(full, "r");
	if (!p)
		return -1;
	size_t n = 0, got;
	char sink[4096];
	while ((got = fread(n + 1 < cap ? out + n : sink, 1, n + 1 < cap ? cap - 1 - n : sizeof(sink), p)) > 0)
		if (n + 1 < cap)
			n += got;
	if (cap)
		out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The file's text (at most cap - 1 bytes), "" if it cannot be read. */
static inline const char *cli_read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	if (f) {
		n = fread(buf, 1, cap - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

#endif
