/*
 * fuzz_accum.c - libFuzzer harness for the counting of `csdec coverage`
 * and `csdec profile` (tools/slotmap.c, cov_accum.c, prof_accum.c): record
 * streams through the accumulation and every report.
 *
 * Input byte 0:
 *   bit 0      1: records made from the input; 0: records of the flow decoder
 *   bits 3:1   functions: none (0), or one every 8 << n bytes over the code
 *              (Thumb every other one)
 *   bit 4      profile keeps costs per address (as for --callgrind)
 *   bit 5      a small memory limit (64 KiB): operations fail cleanly
 *   bit 6      decoder: ETMv3 (else PTM)
 *   bit 7      decoder: also every report as text (else the counts compared
 *              directly, and the summaries written)
 *
 * Decoder records: the rest is the flow harnesses' input (fuzz_flow.h).
 * The trace is decoded as ranges and instruction by instruction; both
 * decodes go through coverage and through profile (as the tool decodes
 * for it: instructions where prof_needs_insns) and must give the same
 * counts per address, functions and call edges, and with bit 7 every
 * report byte for byte the same.
 *
 * Records from the input: byte 1 seeds the bytes of a region of mixed 16-
 * and 32-bit T32 halfwords; then 8 bytes a record: kind (range,
 * instruction, exception, exception return, gap, other), source, the
 * instruction set, region and address, how many instructions, branch
 * flags, cycles. Ranges are walked through the image as the decoder walks
 * them, so they are consistent. Each instruction's count and taken count
 * must equal a model's, and the executions the sum fed.
 *
 * Both: the counts of all addresses add up to the instructions fed; the
 * profile's functions add up to its totals, and so do the callgrind
 * file's cost lines; the memory used stays within the limit and within a
 * bound of the image's size, whatever the number of records.
 */
#include "fuzz_flow.h"
#include "fuzz_tools.h"

#define ACC_MIXED_ADDR 0xA000u
#define ACC_MIXED_SIZE 0x800u
#define ACC_ZERO_ADDR 0xB000u
#define ACC_ZERO_SIZE 0x1000u
#define ACC_MODEL_BASE 0x8000u
#define ACC_MODEL_END (ACC_ZERO_ADDR + ACC_ZERO_SIZE)
#define ACC_REC_SIZE 8
#define ACC_SMALL_LIMIT ((size_t)64 << 10)
#define ACC_WALK_BUDGET 100000u

static FILE *acc_null;

static FILE *acc_devnull(void)
{
	if (!acc_null)
		acc_null = fopen("/dev/null", "w");
	FUZZ_CHECK(acc_null != NULL);
	return acc_null;
}

/* Functions every `step` bytes over [from, to), Thumb every other one. */
static struct symtab *acc_symbols(unsigned step, uint64_t from, uint64_t to)
{
	struct symtab *st = symtab_new();
	FUZZ_CHECK(st != NULL);
	static char names[4096][12];
	size_t k = 0;
	for (uint64_t a = from; step && a < to && k < 4096; a += step, k++) {
		snprintf(names[k], sizeof(names[k]), "f_%06llx", (unsigned long long)a);
		FUZZ_CHECK(add_func(st, a, step, (int)(k & 1), names[k]) == 0);
	}
	symtab_finish(st);
	return st;
}

/* Bytes of the image's sections (the bound on what counting may keep). */
static uint64_t acc_image_bytes(const csd_image *img)
{
	uint64_t total = 0, addr, size;
	const uint8_t *data;
	for (size_t i = 0; i < csd_image_num_sections(img); i++)
		if (csd_image_section(img, i, &addr, &size, &data) == 0)
			total += size;
	return total;
}

static void acc_check_memory(size_t used, size_t limit, uint64_t image_bytes)
{
	FUZZ_CHECK(used <= limit);
	FUZZ_CHECK(used <= 128 * image_bytes + ((size_t)1 << 20));
}

/* Sum of all counts of a table. */
static uint64_t acc_sum(const struct ctab *t)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].key != UINT64_MAX)
			for (unsigned j = 0; j < SLOT_CHUNK; j++)
				sum += (uint64_t)count_chunk_get(t->e[i].c, j);
	return sum;
}

/* The coverage reports into a string. */
static char *acc_cov_text(struct cov *c, csd_image *img)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(cov_load_code(c, img) == 0);
	FUZZ_CHECK(cov_print_summary(c, f) == 0);
	FUZZ_CHECK(cov_print_insns(c, f) == 0);
	FUZZ_CHECK(fclose(f) == 0);
	return buf;
}

