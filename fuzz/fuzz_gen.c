/*
 * fuzz_gen.c - harness of the trace generator (src/gen.c, behind `csdec
 * gen`): a configuration and an execution from the input, the generated
 * trace decoded again by the library's flow decoder.
 *
 * Input:
 *   [0]   bit 0 PTM (else ETMv3), bit 1 cycle-accurate, bits 3:2 context ID
 *         size, bit 4 timestamps, bit 5 return stack (PTM), bit 6
 *         ETMCCER[24] (DMB/DSB are PTM waypoints), bit 7 Cortex-M (ETMv3;
 *         Thumb only, vector table at 0)
 *   [1]   ETMIDR: ETMv3.(b % 6) (0xFF: ETMIDR 0, "3.5"), PTM: PFT1.(b & 1)
 *   [2-3] sync period (bytes, modulo 8192; 0: the generator's default)
 *   [4]   timestamp interval (waypoints; 0: default)
 *   [5-8] context ID
 *   [9]   start: bit 0 T32 image (else A32), bits 7:1 the instruction
 *   [10]  decoder feed split mode, [11] split seed (fuzz_common.h)
 *   [12]  seed of the PRNG that takes the branch decisions and targets
 *   [13]  bits 5:0 words of extra code that follow the header (mapped at
 *         0xA000), bit 6 the SVC vector inside the A32 image, bit 7 the
 *         decode is in ranges (expanded here) instead of instructions
 *   [14-15] ignored
 *   then the extra code, then operations, one byte each (plus operands):
 *     0x00-0x7F follow the code for 1 + (b & 0x3F) instructions (x16
 *               with bit 6): the successor is what the instruction does,
 *               branch decisions and indirect targets from the PRNG,
 *               calls pushing and returns popping a call stack
 *     0x80-0x8F jump (2 operand bytes): b & 7 chooses the A32 image, the
 *               T32 image, the extra code, unmapped memory, the kuser
 *               page, any address, near the current one, the SVC vector;
 *               bit 3: in the other instruction set
 *     0x90-0x9F exception: the successor is a handler (Cortex-M: vector
 *               table entry b & 15 + its operand; else a jump as above),
 *               the natural successor stacked for the return
 *     0xA0-0xAF return from the last exception (or follow)
 *     0xB0-0xBF the natural successor in the other instruction set
 *     0xC0-0xCF the same instruction again, 1 + (b & 15) times
 *     0xD0-0xDF the wrong branch decision (not taken if taken and back)
 *     0xE0-0xEF a call into unmapped code that returns after 1-16
 *               instructions there (qemu's kuser helpers)
 *     0xF0-0xFF end
 *   Missing bytes end the run; at most FGEN_MAX_INSNS instructions.
 *
 * Checked:
 *   - no ASan / UBSan finding; csdi_gen_insn and csdi_gen_finish return 0
 *     (the encoders take every packet the generator makes);
 *   - statistics: `insns` is the number given, `traced` the number that
 *     lie in the image (as the generator decides: readable and decodable
 *     in their instruction set), `bytes` what the sink got, and that stays
 *     under FGEN_BYTES_PER_INSN per instruction (bounded output; the
 *     generator itself allocates nothing per instruction);
 *   - the round trip: decoding the trace (instruction mode, or ranges
 *     expanded through the image) gives back exactly the traced
 *     instructions, address and instruction set, in order; no error or
 *     unknown-memory record; the cycles of the records add up to the
 *     cycles the generator put in the trace.
 * Instructions outside the image are left out on purpose: the generator
 * traces them as a gap (trace off, then on with an I-sync), like code
 * outside the trace filter, so they are the only ones the decode may miss.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "fuzz_common.h"
#include "fuzz_image.h"
#include "gen.h"

#define FGEN_HDR 16
#define FGEN_CODE_ADDR 0xA000u
#define FGEN_MAX_INSNS 8192u
#define FGEN_BYTES_PER_INSN 64u
#define FGEN_STACK 32
#define FGEN_M_VECTORS 64u

struct fgen_insn {
	uint32_t addr;
	uint8_t isa;
};

struct fgen_list {
	struct fgen_insn *v;
	size_t n, cap;
};

static void fgen_push(struct fgen_list *l, uint32_t addr, uint8_t isa)
{
	l->v = fuzz_grow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n].addr = addr;
	l->v[l->n].isa = isa;
	l->n++;
}

struct fgen_sink {
	uint8_t *data;
	size_t n, cap;
};

static int fgen_sink_put(void *ctx, const uint8_t *b, size_t n)
{
	struct fgen_sink *s = ctx;
	s->data = fuzz_grow(s->data, &s->cap, s->n + n, 1);
	memcpy(s->data + s->n, b, n);
	s->n += n;
	return 0;
}

/* The instruction at addr as the generator sees it: 1 if it is in the
 * image and decodes. */
