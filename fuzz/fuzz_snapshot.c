/*
 * fuzz_snapshot.c - libFuzzer harness for the snapshot reader
 * (csd_snapshot_*).
 *
 * Input: texts separated by lines "%%": snapshot.ini, trace.ini, then up to
 * FUZZ_SNAP_DEVICES device files written as d0.ini, d1.ini, ... (a missing
 * part is a missing file). They go into a private directory made for this
 * input (mkdtemp) together with two fixed data files, trace.bin and
 * dump.bin, which buffers and dumps may name; everything is removed before
 * returning. Inputs naming ".." are skipped: the reader joins names to
 * the directory, and the harness must not read files outside it.
 *
 * Checked without an oracle: csd_snapshot_open() returns 0 with a snapshot,
 * or an error with a NULL snapshot and a message that fits the error buffer
 * (bytes past the given length untouched); every index below a count gives
 * an item with its strings set and every path inside the directory; a
 * source's buffer index is -1 or a buffer; register look-ups agree with the
 * source configuration; loading the dumps into an image succeeds with the
 * number of dumps, or fails with an error code the API lists.
 */
#include <stdio.h>
#include <unistd.h>

#include "fuzz_common.h"

#define FUZZ_SNAP_DEVICES 12
#define FUZZ_SNAP_PARTS (2 + FUZZ_SNAP_DEVICES)
#define FUZZ_SNAP_SEP "\n%%\n"

static const uint8_t snap_data_file[64] = {
	0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0x00, 0x80, 0x00, 0xC0, 0x01, 0x84, 0x84, 0x84, 0x84,
};

static const char *const snap_fixed_files[] = { "trace.bin", "dump.bin" };

static void snap_path(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	FUZZ_CHECK(n > 0 && (size_t)n < cap);
}

static void snap_write(const char *dir, const char *name, const void *data, size_t size)
{
	char path[512];
	snap_path(path, sizeof(path), dir, name);
	FILE *f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(data, 1, size, f) == size);
	FUZZ_CHECK(fclose(f) == 0);
}

static const uint8_t *snap_find(const uint8_t *p, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	for (size_t i = 0; i + m <= n; i++)
		if (memcmp(p + i, pat, m) == 0)
			return p + i;
	return NULL;
}

static int snap_error_code(int rc)
{
	return rc == CSD_EINVAL || rc == CSD_EIO || rc == CSD_EFORMAT || rc == CSD_ENOMEM || rc == CSD_ENOENT;
}

static int snap_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return path && strncmp(path, dir, n) == 0 && path[n] == '/';
}

static void snap_check(const csd_snapshot *snap, const char *dir)
{
	size_t nb = csd_snapshot_num_buffers(snap), ns = csd_snapshot_num_sources(snap);
	size_t nd = csd_snapshot_num_dumps(snap);
	for (size_t i = 0; i < nb; i++) {
		const struct csd_snapshot_buffer *b = csd_snapshot_buffer(snap, i);
		FUZZ_CHECK(b && b->name && b->format && snap_inside(b->path, dir));
		FUZZ_CHECK(b->frame_format <= CSD_FRAME_PORT);
	}
	FUZZ_CHECK(csd_snapshot_buffer(snap, nb) == NULL);
	for (size_t i = 0; i < ns; i++) {
		const struct csd_snapshot_source *s = csd_snapshot_source(snap, i);
		FUZZ_CHECK(s && s->name && s->type);
		FUZZ_CHECK(s->buffer >= -1 && s->buffer < (long)nb);
		FUZZ_CHECK(s->config.size == sizeof(s->config) && s->config.protocol <= CSD_PROTO_PTM);
		FUZZ_CHECK(s->config.trace_id < 0x80 && s->config.core_profile <= CSD_CORE_M);
		uint64_t v;
		int rc = csd_snapshot_reg(snap, s->name, "ETMCR", &v);
		FUZZ_CHECK(rc == CSD_OK || rc == CSD_ENOENT || rc == CSD_EFORMAT);
		/* A source was only accepted with a 32-bit ETMCR (or none). */
		FUZZ_CHECK(rc != CSD_OK || v == s->config.etmcr);
		FUZZ_CHECK(rc != CSD_ENOENT || s->config.etmcr == 0);
		csd_image *img = csd_image_new();
		FUZZ_CHECK(img != NULL);
		rc = csd_snapshot_load_image(snap, s->core_name ? s->core_name : s->name, img);
		FUZZ_CHECK(rc >= 0 || snap_error_code(rc));
		csd_image_free(img);
	}
	FUZZ_CHECK(csd_snapshot_source(snap, ns) == NULL);
	for (size_t i = 0; i < nd; i++) {
		const struct csd_snapshot_dump *d = csd_snapshot_dump(snap, i);
		FUZZ_CHECK(d && d->device && snap_inside(d->path, dir));
	}
	FUZZ_CHECK(csd_snapshot_dump(snap, nd) == NULL);
	csd_image *img = csd_image_new();
	FUZZ_CHECK(img != NULL);
	int rc = csd_snapshot_load_image(snap, NULL, img);
	FUZZ_CHECK(rc == (int)nd || snap_error_code(rc));
	csd_image_free(img);
	uint64_t v;
	FUZZ_CHECK(csd_snapshot_reg(snap, "no such device here", "ETMCR", &v) == CSD_ENOENT);
}