/* The profile's reports into a string; its totals checked. */
static char *acc_prof_text(struct prof *p)
{
	char *buf = NULL;
	size_t len;
	FUZZ_CHECK(prof_finish(p) == 0);
	uint64_t instr = 0, cycles = 0;
	for (size_t i = 0; i < p->nfn; i++) {
		instr += p->fn[i].instr;
		cycles += p->fn[i].cycles;
	}
	FUZZ_CHECK(instr == p->instr);
	FUZZ_CHECK(cycles == p->cycles_total);
	for (size_t i = 0; i < p->nedge; i++)
		FUZZ_CHECK(p->edges[i].calls >= 1 && p->edges[i].caller < p->nfn && p->edges[i].callee < p->nfn);
	FILE *f = open_memstream(&buf, &len);
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(prof_print_top(p, f, 0, 0) == 0);
	FUZZ_CHECK(prof_print_top(p, f, 3, 1) == 0);
	if (p->per_address)
		FUZZ_CHECK(prof_write_callgrind(p, f, 0, NULL) == 0);
	FUZZ_CHECK(fclose(f) == 0);
	if (p->per_address) {
		/* cost lines (not the call lines' inclusive ones) add up */
		uint64_t ci = 0, cc = 0;
		int after_calls = 0;
		for (const char *l = strstr(buf, "summary: "); l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			unsigned long long a, line, n, cyc;
			if (strncmp(l, "calls=", 6) == 0) {
				after_calls = 1;
				continue;
			}
			if (sscanf(l, "0x%llx %llu %llu %llu", &a, &line, &n, &cyc) == 4) {
				if (!after_calls) {
					ci += n;
					cc += cyc;
				}
				after_calls = 0;
			}
		}
		FUZZ_CHECK(ci == p->instr);
		FUZZ_CHECK(cc == p->cycles_total);
	}
	return buf;
}

static void acc_same(const char *what, char *a, char *b)
{
	if (strcmp(a, b) != 0) {
		size_t i = 0;
		while (a[i] == b[i])
			i++;
		size_t from = i > 200 ? i - 200 : 0;
		fprintf(stderr, "%s differs as ranges and as instructions:\n--- ranges\n%.400s\n--- instructions\n%.400s\n",
			what, a + from, b + from);
	}
	FUZZ_CHECK(strcmp(a, b) == 0);
	free(a);
	free(b);
}

/* Every value of a is b's and the other way round. */
static int acc_ctab_same(const struct ctab *a, const struct ctab *b)
{
	for (int k = 0; k < 2; k++) {
		const struct ctab *x = k ? b : a, *y = k ? a : b;
		for (size_t i = 0; i < x->cap; i++) {
			if (x->e[i].key == UINT64_MAX)
				continue;
			const struct count_chunk *o = ctab_find(y, x->e[i].key);
			for (unsigned j = 0; j < SLOT_CHUNK; j++)
				if (count_chunk_get(x->e[i].c, j) != (o ? count_chunk_get(o, j) : 0))
					return 0;
		}
	}
	return 1;
}

static int acc_btab_same(const struct btab *a, const struct btab *b)
{
	for (int k = 0; k < 2; k++) {
		const struct btab *x = k ? b : a, *y = k ? a : b;
		for (size_t i = 0; i < x->cap; i++) {
			if (x->e[i].key == UINT64_MAX)
				continue;
			const uint64_t *o = btab_find(y, x->e[i].key);
			for (unsigned j = 0; j < SLOT_CHUNK / 64; j++)
				if (x->e[i].w[j] != (o ? o[j] : 0))
					return 0;
		}
	}
	return 1;
}

static void acc_cov_same(const struct cov *a, const struct cov *b)
{
	FUZZ_CHECK(a->executions == b->executions);
	FUZZ_CHECK(acc_ctab_same(&a->counts, &b->counts));
	FUZZ_CHECK(acc_ctab_same(&a->taken, &b->taken));
	FUZZ_CHECK(acc_btab_same(&a->isa, &b->isa));
}