static int fgen_decode(csd_image *img, uint32_t addr, uint8_t isa, struct csdi_insn *in)
{
	uint8_t b[4];
	int got = csd_image_read(img, addr, b, sizeof(b));
	return got > 0 && csdi_isa_decode(addr, b, (size_t)got, isa, in) > 0;
}

/* ---- the executing core ---- */

struct fgen_core {
	const uint8_t *op;      /* operations */
	size_t nop, pos;
	uint32_t rng;
	int mprof;
	size_t code_size;       /* extra code bytes at FGEN_CODE_ADDR */
	uint32_t svc_vector;
	uint32_t vec[FGEN_M_VECTORS];
	/* call stack; exception frames remember its height */
	uint32_t call_addr[FGEN_STACK];
	uint8_t call_isa[FGEN_STACK];
	unsigned ncall;
	uint32_t exc_addr[FGEN_STACK];
	uint8_t exc_isa[FGEN_STACK];
	unsigned exc_ncall[FGEN_STACK];
	unsigned nexc;
	unsigned offimage_left; /* instructions left in an unmapped call */
};

static unsigned fgen_op(struct fgen_core *c)
{
	return c->pos < c->nop ? c->op[c->pos++] : 0x100u;
}

static uint32_t fgen_rand(struct fgen_core *c)
{
	return fuzz_rand(&c->rng);
}

static void fgen_call_push(struct fgen_core *c, uint32_t addr, uint8_t isa)
{
	if (c->ncall == FGEN_STACK) {
		/* Deep recursion: forget the oldest. */
		memmove(c->call_addr, c->call_addr + 1, (FGEN_STACK - 1) * sizeof(c->call_addr[0]));
		memmove(c->call_isa, c->call_isa + 1, FGEN_STACK - 1);
		for (unsigned i = 0; i < c->nexc; i++)
			if (c->exc_ncall[i])
				c->exc_ncall[i]--;
		c->ncall--;
	}
	c->call_addr[c->ncall] = addr;
	c->call_isa[c->ncall] = isa;
	c->ncall++;
}

/* Calls made at the current exception level. */
static unsigned fgen_calls_here(const struct fgen_core *c)
{
	unsigned base = c->nexc ? c->exc_ncall[c->nexc - 1] : 0;
	return c->ncall > base ? c->ncall - base : 0;
}

/* An address in region r (operand v); the instruction set of that region
 * unless `other`. */
static void fgen_place(const struct fgen_core *c, unsigned r, uint32_t v, uint32_t cur, int other, uint32_t *addr,
		       uint8_t *isa)
{
	uint8_t i = CSD_ISA_ARM;
	uint32_t a;
	switch (r & 7) {
	case 0:
		a = FUZZ_IMAGE_A32_ADDR + 4 * (v % (sizeof(fuzz_image_a32) / 4));
		break;
	case 1:
		a = FUZZ_IMAGE_T32_ADDR + 2 * (v % (sizeof(fuzz_image_t32) / 2));
		i = CSD_ISA_THUMB;
		break;
	case 2:
		a = FGEN_CODE_ADDR + 2 * (v % (c->code_size / 2 + 1));
		i = v & 0x8000 ? CSD_ISA_THUMB : CSD_ISA_ARM;
		break;
	case 3:
		a = 0x40000000u + 4 * v;
		break;
	case 4:
		a = 0xFFFF0FA0u + 4 * (v & 15);
		break;
	case 5:
		a = v * 0x9E3779B1u;
		i = v & 1 ? CSD_ISA_THUMB : CSD_ISA_ARM;
		break;
	case 6:
		a = cur + 2 * (uint32_t)(int16_t)v;
		i = v & 1 ? CSD_ISA_THUMB : CSD_ISA_ARM;
		break;
	default:
		a = c->svc_vector;
		break;
	}
	if (other)
		i = i == CSD_ISA_ARM ? CSD_ISA_THUMB : CSD_ISA_ARM;
	if (c->mprof)
		i = CSD_ISA_THUMB;
	/* Aligned as the instruction set requires: a core cannot run
	 * anything else. */
	a &= i == CSD_ISA_ARM ? ~3u : ~1u;
	*addr = a;
	*isa = i;
}

