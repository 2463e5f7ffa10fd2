/*
 * The counting of `csdec coverage` and `csdec profile` (tools/slotmap.c,
 * cov_accum.c, prof_accum.c) and the tool's ELF symbol reader
 * (tools/symbols.c), compiled in here:
 *
 * - slot counters: ranges folded into counts equal a brute-force count
 *   of the same ranges walked instruction by instruction (A32, and T32
 *   over code where 16- and 32-bit instructions mix and ranges start out
 *   of step with each other); counters widen exactly; a budget that is
 *   too small fails the operation and changes nothing.
 * - both ways: the same captures decoded as ranges (what the tool does)
 *   and instruction by instruction give byte-identical reports: coverage
 *   summary, instruction list and lcov; profile lists and callgrind file;
 *   with the sample program's ELF, with symbols every 64 bytes over TC2's
 *   kernel (ranges cross function ends), without symbols, and over zero
 *   and all-32-bit-T32 images with walks from every halfword phase.
 * - symbols: an ELF with 4,000 more section headers naming its symbol
 *   table gives exactly the symbols of the original, each table read once;
 *   broken ELFs are refused or warned about with the check that failed
 *   and its file offset.
 */
#include <elf.h>
#include <unistd.h>

#include "check.h"

#include "../tools/dynlib.c"
#include "../tools/slotmap.c"
#include "../tools/symbols.c"
#include "../tools/cov_accum.c"
#include "../tools/prof_accum.c"

#define SAMPLE_DIR "examples/sample"

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* ---- slot counters against brute force ---- */

#define IMG_BASE 0x10000u
#define IMG_SIZE 4096u

static unsigned insn_size(const uint8_t *img, uint64_t a, int isa)
{
	if (isa == CSD_ISA_ARM)
		return 4;
	uint16_t hw = (uint16_t)(img[a - IMG_BASE] | img[a - IMG_BASE + 1] << 8);
	return hw >= 0xE800u ? 4 : 2;
}

