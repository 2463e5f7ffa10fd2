/*
 * fuzz_flow.h - body of the flow-decoder harnesses (fuzz_etm3_flow.c,
 * fuzz_ptm_flow.c).
 *
 * Input: the fuzz_common.h header, then header.code_words % 64 words of
 * extra code (mapped at FUZZ_CODE_ADDR, through a buffer or, with
 * FUZZ_MISC_CODE_CALLBACK, the image's read callback), then one source's
 * trace bytes. The image also holds real compiler output for A32 at 0x8000
 * and T32 at 0x9000 (fuzz_image.h) and, when CSD_SHARED is set, the TC2
 * kernel dump at 0xC0008000, so seeds made from the TC2 capture decode.
 *
 * The trace is decoded twice: as ranges in one feed, and instruction by
 * instruction (CSD_FLOW_INSN) in pieces chosen by the input. Checked
 * without an oracle:
 *   - return codes: 0 / CSD_EAGAIN while feeding, CSD_EEOS for good after
 *     csd_flow_finish();
 *   - every record's offset is the offset of an input byte;
 *   - a no_memory record names an address the image has no instruction
 *     at; an address_unknown record names none; a truncated record is the
 *     last, and its bytes are the last of the input;
 *   - a range covers `count` whole instructions that are in the image,
 *     from addr to end with the last at `last`; an instruction record's
 *     size and opcode are those of the image bytes at its address;
 *   - both decodes describe the same execution: the ranges, expanded
 *     instruction by instruction through the image, give exactly the
 *     instruction records' addresses, and all other records are equal;
 *     the cycles add up to the same total;
 *   - bounded work: the records stay under a fixed limit;
 *   - ETMv3: a third decode, ranges without the segment memo
 *     (CSD_FLOW_NO_MEMO) in the input's pieces, gives identical records;
 *     PTM: likewise ranges without the walk cache (src/walk_cache.c).
 * FUZZ_MISC_SHORT_WALK makes PTM walks give up after 5 blocks (all three
 * decodes), so that the small images reach the walk limit.
 */
#ifndef CSD_FUZZ_FLOW_H
#define CSD_FUZZ_FLOW_H

#include <stdio.h>

#include "flow.h"
#include "fuzz_common.h"
#include "fuzz_image.h"

#define FUZZ_CODE_ADDR 0xA000u
#define FUZZ_KERNEL_ADDR 0xC0008000u
/* A walk may legitimately cover CSDI_WALK_MAX_BLOCKS blocks of 64
 * instructions for one atom; more records than this for one input means
 * the decoder is not making progress. */
#define FUZZ_FLOW_MAX_RECORDS (1u << 23)

/* The TC2 kernel dump, read once; NULL when CSD_SHARED is not set. */
static const uint8_t *fuzz_kernel;
static size_t fuzz_kernel_size;

static void fuzz_flow_load_kernel(void)
{
	static int tried;
	if (tried)
		return;
	tried = 1;
	const char *shared = getenv("CSD_SHARED");
	if (!shared || !*shared)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/traces/TC2/kernel_dump.bin", shared);
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	static uint8_t buf[1u << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fuzz_kernel = buf;
	fuzz_kernel_size = n;
}

struct fuzz_code {
	const uint8_t *bytes;
	size_t size;
};

/* Image callback serving the extra code. */
static size_t fuzz_flow_read(void *ctx, uint64_t addr, uint8_t *buf, size_t size)
{
	const struct fuzz_code *c = ctx;
	if (addr < FUZZ_CODE_ADDR || addr - FUZZ_CODE_ADDR >= c->size)
		return 0;
	size_t k = (size_t)(addr - FUZZ_CODE_ADDR);
	size_t n = c->size - k < size ? c->size - k : size;
	memcpy(buf, c->bytes + k, n);
	return n;
}

static csd_image *fuzz_flow_image(const struct fuzz_code *code, int callback)
{
	csd_image *img = csd_image_new();
	FUZZ_CHECK(img != NULL);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_A32_ADDR, fuzz_image_a32, sizeof(fuzz_image_a32), 0) == 0);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_T32_ADDR, fuzz_image_t32, sizeof(fuzz_image_t32), 0) == 0);
	if (fuzz_kernel)
		FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_KERNEL_ADDR, fuzz_kernel, fuzz_kernel_size, 0) == 0);
	if (code->size && callback)
		FUZZ_CHECK(csd_image_set_callback(img, fuzz_flow_read, (void *)code) == 0);
	else if (code->size)
		FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_CODE_ADDR, code->bytes, code->size, 0) == 0);
	return img;
}

