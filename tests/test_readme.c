/*
 * test_readme.c - the library example of README.md ("Using the library")
 * compiles as it is written and decodes: its C block, given the capture's
 * bytes and a count of the instructions of its range records, is built
 * against the static library and run on examples/sample, and its count
 * must be the tool's for that source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"

static char text[1 << 17], out[4096];

int main(void)
{
	const char *tool = getenv("CSD_TOOL");
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	cli_read_text("README.md", text, sizeof(text));
	const char *start = strstr(text, "```c\n#include <csdec.h>");
	CHECK(start != NULL);
	if (!start)
		return check_done("test_readme");
	start += strlen("```c\n");
	const char *end = strstr(start, "```");
	CHECK(end != NULL);
	if (!end)
		return check_done("test_readme");
	char dir[] = "/tmp/csd_test_readme_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[256], cmd[1024];
	snprintf(path, sizeof(path), "%s/readme.c", dir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return check_done("test_readme");
	/* Its #include lines first, the rest as main's body; the range
	 * records' comment becomes the count. */
	fputs("#include <stdint.h>\n#include <stdio.h>\n", f);
	const char *body = start;
	while (strncmp(body, "#include", 8) == 0) {
		const char *nl = strchr(body, '\n');
		fprintf(f, "%.*s\n", (int)(nl - body), body);
		body = nl + 1;
	}
	fputs("int main(void)\n{\n"
	      "\tstatic uint8_t data[1 << 20];\n"
	      "\tFILE *in = fopen(\"examples/sample/trace.bin\", \"rb\");\n"
	      "\tif (!in)\n\t\treturn 2;\n"
	      "\tsize_t size = fread(data, 1, sizeof(data), in);\n"
	      "\tfclose(in);\n"
	      "\tunsigned long long counted = 0;\n", f);
	const char *comment = "/* r.addr .. r.last: r.count instructions */";
	for (const char *p = body; p < end;) {
		const char *c = strstr(p, comment);
		if (!c || c >= end) {
			fprintf(f, "%.*s", (int)(end - p), p);
			break;
		}
		fprintf(f, "%.*scounted += r.count;", (int)(c - p), p);
		p = c + strlen(comment);
	}
	fputs("\tprintf(\"%llu\\n\", counted);\n\treturn 0;\n}\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -std=c11 -Wall -Wextra -Werror -Iinclude -o %s/readme %s build/libcsdec.a -pthread 2>&1",
		 dir, path);
	int rc = cli_run_cmd(cmd, NULL, out, sizeof(out));
	if (rc != 0)
		fprintf(stderr, "README's example does not build:\n%s\n", out);
	CHECK_EQ(rc, 0);
	unsigned long long counted = 0, tool_count = 0;
	snprintf(cmd, sizeof(cmd), "%s/readme", dir);
	CHECK_EQ(cli_run_cmd(cmd, NULL, out, sizeof(out)), 0);
	CHECK(sscanf(out, "%llu", &counted) == 1);
	/* The example decodes the snapshot's first source. */
	snprintf(cmd, sizeof(cmd), "%s decode examples/sample --id 0x10 --format none", tool);
	CHECK_EQ(cli_run_cmd(cmd, NULL, out, sizeof(out)), 0);
	CHECK(sscanf(out, "%llu instructions", &tool_count) == 1);
	printf("README's library example: %llu instructions (the tool: %llu)\n", counted, tool_count);
	CHECK(counted > 0);
	CHECK_EQ(counted, tool_count);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_readme");
}