static void slot_model(void)
{
	static uint8_t code[IMG_SIZE];
	static uint64_t want[IMG_SIZE / 2];
	static uint8_t want_isa[IMG_SIZE / 2];
	for (unsigned i = 0; i < IMG_SIZE; i += 2) {
		/* a third 32-bit prefixes, so chains drift in and out of step */
		uint16_t hw = rnd() % 3 == 0 ? (uint16_t)(0xE800u + rnd() % 0x1800u) : (uint16_t)(rnd() % 0xE800u);
		code[i] = (uint8_t)hw;
		code[i + 1] = (uint8_t)(hw >> 8);
	}
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_buffer(img, IMG_BASE, code, sizeof(code), 0), 0);
	struct slot_budget budget = { 0, (size_t)1 << 30 };
	struct ctab counts, diff[2];
	struct btab isa_bits;
	ctab_init(&counts, &budget);
	ctab_init(&diff[0], &budget);
	ctab_init(&diff[1], &budget);
	btab_init(&isa_bits, &budget);
	uint64_t total = 0;
	for (unsigned k = 0; k < 3000; k++) {
		int isa = rnd() % 2 ? CSD_ISA_THUMB : CSD_ISA_ARM;
		uint64_t a = IMG_BASE + 2 * (rnd() % (IMG_SIZE / 2 - 2)), first = a;
		unsigned n = 1 + rnd() % (k % 10 == 0 ? 1500 : 30), got = 0;
		/* some ranges many times, so counters widen past 1 and 2 bytes */
		unsigned times = k % 500 == 0 ? 40000 : k % 50 == 0 ? 300 : 1;
		while (got < n && a + 2 <= IMG_BASE + IMG_SIZE && a + insn_size(code, a, isa) <= IMG_BASE + IMG_SIZE) {
			want[(a - IMG_BASE) / 2] += times;
			want_isa[(a - IMG_BASE) / 2] |= (uint8_t)(1u << slot_isa_index(isa));
			a += insn_size(code, a, isa);
			got++;
		}
		total += (uint64_t)got * times;
		if (!got)
			continue;
		for (unsigned t = 0; t < times; t++) {
			if (k % 7 == 0 && got == 1)
				CHECK_EQ(ctab_add(&counts, 0, first, 1), SLOT_OK); /* an instruction record */
			else
				CHECK_EQ(slot_range(&diff[k % 2], isa, 0, first, a), SLOT_OK);
			if (k % 7 == 0 && got == 1)
				CHECK_EQ(btab_set(&isa_bits, slot_isa_index(isa) << 28, first), SLOT_OK);
		}
	}
	CHECK_EQ(slot_fold(&diff[0], img, &counts, &isa_bits, 7), SLOT_OK);
	CHECK_EQ(slot_fold(&diff[1], img, &counts, &isa_bits, 7), SLOT_OK);
	CHECK_EQ(diff[0].n, 0);
	uint64_t sum = 0;
	unsigned bad = 0, widths[4] = { 0, 0, 0, 0 };
	for (unsigned i = 0; i < IMG_SIZE / 2; i++) {
		uint64_t a = IMG_BASE + 2 * i, c = (uint64_t)ctab_get(&counts, 0, a);
		unsigned bits = 0;
		for (unsigned x = 0; x < SLOT_NISA; x++)
			bits |= (unsigned)btab_test(&isa_bits, x << 28, a) << x;
		sum += c;
		if ((c != want[i] || bits != want_isa[i]) && bad++ < 5)
			fprintf(stderr, "slot 0x%llx: %llu (isa bits %x), expected %llu (%x)\n", (unsigned long long)a,
				(unsigned long long)c, bits, (unsigned long long)want[i], want_isa[i]);
	}
	for (size_t i = 0; i < counts.cap; i++)
		if (counts.e[i].key != UINT64_MAX)
			widths[counts.e[i].c->wlog]++;
	printf("slot counts: %llu instructions over %u slots, %u differ from brute force; chunks 1/2/4/8 bytes: "
	       "%u/%u/%u/%u\n",
	       (unsigned long long)total, IMG_SIZE / 2, bad, widths[0], widths[1], widths[2], widths[3]);
	CHECK_EQ(bad, 0);
	CHECK_EQ(sum, total);
	CHECK_EQ(ctab_get(&counts, 0, IMG_BASE - 2), 0);
	CHECK_EQ(ctab_get(&counts, 0, IMG_BASE + IMG_SIZE), 0);
	CHECK(widths[1] + widths[2] > 0); /* counts past 127 and 32767 */

	/* Exact widening at the edges of each width; 64 bits wrap. */
	static const int64_t edge[] = { 127, 128, -128, -129, 32767, 32768, -32769, INT32_MAX, (int64_t)INT32_MAX + 1,
					INT64_MAX };
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		CHECK_EQ(ctab_add(&counts, 7, 0x40000 + 2 * i, edge[i]), SLOT_OK);
		CHECK_EQ(ctab_get(&counts, 7, 0x40000 + 2 * i), edge[i]);
	}
	CHECK_EQ(ctab_add(&counts, 7, 0x40000 + 2 * 9, 1), SLOT_OK);
	CHECK_EQ(ctab_get(&counts, 7, 0x40000 + 2 * 9), INT64_MIN);
	for (size_t i = 0; i < 9; i++)
		CHECK_EQ(ctab_get(&counts, 7, 0x40000 + 2 * i), edge[i]);

	/* A budget too small: the operation fails, nothing changes. */
	struct slot_budget tiny = { 0, 3000 };
	struct ctab t;
	ctab_init(&t, &tiny);
	CHECK_EQ(ctab_add(&t, 0, 0x1000, 5), SLOT_OK);
	int rc = SLOT_OK;
	unsigned made = 0;
	for (uint64_t a = 0x2000; rc == SLOT_OK && a < 0x100000; a += 512, made++)
		rc = ctab_add(&t, 0, a, 1);
	CHECK_EQ(rc, SLOT_LIMIT);
	CHECK(tiny.used <= tiny.limit);
	CHECK_EQ(ctab_add(&t, 0, 0x1000, 1000), SLOT_LIMIT); /* would widen */
	CHECK_EQ(ctab_get(&t, 0, 0x1000), 5);
	CHECK(made > 2);
	ctab_free(&t);
	CHECK_EQ(tiny.used, 0);

	ctab_free(&counts);
	ctab_free(&diff[0]);
	ctab_free(&diff[1]);
	btab_free(&isa_bits);
	CHECK_EQ(budget.used, 0);
	csd_image_free(img);
}

/* Past the memory limit, coverage and profile fail with a message naming
 * it (the tool then stops with exit status 2). */