struct fuzz_rec_list {
	struct csd_record *r;
	size_t n, cap;
};

static void fuzz_flow_push(struct fuzz_rec_list *l, const struct csd_record *r)
{
	l->r = fuzz_grow(l->r, &l->cap, l->n + 1, sizeof(*l->r));
	l->r[l->n++] = *r;
	FUZZ_CHECK(l->n <= FUZZ_FLOW_MAX_RECORDS);
}

/* Size of the instruction at addr as the image bytes say (0: unreadable). */
static unsigned fuzz_insn_size(csd_image *img, uint64_t addr, uint8_t isa, uint32_t *opcode)
{
	uint8_t b[4];
	int got = csd_image_read(img, addr, b, sizeof(b));
	if (isa == CSD_ISA_ARM) {
		if (got < 4)
			return 0;
		*opcode = fuzz_le32(b);
		return 4;
	}
	if (got < 2)
		return 0;
	uint32_t hw1 = (uint32_t)b[0] | (uint32_t)b[1] << 8;
	if ((hw1 >> 11) < 0x1D) {
		*opcode = hw1;
		return 2;
	}
	if (got < 4)
		return 0;
	*opcode = hw1 << 16 | (uint32_t)b[2] | (uint32_t)b[3] << 8;
	return 4;
}

static void fuzz_flow_print(const char *what, size_t i, const struct csd_record *r)
{
	fprintf(stderr, "%s record %zu: %s offset 0x%llx addr 0x%llx end 0x%llx last 0x%llx count %u size %llu "
		"flags 0x%x cond %u isa %u cycles %llu exc %u target 0x%llx%s%s\n", what, i, csd_rec_type_name((int)r->type),
		(unsigned long long)r->offset, (unsigned long long)r->addr, (unsigned long long)r->end,
		(unsigned long long)r->last, r->count, (unsigned long long)r->size, r->flags, r->cond, r->isa,
		(unsigned long long)r->cycles, r->exception, (unsigned long long)r->target, r->error ? " " : "",
		r->error ? r->error : "");
}

/* A failed record check shows the record first. */
#define FUZZ_CHECK_REC(cond, r) do { if (!(cond)) fuzz_flow_print("bad", 0, (r)); FUZZ_CHECK(cond); } while (0)

/* relax: the known open bug of ranges cut back by a cancel (lenient mode) */
static void fuzz_flow_check(const struct fuzz_stream *st, csd_image *img, const struct csd_record *r, int relax)
{
	uint32_t op;
	FUZZ_CHECK_REC(r->type >= CSD_REC_RANGE && r->type < CSD_REC_TYPE_COUNT, r);
	FUZZ_CHECK_REC(fuzz_stream_index(st, r->offset) >= 0, r);
	FUZZ_CHECK_REC(r->cond <= CSD_COND_FAIL && r->isa <= CSD_ISA_JAZELLE && r->reason <= CSD_REASON_DEBUG_EXIT, r);
	FUZZ_CHECK_REC(r->type != CSD_REC_ERROR || r->error != NULL, r);
	if (r->type == CSD_REC_TRUNCATED) {
		long i = fuzz_stream_index(st, r->offset);
		FUZZ_CHECK_REC(r->error != NULL && r->size >= 1, r);
		FUZZ_CHECK_REC(r->size == st->size - (size_t)i, r);
	}
	if (r->type == CSD_REC_ADDRESS_UNKNOWN)
		FUZZ_CHECK_REC(r->addr == 0 && r->error == NULL, r);
	if (r->type == CSD_REC_NO_MEMORY) {
		FUZZ_CHECK_REC(r->error == NULL, r);
		if (r->isa == CSD_ISA_ARM || r->isa == CSD_ISA_THUMB || r->isa == CSD_ISA_THUMBEE)
			FUZZ_CHECK_REC(fuzz_insn_size(img, r->addr, r->isa, &op) == 0, r);
	}
	if (r->type == CSD_REC_RANGE) {
		FUZZ_CHECK_REC(r->isa == CSD_ISA_ARM || r->isa == CSD_ISA_THUMB || r->isa == CSD_ISA_THUMBEE, r);
		FUZZ_CHECK_REC(r->count >= 1, r);
		if (relax)
			return;
		FUZZ_CHECK_REC(r->addr <= r->last && r->last < r->end, r);
		unsigned last_size = fuzz_insn_size(img, r->last, r->isa, &op);
		FUZZ_CHECK_REC(last_size != 0 && r->last + last_size == r->end, r);
		unsigned unit = r->isa == CSD_ISA_ARM ? 4 : 2;
		FUZZ_CHECK_REC(r->end - r->addr >= (uint64_t)unit * r->count && r->end - r->addr <= 4ull * r->count, r);
	}
	if (r->type == CSD_REC_INSN) {
		FUZZ_CHECK_REC(r->isa == CSD_ISA_ARM || r->isa == CSD_ISA_THUMB || r->isa == CSD_ISA_THUMBEE, r);
		unsigned size = fuzz_insn_size(img, r->addr, r->isa, &op);
		FUZZ_CHECK_REC(size != 0 && size == r->size && op == r->opcode, r);
	}
}

