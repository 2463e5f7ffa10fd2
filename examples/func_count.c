/*
 * func_count.c - libcsdec example: decode every ETMv3 / PTM source of a
 * CoreSight snapshot and count the instructions executed per function.
 *
 *   func_count [--id ID]... [--range BYTES] SNAPSHOT-DIR [ELF]
 *
 * With ELF (32-bit little-endian with a .symtab, e.g. vmlinux) the counts
 * are per function symbol, and the ELF's loadable segments join the image
 * (under the snapshot's memory dumps, which show what really ran). Without
 * it they are per aligned address range of BYTES (default 4096).
 *
 * It uses only the public API. Against an installed library:
 *   cc -o func_count func_count.c $(pkg-config --cflags --libs libcsdec)
 */
#include <csdec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 128
#define MAX_REGIONS (1u << 20)

/* A function (or address range) and the instructions counted in it. */
struct region {
	uint64_t start, end;            /* [start, end) */
	char *name;
	uint64_t count;
};

struct table {
	struct region *r;
	size_t n, cap;
	uint64_t outside;               /* instructions in no region */
	uint64_t no_memory;             /* atoms where the code was not in the image */
	uint64_t address_unknown;       /* atoms at addresses the trace did not give */
	uint64_t errors;                /* error records (bad trace) */
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "func_count: out of memory\n");
		exit(1);
	}
	return p;
}

static void add_region(struct table *t, uint64_t start, uint64_t end, const char *name)
{
	if (t->n == MAX_REGIONS) {
		fprintf(stderr, "func_count: too many regions (use a larger --range)\n");
		exit(1);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->r = xrealloc(t->r, t->cap * sizeof(*t->r));
	}
	size_t len = strlen(name);
	char *copy = xrealloc(NULL, len + 1);
	memcpy(copy, name, len + 1);
	t->r[t->n++] = (struct region){ .start = start, .end = end, .name = copy };
}

/* By start; at equal starts the longest first (a sized alias over a
 * size-0 one), then by name, so which alias stays does not depend on qsort. */
static int by_start(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_count(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return by_start(a, b);
}

static void free_table(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->r[i].name);
	free(t->r);
}

/* The region holding addr: the last one starting at or below it. */
static struct region *lookup(struct table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->r[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= t->r[lo - 1].end)
		return NULL;
	return &t->r[lo - 1];
}

/* Sort by start; regions with the same start (the same range seen in two
 * cores' images) become one. */
static void sort_regions(struct table *t)
{
	if (t->n == 0)
		return;
	qsort(t->r, t->n, sizeof(*t->r), by_start);
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (k && t->r[k - 1].start == t->r[i].start) {
			t->r[k - 1].count += t->r[i].count;
			free(t->r[i].name);
			continue;
		}
		t->r[k++] = t->r[i];
	}
	t->n = k;
}

/* ---- ELF symbols --------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, got;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			buf = xrealloc(buf, cap);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return NULL;
	}
	*size = n;
	return buf;
}

/* Each STT_FUNC symbol of the ELF's .symtab becomes a region. A symbol
 * of size 0 reaches to the next one. Returns 0, or -1 if the file is not
 * an ELF32 LE with a symbol table. Every offset is checked: the file is
 * input like any other. */
static int load_symbols(struct table *t, const char *path)
{
	size_t size;
	uint8_t *elf = read_file(path, &size);
	int rc = -1;
	if (!elf)
		return -1;
	if (size < 52 || memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 1 /* 32-bit */ || elf[5] != 1 /* LE */)
		goto out;
	uint32_t shoff = rd32(elf + 32);
	uint16_t shentsize = rd16(elf + 46), shnum = rd16(elf + 48);
	if (shentsize < 40 || shoff > size || (uint64_t)shentsize * shnum > size - shoff)
		goto out;
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = elf + shoff + (size_t)i * shentsize;
		if (rd32(sh + 4) != 2 /* SHT_SYMTAB */)
			continue;
		uint32_t off = rd32(sh + 16), len = rd32(sh + 20), link = rd32(sh + 24);
		if (link >= shnum || off > size || len > size - off)
			goto out;
		const uint8_t *strsh = elf + shoff + (size_t)link * shentsize;
		uint32_t stroff = rd32(strsh + 16), strsize = rd32(strsh + 20);
		if (stroff > size || strsize > size - stroff || strsize == 0 || elf[stroff + strsize - 1] != 0)
			goto out;
		const char *strtab = (const char *)elf + stroff;
		for (uint32_t s = 0; s + 16 <= len; s += 16) {
			const uint8_t *sym = elf + off + s;
			uint32_t name = rd32(sym), value = rd32(sym + 4), sz = rd32(sym + 8);
			if ((sym[12] & 0xf) != 2 /* STT_FUNC */ || rd16(sym + 14) == 0 /* undefined */)
				continue;
			if (name >= strsize)
				continue;
			value &= ~1u; /* bit 0 marks Thumb code */
			add_region(t, value, sz ? (uint64_t)value + sz : 0, strtab + name);
		}
		rc = 0;
	}
	if (rc == 0 && t->n) {
		/* Aliases share a start: the first name stays. */
		sort_regions(t);
		for (size_t i = 0; i < t->n; i++)
			if (t->r[i].end == 0)
				t->r[i].end = i + 1 < t->n ? t->r[i + 1].start : t->r[i].start + 1;
	}