static void acc_prof_same(struct prof *a, struct prof *b)
{
	FUZZ_CHECK(prof_finish(a) == 0 && prof_finish(b) == 0);
	FUZZ_CHECK(a->instr == b->instr && a->cycles_total == b->cycles_total && a->other_cycles == b->other_cycles);
	FUZZ_CHECK(a->nfn == b->nfn && a->nedge == b->nedge && a->sources == b->sources);
	for (size_t i = 0; i < a->nfn; i++)
		FUZZ_CHECK(a->fn[i].entry == b->fn[i].entry && a->fn[i].instr == b->fn[i].instr &&
			   a->fn[i].cycles == b->fn[i].cycles && a->fn[i].calls == b->fn[i].calls);
	if (a->nedge) {
		qsort(a->edges, a->nedge, sizeof(*a->edges), cmp_edge_caller);
		qsort(b->edges, b->nedge, sizeof(*b->edges), cmp_edge_caller);
	}
	for (size_t i = 0; i < a->nedge; i++)
		FUZZ_CHECK(memcmp(&a->edges[i], &b->edges[i], sizeof(a->edges[i])) == 0);
	FUZZ_CHECK(acc_ctab_same(&a->counts, &b->counts));
	FUZZ_CHECK(acc_ctab_same(&a->cycles, &b->cycles));
}

/* ---- records of the flow decoder ---- */

static void acc_feed_list(struct cov *c, struct prof *p, const struct fuzz_rec_list *l, csd_image *img)
{
	for (size_t i = 0; i < l->n; i++) {
		if (c)
			FUZZ_CHECK(cov_record(c, 0x10, &l->r[i]) == 0);
		if (p)
			FUZZ_CHECK(prof_record(p, 0x10, &l->r[i]) == 0);
	}
	if (c)
		FUZZ_CHECK(cov_source_end(c, 0x10, img) == 0);
	if (p)
		FUZZ_CHECK(prof_source_end(p, 0x10, img) == 0);
}