/* A function return: BX LR, POP / LDM SP! with the PC, LDR PC, [SP], #4. */
static int fgen_return_like(const struct csdi_insn *in)
{
	uint32_t op = in->opcode;
	if (in->cls != CSDI_INSN_INDIRECT)
		return 0;
	if (in->isa == CSD_ISA_ARM)
		return (op & 0x0FFFFFFFu) == 0x012FFF1Eu || (op & 0x0FFF8000u) == 0x08BD8000u ||
		       (op & 0x0FFFFFFFu) == 0x049DF004u;
	if (in->size == 2)
		return op == 0x4770u || (op & 0xFF00u) == 0xBD00u;
	return (op & 0xFFFF8000u) == 0xE8BD8000u || op == 0xF85DFB04u;
}

/* Where the instruction goes next, as a core would run it; `flip`
 * inverts the branch decision. */
static void fgen_follow(struct fgen_core *c, csd_image *img, uint32_t a, uint8_t isa, int flip, uint32_t *na,
			uint8_t *nisa)
{
	struct csdi_insn in;
	if (!fgen_decode(img, a, isa, &in)) {
		/* Unmapped code: on for the instructions of an unmapped call,
		 * then back to the caller, or anywhere. */
		if (c->offimage_left > 1) {
			c->offimage_left--;
			*na = a + (isa == CSD_ISA_ARM ? 4 : 2);
			*nisa = isa;
			return;
		}
		c->offimage_left = 0;
		if (c->ncall) {
			c->ncall--;
			*na = c->call_addr[c->ncall];
			*nisa = c->call_isa[c->ncall];
			return;
		}
		uint32_t r = fgen_rand(c);
		fgen_place(c, r & 1, r >> 8, a, 0, na, nisa);
		return;
	}
	uint32_t seq = a + in.size;
	*na = seq;
	*nisa = isa;
	if (in.cls == CSDI_INSN_DIRECT) {
		int taken = in.cond == CSDI_COND_AL ? (fgen_rand(c) & 31) != 0 : (int)(fgen_rand(c) & 1);
		if (taken ^ flip) {
			*na = in.target;
			*nisa = in.target_isa;
			if (in.flags & CSDI_INSNF_LINK)
				fgen_call_push(c, seq, isa);
		}
		return;
	}
	if (in.cls != CSDI_INSN_INDIRECT)
		return;
	int executed = in.cond == CSDI_COND_AL || (fgen_rand(c) & 1);
	if (!(executed ^ flip))
		return;
	if (fgen_return_like(&in)) {
		if (c->nexc && fgen_calls_here(c) == 0 && c->mprof) {
			/* The handler's return is its exception return. */
			c->nexc--;
			*na = c->exc_addr[c->nexc];
			*nisa = c->exc_isa[c->nexc];
			return;
		}
		if (fgen_calls_here(c)) {
			c->ncall--;
			*na = c->call_addr[c->ncall];
			*nisa = c->call_isa[c->ncall];
			return;
		}
	}
	if (in.flags & CSDI_INSNF_LINK)
		fgen_call_push(c, seq, isa);
	/* Jump tables, calls through pointers, returns without a call:
	 * mostly within the same code. */
	uint32_t r = fgen_rand(c);
	unsigned region = (r & 3) == 0 ? (r >> 2) % 3 : a >= FGEN_CODE_ADDR ? 2 : a >= FUZZ_IMAGE_T32_ADDR ? 1 : 0;
	fgen_place(c, region, r >> 8, a, 0, na, nisa);
}

/* ---- the harness ---- */

struct fgen_setup {
	struct csdi_gen_config gc;
	int range_mode;
	uint8_t split_mode, split_seed;
};

