/*
 * A capture cut anywhere ends normally: the real TC2 snapshot (three ETMv3
 * sources and a PTM in one formatted ETB buffer) with its buffer cut at
 * frame boundaries and mid-frame decodes with exit status 0, no error, at
 * most one "truncated" record per source (its last), "frame_truncated"
 * where the cut falls inside a frame, and otherwise the records of the
 * whole capture.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"

#define MAX_LINES 200000
#define MAX_ID 128

struct lines {
	char **v;
	int *id;
	size_t n;
};

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	free(l->id);
	memset(l, 0, sizeof(*l));
}

/* The JSON Lines of a file, each with its "id" (-1 if none). */
static void read_lines(const char *path, struct lines *l)
{
	memset(l, 0, sizeof(*l));
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	l->v = calloc(MAX_LINES, sizeof(*l->v));
	l->id = calloc(MAX_LINES, sizeof(*l->id));
	char buf[4096];
	while (l->n < MAX_LINES && fgets(buf, sizeof(buf), f)) {
		const char *k = strstr(buf, "\"id\":");
		l->id[l->n] = k ? atoi(k + 5) : -1;
		l->v[l->n++] = strdup(buf);
	}
	fclose(f);
}

static int is_type(const char *line, const char *type)
{
	char key[64];
	snprintf(key, sizeof(key), "{\"type\":\"%s\"", type);
	return strncmp(line, key, strlen(key)) == 0;
}

static uint8_t *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *b = malloc(1 << 20);
	*n = b ? fread(b, 1, 1 << 20, f) : 0;
	fclose(f);
	return b;
}

/* Per source: the records of `cut` are those of `whole` except for the
 * last two before its truncated record (the range open at the cut is
 * closed there, shorter). Returns the number of truncated records. */
static int compare_cut(const struct lines *whole, const struct lines *cut, size_t at)
{
	int truncated = 0;
	for (int id = 0; id < MAX_ID; id++) {
		size_t wi = 0, ci = 0, kept = 0, total = 0, trunc_at = SIZE_MAX;
		for (size_t i = 0; i < cut->n; i++)
			if (cut->id[i] == id) {
				if (is_type(cut->v[i], "truncated")) {
					CHECK(trunc_at == SIZE_MAX);
					trunc_at = total;
					truncated++;
				}
				total++;
			}
		if (trunc_at != SIZE_MAX)
			CHECK_EQ(trunc_at, total - 1); /* the source's last record */
		size_t plain = trunc_at != SIZE_MAX ? total - 1 : total;
		size_t compare = plain > 2 ? plain - 2 : 0;
		while (kept < compare) {
			while (ci < cut->n && cut->id[ci] != id)
				ci++;
			while (wi < whole->n && whole->id[wi] != id)
				wi++;
			if (ci >= cut->n || wi >= whole->n) {
				CHECK(0);
				break;
			}
			if (strcmp(cut->v[ci], whole->v[wi]) != 0) {
				fprintf(stderr, "cut at %zu, id %d, record %zu:\n  cut:   %s  whole: %s", at, id, kept,
					cut->v[ci], whole->v[wi]);
				CHECK(0);
				break;
			}
			ci++, wi++, kept++;
		}
	}
	return truncated;
}

int main(void)
{
	const char *shared = getenv("CSD_SHARED"), *tool = getenv("CSD_TOOL");
	if (!shared || !tool) {
		fprintf(stderr, "CSD_SHARED or CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	char src[1024], tmp[] = "/tmp/csd_test_cut_XXXXXX", path[2048], cmd[8192];
	snprintf(src, sizeof(src), "%s/traces/TC2", shared);
	CHECK(mkdtemp(tmp) != NULL);

	/* The snapshot's files, linked; the buffer, cut, is a copy. */
	static const char *const files[] = {
		"snapshot.ini", "trace.ini", "cpu_0.ini", "cpu_1.ini", "cpu_2.ini", "cpu_3.ini", "cpu_4.ini",
		"device_5.ini", "device_6.ini", "device_7.ini", "device_8.ini", "device_9.ini", "device_10.ini",
		"kernel_dump.bin",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char from[2048];
		snprintf(from, sizeof(from), "%s/%s", src, files[i]);
		snprintf(path, sizeof(path), "%s/%s", tmp, files[i]);
		CHECK_EQ(symlink(from, path), 0);
	}
	snprintf(path, sizeof(path), "%s/cstrace.bin", src);
	size_t size = 0;
	uint8_t *trace = read_all(path, &size);
	CHECK(trace != NULL && size > 1024);
	if (!trace)
		return check_done("test_cli_cut");

	char out[2048], err[2048], buf[256];
	snprintf(out, sizeof(out), "%s/out.jsonl", tmp);
	snprintf(err, sizeof(err), "%s/err.txt", tmp);
	snprintf(path, sizeof(path), "%s/cstrace.bin", tmp);

	struct lines whole;
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(trace, 1, size, f) == size);
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl --order capture >%s", tool, tmp, out);
	CHECK_EQ(cli_run_cmd(cmd, err, buf, sizeof(buf)), 0);
	read_lines(out, &whole);
	CHECK(whole.n > 1000);

	size_t cuts = 0, with_truncated = 0, mid_frame = 0;
	for (size_t at = 1; at < size; at += at < 64 ? 1 : 97) {
		f = fopen(path, "wb");
		CHECK(f && fwrite(trace, 1, at, f) == at);
		if (f)
			fclose(f);
		int st = cli_run_cmd(cmd, err, buf, sizeof(buf));
		CHECK_EQ(st, 0);
		struct lines cut;
		read_lines(out, &cut);
		size_t frame_trunc = 0;
		for (size_t i = 0; i < cut.n; i++) {
			CHECK(!is_type(cut.v[i], "error"));
			CHECK(!is_type(cut.v[i], "frame_error"));
			frame_trunc += is_type(cut.v[i], "frame_truncated");
		}
		CHECK_EQ(frame_trunc, at % 16 != 0);
		mid_frame += frame_trunc;
		with_truncated += compare_cut(&whole, &cut, at) > 0;
		if (st != 0)
			fprintf(stderr, "cut at %zu: exit %d: %s\n", at, st, cli_read_text(err, buf, sizeof(buf)));
		lines_free(&cut);
		cuts++;
	}
	/* The cuts did end inside packets and frames. */
	CHECK(with_truncated >= cuts / 10);
	CHECK(mid_frame > cuts / 2);
	printf("test_cli_cut: %zu cuts, %zu ending inside a packet, %zu inside a frame\n", cuts, with_truncated,
	       mid_frame);

	lines_free(&whole);
	free(trace);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_cli_cut");
}