static void acc_decoder(uint8_t opt, const uint8_t *data, size_t size)
{
	struct fuzz_hdr h;
	if (!fuzz_hdr_parse(data, size, &h))
		return;
	fuzz_flow_load_kernel();
	struct fuzz_code code;
	code.bytes = data + FUZZ_HDR_SIZE;
	code.size = 4u * (h.code_words % 64u);
	if (code.size > size - FUZZ_HDR_SIZE)
		return;
	struct fuzz_stream st;
	if (!fuzz_stream_init(&st, code.bytes + code.size, size - FUZZ_HDR_SIZE - code.size, 0))
		return;
	csd_image *img = fuzz_flow_image(&code, (h.misc & FUZZ_MISC_CODE_CALLBACK) != 0);
	const struct csd_trace_config tc = fuzz_hdr_config(&h, (opt >> 6 & 1) ? CSD_PROTO_ETM3 : CSD_PROTO_PTM);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	fc.image = img;
	struct fuzz_rec_list ranges = { NULL, 0, 0 }, insns = { NULL, 0, 0 };
	struct fuzz_split sp;
	struct fuzz_walk wk = { 0, 0 };
	fuzz_split_init(&sp, 0, 0);
	fuzz_flow_decode(&fc, &st, &sp, &wk, &ranges);
	fc.flags = CSD_FLOW_INSN;
	fuzz_flow_decode(&fc, &st, &sp, &wk, &insns);
	fuzz_flow_compare(img, &ranges, &insns); /* the decoder's part, said first */
	uint64_t fed = 0;
	for (size_t i = 0; i < ranges.n; i++)
		fed += ranges.r[i].type == CSD_REC_RANGE ? ranges.r[i].count : 0;
	struct symtab *sym = acc_symbols((opt >> 1 & 7) ? 8u << (opt >> 1 & 7) : 0, FUZZ_IMAGE_A32_ADDR,
					 FUZZ_CODE_ADDR + 0x100);
	size_t limit = (opt & 0x20) ? ACC_SMALL_LIMIT : ACCUM_MEM_LIMIT;
	uint64_t image_bytes = acc_image_bytes(img) + 4u * 64u; /* the extra code may come by callback */
	if (limit == ACCUM_MEM_LIMIT && fuzz_flow_compare_mode() == FUZZ_CMP_STRICT) {
		const struct fuzz_rec_list *as_tool = prof_needs_insns(fc.trace) ? &insns : &ranges;
		struct cov *c[2] = { cov_new(sym, limit), cov_new(sym, limit) };
		struct prof *p[2] = { prof_new(sym, opt >> 4 & 1, limit), prof_new(sym, opt >> 4 & 1, limit) };
		FUZZ_CHECK(c[0] && c[1] && p[0] && p[1]);
		acc_feed_list(c[0], p[0], &ranges, img);
		acc_feed_list(c[1], NULL, &insns, img);
		acc_feed_list(NULL, p[1], as_tool == &ranges ? &insns : as_tool, img);
		for (int k = 0; k < 2; k++) {
			FUZZ_CHECK(cov_executions(c[k]) == fed);
			FUZZ_CHECK(acc_sum(&c[k]->counts) == fed);
			FUZZ_CHECK(prof_instructions(p[k]) == fed);
			acc_check_memory(cov_memory(c[k]), limit, image_bytes);
			acc_check_memory(prof_memory(p[k]), limit, image_bytes);
		}
		acc_cov_same(c[0], c[1]);
		if (opt & 0x80) {
			acc_same("coverage", acc_cov_text(c[0], img), acc_cov_text(c[1], img));
			/* p[0] had ranges; as the tool decodes, profile needs the same */
			if (as_tool == &ranges)
				acc_same("profile", acc_prof_text(p[0]), acc_prof_text(p[1]));
			else
				free(acc_prof_text(p[1]));
		} else {
			if (as_tool == &ranges)
				acc_prof_same(p[0], p[1]);
			FUZZ_CHECK(cov_load_code(c[0], img) == 0 && cov_print_summary(c[0], acc_devnull()) == 0);
			FUZZ_CHECK(prof_finish(p[1]) == 0 && prof_print_top(p[1], acc_devnull(), 20, 0) == 0);
		}
		for (int k = 0; k < 2; k++) {
			cov_free(c[k]);
			prof_free(p[k]);
		}
	} else {
		/* A small limit: the first failure stops the feed, as it stops the tool. */
		struct cov *c = cov_new(sym, limit);
		struct prof *p = prof_new(sym, opt >> 4 & 1, limit);
		int cov_ok = c != NULL, prof_ok = p != NULL;
		for (size_t i = 0; i < ranges.n; i++) {
			if (cov_ok && cov_record(c, 0x10, &ranges.r[i]) < 0)
				cov_ok = 0;
			if (prof_ok && prof_record(p, 0x10, &ranges.r[i]) < 0)
				prof_ok = 0;
		}
		cov_ok = cov_ok && cov_source_end(c, 0x10, img) == 0;
		prof_ok = prof_ok && prof_source_end(p, 0x10, img) == 0;
		if (c) {
			FUZZ_CHECK(cov_ok || strstr(cov_error(c), "(the limit)") != NULL);
			FUZZ_CHECK(cov_memory(c) <= limit);
			if (cov_ok && cov_load_code(c, img) == 0 && cov_print_summary(c, acc_devnull()) == 0)
				cov_print_insns(c, acc_devnull());
			cov_free(c);
		}
		if (p) {
			FUZZ_CHECK(prof_ok || strstr(prof_error(p), "(the limit)") != NULL);
			FUZZ_CHECK(prof_memory(p) <= limit);
			if (prof_ok && prof_finish(p) == 0 && prof_print_top(p, acc_devnull(), 0, 0) == 0 && p->per_address)
				prof_write_callgrind(p, acc_devnull(), 0, NULL);
			prof_free(p);
		}
	}
	symtab_free(sym);
	free(ranges.r);
	free(insns.r);
	csd_image_free(img);
	fuzz_stream_free(&st);
}

/* ---- records from the input ---- */

struct acc_model {
	uint64_t count[(ACC_MODEL_END - ACC_MODEL_BASE) / 2];
	uint64_t taken[(ACC_MODEL_END - ACC_MODEL_BASE) / 2];
};

/* Size of the instruction at addr in isa, 0 where the image has none. */
static unsigned acc_insn_size(csd_image *img, uint64_t addr, int isa)
{
	uint8_t b[4];
	int got = csd_image_read(img, addr, b, 4);
	if (isa == CSD_ISA_ARM)
		return got == 4 ? 4 : 0;
	if (got < 2)
		return 0;
	unsigned size = (b[0] | b[1] << 8) >= 0xE800 ? 4 : 2;
	return got >= (int)size ? size : 0;
}