out:
	free(elf);
	return rc;
}

/* Without symbols: every BYTES-aligned range that holds image bytes. */
static void add_ranges(struct table *t, csd_image *img, uint64_t bytes)
{
	for (size_t i = 0; i < csd_image_num_sections(img); i++) {
		uint64_t addr, size;
		const uint8_t *data;
		if (csd_image_section(img, i, &addr, &size, &data) != CSD_OK || size == 0)
			continue;
		for (uint64_t a = addr - addr % bytes; a < addr + size; a += bytes) {
			char name[48];
			snprintf(name, sizeof(name), "0x%08llx-0x%08llx", (unsigned long long)a,
				 (unsigned long long)(a + bytes - 1));
			add_region(t, a, a + bytes, name);
		}
		sort_regions(t);
	}
}

/* ---- decoding ------------------------------------------------------------ */

static void count_records(struct table *t, csd_flow_decoder *dec)
{
	struct csd_record rec;
	while (csd_flow_next(dec, &rec) == CSD_OK) {
		if (rec.type == CSD_REC_INSN) {
			struct region *r = lookup(t, rec.addr);
			if (r)
				r->count++;
			else
				t->outside++;
		} else if (rec.type == CSD_REC_NO_MEMORY) {
			t->no_memory += rec.count;
		} else if (rec.type == CSD_REC_ADDRESS_UNKNOWN) {
			t->address_unknown += rec.count;
		} else if (rec.type == CSD_REC_ERROR) {
			t->errors++;
		}
	}
}

/* Decode the sources of buffer `b` whose decoders are in dec[] (by trace ID). */
static int decode_buffer(struct table *t, const struct csd_snapshot_buffer *buf, csd_flow_decoder **dec,
			 uint8_t raw_id)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = buf->frame_format, .raw_id = raw_id };
	csd_frame_decoder *frames = csd_frame_new(&fc);
	FILE *f = fopen(buf->path, "rb");
	static uint8_t chunk[1 << 16];
	if (!frames || !f) {
		fprintf(stderr, "func_count: cannot read %s\n", buf->path);
		csd_frame_free(frames);
		if (f)
			fclose(f);
		return -1;
	}
	uint64_t offset = 0;
	int finished = 0;
	while (!finished) {
		size_t n = fread(chunk, 1, sizeof(chunk), f);
		if (n > 0) {
			csd_frame_feed(frames, chunk, n, offset);
			offset += n;
		} else {
			csd_frame_finish(frames);
			finished = 1;
		}
		struct csd_frame_out out;
		while (csd_frame_next(frames, &out) == CSD_OK) {
			if (out.event != CSD_FRAME_DATA || out.bytes.id >= MAX_IDS || !dec[out.bytes.id])
				continue;
			if (csd_flow_feed(dec[out.bytes.id], &out.bytes) == CSD_OK)
				count_records(t, dec[out.bytes.id]);
		}
	}
	int rc = ferror(f) ? -1 : 0;
	fclose(f);
	csd_frame_free(frames);
	for (int id = 0; id < MAX_IDS; id++) {
		if (dec[id]) {
			csd_flow_finish(dec[id]);
			count_records(t, dec[id]);
		}
	}
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: func_count [--id ID]... [--range BYTES] SNAPSHOT-DIR [ELF]\n"
		     "Count the instructions each function executed in a CoreSight trace snapshot:\n"
		     "per function symbol of ELF, or per BYTES-aligned address range (default 4096).\n");
}

