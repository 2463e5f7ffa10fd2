/*
 * test_help.c - the tool's manners: `csdec --help` lists the commands; each
 * command's --help and -h print its usage on stdout and exit 0; `--version`
 * names the library version; docs/csdec.1 is a man page groff accepts
 * without warnings, of the same version, naming every command and every
 * option that the help texts show.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "csdec.h"
#include "cli_run.h"

#define MAX_CMDS 32

/* Commands `csdec --help` lists before their code is in the tool: reported,
 * not failed, while `csdec CMD --help` says the command is unknown. */
static const char *const pending_commands[] = { NULL };

static int run(const char *cmd, char *out, size_t cap)
{
	return cli_run_cmd(cmd, NULL, out, cap);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[1 << 18];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* The man page source as text: "\-" is a minus sign, "\(em" a dash. */
static void unescape_man(char *s)
{
	char *w = s;
	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] == '-') {
			*w++ = '-';
			r += 2;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

static int is_opt_char(char c)
{
	return islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-';
}

/* `opt` ("--name") occurs in text, not as the start of a longer option. */
static int has_option(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = text; (p = strstr(p, opt)) != NULL; p++)
		if (!is_opt_char(p[n]) && (p == text || p[-1] != '-'))
			return 1;
	return 0;
}

/* Every "--option" of a help text is in the man page. */
static void check_options_documented(const char *cmd, const char *help, const char *man)
{
	int seen = 0;
	for (const char *p = help; (p = strstr(p, "--")) != NULL;) {
		char opt[64];
		size_t n = 2;
		memcpy(opt, "--", 2);
		while (n + 1 < sizeof(opt) && is_opt_char(p[n])) {
			opt[n] = p[n];
			n++;
		}
		opt[n] = 0;
		p += n;
		if (n <= 2)
			continue;
		seen++;
		if (!has_option(man, opt)) {
			fprintf(stderr, "test_help: option %s of '%s' is not in docs/csdec.1\n", opt, cmd);
			CHECK(0);
		} else {
			CHECK(1);
		}
	}
	CHECK(seen > 0);
}

static int is_pending(const char *cmd)
{
	for (size_t i = 0; pending_commands[i]; i++)
		if (strcmp(pending_commands[i], cmd) == 0)
			return 1;
	return 0;
}

int main(void)
{
	const char *tool = getenv("CSD_TOOL");
	const char *srcdir = getenv("CSD_SRCDIR");
	char cmd[2048], path[1024];
	static char out[1 << 16], top[1 << 16];
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/docs/csdec.1", srcdir && *srcdir ? srcdir : ".");
	char *man = read_text(path);
	CHECK(man != NULL);
	if (!man)
		return check_done("test_help");
	unescape_man(man);

	/* The commands, from the tool's own usage ("Commands:" up to a blank line). */
	snprintf(cmd, sizeof(cmd), "%s --help", tool);
	CHECK_EQ(run(cmd, top, sizeof(top)), 0);
	CHECK(strncmp(top, "Usage: csdec", 12) == 0);
	char cmds[MAX_CMDS][32];
	int n_cmds = 0;
	const char *list = strstr(top, "\nCommands:\n");
	CHECK(list != NULL);
	for (const char *line = list ? list + 11 : ""; *line && *line != '\n';) {
		const char *eol = strchr(line, '\n');
		if (line[0] == ' ' && line[1] == ' ' && islower((unsigned char)line[2]) && n_cmds < MAX_CMDS) {
			size_t n = 0;
			while (n + 1 < sizeof(cmds[0]) && islower((unsigned char)line[2 + n])) {
				cmds[n_cmds][n] = line[2 + n];
				n++;
			}
			cmds[n_cmds++][n] = 0;
		}
		line = eol ? eol + 1 : line + strlen(line);
	}
	int have_packets = 0, have_decode = 0;
	for (int i = 0; i < n_cmds; i++) {
		have_packets |= strcmp(cmds[i], "packets") == 0;
		have_decode |= strcmp(cmds[i], "decode") == 0;
	}
	CHECK(have_packets && have_decode);
	check_options_documented("csdec", top, man);

	for (int i = 0; i < n_cmds; i++) {
		const char *c = cmds[i];
		char usage[64], synopsis[64];
		snprintf(usage, sizeof(usage), "Usage: csdec %.31s", c);
		snprintf(synopsis, sizeof(synopsis), "csdec %.31s", c);
		snprintf(cmd, sizeof(cmd), "%s %s --help 2>&1", tool, c);
		int rc = run(cmd, out, sizeof(out));
		if (rc != 0 && is_pending(c) && strstr(out, "unknown command")) {
			fprintf(stderr, "test_help: pending: '%s' is listed by csdec --help but not a command yet\n", c);
			continue;
		}
		CHECK_EQ(rc, 0);
		if (strncmp(out, usage, strlen(usage)) != 0) {
			fprintf(stderr, "test_help: '%s --help' does not begin with '%s'\n", c, usage);
			CHECK(0);
		}
		check_options_documented(c, out, man);
		CHECK(strstr(man, synopsis) != NULL);
		snprintf(cmd, sizeof(cmd), "%s %s -h 2>/dev/null", tool, c);
		CHECK_EQ(run(cmd, out, sizeof(out)), 0);
		CHECK(strncmp(out, usage, strlen(usage)) == 0);
	}

	/* One version everywhere. */
	char want[64];
	snprintf(want, sizeof(want), "csdec %s\n", csd_version());
	snprintf(cmd, sizeof(cmd), "%s --version", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_STR(out, want);
	snprintf(want, sizeof(want), "\"csdec %s\"", csd_version());
	CHECK(strstr(man, ".TH CSDEC 1 ") != NULL);
	CHECK(strstr(man, want) != NULL);
	for (const char *s = "NAME\0SYNOPSIS\0DESCRIPTION\0OPTIONS\0EXIT STATUS\0"; *s; s += strlen(s) + 1) {
		char sh[64];
		snprintf(sh, sizeof(sh), ".SH %s\n", s);
		CHECK(strstr(man, sh) != NULL);
	}

	/* groff reads the page without a warning (-ww: all warnings). */
	snprintf(cmd, sizeof(cmd), "command -v groff >/dev/null || echo no-groff");
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	if (strstr(out, "no-groff")) {
		fprintf(stderr, "test_help: groff not installed, man page syntax not checked\n");
	} else {
		snprintf(cmd, sizeof(cmd), "LC_ALL=C groff -man -ww -z %s 2>&1", path);
		CHECK_EQ(run(cmd, out, sizeof(out)), 0);
		CHECK_STR(out, "");
	}
	return check_done("test_help");
}