/*
 * How strictly the two decodes are compared, from the environment variable
 * CSD_FUZZ_FLOW_COMPARE:
 *   strict (default)  as described at the top;
 *   lenient           NO_MEMORY and ADDRESS_UNKNOWN records are compared by their total atoms
 *                     and cycles only (not by position), and inputs whose
 *                     trace cancels an instruction (ETMv3 exception with
 *                     the cancel bit) skip the instruction comparison and
 *                     the range geometry checks: known open bugs
 *                     (docs/FUZZING.md); this keeps the fuzzer looking for
 *                     new ones while they are open;
 *   off               no comparison, only the per-record checks.
 */
enum { FUZZ_CMP_OFF, FUZZ_CMP_LENIENT, FUZZ_CMP_STRICT };

static int fuzz_flow_compare_mode(void)
{
	const char *e = getenv("CSD_FUZZ_FLOW_COMPARE");
	if (!e || !*e || strcmp(e, "strict") == 0)
		return FUZZ_CMP_STRICT;
	return strcmp(e, "lenient") == 0 ? FUZZ_CMP_LENIENT : FUZZ_CMP_OFF;
}

/* How the PTM flow decoder walks (test switches, flow.h). */
struct fuzz_walk {
	uint32_t max_blocks;    /* 0: CSDI_WALK_MAX_BLOCKS */
	int no_cache;           /* without the walk cache */
};

/* Decode the trace with pieces from `sp`; records appended to out. */
static void fuzz_flow_decode(const struct csd_flow_config *cfg, const struct fuzz_stream *st, struct fuzz_split *sp,
			     const struct fuzz_walk *wk, struct fuzz_rec_list *out)
{
	csd_flow_decoder *dec = csd_flow_new(cfg);
	if (!dec)
		return;
	if (wk->max_blocks)
		csdi_ptm_flow_walk_limit(dec, wk->max_blocks);
	if (wk->no_cache)
		csdi_ptm_flow_walk_cache(dec, 0, 0);
	struct csd_record rec;
	size_t pos = 0;
	unsigned empty = 0;
	int rc;
	while (pos < st->size) {
		size_t n = fuzz_split_next(sp, st->size - pos);
		if (n == 0 && ++empty > 64)
			n = 1;
		struct csd_bytes b = fuzz_stream_run(st, pos, n);
		FUZZ_CHECK(csd_flow_feed(dec, &b) == CSD_OK);
		pos += n;
		while ((rc = csd_flow_next(dec, &rec)) == CSD_OK)
			fuzz_flow_push(out, &rec);
		FUZZ_CHECK(rc == CSD_EAGAIN);
	}
	FUZZ_CHECK(csd_flow_finish(dec) == CSD_OK);
	while ((rc = csd_flow_next(dec, &rec)) == CSD_OK)
		fuzz_flow_push(out, &rec);
	FUZZ_CHECK(rc == CSD_EEOS);
	FUZZ_CHECK(csd_flow_next(dec, &rec) == CSD_EEOS);
	struct csd_packet last;
	rc = csd_flow_last_packet(dec, &last);
	FUZZ_CHECK(rc == CSD_OK || rc == CSD_ENOENT);
	FUZZ_CHECK(rc != CSD_OK || fuzz_stream_index(st, last.offset) >= 0);
	csd_flow_free(dec);
	int relax = 0;
	for (size_t i = 0; i < out->n && fuzz_flow_compare_mode() == FUZZ_CMP_LENIENT; i++)
		if (out->r[i].type == CSD_REC_EXCEPTION && (out->r[i].flags & CSD_RECF_CANCELLED))
			relax = 1;
	for (size_t i = 0; i < out->n; i++) {
		fuzz_flow_check(st, cfg->image, &out->r[i], relax);
		FUZZ_CHECK_REC(out->r[i].type != CSD_REC_TRUNCATED || i + 1 == out->n, &out->r[i]);
	}
}

