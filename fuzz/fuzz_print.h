/*
 * fuzz_print.h - input layout of the printer harness (fuzz_print.c),
 * shared with the seed generator, which writes decoded packets and
 * records in it.
 *
 * The input is a sequence of items, each one packet or one record:
 *   [0]  kind: bit 0 record (else packet); bit 1 the source is a
 *        Cortex-M (exception names); bit 2 (records) the address is moved
 *        into the symbols' functions; bits 7:4 the error string: 0 none
 *        (NULL), 1-14 fuzz_print_errors[k % count], 15 a string in the
 *        item, after the fields
 *   [1]  trace ID
 *   then the fields of struct csd_packet or struct csd_record in
 *   declaration order, little-endian, each at its own width (no padding);
 *   then, for error string 15: a length byte and that many bytes, each
 *   mapped to printable ASCII (0x20 + b % 95, so quotes and backslashes
 *   occur).
 * Bytes missing at the end of the input read as zeros.
 */
#ifndef CSD_FUZZ_PRINT_H
#define CSD_FUZZ_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "csdec.h"

enum {
	FUZZ_PRINT_RECORD = 1u << 0,
	FUZZ_PRINT_CORE_M = 1u << 1,
	FUZZ_PRINT_NEAR_SYMBOL = 1u << 2,
	FUZZ_PRINT_ERR_SHIFT = 4,
	FUZZ_PRINT_ERR_INLINE = 15,
};

/* Reasons as the decoders give them (static strings). */
static const char *const fuzz_print_errors[] = {
	"bad packet",
	"truncated I-sync packet at end of stream",
	"periodic I-sync address differs from the decoded address",
	"reserved P-header encoding (cycle-accurate mode)",
	"A-sync with fewer than five 0x00 bytes",
	"",
};
#define FUZZ_PRINT_NERRORS (sizeof(fuzz_print_errors) / sizeof(fuzz_print_errors[0]))

/* ---- writing (seed generator) ---- */

struct fuzz_print_out {
	uint8_t *p;
	size_t n, cap;     /* bytes beyond cap are counted, not written */
};

static inline void fuzz_print_put(struct fuzz_print_out *o, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++, o->n++)
		if (o->n < o->cap)
			o->p[o->n] = (uint8_t)(v >> (8 * i));
}

/* Error choice for a decoder's string: its index in the list, else none. */
static inline unsigned fuzz_print_error_choice(const char *e)
{
	for (unsigned k = 0; e && k < FUZZ_PRINT_NERRORS; k++)
		if (strcmp(e, fuzz_print_errors[k]) == 0)
			return k + 1;
	return 0;
}

static inline void fuzz_print_put_packet(struct fuzz_print_out *o, uint8_t id, int core_m, const struct csd_packet *p)
{
	fuzz_print_put(o, (core_m ? FUZZ_PRINT_CORE_M : 0) | fuzz_print_error_choice(p->error) << FUZZ_PRINT_ERR_SHIFT, 1);
	fuzz_print_put(o, id, 1);
	fuzz_print_put(o, p->type, 4);
	fuzz_print_put(o, p->flags, 4);
	fuzz_print_put(o, p->offset, 8);
	fuzz_print_put(o, p->size, 4);
	for (unsigned i = 0; i < CSD_PKT_RAW_MAX; i++)
		fuzz_print_put(o, p->raw[i], 1);
	fuzz_print_put(o, p->addr, 4);
	fuzz_print_put(o, p->addr_bytes, 1);
	fuzz_print_put(o, p->isa, 1);
	fuzz_print_put(o, p->reason, 1);
	fuzz_print_put(o, p->vmid, 1);
	fuzz_print_put(o, p->exception, 2);
	fuzz_print_put(o, p->ts_bits, 1);
	fuzz_print_put(o, p->data_size, 1);
	fuzz_print_put(o, p->cycle_count, 4);
	fuzz_print_put(o, p->context_id, 4);
	fuzz_print_put(o, p->timestamp, 8);
	fuzz_print_put(o, p->atoms.en, 4);
	fuzz_print_put(o, p->atoms.num, 1);
	fuzz_print_put(o, p->atoms.w, 1);
	fuzz_print_put(o, p->atoms.format, 1);
	fuzz_print_put(o, p->data_insn_addr, 4);
	fuzz_print_put(o, p->data_addr, 4);
	fuzz_print_put(o, p->data_value, 4);
	fuzz_print_put(o, p->tag, 1);
}

static inline void fuzz_print_put_record(struct fuzz_print_out *o, uint8_t id, int core_m, const struct csd_record *r)
{
	fuzz_print_put(o, FUZZ_PRINT_RECORD | (core_m ? FUZZ_PRINT_CORE_M : 0) |
		       fuzz_print_error_choice(r->error) << FUZZ_PRINT_ERR_SHIFT, 1);
	fuzz_print_put(o, id, 1);
	fuzz_print_put(o, r->type, 4);
	fuzz_print_put(o, r->flags, 4);
	fuzz_print_put(o, r->offset, 8);
	fuzz_print_put(o, r->addr, 8);
	fuzz_print_put(o, r->end, 8);
	fuzz_print_put(o, r->last, 8);
	fuzz_print_put(o, r->target, 8);
	fuzz_print_put(o, r->cycles, 8);
	fuzz_print_put(o, r->timestamp, 8);
	fuzz_print_put(o, r->count, 4);
	fuzz_print_put(o, r->size, 4);
	fuzz_print_put(o, r->opcode, 4);
	fuzz_print_put(o, r->context_id, 4);
	fuzz_print_put(o, r->exception, 2);
	fuzz_print_put(o, r->isa, 1);
	fuzz_print_put(o, r->cond, 1);
	fuzz_print_put(o, r->reason, 1);
	fuzz_print_put(o, r->vmid, 1);
	fuzz_print_put(o, r->id, 1);
}