static void limits(void)
{
	static uint8_t zeros[0x10000];
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_buffer(img, 0x20000, zeros, sizeof(zeros), 0), 0);
	struct csd_record r;
	memset(&r, 0, sizeof(r));
	r.type = CSD_REC_RANGE;
	r.isa = CSD_ISA_ARM;
	r.addr = 0x20000;
	r.end = 0x30000;
	r.last = 0x2FFFC;
	r.count = 0x4000;
	struct cov *c = cov_new(NULL, 16384);
	CHECK_EQ(cov_record(c, 0x10, &r), 0);
	CHECK_EQ(cov_source_end(c, 0x10, img), -1);
	CHECK(strstr(cov_error(c), "would need more than 16 KiB (the limit)") != NULL);
	CHECK(cov_memory(c) <= 16384);
	cov_free(c);
	struct prof *p = prof_new(NULL, 1, 16384);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(prof_record(p, 0x10, &r), 0);
	CHECK_EQ(prof_source_end(p, 0x10, img), -1);
	CHECK(strstr(prof_error(p), "would need more than 16 KiB (the limit)") != NULL);
	CHECK(prof_memory(p) <= 16384);
	prof_free(p);
	/* the tool's own limit takes the same walk easily */
	c = cov_new(NULL, ACCUM_MEM_LIMIT);
	CHECK_EQ(cov_record(c, 0x10, &r), 0);
	CHECK_EQ(cov_source_end(c, 0x10, img), 0);
	printf("limits: a walk over 64 KiB of A32 code keeps %zu bytes of counts\n", cov_memory(c));
	CHECK(cov_memory(c) < 64 * 1024);
	cov_free(c);
	csd_image_free(img);
}

/* ---- both ways ---- */

enum mode { MODE_TOOL, MODE_INSN };

/* What the records of one decode go to. */
struct sink {
	struct cov *cov;
	struct prof *prof;
	uint64_t instructions;
	uint64_t records;
};

static void deliver(struct sink *s, unsigned id, const struct csd_record *r)
{
	s->records++;
	if (r->type == CSD_REC_RANGE)
		s->instructions += r->count;
	else if (r->type == CSD_REC_INSN)
		s->instructions++;
	if (s->cov)
		CHECK_EQ(cov_record(s->cov, id, r), 0);
	if (s->prof)
		CHECK_EQ(prof_record(s->prof, id, r), 0);
}

static void source_end(struct sink *s, unsigned id, csd_image *img)
{
	if (s->cov)
		CHECK_EQ(cov_source_end(s->cov, id, img), 0);
	if (s->prof)
		CHECK_EQ(prof_source_end(s->prof, id, img), 0);
}

static uint32_t flow_flags(enum mode m, const struct sink *s, const struct csd_trace_config *cfg)
{
	if (m == MODE_INSN)
		return CSD_FLOW_INSN;
	/* The tool: coverage ranges always, profile where prof_needs_insns says. */
	return s->prof && prof_needs_insns(cfg) ? CSD_FLOW_INSN : 0;
}

static void drain(csd_flow_decoder *fd, struct sink *s, unsigned id)
{
	const struct csd_record *batch;
	int n;
	while ((n = csd_flow_next_batch(fd, &batch)) > 0)
		for (int i = 0; i < n; i++)
			deliver(s, id, &batch[i]);
}

/* Every ETMv3 / PTM source of the snapshot in dir into s. */
static void decode_snapshot(const char *dir, enum mode m, struct sink *s)
{
	char err[512];
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		CHECK(!"snapshot opens");
		return;
	}
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
		if (src->buffer < 0 || (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM))
			continue;
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, (size_t)src->buffer);
		unsigned id = src->config.trace_id;
		csd_image *img = csd_image_new();
		CHECK(csd_snapshot_load_image(snap, src->core_name, img) >= 0);
		struct csd_flow_config fc;
		memset(&fc, 0, sizeof(fc));
		fc.size = sizeof(fc);
		fc.trace = &src->config;
		fc.image = img;
		fc.flags = flow_flags(m, s, &src->config);
		csd_flow_decoder *fd = csd_flow_new(&fc);
		struct csd_frame_config frc = { .size = sizeof(frc), .format = buf->frame_format, .raw_id = (uint8_t)id };
		csd_frame_decoder *frd = csd_frame_new(&frc);
		size_t len = 0;
		uint8_t *data = check_read_file(buf->path, &len);
		CHECK(fd && frd && data);
		if (fd && frd && data) {
			csd_frame_feed(frd, data, len, 0);
			csd_frame_finish(frd);
			struct csd_frame_out fo;
			while (csd_frame_next(frd, &fo) == 0) {
				if (fo.event != CSD_FRAME_DATA || fo.bytes.id != id)
					continue;
				csd_flow_feed(fd, &fo.bytes);
				drain(fd, s, id);
			}
			csd_flow_finish(fd);
			drain(fd, s, id);
			source_end(s, id, img);
		}
		free(data);
		csd_frame_free(frd);
		csd_flow_free(fd);
		csd_image_free(img);
	}
	csd_snapshot_free(snap);
}