static void acc_records(uint8_t opt, const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	static uint8_t mixed[ACC_MIXED_SIZE], zeros[ACC_ZERO_SIZE];
	static struct acc_model model;
	uint32_t seed = data[0] * 2654435761u + 1;
	for (size_t i = 0; i < sizeof(mixed); i += 2) {
		uint32_t r = fuzz_rand(&seed);
		uint16_t hw = r % 3 == 0 ? (uint16_t)(0xE800u + (r >> 8) % 0x1800u) : (uint16_t)((r >> 8) % 0xE800u);
		mixed[i] = (uint8_t)hw;
		mixed[i + 1] = (uint8_t)(hw >> 8);
	}
	memset(&model, 0, sizeof(model));
	csd_image *img = csd_image_new();
	FUZZ_CHECK(img != NULL);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_A32_ADDR, fuzz_image_a32, sizeof(fuzz_image_a32), 0) == 0);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_T32_ADDR, fuzz_image_t32, sizeof(fuzz_image_t32), 0) == 0);
	FUZZ_CHECK(csd_image_add_buffer(img, ACC_MIXED_ADDR, mixed, sizeof(mixed), 0) == 0);
	FUZZ_CHECK(csd_image_add_buffer(img, ACC_ZERO_ADDR, zeros, sizeof(zeros), 0) == 0);
	static const uint32_t base[4] = { FUZZ_IMAGE_A32_ADDR, FUZZ_IMAGE_T32_ADDR, ACC_MIXED_ADDR, ACC_ZERO_ADDR };
	static const uint32_t span[4] = { 0x400, 0x200, ACC_MIXED_SIZE, ACC_ZERO_SIZE };
	struct symtab *sym = acc_symbols((opt >> 1 & 7) ? 8u << (opt >> 1 & 7) : 0, ACC_MODEL_BASE, ACC_MODEL_END);
	size_t limit = (opt & 0x20) ? ACC_SMALL_LIMIT : ACCUM_MEM_LIMIT;
	struct cov *c = cov_new(sym, limit);
	struct prof *p = prof_new(sym, opt >> 4 & 1, limit);
	/* Under the small limit a function every 16 bytes alone passes it:
	 * the profile is refused at once, as the tool then stops. */
	FUZZ_CHECK((c && p) || (limit == ACC_SMALL_LIMIT && c && !p));
	if (!p) {
		cov_free(c);
		symtab_free(sym);
		csd_image_free(img);
		return;
	}
	int cov_ok = 1, prof_ok = 1;
	uint64_t fed = 0, used_src = 0;
	for (size_t pos = 1; pos + ACC_REC_SIZE <= size; pos += ACC_REC_SIZE) {
		const uint8_t *b = data + pos;
		struct csd_record r;
		memset(&r, 0, sizeof(r));
		unsigned kind = b[0] % 8, region = b[1] & 3, src = 0x10 + (b[0] >> 3 & 3);
		int isa = (b[0] & 0x20) ? ((b[0] & 0x40) ? CSD_ISA_THUMBEE : CSD_ISA_THUMB) : CSD_ISA_ARM;
		uint64_t addr = base[region] + ((((uint32_t)b[2] << 8 | b[1]) >> 2) * 2) % span[region];
		if (isa == CSD_ISA_ARM)
			addr &= ~UINT64_C(3);
		unsigned n = (b[3] & 0x80) ? (b[3] & 0x7Fu) * 64u : b[3];
		r.flags = (b[4] & 1 ? CSD_RECF_BRANCH : 0) | (b[4] & 2 ? CSD_RECF_TAKEN : 0) | (b[4] & 4 ? CSD_RECF_LINK : 0) |
			  (b[4] & 8 ? CSD_RECF_CYCLES : 0);
		r.cycles = (r.flags & CSD_RECF_CYCLES) ? ((uint32_t)b[5] | (uint32_t)b[6] << 8 | (uint32_t)b[7] << 16) : 0;
		r.isa = (uint8_t)isa;
		r.addr = addr;
		r.id = (uint8_t)src;
		if (kind <= 3) {
			/* instructions: walked through the image like the decoder */
			unsigned got = 0, sz = 0;
			uint64_t a = addr, last = addr;
			if (kind == 3)
				n = 1;
			if (fed > ACC_WALK_BUDGET)
				n = n ? 1 : 0; /* keep each input quick */
			while (got < n && (sz = acc_insn_size(img, a, isa)) != 0) {
				last = a;
				if (a >= ACC_MODEL_BASE && a < ACC_MODEL_END)
					model.count[(a - ACC_MODEL_BASE) / 2]++;
				a += sz;
				got++;
			}
			if (!got)
				continue;
			if ((r.flags & (CSD_RECF_BRANCH | CSD_RECF_TAKEN)) == (CSD_RECF_BRANCH | CSD_RECF_TAKEN) &&
			    last < ACC_MODEL_END)
				model.taken[(last - ACC_MODEL_BASE) / 2]++;
			if (kind == 3) {
				r.type = CSD_REC_INSN;
				r.size = (uint32_t)(a - addr);
			} else {
				r.type = CSD_REC_RANGE;
				r.count = got;
				r.last = last;
				r.end = a;
			}
			fed += got;
		} else if (kind == 4) {
			r.type = CSD_REC_EXCEPTION;
			r.target = base[b[5] & 3] + (b[6] & 0xFEu);
		} else if (kind == 5) {
			r.type = CSD_REC_EXCEPTION_RETURN;
		} else if (kind == 6) {
			static const uint32_t gaps[] = { CSD_REC_TRACE_ON, CSD_REC_NO_MEMORY, CSD_REC_ERROR, CSD_REC_NOSYNC,
							 CSD_REC_ISA_UNSUPPORTED, CSD_REC_ADDRESS_UNKNOWN };
			r.type = gaps[b[2] % (sizeof(gaps) / sizeof(gaps[0]))];
			r.error = r.type == CSD_REC_ERROR ? "bad" : NULL;
		} else {
			r.type = b[2] & 1 ? CSD_REC_TIMESTAMP : CSD_REC_CYCLE_COUNT;
		}
		used_src |= UINT64_C(1) << (src - 0x10);
		if (cov_ok && cov_record(c, src, &r) < 0)
			cov_ok = 0;
		if (prof_ok && prof_record(p, src, &r) < 0)
			prof_ok = 0;
	}
	for (unsigned s = 0; s < 4; s++) {
		if (!(used_src >> s & 1))
			continue;
		if (cov_ok && cov_source_end(c, 0x10 + s, img) < 0)
			cov_ok = 0;
		if (prof_ok && prof_source_end(p, 0x10 + s, img) < 0)
			prof_ok = 0;
	}
	uint64_t image_bytes = acc_image_bytes(img);
	acc_check_memory(cov_memory(c), limit, image_bytes);
	acc_check_memory(prof_memory(p), limit, image_bytes);
	if (limit == ACCUM_MEM_LIMIT)
		FUZZ_CHECK(cov_ok && prof_ok);
	if (!cov_ok)
		FUZZ_CHECK(strstr(cov_error(c), "(the limit)") != NULL);
	if (!prof_ok)
		FUZZ_CHECK(strstr(prof_error(p), "(the limit)") != NULL);
	if (cov_ok) {
		FUZZ_CHECK(cov_executions(c) == fed);
		FUZZ_CHECK(acc_sum(&c->counts) == fed);
		for (uint64_t a = ACC_MODEL_BASE; a < ACC_MODEL_END; a += 2) {
			uint64_t want = model.count[(a - ACC_MODEL_BASE) / 2], got = (uint64_t)ctab_get(&c->counts, 0, a);
			if (got != want)
				fprintf(stderr, "address 0x%llx: counted %llu, fed %llu\n", (unsigned long long)a,
					(unsigned long long)got, (unsigned long long)want);
			FUZZ_CHECK(got == want);
			FUZZ_CHECK((uint64_t)ctab_get(&c->taken, 0, a) == model.taken[(a - ACC_MODEL_BASE) / 2]);
		}
		if (cov_load_code(c, img) == 0 && cov_print_summary(c, acc_devnull()) == 0)
			FUZZ_CHECK(cov_print_insns(c, acc_devnull()) == 0);
		else
			FUZZ_CHECK(limit != ACCUM_MEM_LIMIT);
	}
	if (prof_ok) {
		FUZZ_CHECK(prof_instructions(p) == fed);
		if (limit == ACCUM_MEM_LIMIT)
			free(acc_prof_text(p));
		else if (prof_finish(p) == 0 && prof_print_top(p, acc_devnull(), 0, 0) == 0 && p->per_address)
			prof_write_callgrind(p, acc_devnull(), 0, NULL);
	}
	cov_free(c);
	prof_free(p);
	symtab_free(sym);
	csd_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		acc_records(data[0], data + 1, size - 1);
	else
		acc_decoder(data[0], data + 1, size - 1);
	return 0;
}