/* ---- reading (harness) ---- */

struct fuzz_print_in {
	const uint8_t *p;
	size_t n, pos;
};

static inline uint64_t fuzz_print_get(struct fuzz_print_in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++, in->pos++)
		if (in->pos < in->n)
			v |= (uint64_t)in->p[in->pos] << (8 * i);
	return v;
}

/* The error string of kind byte `kind` (inline strings into buf, which
 * holds 256 bytes). */
static inline const char *fuzz_print_get_error(struct fuzz_print_in *in, unsigned kind, char *buf)
{
	unsigned c = kind >> FUZZ_PRINT_ERR_SHIFT;
	if (c == 0)
		return NULL;
	if (c != FUZZ_PRINT_ERR_INLINE)
		return fuzz_print_errors[(c - 1) % FUZZ_PRINT_NERRORS];
	unsigned len = (unsigned)fuzz_print_get(in, 1);
	for (unsigned i = 0; i < len; i++)
		buf[i] = (char)(0x20 + fuzz_print_get(in, 1) % 95);
	buf[len] = 0;
	return buf;
}

static inline void fuzz_print_get_packet(struct fuzz_print_in *in, struct csd_packet *p)
{
	memset(p, 0, sizeof(*p));
	p->type = (uint32_t)fuzz_print_get(in, 4);
	p->flags = (uint32_t)fuzz_print_get(in, 4);
	p->offset = fuzz_print_get(in, 8);
	p->size = (uint32_t)fuzz_print_get(in, 4);
	for (unsigned i = 0; i < CSD_PKT_RAW_MAX; i++)
		p->raw[i] = (uint8_t)fuzz_print_get(in, 1);
	p->addr = (uint32_t)fuzz_print_get(in, 4);
	p->addr_bytes = (uint8_t)fuzz_print_get(in, 1);
	p->isa = (uint8_t)fuzz_print_get(in, 1);
	p->reason = (uint8_t)fuzz_print_get(in, 1);
	p->vmid = (uint8_t)fuzz_print_get(in, 1);
	p->exception = (uint16_t)fuzz_print_get(in, 2);
	p->ts_bits = (uint8_t)fuzz_print_get(in, 1);
	p->data_size = (uint8_t)fuzz_print_get(in, 1);
	p->cycle_count = (uint32_t)fuzz_print_get(in, 4);
	p->context_id = (uint32_t)fuzz_print_get(in, 4);
	p->timestamp = fuzz_print_get(in, 8);
	p->atoms.en = (uint32_t)fuzz_print_get(in, 4);
	p->atoms.num = (uint8_t)fuzz_print_get(in, 1);
	p->atoms.w = (uint8_t)fuzz_print_get(in, 1);
	p->atoms.format = (uint8_t)fuzz_print_get(in, 1);
	p->data_insn_addr = (uint32_t)fuzz_print_get(in, 4);
	p->data_addr = (uint32_t)fuzz_print_get(in, 4);
	p->data_value = (uint32_t)fuzz_print_get(in, 4);
	p->tag = (uint8_t)fuzz_print_get(in, 1);
}

static inline void fuzz_print_get_record(struct fuzz_print_in *in, struct csd_record *r)
{
	memset(r, 0, sizeof(*r));
	r->type = (uint32_t)fuzz_print_get(in, 4);
	r->flags = (uint32_t)fuzz_print_get(in, 4);
	r->offset = fuzz_print_get(in, 8);
	r->addr = fuzz_print_get(in, 8);
	r->end = fuzz_print_get(in, 8);
	r->last = fuzz_print_get(in, 8);
	r->target = fuzz_print_get(in, 8);
	r->cycles = fuzz_print_get(in, 8);
	r->timestamp = fuzz_print_get(in, 8);
	r->count = (uint32_t)fuzz_print_get(in, 4);
	r->size = (uint32_t)fuzz_print_get(in, 4);
	r->opcode = (uint32_t)fuzz_print_get(in, 4);
	r->context_id = (uint32_t)fuzz_print_get(in, 4);
	r->exception = (uint16_t)fuzz_print_get(in, 2);
	r->isa = (uint8_t)fuzz_print_get(in, 1);
	r->cond = (uint8_t)fuzz_print_get(in, 1);
	r->reason = (uint8_t)fuzz_print_get(in, 1);
	r->vmid = (uint8_t)fuzz_print_get(in, 1);
	r->id = (uint8_t)fuzz_print_get(in, 1);
}

#endif