/* Atoms spent where the instructions are not known. */
static int fuzz_rec_lost(const struct csd_record *r)
{
	return r->type == CSD_REC_NO_MEMORY || r->type == CSD_REC_ADDRESS_UNKNOWN;
}

static int fuzz_rec_same(const struct csd_record *a, const struct csd_record *b)
{
	return a->type == b->type && a->flags == b->flags && a->offset == b->offset && a->addr == b->addr &&
	       a->end == b->end && a->last == b->last && a->target == b->target && a->cycles == b->cycles &&
	       a->timestamp == b->timestamp && a->count == b->count && a->size == b->size &&
	       a->opcode == b->opcode && a->context_id == b->context_id && a->exception == b->exception &&
	       a->isa == b->isa && a->cond == b->cond && a->reason == b->reason && a->vmid == b->vmid &&
	       a->id == b->id &&
	       (a->error == b->error || (a->error && b->error && strcmp(a->error, b->error) == 0));
}

/* Say where the two decodes part before the check fails. */
static void fuzz_flow_diverged(const struct fuzz_rec_list *a, size_t i, const struct fuzz_rec_list *b, size_t j)
{
	fprintf(stderr, "range and instruction decodes differ:\n");
	for (size_t k = i > 3 ? i - 3 : 0; k < a->n && k <= i + 2; k++)
		fuzz_flow_print(k == i ? "range*" : "range ", k, &a->r[k]);
	for (size_t k = j > 6 ? j - 6 : 0; k < b->n && k <= j + 4; k++)
		fuzz_flow_print(k == j ? "insn* " : "insn  ", k, &b->r[k]);
}

/* Ranges (list a) and instruction records (list b) describe the same
 * instructions, and the other records are the same. */
static void fuzz_flow_compare(csd_image *img, const struct fuzz_rec_list *a, const struct fuzz_rec_list *b)
{
	const int mode = fuzz_flow_compare_mode();
	if (mode == FUZZ_CMP_OFF)
		return;
	uint64_t cyc_a = 0, cyc_b = 0, lost_a = 0, lost_b = 0;
	for (size_t k = 0; k < a->n; k++) {
		if (mode == FUZZ_CMP_LENIENT && a->r[k].type == CSD_REC_EXCEPTION && (a->r[k].flags & CSD_RECF_CANCELLED))
			return;
		if ((a->r[k].type == CSD_REC_RANGE || fuzz_rec_lost(&a->r[k])) && (a->r[k].flags & CSD_RECF_CYCLES))
			cyc_a += a->r[k].cycles;
		if (fuzz_rec_lost(&a->r[k]))
			lost_a += a->r[k].count;
	}
	for (size_t k = 0; k < b->n; k++) {
		if ((b->r[k].type == CSD_REC_INSN || fuzz_rec_lost(&b->r[k])) && (b->r[k].flags & CSD_RECF_CYCLES))
			cyc_b += b->r[k].cycles;
		if (fuzz_rec_lost(&b->r[k]))
			lost_b += b->r[k].count;
	}
	if (lost_a != lost_b || cyc_a != cyc_b)
		fprintf(stderr, "lost atoms %llu / %llu, cycles %llu / %llu (ranges / instructions)\n",
			(unsigned long long)lost_a, (unsigned long long)lost_b, (unsigned long long)cyc_a,
			(unsigned long long)cyc_b);
	FUZZ_CHECK(lost_a == lost_b);
	FUZZ_CHECK(cyc_a == cyc_b);
	const int skip_lost = mode == FUZZ_CMP_LENIENT;
	size_t j = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct csd_record *r = &a->r[i];
		if (skip_lost && fuzz_rec_lost(r))
			continue;
		while (skip_lost && j < b->n && fuzz_rec_lost(&b->r[j]))
			j++;
		if (r->type != CSD_REC_RANGE) {
			if (j >= b->n || !fuzz_rec_same(r, &b->r[j]))
				fuzz_flow_diverged(a, i, b, j);
			FUZZ_CHECK(j < b->n && fuzz_rec_same(r, &b->r[j]));
			j++;
			continue;
		}
		uint64_t at = r->addr;
		for (uint32_t k = 0; k < r->count; k++) {
			uint32_t op;
			unsigned size = fuzz_insn_size(img, at, r->isa, &op);
			FUZZ_CHECK(size != 0);
			while (skip_lost && j < b->n && fuzz_rec_lost(&b->r[j]))
				j++;
			if (j >= b->n || b->r[j].type != CSD_REC_INSN || b->r[j].addr != at || b->r[j].isa != r->isa)
				fuzz_flow_diverged(a, i, b, j);
			FUZZ_CHECK(j < b->n && b->r[j].type == CSD_REC_INSN);
			FUZZ_CHECK(b->r[j].addr == at && b->r[j].isa == r->isa);
			if (k + 1 == r->count)
				FUZZ_CHECK(at == r->last);
			at += size;
			j++;
		}
		FUZZ_CHECK(at == r->end);
	}
	while (skip_lost && j < b->n && fuzz_rec_lost(&b->r[j]))
		j++;
	FUZZ_CHECK(j == b->n);
}