static int parse_number(const char *s, unsigned long long *v)
{
	char *end;
	*v = strtoull(s, &end, 0);
	return *s && *s != '-' && *end == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *elf = NULL;
	unsigned long long range = 4096, v;
	int want[MAX_IDS] = { 0 }, any_id = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--id") == 0 && i + 1 < argc) {
			if (parse_number(argv[++i], &v) || v == 0 || v >= MAX_IDS) {
				fprintf(stderr, "func_count: bad trace ID '%s'\n", argv[i]);
				return 1;
			}
			want[v] = any_id = 1;
		} else if (strcmp(argv[i], "--range") == 0 && i + 1 < argc) {
			if (parse_number(argv[++i], &range) || range == 0 || range > (1ull << 32)) {
				fprintf(stderr, "func_count: bad range size '%s'\n", argv[i]);
				return 1;
			}
		} else if (argv[i][0] == '-') {
			usage(stderr);
			return 1;
		} else if (!dir) {
			dir = argv[i];
		} else if (!elf) {
			elf = argv[i];
		} else {
			usage(stderr);
			return 1;
		}
	}
	if (!dir) {
		usage(stderr);
		return 1;
	}

	struct table t = { 0 };
	if (elf && load_symbols(&t, elf) < 0) {
		fprintf(stderr, "func_count: %s: not a 32-bit little-endian ELF file with a symbol table\n", elf);
		free_table(&t);
		return 1;
	}
	char err[512];
	csd_snapshot *snap;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "func_count: %s\n", err[0] ? err : csd_errstr(rc));
		free_table(&t);
		return 1;
	}

	/* One image per source (the memory dumps of the core it traces),
	 * one flow decoder per source, each trace buffer read once. */
	int status = 0, sources = 0;
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		csd_flow_decoder *dec[MAX_IDS] = { NULL };
		csd_image *img[MAX_IDS] = { NULL };
		uint8_t raw_id = 0;
		for (size_t s = 0; s < csd_snapshot_num_sources(snap); s++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, s);
			uint8_t id = src->config.trace_id;
			if (src->buffer != (int)b || id == 0 || id >= MAX_IDS || dec[id] || (any_id && !want[id]))
				continue;
			if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
				continue;
			img[id] = csd_image_new();
			if (!img[id] || (elf && csd_image_add_elf(img[id], elf, 0) < 0) ||
			    csd_snapshot_load_image(snap, src->core_name, img[id]) < 0) {
				fprintf(stderr, "func_count: cannot load the program image of %s\n", src->name);
				status = 1;
				continue;
			}
			if (!elf)
				add_ranges(&t, img[id], range);
			struct csd_flow_config fc = { .size = sizeof(fc), .trace = &src->config, .image = img[id],
						      .flags = CSD_FLOW_INSN };
			dec[id] = csd_flow_new(&fc);
			if (!dec[id]) {
				fprintf(stderr, "func_count: cannot decode source %s\n", src->name);
				status = 1;
				continue;
			}
			raw_id = id;
			sources++;
		}
		if (raw_id && decode_buffer(&t, csd_snapshot_buffer(snap, b), dec, raw_id) < 0)
			status = 1;
		for (int id = 0; id < MAX_IDS; id++) {
			csd_flow_free(dec[id]);
			csd_image_free(img[id]);
		}
	}
	csd_snapshot_free(snap);

	uint64_t total = t.outside;
	for (size_t i = 0; i < t.n; i++)
		total += t.r[i].count;
	if (t.n)
		qsort(t.r, t.n, sizeof(*t.r), by_count);
	printf("%12s %7s  %-10s  %s\n", "instructions", "share", "address", elf ? "function" : "range");
	for (size_t i = 0; i < t.n && t.r[i].count; i++)
		printf("%12llu %6.2f%%  0x%08llx  %s\n", (unsigned long long)t.r[i].count,
		       100.0 * (double)t.r[i].count / (double)total, (unsigned long long)t.r[i].start, t.r[i].name);
	if (t.outside)
		printf("%12llu %6.2f%%  %-10s  %s\n", (unsigned long long)t.outside,
		       100.0 * (double)t.outside / (double)total, "-", "(no symbol)");
	printf("%12llu %7s  %-10s  total of %d source%s\n", (unsigned long long)total, "", "", sources,
	       sources == 1 ? "" : "s");
	if (t.no_memory)
		printf("%12llu %7s  %-10s  atoms in code missing from the image\n", (unsigned long long)t.no_memory,
		       "", "");
	if (t.address_unknown)
		printf("%12llu %7s  %-10s  atoms at unknown addresses\n", (unsigned long long)t.address_unknown, "",
		       "");
	if (t.errors)
		printf("%12llu %7s  %-10s  trace errors\n", (unsigned long long)t.errors, "", "");
	free_table(&t);
	return status;
}
