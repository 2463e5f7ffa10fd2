/*
 * test_cli_port.c - `csdec decode` on a trace port capture without FSYNC.
 *
 * A recorded program run (tests/programs.mk) is traced by `csdec gen
 * --formatted=port` (PTM and cycle-accurate ETMv3 with timestamps in one
 * capture). Its buffer file, FSYNCs stripped and its start cut at each byte
 * offset 0-15, must decode to the same JSON Lines records as the synced
 * capture. "The same" is read as: for each source, every record after the
 * I-sync that follows its first A-sync decodable after the cut (the first
 * A-sync after the source's first ID byte in the first whole frame after
 * the cut, found by parsing the original's frames) is identical, offsets
 * mapped back through the edit, from the end of the first range after it
 * on. Before that the cut capture cannot be decoded (no frame, no ID, no
 * sync); the records at that I-sync differ by nature (a decoder that starts
 * there reports trace coming on), and so does the first range after it,
 * which in the synced decode may have begun before the I-sync: it must end
 * at the same instruction.
 * The cut capture reports where frames start (one frame_sync record at a
 * frame start of the original) and no frame error, and exits as the synced
 * one does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "port_edit.h"

static char tmpdir[] = "/tmp/csd_test_cli_port_XXXXXX";

/* One JSON Lines record: its trace ID (-1: none), offset, and the text. */
struct line {
	int id;
	uint64_t offset;
	char *text;
};