/* Feed dec the stream's bytes [from, to) and drain it into out (NULL: drop). */
static void fuzz_flow_feed_range(csd_flow_decoder *dec, const struct fuzz_stream *st, size_t from, size_t to,
				 struct fuzz_rec_list *out)
{
	if (to > from) {
		struct csd_bytes b = fuzz_stream_run(st, from, to - from);
		FUZZ_CHECK(csd_flow_feed(dec, &b) == CSD_OK);
	}
	struct csd_record rec;
	while (csd_flow_next(dec, &rec) == CSD_OK)
		if (out)
			fuzz_flow_push(out, &rec);
}

/*
 * The stream cut at every sync point (csd_sync_scan) and joined as csdec.h
 * describes: each chunk decoded by a reset decoder that saves its state at
 * the chunk's first sync point after the cut; the decoder that saw
 * everything before goes on to that point and, where csd_flow_state_join
 * says the states are equal (and csd_flow_state_complete takes), the
 * chunk's records from there on (completed) are the serial ones and its
 * decoder carries on; else the serial decoder decodes the chunk. Whatever
 * the bytes, the result must be the serial decode `ref`.
 */
static void fuzz_flow_chunked(const struct csd_flow_config *cfg, const struct fuzz_stream *st,
			      const struct fuzz_walk *wk, const struct fuzz_rec_list *ref)
{
	size_t cuts[32], nc = 0;
	if (csd_sync_scan(st->data, st->size, 1, cuts, 32, &nc) != CSD_OK || nc == 0)
		return;
	csd_flow_decoder *serial = csd_flow_new(cfg), *spare = csd_flow_new(cfg);
	if (!serial || !spare) {
		csd_flow_free(serial);
		csd_flow_free(spare);
		return;
	}
	if (wk->max_blocks)
		csdi_ptm_flow_walk_limit(serial, wk->max_blocks);
	struct fuzz_rec_list out = { NULL, 0, 0 }, kept = { NULL, 0, 0 };
	fuzz_flow_feed_range(serial, st, 0, cuts[0], &out);
	for (size_t c = 0; c < nc; c++) {
		const size_t from = cuts[c], to = c + 1 < nc ? cuts[c + 1] : st->size;
		size_t inner[2], ni = 0;
		FUZZ_CHECK(csd_sync_scan(st->data + from, to - from, 1, inner, 2, &ni) == CSD_OK);
		FUZZ_CHECK(csd_flow_reset(spare) == CSD_OK);
		if (wk->max_blocks)
			csdi_ptm_flow_walk_limit(spare, wk->max_blocks);
		csd_flow_state *saved = NULL;
		size_t at = to;
		kept.n = 0;
		if (ni) {
			at = from + inner[0];
			fuzz_flow_feed_range(spare, st, from, at, NULL);
			if (csd_flow_state_save(spare, &saved) != CSD_OK)
				saved = NULL;
			fuzz_flow_feed_range(spare, st, at, to, &kept);
		}
		fuzz_flow_feed_range(serial, st, from, at, &out);
		if (saved && csd_flow_state_join(saved, serial) == 1 && csd_flow_state_complete(saved, spare) == CSD_OK) {
			FUZZ_CHECK(csd_flow_state_complete_records(saved, kept.r, kept.n) == CSD_OK);
			for (size_t i = 0; i < kept.n; i++)
				fuzz_flow_push(&out, &kept.r[i]);
			csd_flow_decoder *t = serial;
			serial = spare;
			spare = t;
		} else {
			fuzz_flow_feed_range(serial, st, at, to, &out);
		}
		csd_flow_state_free(saved);
	}
	FUZZ_CHECK(csd_flow_finish(serial) == CSD_OK);
	fuzz_flow_feed_range(serial, st, 0, 0, &out);
	for (size_t i = 0; i < out.n && i < ref->n; i++)
		if (!fuzz_rec_same(&out.r[i], &ref->r[i])) {
			fuzz_flow_print("serial", i, &ref->r[i]);
			fuzz_flow_print("chunked", i, &out.r[i]);
			FUZZ_CHECK(fuzz_rec_same(&out.r[i], &ref->r[i]));
		}
	FUZZ_CHECK(out.n == ref->n);
	free(out.r);
	free(kept.r);
	csd_flow_free(serial);
	csd_flow_free(spare);
}