static void fgen_config(const uint8_t *h, struct fgen_setup *s)
{
	memset(s, 0, sizeof(*s));
	struct csd_trace_config *t = &s->gc.trace;
	t->size = sizeof(*t);
	t->trace_id = 0x10;
	int ptm = h[0] & 1;
	t->protocol = ptm ? CSD_PROTO_PTM : CSD_PROTO_ETM3;
	t->etmcr = (h[0] & 2 ? 1u << 12 : 0) | (uint32_t)((h[0] >> 2) & 3) << 14 | (h[0] & 0x10 ? 1u << 28 : 0) |
		   (ptm && (h[0] & 0x20) ? 1u << 29 : 0);
	t->etmccer = (ptm ? 0x34C01AC2u : 0x344008F2u) & ~(1u << 24);
	if (h[0] & 0x40)
		t->etmccer |= 1u << 24;
	if (ptm)
		t->etmidr = 0x411CF302u | (uint32_t)(h[1] & 1) << 4;
	else
		t->etmidr = h[1] == 0xFF ? 0 : 0x410CF200u | (uint32_t)(h[1] % 6) << 4;
	t->core_profile = !ptm && (h[0] & 0x80) ? CSD_CORE_M : CSD_CORE_A;
	/* Under the bytes a run makes, so that periodic syncs happen. */
	s->gc.sync_period = ((uint32_t)h[2] | (uint32_t)h[3] << 8) % 8192;
	s->gc.timestamp_every = h[4];
	s->gc.context_id = fuzz_le32(h + 5);
	s->split_mode = h[10];
	s->split_seed = h[11];
	s->range_mode = (h[13] >> 7) & 1;
}

static void fgen_fail_at(const struct fgen_list *want, size_t k, uint64_t addr, uint8_t isa)
{
	fprintf(stderr, "decoded instruction %zu: 0x%llx %s, the run has ", k, (unsigned long long)addr,
		csd_isa_name(isa));
	if (k < want->n)
		fprintf(stderr, "0x%x %s\n", want->v[k].addr, csd_isa_name(want->v[k].isa));
	else
		fprintf(stderr, "no more (%zu traced)\n", want->n);
	for (size_t i = k > 3 ? k - 3 : 0; i < want->n && i < k + 4; i++)
		fprintf(stderr, "  run %zu: 0x%x %s\n", i, want->v[i].addr, csd_isa_name(want->v[i].isa));
}