/* One PTM source (raw bytes, trace ID 0x10) over img into s. */
static void decode_ptm(const uint8_t *bytes, size_t n, csd_image *img, uint32_t etmcr, enum mode m, struct sink *s)
{
	struct csd_trace_config tc;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	tc.protocol = CSD_PROTO_PTM;
	tc.etmcr = etmcr;
	tc.etmidr = 0x411CF312;
	tc.etmccer = 0x34C01AC2;
	tc.trace_id = 0x10;
	fc.image = img;
	fc.flags = flow_flags(m, s, &tc);
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL);
	if (!fd)
		return;
	struct csd_bytes in = { .data = bytes, .size = n, .base = 0, .id = 0x10 };
	csd_flow_feed(fd, &in);
	drain(fd, s, 0x10);
	csd_flow_finish(fd);
	drain(fd, s, 0x10);
	source_end(s, 0x10, img);
	csd_flow_free(fd);
}

static char *cov_report(struct cov *c, csd_image *code, const struct symtab *st)
{
	size_t len;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		return NULL;
	CHECK_EQ(cov_load_code(c, code), 0);
	CHECK_EQ(cov_print_summary(c, f), 0);
	CHECK_EQ(cov_print_insns(c, f), 0);
	if (symtab_has_lines(st))
		CHECK_EQ(cov_write_lcov(c, f), 0);
	fclose(f);
	return buf;
}

static char *prof_report(struct prof *p)
{
	size_t len;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		return NULL;
	CHECK_EQ(prof_finish(p), 0);
	CHECK_EQ(prof_print_top(p, f, 0, 0), 0);
	CHECK_EQ(prof_print_top(p, f, 0, 1), 0);
	CHECK_EQ(prof_write_callgrind(p, f, 0, NULL), 0);
	fclose(f);
	return buf;
}

/* Where two reports first differ. */
static void show_diff(const char *what, const char *a, const char *b)
{
	size_t i = 0, line = 1;
	while (a[i] && a[i] == b[i])
		line += a[i++] == '\n';
	size_t from = i;
	while (from && a[from - 1] != '\n')
		from--;
	fprintf(stderr, "%s: ranges and instructions differ at line %zu:\n  ranges: %.*s\n  insns:  %.*s\n", what, line,
		(int)strcspn(a + from, "\n"), a + from, (int)strcspn(b + from, "\n"), b + from);
}

/* How one case is decoded (a snapshot, or one PTM trace over an image). */
struct decode_case {
	const char *name;
	const char *dir;
	const uint8_t *trace;
	size_t trace_len;
	csd_image *img;
	uint32_t etmcr;
};

static void run_case(const struct decode_case *dc, enum mode m, struct sink *s)
{
	if (dc->dir)
		decode_snapshot(dc->dir, m, s);
	else
		decode_ptm(dc->trace, dc->trace_len, dc->img, dc->etmcr, m, s);
}

/* Decode the case as the tool does and instruction by instruction; the
 * coverage and profile reports must be the same. code: the image whose
 * functions coverage walks. */
