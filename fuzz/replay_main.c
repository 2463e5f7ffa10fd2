/*
 * replay_main.c - a main() for a harness without libFuzzer: runs every file
 * named on the command line (directories: every file in them) through
 * LLVMFuzzerTestOneInput once. Used by `make fuzz-coverage` to measure what
 * the corpora reach, and handy under a debugger.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long replay_count;

static void replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
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
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	replay_count++;
}

static void replay_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		perror(path);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		replay_file(path);
		return;
	}
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char full[4096];
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
			replay_file(full);
	}
	if (d)
		closedir(d);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		replay_path(argv[i]);
	printf("%lu inputs replayed\n", replay_count);
	return 0;
}