struct lines {
	struct line *v;
	size_t n, cap;
};

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The number after "key": in s, or -1. */
static long long json_num(const char *s, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(s, k);
	return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/* Runs cmd and splits its output into records; returns the exit status. */
static int run_lines(const char *cmd, struct lines *l)
{
	memset(l, 0, sizeof(*l));
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return -1;
	char buf[4096];
	while (fgets(buf, sizeof(buf), p)) {
		if (l->n == l->cap) {
			l->cap = l->cap * 2 + 256;
			l->v = realloc(l->v, l->cap * sizeof(*l->v));
			if (!l->v)
				abort();
		}
		struct line *x = &l->v[l->n++];
		x->id = (int)json_num(buf, "id");
		x->offset = (uint64_t)json_num(buf, "offset");
		x->text = strdup(buf);
		if (!x->text)
			abort();
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The record's text with its offset replaced by `off`. */
static void with_offset(const char *text, uint64_t off, char *out, size_t cap)
{
	const char *p = strstr(text, "\"offset\":");
	if (!p) {
		snprintf(out, cap, "%s", text);
		return;
	}
	const char *q = p + 9;
	while (*q >= '0' && *q <= '9')
		q++;
	snprintf(out, cap, "%.*s\"offset\":%llu%s", (int)(p - text), text, (unsigned long long)off, q);
}

static int write_file(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(b, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(void)
{
	const char *tool = getenv("CSD_TOOL"), *progs = getenv("CSD_PROGRAMS");
	char cmd[16384], synced[1024], cut[1024], path[1100];
	if (!tool || !progs) {
		fprintf(stderr, "CSD_TOOL or CSD_PROGRAMS is not set (run through make test)\n");
		return 1;
	}
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(synced, sizeof(synced), "%s/synced", tmpdir);
	snprintf(cut, sizeof(cut), "%s/cut", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "%s gen --qemu-log %s/switch-thumb-O2.log --elf %s/switch-thumb-O2 --protocol ptm --protocol etm3 "
		 "--cycle-accurate --timestamps --sync-period 512 --formatted=port -o %s 2>/dev/null && cp -r %s %s",
		 tool, progs, progs, synced, synced, cut);
	CHECK_EQ(system(cmd), 0);

	snprintf(path, sizeof(path), "%s/trace.bin", synced);
	size_t n;
	uint8_t *cap = check_read_file(path, &n);
	CHECK(cap != NULL && n > 20000);
	if (!cap)
		return check_done("test_cli_port");
	struct frame_map m = frame_map(cap, n);
	struct edit s = edit_strip_fsyncs(cap, n, n);
	CHECK(s.n + 4 * (n / (16 * 64 + 4)) <= n);     /* gen writes an FSYNC every 64 frames */

	/* The synced capture's records and packets. */
	struct lines rec, pkt;
	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl --order capture", tool, synced);
	const int status = run_lines(cmd, &rec);
	snprintf(cmd, sizeof(cmd), "%s packets %s --format jsonl", tool, synced);
	CHECK_EQ(run_lines(cmd, &pkt), status);
	CHECK(rec.n > 10000);

	size_t compared = 0;
	for (unsigned k = 0; k < 16; k++) {
		struct edit c = edit_cut(&s, k, 0, 0, NULL, 0);
		snprintf(path, sizeof(path), "%s/trace.bin", cut);
		CHECK_EQ(write_file(path, c.b, c.n), 0);
		struct lines got;
		snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl --order capture", tool, cut);
		CHECK_EQ(run_lines(cmd, &got), status);

		/* One frame_sync at a frame start of the original, no error. */
		size_t syncs = 0, errors = 0;
		for (size_t i = 0; i < got.n; i++) {
			if (strstr(got.v[i].text, "\"type\":\"frame_sync\"")) {
				syncs++;
				CHECK(got.v[i].offset < c.n && m.start[c.from[got.v[i].offset]]);
			}
			errors += strstr(got.v[i].text, "\"type\":\"frame_error\"") != NULL;
		}
		CHECK_EQ(syncs, 1);
		CHECK_EQ(errors, 0);

		/* Per source: the records after the I-sync that follows its
		 * first A-sync decodable after the cut. */
		uint64_t from[128];
		id_known_from(&m, c.from[0], from);
		for (int id = 1; id < 0x70; id++) {
			uint64_t async = UINT64_MAX, isync = UINT64_MAX;
			for (size_t i = 0; i < pkt.n && isync == UINT64_MAX; i++) {
				if (pkt.v[i].id != id || pkt.v[i].offset < from[id])
					continue;
				if (async == UINT64_MAX && strstr(pkt.v[i].text, "\"packet\":\"async\""))
					async = pkt.v[i].offset;
				else if (async != UINT64_MAX && strstr(pkt.v[i].text, "\"packet\":\"isync\""))
					isync = pkt.v[i].offset;
			}
			if (isync == UINT64_MAX)
				continue;
			/* The cut decode's first range after it begins at the
			 * I-sync; the synced decode's range that ends where it
			 * does may have begun before (ETMv3 traces on through a
			 * periodic I-sync) and is reported at or before it. From
			 * after that range on, the records are the same. */
			uint64_t first_range = UINT64_MAX;
			const char *first_end = NULL;
			for (size_t i = 0; i < got.n && first_range == UINT64_MAX; i++)
				if (got.v[i].id == id && got.v[i].offset < c.n && c.from[got.v[i].offset] > isync &&
				    strstr(got.v[i].text, "\"type\":\"range\"")) {
					first_range = c.from[got.v[i].offset];
					first_end = strstr(got.v[i].text, "\"end\":");
				}
			const char *synced_end = NULL;
			for (size_t i = 0; i < rec.n; i++)
				if (rec.v[i].id == id && rec.v[i].offset <= first_range &&
				    strstr(rec.v[i].text, "\"type\":\"range\""))
					synced_end = strstr(rec.v[i].text, "\"end\":");
			CHECK(first_end && synced_end && strncmp(first_end, synced_end, strcspn(first_end, ",")) == 0);
			size_t a = 0, b = 0, same = 0;
			for (;;) {
				while (a < rec.n && (rec.v[a].id != id || rec.v[a].offset <= first_range))
					a++;
				while (b < got.n && (got.v[b].id != id || got.v[b].offset >= c.n ||
						     c.from[got.v[b].offset] <= first_range))
					b++;
				if (a == rec.n || b == got.n)
					break;
				char mapped[4200];
				with_offset(got.v[b].text, c.from[got.v[b].offset], mapped, sizeof(mapped));
				if (strcmp(mapped, rec.v[a].text) != 0) {
					fprintf(stderr, "cut %u, ID 0x%02x: record %zu differs:\n  synced %s  cut    %s", k,
						id, a, rec.v[a].text, mapped);
					break;
				}
				same++;
				a++;
				b++;
			}
			CHECK(a == rec.n && b == got.n);
			CHECK(same > 1000);
			compared += same;
		}
		lines_free(&got);
		edit_free(&c);
	}
	printf("test_cli_port: %zu records compared\n", compared);
	CHECK(compared > 16 * 2 * 1000);

	lines_free(&rec);
	lines_free(&pkt);
	edit_free(&s);
	frame_map_free(&m);
	free(cap);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_cli_port");
}