static void both_ways(const struct decode_case *dc, const struct symtab *st, csd_image *code)
{
	char *text[2][2];
	uint64_t insns[2] = { 0, 0 }, records[2] = { 0, 0 };
	for (int m = 0; m < 2; m++) {
		struct sink s;
		memset(&s, 0, sizeof(s));
		s.cov = cov_new(st, ACCUM_MEM_LIMIT);
		run_case(dc, (enum mode)m, &s);
		CHECK_EQ(cov_executions(s.cov), s.instructions);
		text[0][m] = cov_report(s.cov, code, st);
		cov_free(s.cov);
		insns[m] = s.instructions;
		records[m] = s.records;
		memset(&s, 0, sizeof(s));
		s.prof = prof_new(st, 1, ACCUM_MEM_LIMIT);
		run_case(dc, (enum mode)m, &s);
		CHECK_EQ(prof_instructions(s.prof), s.instructions);
		text[1][m] = prof_report(s.prof);
		prof_free(s.prof);
	}
	printf("%s: %llu instructions, %llu records as ranges, %llu as instructions; coverage %zu bytes, profile %zu "
	       "bytes of report\n",
	       dc->name, (unsigned long long)insns[0], (unsigned long long)records[0], (unsigned long long)records[1],
	       text[0][0] ? strlen(text[0][0]) : 0, text[1][0] ? strlen(text[1][0]) : 0);
	CHECK(insns[0] > 0);
	CHECK_EQ(insns[0], insns[1]);
	for (int k = 0; k < 2; k++) {
		CHECK(text[k][0] && text[k][1]);
		if (!text[k][0] || !text[k][1])
			continue;
		int same = strcmp(text[k][0], text[k][1]) == 0;
		if (!same)
			show_diff(k ? "profile" : "coverage", text[k][0], text[k][1]);
		CHECK(same);
		free(text[k][0]);
		free(text[k][1]);
	}
}

/* A symbol-only ELF (FUNC symbols f_<start>, `step` bytes each, Thumb
 * every other one) over [start, end), written to path. */
static int write_symbols_elf(const char *path, uint32_t start, uint32_t end, uint32_t step)
{
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";
	size_t n = (end - start) / step, strsz = 1 + n * 11, symsz = (n + 1) * sizeof(Elf32_Sym);
	char *str = calloc(1, strsz);
	Elf32_Sym *sym = calloc(n + 1, sizeof(*sym));
	FILE *f = fopen(path, "wb");
	int rc = -1;
	if (!str || !sym || !f)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t a = start + (uint32_t)i * step;
		snprintf(str + 1 + i * 11, 11, "f_%08x", a);
		sym[i + 1].st_name = (Elf32_Word)(1 + i * 11);
		sym[i + 1].st_value = a | (i & 1);
		sym[i + 1].st_size = step;
		sym[i + 1].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym[i + 1].st_shndx = SHN_ABS;
	}
	Elf32_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_ARM;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf32_Shdr);
	eh.e_shnum = 4;
	eh.e_shstrndx = 3;
	size_t off_sym = sizeof(eh), off_str = off_sym + symsz, off_shstr = off_str + strsz;
	eh.e_shoff = (Elf32_Off)((off_shstr + sizeof(shstr) + 3) & ~(size_t)3);
	Elf32_Shdr sh[4];
	memset(sh, 0, sizeof(sh));
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_SYMTAB;
	sh[1].sh_offset = (Elf32_Off)off_sym;
	sh[1].sh_size = (Elf32_Word)symsz;
	sh[1].sh_link = 2;
	sh[1].sh_entsize = sizeof(Elf32_Sym);
	sh[2].sh_name = 9;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = (Elf32_Off)off_str;
	sh[2].sh_size = (Elf32_Word)strsz;
	sh[3].sh_name = 17;
	sh[3].sh_type = SHT_STRTAB;
	sh[3].sh_offset = (Elf32_Off)off_shstr;
	sh[3].sh_size = sizeof(shstr);
	static const char pad[4];
	if (fwrite(&eh, sizeof(eh), 1, f) == 1 && fwrite(sym, symsz, 1, f) == 1 && fwrite(str, strsz, 1, f) == 1 &&
	    fwrite(shstr, sizeof(shstr), 1, f) == 1 && fwrite(pad, eh.e_shoff - off_shstr - sizeof(shstr), 1, f) <= 1 &&
	    fwrite(sh, sizeof(sh), 1, f) == 1)
		rc = 0;
out:
	if (f && fclose(f) != 0)
		rc = -1;
	free(str);
	free(sym);
	return rc;
}