/* What the current input wrote, for fuzz_on_failure. */
static char snap_dir[256];
static char snap_names[FUZZ_SNAP_PARTS][16];
static size_t snap_parts;

static void snap_cleanup(void)
{
	char path[512];
	for (size_t i = 0; i < snap_parts; i++) {
		snprintf(path, sizeof(path), "%s/%s", snap_dir, snap_names[i]);
		unlink(path);
	}
	for (size_t i = 0; i < sizeof(snap_fixed_files) / sizeof(snap_fixed_files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", snap_dir, snap_fixed_files[i]);
		unlink(path);
	}
	rmdir(snap_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (snap_find(data, size, ".."))
		return 0;
	const char *tmp = getenv("TMPDIR");
	char *dir = snap_dir;
	snprintf(dir, sizeof(snap_dir), "%s/csdec-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 200 ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	snap_parts = 0;
	fuzz_on_failure = snap_cleanup;

	char (*names)[16] = snap_names;
	size_t parts = 0;
	const uint8_t *p = data, *end = data + size;
	while (parts < FUZZ_SNAP_PARTS) {
		const uint8_t *sep = snap_find(p, (size_t)(end - p), FUZZ_SNAP_SEP);
		const uint8_t *stop = sep ? sep : end;
		if (parts == 0)
			snprintf(names[parts], sizeof(names[parts]), "snapshot.ini");
		else if (parts == 1)
			snprintf(names[parts], sizeof(names[parts]), "trace.ini");
		else
			snprintf(names[parts], sizeof(names[parts]), "d%zu.ini", parts - 2);
		snap_write(dir, names[parts], p, (size_t)(stop - p));
		snap_parts = ++parts;
		if (!sep)
			break;
		p = sep + strlen(FUZZ_SNAP_SEP);
	}
	for (size_t i = 0; i < sizeof(snap_fixed_files) / sizeof(snap_fixed_files[0]); i++)
		snap_write(dir, snap_fixed_files[i], snap_data_file, sizeof(snap_data_file));

	/* A short error buffer now and then, with a canary behind it. */
	char err[600];
	size_t errlen = size % 5 == 0 ? 1 + size % 40 : 512;
	memset(err, 0x5A, sizeof(err));
	static char not_set;
	csd_snapshot *snap = (csd_snapshot *)(void *)&not_set; /* open must overwrite it */
	int rc = csd_snapshot_open(dir, &snap, err, errlen);
	for (size_t i = errlen; i < sizeof(err); i++)
		FUZZ_CHECK(err[i] == 0x5A);
	FUZZ_CHECK(memchr(err, 0, errlen) != NULL);
	if (rc == CSD_OK) {
		FUZZ_CHECK(snap != NULL);
		snap_check(snap, dir);
		csd_snapshot_free(snap);
	} else {
		FUZZ_CHECK(snap == NULL && snap_error_code(rc));
		FUZZ_CHECK(errlen < 2 || err[0] != 0);
	}

	fuzz_on_failure = NULL;
	for (size_t i = 0; i < parts; i++) {
		char path[512];
		snap_path(path, sizeof(path), dir, names[i]);
		FUZZ_CHECK(unlink(path) == 0);
	}
	for (size_t i = 0; i < sizeof(snap_fixed_files) / sizeof(snap_fixed_files[0]); i++) {
		char path[512];
		snap_path(path, sizeof(path), dir, snap_fixed_files[i]);
		FUZZ_CHECK(unlink(path) == 0);
	}
	FUZZ_CHECK(rmdir(dir) == 0);
	return 0;
}