static inline int fuzz_flow_run(uint32_t protocol, const uint8_t *data, size_t size)
{
	struct fuzz_hdr h;
	if (!fuzz_hdr_parse(data, size, &h))
		return 0;
	fuzz_flow_load_kernel();
	struct fuzz_code code;
	code.bytes = data + FUZZ_HDR_SIZE;
	code.size = 4u * (h.code_words % 64u);
	if (code.size > size - FUZZ_HDR_SIZE)
		return 0;
	struct fuzz_stream st;
	if (!fuzz_stream_init(&st, code.bytes + code.size, size - FUZZ_HDR_SIZE - code.size,
			      (h.misc & FUZZ_MISC_SPREAD) != 0))
		return 0;
	csd_image *img = fuzz_flow_image(&code, (h.misc & FUZZ_MISC_CODE_CALLBACK) != 0);
	const struct csd_trace_config tc = fuzz_hdr_config(&h, protocol);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	fc.image = img;

	struct fuzz_rec_list ranges = { NULL, 0, 0 }, insns = { NULL, 0, 0 };
	struct fuzz_split sp;
	struct fuzz_walk wk = { (h.misc & FUZZ_MISC_SHORT_WALK) ? 5 : 0, 0 };
	fuzz_split_init(&sp, 0, 0);
	fc.flags = CSD_FLOW_MEMO_AT_ONCE;
	fuzz_flow_decode(&fc, &st, &sp, &wk, &ranges);
	fc.flags = CSD_FLOW_INSN;
	fuzz_split_init(&sp, h.split_mode, h.split_seed);
	fuzz_flow_decode(&fc, &st, &sp, &wk, &insns);
	fuzz_flow_compare(img, &ranges, &insns);
	{
		/* ETMv3: the segment memo, PTM: the walk cache changes no record
		 * (pieces as the input says). */
		struct fuzz_rec_list plain = { NULL, 0, 0 };
		fc.flags = protocol == CSD_PROTO_ETM3 ? CSD_FLOW_NO_MEMO : 0;
		wk.no_cache = 1;
		fuzz_split_init(&sp, h.split_mode, h.split_seed);
		fuzz_flow_decode(&fc, &st, &sp, &wk, &plain);
		for (size_t i = 0; i < plain.n && i < ranges.n; i++)
			if (!fuzz_rec_same(&plain.r[i], &ranges.r[i])) {
				for (size_t j = i > 3 ? i - 3 : 0; j < i + 3 && j < plain.n && j < ranges.n; j++) {
					fuzz_flow_print(protocol == CSD_PROTO_ETM3 ? "memo" : "walk cache", j, &ranges.r[j]);
					fuzz_flow_print(protocol == CSD_PROTO_ETM3 ? "no memo" : "no walk cache", j,
							&plain.r[j]);
				}
				FUZZ_CHECK(fuzz_rec_same(&plain.r[i], &ranges.r[i]));
			}
		FUZZ_CHECK(plain.n == ranges.n);
		free(plain.r);
	}
	fc.flags = 0;
	fuzz_flow_chunked(&fc, &st, &wk, &ranges);
	free(ranges.r);
	free(insns.r);
	csd_image_free(img);
	fuzz_stream_free(&st);
	return 0;
}

#endif