static struct symtab *load_symbols(const char *path)
{
	char err[512];
	struct symtab *st = symtab_new();
	int rc = symtab_add_elf(st, path, 0, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s\n", err);
	CHECK(rc > 0);
	symtab_finish(st);
	return st;
}

/* PTM: A-sync, I-sync at `start`, then per target a branch address
 * packet and an E atom (walks from the target until the image ends). */
static size_t ptm_walks(uint8_t *buf, size_t cap, uint32_t start, int isa, const uint32_t *targets, size_t n)
{
	struct csd_trace_config c = { .size = sizeof(c), .protocol = CSD_PROTO_PTM, .etmidr = 0x411CF312,
				      .etmccer = 0x34C01AC2 };
	csd_ptm_encoder *e = csd_ptm_enc_new(&c);
	size_t len = 0;
	struct csd_packet p;
	CHECK(e != NULL);
	for (size_t k = 0; e && k < 2 * n + 2; k++) {
		memset(&p, 0, sizeof(p));
		if (k == 0) {
			p.type = CSD_PKT_ASYNC;
		} else if (k == 1) {
			p.type = CSD_PKT_ISYNC;
			p.addr = start;
			p.isa = (uint8_t)isa;
			p.reason = CSD_REASON_TRACE_ON;
			p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
		} else if (k % 2 == 0) {
			p.type = CSD_PKT_BRANCH;
			p.addr = targets[k / 2 - 1];
			p.isa = (uint8_t)isa;
			p.flags = CSD_PKTF_ISA;
		} else {
			p.type = CSD_PKT_ATOM;
			p.atoms.num = 1;
			p.atoms.en = 1;
		}
		int w = csd_ptm_enc_packet(e, &p, buf + len, cap - len);
		if (w <= 0)
			fprintf(stderr, "packet %zu (type %u, address 0x%llx): %d\n", k, p.type, (unsigned long long)p.addr, w);
		CHECK(w > 0);
		len += w > 0 ? (size_t)w : 0;
	}
	csd_ptm_enc_free(e);
	return len;
}

static void both_ways_all(void)
{
	char sdir[1024], elf[] = "/tmp/csd_test_accum_XXXXXX";
	int fd = mkstemp(elf);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(sdir, sizeof(sdir), "%s/traces/TC2", check_shared_dir());

	/* The sample: a PTM (cycle-accurate) and an ETMv3 source of demo.c. */
	struct decode_case sample = { "sample with demo.elf", SAMPLE_DIR, NULL, 0, NULL, 0 };
	struct symtab *st = load_symbols(SAMPLE_DIR "/demo.elf");
	csd_image *code = csd_image_new();
	CHECK(csd_image_add_elf(code, SAMPLE_DIR "/demo.elf", 0) > 0);
	both_ways(&sample, st, code);
	symtab_free(st);
	sample.name = "sample without symbols";
	both_ways(&sample, NULL, code);
	csd_image_free(code);

	/* TC2: without symbols, and with a function every 64 bytes of the
	 * kernel (Thumb every other one), walked over the kernel dump. */
	struct decode_case tc2 = { "TC2 without symbols", sdir, NULL, 0, NULL, 0 };
	both_ways(&tc2, NULL, NULL);
	CHECK_EQ(write_symbols_elf(elf, 0xC0008000u, 0xC0008000u + 0x50000u, 64), 0);
	st = load_symbols(elf);
	CHECK_EQ(symtab_num_funcs(st), 0x50000 / 64);
	code = csd_image_new();
	char kdump[1200];
	snprintf(kdump, sizeof(kdump), "%s/kernel_dump.bin", sdir);
	CHECK_EQ(csd_image_add_file(code, kdump, 0, 0, 0xC0008000u), 0);
	tc2.name = "TC2 with a function every 64 bytes";
	both_ways(&tc2, st, code);
	csd_image_free(code);
	symtab_free(st);

	/* Walks through branch-free code: zeros (A32), and T32 of 32-bit
	 * instructions only (0xEE00 halfwords, CDP), entered at both
	 * halfword phases so the walks stay out of step. */
	static uint8_t zeros[0x10000], ee[0x10000], trace[4096];
	for (size_t i = 0; i < sizeof(ee); i += 2) {
		ee[i] = 0x00;
		ee[i + 1] = 0xEE;
	}
	static const uint32_t targets[] = { 0x20100, 0x20104, 0x28000, 0x2FFF0, 0x20100, 0x2FFFC, 0x20102, 0x24006 };
	CHECK_EQ(write_symbols_elf(elf, 0x20000, 0x30000, 0x30), 0);
	struct symtab *fns = load_symbols(elf);
	for (int k = 0; k < 2; k++) {
		csd_image *img = csd_image_new();
		CHECK_EQ(csd_image_add_buffer(img, 0x20000, k ? ee : zeros, sizeof(zeros), 0), 0);
		size_t nt = sizeof(targets) / sizeof(targets[0]);
		struct decode_case walks = { k ? "T32 32-bit walks" : "A32 zero walks", NULL, trace,
					     ptm_walks(trace, sizeof(trace), 0x20000, k ? CSD_ISA_THUMB : CSD_ISA_ARM,
						       targets, k ? nt : nt - 2),
					     img, 0 };
		both_ways(&walks, NULL, img);
		walks.name = k ? "T32 32-bit walks, a function every 48 bytes" : "A32 zero walks, a function every 48 bytes";
		both_ways(&walks, fns, img);
		csd_image_free(img);
	}
	symtab_free(fns);
	unlink(elf);
}

/* ---- symbols ---- */

struct elf_bytes {
	uint8_t *b;
	size_t n;
};

/* Same symbols (and, with rows, the same line table). */
static int symtab_same_as(const struct symtab *a, const struct symtab *b, int rows)
{
	if (a->nfn != b->nfn || a->nmap != b->nmap || (rows && a->nrows != b->nrows))
		return 0;
	for (size_t i = 0; i < a->nfn; i++)
		if (a->fn[i].start != b->fn[i].start || a->fn[i].end != b->fn[i].end || a->fn[i].thumb != b->fn[i].thumb ||
		    a->fn[i].sized != b->fn[i].sized || strcmp(a->fn[i].name, b->fn[i].name) != 0)
			return 0;
	for (size_t i = 0; i < a->nmap; i++)
		if (a->map[i].addr != b->map[i].addr || a->map[i].isa != b->map[i].isa)
			return 0;
	for (size_t i = 0; rows && i < a->nrows; i++)
		if (a->rows[i].addr != b->rows[i].addr || a->rows[i].line != b->rows[i].line ||
		    strcmp(a->files[a->rows[i].file], b->files[b->rows[i].file]) != 0)
			return 0;
	return 1;
}

static int symtab_same(const struct symtab *a, const struct symtab *b)
{
	return symtab_same_as(a, b, 1);
}

/* Read e (a copy: the line reader may change it); rc, err and the warnings. */
static struct symtab *read_elf(const struct elf_bytes *e, int *rc, char *err, size_t cap)
{
	struct symtab *st = symtab_new();
	uint8_t *copy = malloc(e->n ? e->n : 1);
	err[0] = 0;
	memcpy(copy, e->b, e->n);
	*rc = symtab_add_elf_mem(st, copy, e->n, "t.elf", 0, err, cap);
	free(copy);
	symtab_finish(st);
	return st;
}

static int warned(const struct symtab *st, const char *text)
{
	for (unsigned i = 0; i < symtab_num_warnings(st); i++)
		if (strstr(symtab_warning(st, i), text))
			return 1;
	return 0;
}

/* The ELF with `more` copies of its SYMTAB section header appended (a
 * new section header table at the end). */
static struct elf_bytes many_headers(const struct elf_bytes *e, unsigned more, Elf32_Shdr *symsh)
{
	struct elf_bytes r = { NULL, 0 };
	Elf32_Ehdr eh;
	memcpy(&eh, e->b, sizeof(eh));
	size_t at = (e->n + 3) & ~(size_t)3;
	r.n = at + ((size_t)eh.e_shnum + more) * sizeof(Elf32_Shdr);
	r.b = calloc(1, r.n);
	memcpy(r.b, e->b, e->n);
	memcpy(r.b + at, e->b + eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf32_Shdr));
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf32_Shdr sh;
		memcpy(&sh, e->b + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB)
			*symsh = sh;
	}
	for (unsigned i = 0; i < more; i++)
		memcpy(r.b + at + ((size_t)eh.e_shnum + i) * sizeof(Elf32_Shdr), symsh, sizeof(*symsh));
	eh.e_shoff = (Elf32_Off)at;
	eh.e_shnum = (Elf32_Half)(eh.e_shnum + more);
	memcpy(r.b, &eh, sizeof(eh));
	return r;
}