/* Decode the trace and compare with the traced instructions. */
static void fgen_roundtrip(const struct fgen_setup *s, csd_image *img, const struct fgen_sink *trace,
			   const struct fgen_list *want, uint64_t gen_cycles)
{
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &s->gc.trace;
	fc.image = img;
	fc.flags = s->range_mode ? 0 : CSD_FLOW_INSN;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	FUZZ_CHECK(fd != NULL);
	struct fuzz_stream st;
	FUZZ_CHECK(fuzz_stream_init(&st, trace->data, trace->n, 0));
	struct fuzz_split sp;
	fuzz_split_init(&sp, s->split_mode, s->split_seed);
	size_t pos = 0, k = 0;
	unsigned empty = 0;
	uint64_t cycles = 0;
	int finished = 0;
	for (;;) {
		int rc;
		struct csd_record r;
		while ((rc = csd_flow_next(fd, &r)) == 0) {
			/* Whole packets of code in the image: nothing lost, nothing cut. */
			const int lost = r.type == CSD_REC_ERROR || r.type == CSD_REC_NO_MEMORY ||
					 r.type == CSD_REC_ADDRESS_UNKNOWN || r.type == CSD_REC_TRUNCATED;
			if (lost) {
				fprintf(stderr, "%s record at offset %llu (of %zu bytes): %s\n", csd_rec_type_name((int)r.type),
					(unsigned long long)r.offset, trace->n, r.error ? r.error : "");
				fgen_fail_at(want, k, r.addr, r.isa);
				FUZZ_CHECK(!lost);
			}
			if (r.flags & CSD_RECF_CYCLES)
				cycles += r.cycles;
			if (r.type != CSD_REC_INSN && r.type != CSD_REC_RANGE)
				continue;
			uint64_t a = r.addr;
			uint32_t count = r.type == CSD_REC_INSN ? 1 : r.count;
			for (uint32_t j = 0; j < count; j++, k++) {
				if (k >= want->n || want->v[k].addr != a || want->v[k].isa != r.isa) {
					fgen_fail_at(want, k, a, r.isa);
					FUZZ_CHECK(!"decoded instructions differ from the run");
				}
				if (r.type == CSD_REC_RANGE) {
					struct csdi_insn in;
					FUZZ_CHECK(fgen_decode(img, (uint32_t)a, r.isa, &in));
					FUZZ_CHECK(j + 1 < count || a == r.last);
					a += in.size;
				}
			}
		}
		FUZZ_CHECK(rc == CSD_EAGAIN || rc == CSD_EEOS);
		if (rc == CSD_EEOS) {
			FUZZ_CHECK(finished);
			break;
		}
		FUZZ_CHECK(!finished);
		if (pos < trace->n) {
			size_t n = fuzz_split_next(&sp, trace->n - pos);
			if (n == 0 && ++empty > 64)
				n = 1;
			struct csd_bytes in = fuzz_stream_run(&st, pos, n);
			FUZZ_CHECK(csd_flow_feed(fd, &in) == 0);
			pos += n;
		} else {
			FUZZ_CHECK(csd_flow_finish(fd) == 0);
			finished = 1;
		}
	}
	if (k != want->n)
		fgen_fail_at(want, k, 0, 0);
	FUZZ_CHECK(k == want->n);
	if (cycles != gen_cycles)
		fprintf(stderr, "decoded cycles %llu, generated %llu\n", (unsigned long long)cycles,
			(unsigned long long)gen_cycles);
	FUZZ_CHECK(cycles == gen_cycles);
	csd_flow_free(fd);
	fuzz_stream_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < FGEN_HDR)
		return 0;
	struct fgen_setup s;
	fgen_config(data, &s);
	size_t code_size = 4u * (data[13] & 63);
	if (code_size > size - FGEN_HDR)
		code_size = (size - FGEN_HDR) & ~(size_t)3;
	const uint8_t *code = data + FGEN_HDR;

	struct fgen_core c;
	memset(&c, 0, sizeof(c));
	c.op = code + code_size;
	c.nop = size - FGEN_HDR - code_size;
	c.rng = 0x9E3779B9u ^ (uint32_t)data[12] << 16 ^ (uint32_t)size;
	if (!c.rng)
		c.rng = 1;
	c.mprof = s.gc.trace.core_profile == CSD_CORE_M;
	c.code_size = code_size;
	/* 0 leaves the generator its default, 0xFFFF0008. */
	c.svc_vector = data[13] & 0x40 ? FUZZ_IMAGE_A32_ADDR + 8 : 0xFFFF0008u;
	s.gc.svc_vector = data[13] & 0x40 ? c.svc_vector : 0;

	csd_image *img = csd_image_new();
	FUZZ_CHECK(img != NULL);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_A32_ADDR, fuzz_image_a32, sizeof(fuzz_image_a32), 0) == 0);
	FUZZ_CHECK(csd_image_add_buffer(img, FUZZ_IMAGE_T32_ADDR, fuzz_image_t32, sizeof(fuzz_image_t32), 0) == 0);
	if (code_size)
		FUZZ_CHECK(csd_image_add_buffer(img, FGEN_CODE_ADDR, code, code_size, 0) == 0);
	uint8_t vectors[4 * FGEN_M_VECTORS];
	if (c.mprof) {
		/* Handlers at PRNG-chosen T32 instructions (Thumb bit set). */
		memset(vectors, 0, sizeof(vectors));
		for (unsigned i = 2; i < FGEN_M_VECTORS; i++) {
			uint32_t r = fgen_rand(&c);
			if (r & 1)
				c.vec[i] = FUZZ_IMAGE_T32_ADDR + 2 * ((r >> 8) % (sizeof(fuzz_image_t32) / 2));
			fuzz_put_le32(vectors + 4 * i, c.vec[i] ? c.vec[i] | 1 : 0);
		}
		FUZZ_CHECK(csd_image_add_buffer(img, 0, vectors, sizeof(vectors), 0) == 0);
	}

	struct fgen_sink trace = { NULL, 0, 0 };
	const struct csd_trace_config *tc = &s.gc.trace;
	if (tc->protocol == CSD_PROTO_ETM3 && (tc->etmcr >> 28 & 1) && tc->etmidr && (tc->etmidr >> 4 & 0xF) < 5) {
		/* No timestamp packet before ETMv3.5: refused. */
		FUZZ_CHECK(csdi_gen_new(&s.gc, img, fgen_sink_put, &trace) == NULL);
		s.gc.trace.etmcr &= ~(1u << 28);
	}
	struct csdi_gen *g = csdi_gen_new(&s.gc, img, fgen_sink_put, &trace);
	FUZZ_CHECK(g != NULL);

	struct fgen_list run = { NULL, 0, 0 }, want = { NULL, 0, 0 };
	uint32_t cur;
	uint8_t isa;
	fgen_place(&c, data[9] & 1, data[9] >> 1, 0, 0, &cur, &isa);
	unsigned follow = 0, repeat = 0;
	int done = 0;
	while (!done && run.n < FGEN_MAX_INSNS) {
		struct csdi_insn in;
		int grc = csdi_gen_insn(g, cur, isa);
		if (grc != 0)
			fprintf(stderr, "csdi_gen_insn(0x%x, %s) = %d after %zu instructions\n", cur, csd_isa_name(isa), grc,
				run.n);
		FUZZ_CHECK(grc == 0);
		fgen_push(&run, cur, isa);
		if (fgen_decode(img, cur, isa, &in))
			fgen_push(&want, cur, isa);
		if (repeat) {
			repeat--;
			continue;
		}
		if (follow) {
			follow--;
			fgen_follow(&c, img, cur, isa, 0, &cur, &isa);
			continue;
		}
		unsigned op = fgen_op(&c);
		uint32_t v, na;
		uint8_t nisa;
		if (op < 0x80) {
			follow = (op & 0x3F) * (op & 0x40 ? 16 : 1);
			fgen_follow(&c, img, cur, isa, 0, &cur, &isa);
		} else if (op < 0x90) {
			v = fgen_op(&c) | fgen_op(&c) << 8;
			fgen_place(&c, op & 7, v, cur, (op >> 3) & 1, &cur, &isa);
		} else if (op < 0xA0) {
			v = fgen_op(&c);
			fgen_follow(&c, img, cur, isa, 0, &na, &nisa);
			if (c.nexc < FGEN_STACK) {
				c.exc_addr[c.nexc] = na;
				c.exc_isa[c.nexc] = nisa;
				c.exc_ncall[c.nexc] = c.ncall;
				c.nexc++;
			}
			if (c.mprof) {
				unsigned k = (op & 15) + (v & 0x30) % FGEN_M_VECTORS;
				uint32_t h = 0;
				for (unsigned t = 0; t < FGEN_M_VECTORS && !h; t++)
					h = c.vec[(k + t) % FGEN_M_VECTORS];
				cur = h ? h : na;
				isa = CSD_ISA_THUMB;
			} else {
				fgen_place(&c, op & 7, v | (uint32_t)(op & 8) << 5, cur, 0, &cur, &isa);
			}
		} else if (op < 0xB0) {
			if (c.nexc) {
				c.nexc--;
				c.ncall = c.exc_ncall[c.nexc] < c.ncall ? c.exc_ncall[c.nexc] : c.ncall;
				cur = c.exc_addr[c.nexc];
				isa = c.exc_isa[c.nexc];
			} else {
				fgen_follow(&c, img, cur, isa, 0, &cur, &isa);
			}
		} else if (op < 0xC0) {
			fgen_follow(&c, img, cur, isa, 0, &na, &nisa);
			if (!c.mprof)
				nisa = nisa == CSD_ISA_ARM ? CSD_ISA_THUMB : CSD_ISA_ARM;
			cur = na & (nisa == CSD_ISA_ARM ? ~3u : ~1u);
			isa = nisa;
		} else if (op < 0xD0) {
			repeat = op & 15;
		} else if (op < 0xE0) {
			fgen_follow(&c, img, cur, isa, 1, &cur, &isa);
		} else if (op < 0xF0) {
			fgen_follow(&c, img, cur, isa, 0, &na, &nisa);
			fgen_call_push(&c, na, nisa);
			c.offimage_left = 1 + (op & 15);
			fgen_place(&c, 3 + (op & 1), fgen_rand(&c) >> 16, cur, 0, &cur, &isa);
		} else {
			done = 1;
		}
	}
	FUZZ_CHECK(csdi_gen_finish(g) == 0);

	const struct csdi_gen_stats *gs = csdi_gen_stats(g);
	FUZZ_CHECK(gs->insns == run.n);
	FUZZ_CHECK(gs->traced == want.n);
	FUZZ_CHECK(gs->bytes == trace.n);
	FUZZ_CHECK(trace.n <= (uint64_t)FGEN_BYTES_PER_INSN * (run.n + 1));
	fgen_roundtrip(&s, img, &trace, &want, gs->cycles);

	csdi_gen_free(g);
	csd_image_free(img);
	free(trace.data);
	free(run.v);
	free(want.v);
	return 0;
}