static void symbols(void)
{
	struct elf_bytes orig;
	char err[512];
	int rc;
	orig.b = check_read_file(SAMPLE_DIR "/demo.elf", &orig.n);
	CHECK(orig.b != NULL && orig.n > 1000);
	if (!orig.b)
		return;
	struct symtab *a = read_elf(&orig, &rc, err, sizeof(err));
	CHECK(rc > 0);
	CHECK_EQ(symtab_num_warnings(a), 0);

	/* 4,000 more section headers naming the same symbol table. */
	Elf32_Shdr symsh;
	struct elf_bytes many = many_headers(&orig, 4000, &symsh);
	struct symtab *b = read_elf(&many, &rc, err, sizeof(err));
	printf("symbols: %zu functions, %zu mapping symbols, %zu line rows; with 4000 more headers: %zu, %zu, %zu\n",
	       a->nfn, a->nmap, a->nrows, b->nfn, b->nmap, b->nrows);
	CHECK(rc > 0);
	CHECK(a->nfn > 3 && a->nmap > 0 && (a->nrows > 10 || !symtab_reads_lines()));
	CHECK(symtab_same(a, b));
	CHECK(warned(b, "4000 more section headers name a symbol table already read"));
	symtab_free(b);

	/* Overlapping symbol tables: the second is not read. */
	struct elf_bytes ov = many_headers(&orig, 1, &symsh);
	Elf32_Ehdr eh;
	memcpy(&eh, ov.b, sizeof(eh));
	symsh.sh_offset += 16;
	symsh.sh_size -= 16;
	memcpy(ov.b + eh.e_shoff + (eh.e_shnum - 1) * sizeof(Elf32_Shdr), &symsh, sizeof(symsh));
	b = read_elf(&ov, &rc, err, sizeof(err));
	CHECK(rc > 0);
	CHECK(symtab_same(a, b));
	CHECK(warned(b, "overlaps that of section"));
	symtab_free(b);

	/* A symbol table past the end of the file: named, with its header's offset. */
	symsh.sh_offset = (Elf32_Word)ov.n;
	memcpy(ov.b + eh.e_shoff + (eh.e_shnum - 1) * sizeof(Elf32_Shdr), &symsh, sizeof(symsh));
	b = read_elf(&ov, &rc, err, sizeof(err));
	char want[128];
	snprintf(want, sizeof(want), "section %u (header at offset 0x%zx): symbol table at 0x%zx", eh.e_shnum - 1u,
		 (size_t)eh.e_shoff + (eh.e_shnum - 1u) * sizeof(Elf32_Shdr), ov.n);
	CHECK(symtab_same(a, b));
	CHECK(warned(b, want));
	CHECK(warned(b, "past the end of the file"));
	symtab_free(b);

	/* Refused, with the field and its offset. */
	struct {
		size_t at;
		uint8_t v;
		size_t len;
		const char *says;
	} bad[] = {
		{ 0, 0x7F, 40, "40 bytes, too short for an ELF header" },
		{ 1, 'X', 0, "not an ELF file (bytes 0-3" },
		{ 4, 2, 0, "not a 32-bit little-endian ELF (class 2 at offset 4, data encoding 1 at offset 5)" },
		{ 5, 2, 0, "not a 32-bit little-endian ELF (class 1 at offset 4, data encoding 2 at offset 5)" },
		{ 46, 20, 0, "section header size 20 (e_shentsize, at offset 46)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct elf_bytes e = { malloc(orig.n), bad[i].len ? bad[i].len : orig.n };
		memcpy(e.b, orig.b, orig.n);
		e.b[bad[i].at] = bad[i].v;
		b = read_elf(&e, &rc, err, sizeof(err));
		CHECK_EQ(rc, -1);
		if (!strstr(err, bad[i].says))
			fprintf(stderr, "bad ELF %zu: \"%s\", expected \"%s\"\n", i, err, bad[i].says);
		CHECK(strstr(err, bad[i].says) != NULL);
		symtab_free(b);
		free(e.b);
	}
	/* Section headers cut off by the end of the file. */
	struct elf_bytes cut = { malloc(many.n), many.n - 100 * sizeof(Elf32_Shdr) - 8 };
	memcpy(cut.b, many.b, cut.n);
	b = read_elf(&cut, &rc, err, sizeof(err));
	CHECK(rc > 0);
	/* (libelf refuses such a file, so there are no lines) */
	CHECK(symtab_same_as(a, b, 0));
	CHECK(warned(b, "end past the end of the file"));
	symtab_free(b);
	free(cut.b);
	free(ov.b);
	free(many.b);
	symtab_free(a);
	free(orig.b);
}

int main(void)
{
	slot_model();
	limits();
	symbols();
	both_ways_all();
	return check_done("test_accum");
}
