/* print.c - how csdec prints packets and records (text and JSON Lines).
 * The text listing of records names each instruction (disasm.c) and,
 * with ELF files, its function and source line (symbols.c). */
/* MAP_ANONYMOUS: the disassembly cache. (tests/test_print_json.c, which
 * includes this file, defines it too.) */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"
#include "disasm.h"
#include "symbols.h"

/* Atom i of a packet: 1 for E. `en` holds 32; a count beyond is not
 * from a decoder, but must not shift past the word. */
static int atom_e(const struct csd_atoms *a, unsigned i)
{
	return i < 32 && ((a->en >> i) & 1);
}

/* Atoms as letters, oldest first; ETMv3 cycle-accurate headers show their
 * W (cycle) atoms where they fall (IHI 0014 table 7.3). */
static void atoms_string(const struct csd_packet *p, char *buf, size_t cap)
{
	const struct csd_atoms *a = &p->atoms;
	size_t k = 0;
	unsigned i;
#define PUT(c) do { if (k + 1 < cap) buf[k++] = (c); } while (0)
	if (p->type == CSD_PKT_PHEADER && a->format == 1 && a->w) {
		for (i = 0; i < a->num; i++) {
			PUT('W');
			PUT(atom_e(a, i) ? 'E' : 'N');
		}
	} else {
		for (i = 0; i < a->w; i++)
			PUT('W');
		for (i = 0; i < a->num; i++)
			PUT(atom_e(a, i) ? 'E' : 'N');
	}
	buf[k] = 0;
#undef PUT
}

/* perf.data input: "cpu", and "pid" / "tid" (these given) where known,
 * after "id". */
static void json_perf_as(FILE *out, const struct source_slot *s, int32_t pid, int32_t tid)
{
	if (!s || !s->perf)
		return;
	fprintf(out, ",\"cpu\":%" PRId32, s->cpu);
	if (pid >= 0)
		fprintf(out, ",\"pid\":%" PRId32, pid);
	if (tid >= 0)
		fprintf(out, ",\"tid\":%" PRId32, tid);
}

/* The same with the source's process and thread now. */
static void json_perf(FILE *out, const struct source_slot *s)
{
	if (s)
		json_perf_as(out, s, s->pid, s->tid);
}

void print_packet_text(FILE *out, uint8_t id, const struct csd_packet *p)
{
	print_packet_text_src(out, id, NULL, p);
}

/* ,"key":"str" with str escaped: error reasons are the decoders' English
 * text, which nothing keeps free of quotes or backslashes. */
static void json_string(FILE *out, const char *key, const char *str)
{
	fprintf(out, ",\"%s\":\"", key);
	for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

void print_packet_json(FILE *out, uint8_t id, const struct csd_packet *p)
{
	print_packet_json_src(out, id, NULL, p);
}


static const char hex_digits[] = "0123456789abcdef";

/* The eight lower-case hex digits of v, the least significant in the
 * lowest byte: each nibble spread to a byte of its own, then turned to its
 * digit in all bytes at once, with no loop or table (a loop of a digit a
 * step costs more than the rest of a listing line). */
static inline uint64_t hex8_digits(uint32_t v)
{
	uint64_t x = v;
	x = ((x & 0xFFFF0000u) << 16) | (x & 0xFFFFu);
	x = ((x & 0x0000FF000000FF00ull) << 8) | (x & 0x000000FF000000FFull);
	x = ((x & 0x00F000F000F000F0ull) << 4) | (x & 0x000F000F000F000Full);
	/* 1 in each byte whose nibble is above 9. */
	const uint64_t letter = ((x + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
	return x + 0x3030303030303030ull + letter * ('a' - '9' - 1);
}

/* The low `digits` (2, 4 or 8) hex digits of v at p: inline, where a
 * call's constant width leaves one store. */
static inline __attribute__((always_inline)) char *put_hex_short(char *p, uint32_t v, int digits)
{
	uint64_t w = hex8_digits(v) << (8 * (8 - digits));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap64(w);  /* (the most significant digit first in memory) */
#endif
	memcpy(p, &w, (size_t)digits);
	return p + digits;
}

/* Fixed-width lower-case hex of the low `digits` nibbles of v (zeros
 * before the sixteenth). */
static char *put_hex(char *p, uint64_t v, int digits)
{
	for (; digits > 16; digits--)
		*p++ = '0';
	if (digits > 8) {
		/* The high digits, then eight. */
		p = put_hex(p, v >> 32, digits - 8);
		digits = 8;
	}
	/* (Each call with its constant width: one store.) */
	if (digits == 8)
		return put_hex_short(p, (uint32_t)v, 8);
	if (digits == 4)
		return put_hex_short(p, (uint32_t)v, 4);
	if (digits == 2)
		return put_hex_short(p, (uint32_t)v, 2);
	for (int i = digits - 1; i >= 0; i--)
		*p++ = hex_digits[(v >> (4 * i)) & 15];
	return p;
}

static char *put_dec(char *p, uint64_t v)
{
	/* Two digits a step, from a table of "00" to "99". */
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	char tmp[24];
	int n = 24;
	while (v > UINT32_MAX) {
		const unsigned d = (unsigned)(v % 100);
		v /= 100;
		tmp[--n] = pairs[2 * d + 1];
		tmp[--n] = pairs[2 * d];
	}
	/* (In 32 bits, the most common case: a cheaper division.) */
	uint32_t w = (uint32_t)v;
	while (w >= 100) {
		const unsigned d = w % 100;
		w /= 100;
		tmp[--n] = pairs[2 * d + 1];
		tmp[--n] = pairs[2 * d];
	}
	if (w >= 10) {
		tmp[--n] = pairs[2 * w + 1];
		tmp[--n] = pairs[2 * w];
	} else {
		tmp[--n] = (char)('0' + w);
	}
	memcpy(p, tmp + n, (size_t)(24 - n));
	return p + 24 - n;
}

static char *put_str(char *p, const char *str)
{
	size_t n = strlen(str);
	memcpy(p, str, n);
	return p + n;
}

/* A string literal: its length is known at compile time. */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static const char *exc_name(const struct source_slot *s, unsigned n)
{
	return csd_exception_name(&s->cfg, n);
}

/* Disassembly of recently listed instructions, keyed by all the text
 * depends on (the address too: PC-relative operands): a listing goes round
 * the same code again and again, and capstone costs more than the rest of
 * the line (ten thousand instructions a call and more). Four ways a set,
 * the oldest replaced, room for four times TC2's 8772 distinct
 * instructions: direct-mapped with 16384 entries behind an XOR of address
 * and opcode, they missed 6800 times per pass over its 26171 lines. A
 * set's four keys fill one 64-byte line, apart from the texts, and
 * neighbouring instructions fall in neighbouring sets: the cache is
 * larger than the core's own caches, and a lookup that touched a line
 * per way was most of the listing's own time. A way's text is the next
 * free one of the pool when the way is first filled, so that the texts of
 * a small listing lie together: the first touch of each page of the
 * cache's fresh mapping is a page fault. Text that does not fit (rare:
 * long register lists) is not cached, nor an address past 32 bits. */
#define DIS_SETS 8192
#define DIS_WAYS 4
struct dis_key {
	uint32_t addr;
	uint32_t opcode;
	uint32_t text;                    /* its text's index in the pool (once valid) */
	uint8_t isa, size, valid, next;   /* next: set's way to replace next (way 0's) */
};
struct dis_text {
	char mn[23];
	uint8_t mn_len;
	char ops[71];
	uint8_t ops_len;
};
struct dis_cache {
	struct dis_key key[DIS_SETS][DIS_WAYS];
	struct dis_text text[DIS_SETS * DIS_WAYS];
	uint32_t ntext;                   /* texts given to ways */
};

/* What the text listing adds to records: mnemonics and symbols. Each
 * thread that prints records has its own disassembler and cache; all read
 * the one symbol table. */
static const struct symtab *listing_syms;
static _Thread_local struct {
	struct disasm *dis;
	const struct symtab *syms;
	struct dis_cache *cache;
} listing;

void print_text_begin(const struct symtab *syms)
{
	listing_syms = syms;
	print_text_thread_begin();
}

void print_text_thread_begin(void)
{
	listing.dis = disasm_new();
	listing.syms = listing_syms;
	/* (Fresh pages: zero, page-aligned so that each set's keys are one
	 * line, and only the pages a listing touches are made.) */
	listing.cache = NULL;
	if (listing.dis) {
		void *m = mmap(NULL, sizeof(*listing.cache), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		listing.cache = m == MAP_FAILED ? NULL : m;
	}
}

void print_text_thread_end(void)
{
	disasm_free(listing.dis);
	if (listing.cache)
		munmap(listing.cache, sizeof(*listing.cache));
	listing.dis = NULL;
	listing.syms = NULL;
	listing.cache = NULL;
}

void print_text_end(void)
{
	print_text_thread_end();
	listing_syms = NULL;
}

/* Mnemonic and operands of the instruction of r ("?" when capstone does
 * not know it), and their lengths. */
static void listing_disasm(const struct csd_record *r, const char **mn, size_t *mn_len, const char **ops,
			   size_t *ops_len)
{
	static _Thread_local char mn_buf[32], ops_buf[160];
	struct dis_key *key = NULL;
	if (listing.cache && r->addr <= UINT32_MAX) {
		/* (Consecutive halfwords to consecutive sets; each 16 KiB
		 * of addresses starts somewhere else.) */
		const uint64_t page = r->addr >> 14;
		const size_t set = (size_t)(((r->addr >> 1) + ((page * 0x9e3779b97f4a7c15ull) >> 40)) & (DIS_SETS - 1));
		key = listing.cache->key[set];
		for (unsigned w = 0; w < DIS_WAYS; w++) {
			const struct dis_key *k = &key[w];
			if (k->valid && k->addr == r->addr && k->opcode == r->opcode && k->isa == r->isa &&
			    k->size == r->size) {
				const struct dis_text *t = &listing.cache->text[k->text];
				*mn = t->mn;
				*mn_len = t->mn_len;
				*ops = t->ops;
				*ops_len = t->ops_len;
				return;
			}
		}
	}
	if (disasm_insn(listing.dis, r->isa, r->addr, r->opcode, r->size, mn_buf, sizeof(mn_buf), ops_buf,
			sizeof(ops_buf)) < 0)
		snprintf(mn_buf, sizeof(mn_buf), "?");
	*mn = mn_buf;
	*ops = ops_buf;
	*mn_len = strlen(mn_buf);
	*ops_len = strlen(ops_buf);
	const size_t mn_n = *mn_len, ops_n = *ops_len;
	if (key && mn_n < sizeof(((struct dis_text *)0)->mn) && ops_n < sizeof(((struct dis_text *)0)->ops)) {
		const unsigned w = key[0].next;
		key[0].next = (uint8_t)((w + 1) % DIS_WAYS);
		if (!key[w].valid)
			key[w].text = listing.cache->ntext++;  /* (at most one per way) */
		key[w].addr = (uint32_t)r->addr;
		key[w].opcode = r->opcode;
		key[w].isa = r->isa;
		key[w].size = (uint8_t)r->size;
		key[w].valid = 1;
		struct dis_text *t = &listing.cache->text[key[w].text];
		memcpy(t->mn, mn_buf, mn_n + 1);
		t->mn_len = (uint8_t)mn_n;
		memcpy(t->ops, ops_buf, ops_n + 1);
		t->ops_len = (uint8_t)ops_n;
	}
}

/* Append to a line buffer (silently cut at its end). Only n needs a value
 * at first: a buffer cleared whole (an initializer) cost a 512-byte
 * `rep stos` per line, a fifth of the listing's own time. */
struct line_buf {
	char s[512];
	size_t n;
};

static void lb_add(struct line_buf *b, const char *fmt, ...) CLI_PRINTF(2, 3);
static void lb_add(struct line_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->n >= sizeof(b->s) - 1)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(b->s + b->n, sizeof(b->s) - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n = b->n + (size_t)k < sizeof(b->s) ? b->n + (size_t)k : sizeof(b->s) - 1;
}

/* " <name+0xoff> file:line" for addr, as far as the symbols know it. */
static void add_where(struct line_buf *b, uint64_t addr)
{
	const struct sym_func *f = symtab_find(listing.syms, addr);
	const char *file;
	unsigned line;
	if (f) {
		if (addr == f->start)
			lb_add(b, "  <%s>", f->name);
		else
			lb_add(b, "  <%s+0x%" PRIx64 ">", f->name, addr - f->start);
	}
	if (symtab_line(listing.syms, addr, &file, &line)) {
		const char *slash = strrchr(file, '/');
		lb_add(b, "%s%s:%u", f ? " " : "  ", slash ? slash + 1 : file, line);
	}
}

static void print_line(FILE *out, struct line_buf *b)
{
	while (b->n && b->s[b->n - 1] == ' ')
		b->n--;
	/* (The line holds no NUL; b->n < sizeof(b->s): room for the newline.) */
	b->s[b->n] = '\n';
	fwrite(b->s, 1, b->n + 1, out);
}

/* Hex of v with at least `digits` digits (printf's %0*x). */
static inline char *put_hex_min(char *p, uint64_t v, int digits)
{
	if ((digits == 2 || digits == 4 || digits == 8) && v >> (4 * digits) == 0)
		return put_hex_short(p, (uint32_t)v, digits);
	const int need = v ? (64 - __builtin_clzll(v) + 3) / 4 : 1;
	return put_hex(p, v, need > digits ? need : digits);
}

/* The n characters at str, then spaces up to `width` characters
 * (printf's %-*s). Where str has `room` bytes readable and p as many
 * writable, a shorter text is copied whole: a copy of constant size, a
 * few moves, against a library call a line (room 0: none). */
static inline __attribute__((always_inline)) char *put_pad_n(char *p, const char *str, size_t n, size_t width,
							     size_t room)
{
	if (n < room)
		memcpy(p, str, room);
	else
		memcpy(p, str, n);
	p += n;
	while (n++ < width)
		*p++ = ' ';
	return p;
}

/* str, then spaces up to `width` characters. */
static char *put_pad(char *p, const char *str, size_t width)
{
	return put_pad_n(p, str, strlen(str), width, 0);
}

/* address, ISA, opcode, mnemonic and operands, cycles, branch and
 * condition result, function and source line. Built by hand, as the JSON
 * records are: printf dominated the listing's run time. The layout is
 * that of the format "0x%02x     %08x  %-3s  %-8.*x  %-8s %-30s cyc=%-3u". */
static void print_insn_text(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	struct line_buf b;
	char *p = b.s;
	uint8_t id = s->id;
	if (s->perf) {
		p = PUT_LIT(p, "cpu");
		p = s->cpu < 0 ? PUT_LIT(p, "?") : put_dec(p, (uint64_t)s->cpu);
		*p++ = ' ';
	}
	p = PUT_LIT(p, "0x");
	p = put_hex_min(p, id, 2);
	p = PUT_LIT(p, "     ");
	p = put_hex_min(p, r->addr, 8);
	p = PUT_LIT(p, "  ");
	p = put_pad(p, csd_isa_name(r->isa), 3);
	p = PUT_LIT(p, "  ");
	char *op = p;
	p = r->size == 2 ? put_hex_min(p, r->opcode, 4) : put_hex_min(p, r->opcode, 8);
	while (p - op < 8)
		*p++ = ' ';
	if (listing.dis) {
		const char *mn, *ops;
		size_t mn_len, ops_len;
		listing_disasm(r, &mn, &mn_len, &ops, &ops_len);
		p = PUT_LIT(p, "  ");
		p = put_pad_n(p, mn, mn_len, 8, sizeof(((struct dis_text *)0)->mn));
		*p++ = ' ';
		p = put_pad_n(p, ops, ops_len, 30, sizeof(((struct dis_text *)0)->ops));
	}
	if (r->flags & CSD_RECF_CYCLES) {
		p = PUT_LIT(p, " cyc=");
		char *c = p;
		p = put_dec(p, r->cycles);
		while (p - c < 3)
			*p++ = ' ';
	}
	if (r->flags & CSD_RECF_BRANCH)
		p = r->flags & CSD_RECF_TAKEN ? PUT_LIT(p, " taken") : PUT_LIT(p, " not-taken");
	if (r->cond == CSD_COND_FAIL)
		p = PUT_LIT(p, " fail");
	else if (r->cond == CSD_COND_UNKNOWN)
		p = PUT_LIT(p, " cond?");
	/* At most about 300 characters so far (mnemonic < 32, operands
	 * < 160): the buffer holds them. */
	b.n = (size_t)(p - b.s);
	add_where(&b, r->addr);
	print_line(out, &b);
}

/* Hex digits of a data value of `size` bytes. */
static int value_digits(uint64_t size)
{
	return size >= 1 && size <= 8 ? (int)(2 * size) : 16;
}

/* A data access, indented under the instruction listed before it. */
static void print_data_text(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	struct line_buf b;
	b.n = 0;
	if (s->perf)
		lb_add(&b, "cpu%" PRId32 " ", s->cpu);
	const int no_insn = (r->flags & CSD_RECF_DATA_NO_INSN) != 0;
	if (no_insn)    /* data-only trace: direction and size not traced */
		lb_add(&b, "0x%02x         data    ", s->id);
	else
		lb_add(&b, "0x%02x         %-5s %" PRIu64 " ", s->id, r->flags & CSD_RECF_STORE ? "store" : "load",
		       r->size);
	if (r->flags & CSD_RECF_DATA_ADDR)
		lb_add(&b, "[0x%08" PRIx64 "]", r->addr);
	else
		lb_add(&b, "[?]");
	if (r->flags & CSD_RECF_DATA_VALUE)
		lb_add(&b, " = 0x%0*" PRIx64, no_insn ? 8 : value_digits(r->size), r->target);
	if (!no_insn)
		lb_add(&b, "  (insn 0x%08" PRIx64 ")", r->last);
	print_line(out, &b);
}

void print_record_text(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	if (r->type == CSD_REC_INSN) {
		print_insn_text(out, s, r);
		return;
	}
	if (r->type == CSD_REC_DATA) {
		print_data_text(out, s, r);
		return;
	}
	struct line_buf b;
	b.n = 0;
	if (s->perf)
		lb_add(&b, "cpu%" PRId32 " ", s->cpu);
	lb_add(&b, "0x%02x  -- ", s->id);
	switch (r->type) {
	case CSD_REC_RANGE:
		lb_add(&b, "range 0x%08" PRIx64 "-0x%08" PRIx64 " %4" PRIu32 " insns %-3s last=0x%08" PRIx64 " %s",
			r->addr, r->end, r->count, csd_isa_name(r->isa), r->last, csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_CYCLES)
			lb_add(&b, " cyc=%" PRIu64, r->cycles);
		if (r->flags & CSD_RECF_BRANCH)
			lb_add(&b, " %s", r->flags & CSD_RECF_TAKEN ? "taken" : "not-taken");
		add_where(&b, r->addr);
		break;
	case CSD_REC_EXCEPTION:
		lb_add(&b, "exception %s (%u) return=0x%08" PRIx64 " vector=0x%08" PRIx64 "%s", exc_name(s, r->exception),
			r->exception, r->addr, r->target, r->flags & CSD_RECF_CANCELLED ? " cancelled" : "");
		add_where(&b, r->addr);
		break;
	case CSD_REC_EXCEPTION_RETURN:
		lb_add(&b, "exception return");
		break;
	case CSD_REC_TRACE_ON:
		lb_add(&b, "trace on (%s) at 0x%08" PRIx64 " %s", csd_reason_name(r->reason), r->addr,
			csd_isa_name(r->isa));
		add_where(&b, r->addr);
		break;
	case CSD_REC_CONTEXT:
		lb_add(&b, "context %s %s%s", csd_isa_name(r->isa), r->flags & CSD_RECF_NS ? "NS" : "S",
			r->flags & CSD_RECF_HYP ? " hyp" : "");
		if (r->flags & CSD_RECF_CONTEXT_ID)
			lb_add(&b, " ctxid=0x%08" PRIx32, r->context_id);
		if (r->flags & CSD_RECF_VMID)
			lb_add(&b, " vmid=%u", r->vmid);
		break;
	case CSD_REC_TIMESTAMP:
		lb_add(&b, "timestamp %" PRIu64, r->timestamp);
		if (r->flags & CSD_RECF_CYCLES)
			lb_add(&b, " cyc=%" PRIu64, r->cycles);
		break;
	case CSD_REC_CYCLE_COUNT:
		lb_add(&b, "cycle count %" PRIu64 " (trace off)", r->cycles);
		break;
	case CSD_REC_NO_MEMORY:
		lb_add(&b, "memory not accessible at 0x%08" PRIx64 " (%" PRIu32 " atoms)", r->addr, r->count);
		if (r->flags & CSD_RECF_CYCLES)
			lb_add(&b, " cyc=%" PRIu64, r->cycles);
		break;
	case CSD_REC_ADDRESS_UNKNOWN:
		lb_add(&b, "unknown address: %" PRIu32 " atoms lost", r->count);
		if (r->flags & CSD_RECF_CYCLES)
			lb_add(&b, " cyc=%" PRIu64, r->cycles);
		break;
	case CSD_REC_NOSYNC:
		lb_add(&b, "no sync: %" PRIu64 " bytes at offset %" PRIu64, r->size, r->offset);
		break;
	case CSD_REC_ISA_UNSUPPORTED:
		lb_add(&b, "cannot follow %s code at 0x%08" PRIx64, csd_isa_name(r->isa), r->addr);
		break;
	case CSD_REC_ERROR:
		lb_add(&b, "error at offset %" PRIu64 ": %s", r->offset, r->error ? r->error : "bad trace");
		break;
	case CSD_REC_TRUNCATED:
		lb_add(&b, "truncated at offset %" PRIu64 " (%" PRIu64 " bytes): %s", r->offset, r->size,
		       r->error ? r->error : "packet cut by the end of the capture");
		break;
	case CSD_REC_TRIGGER:
		lb_add(&b, "trigger");
		break;
	case CSD_REC_DATA_LOST:
		lb_add(&b, "data lost (data suppressed)");
		if (r->last)
			lb_add(&b, " from insn 0x%08" PRIx64, r->last);
		break;
	default:
		lb_add(&b, "%s", csd_rec_type_name((int)r->type));
		break;
	}
	print_line(out, &b);
}

/* v in decimal, with its sign. */
static char *put_dec_signed(char *p, int64_t v)
{
	if (v < 0)
		*p++ = '-';
	return put_dec(p, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* The line so far, buf[0, end), then ,"reason":"..." escaped, straight
 * to the stream (a reason is of any length); the line goes on at buf. */
static char *put_json_reason(FILE *out, char *buf, char *end, const char *reason)
{
	fwrite(buf, 1, (size_t)(end - buf), out);
	json_string(out, "reason", reason);
	return buf;
}

/* json_perf() into a buffer (at most 39 characters). */
static char *put_json_perf(char *p, const struct source_slot *s)
{
	if (!s->perf)
		return p;
	p = PUT_LIT(p, ",\"cpu\":");
	p = put_dec_signed(p, s->cpu);
	if (s->pid >= 0) {
		p = PUT_LIT(p, ",\"pid\":");
		p = put_dec(p, (uint64_t)s->pid);
	}
	if (s->tid >= 0) {
		p = PUT_LIT(p, ",\"tid\":");
		p = put_dec(p, (uint64_t)s->tid);
	}
	return p;
}

/* ,"key":true or false. */
/* (Inlined: the key's length is then known at compile time.) */
static inline __attribute__((always_inline)) char *put_json_bool(char *p, const char *key, int v)
{
	p = PUT_LIT(p, ",\"");
	p = put_str(p, key);
	return v ? PUT_LIT(p, "\":true") : PUT_LIT(p, "\":false");
}

/* The packet's bytes as they were kept (the first CSD_PKT_RAW_MAX), two
 * hex digits each; `spaced`: a space between them. */
static inline char *put_raw_hex(char *q, const struct csd_packet *p, const int spaced)
{
	const size_t n = p->size < CSD_PKT_RAW_MAX ? p->size : CSD_PKT_RAW_MAX;
	for (size_t i = 0; i < n; i++) {
		if (spaced && i)
			*q++ = ' ';
		*q++ = hex_digits[p->raw[i] >> 4];
		*q++ = hex_digits[p->raw[i] & 15];
	}
	return q;
}

/* Built by hand in one buffer, as the records are (csdec packets --format
 * jsonl prints one a packet). */
void print_packet_json_src(FILE *out, uint8_t id, const struct source_slot *s, const struct csd_packet *p)
{
	_Static_assert(CSD_PKT_RAW_MAX <= 64, "the packet's bytes fit the line buffer");
	char buf[768], atoms[64];
	char *q = PUT_LIT(buf, "{\"packet\":\"");
	q = put_str(q, csd_pkt_type_name((int)p->type));
	q = PUT_LIT(q, "\",\"id\":");
	q = put_dec(q, id);
	if (s)
		q = put_json_perf(q, s);
	q = PUT_LIT(q, ",\"offset\":");
	q = put_dec(q, p->offset);
	q = PUT_LIT(q, ",\"size\":");
	q = put_dec(q, p->size);
	q = PUT_LIT(q, ",\"bytes\":\"");
	q = put_raw_hex(q, p, 0);
	*q++ = '"';
	const char *reason = NULL; /* ERROR, TRUNCATED: a string to escape */
	switch (p->type) {
	case CSD_PKT_ISYNC:
		if (!(p->flags & CSD_PKTF_DATA_ONLY)) {
			q = PUT_LIT(q, ",\"addr\":\"0x");
			q = put_hex_min(q, p->addr, 8);
			*q++ = '"';
		}
		q = PUT_LIT(q, ",\"reason\":\"");
		q = put_str(q, csd_reason_name(p->reason));
		*q++ = '"';
		if (p->flags & CSD_PKTF_LSIP) {
			q = PUT_LIT(q, ",\"lsip\":true,\"data_insn_addr\":\"0x");
			q = put_hex_min(q, p->data_insn_addr, 8);
			*q++ = '"';
		}
		if (p->flags & CSD_PKTF_DATA_ONLY)
			q = put_json_bool(q, "data_only", 1);
		break;
	case CSD_PKT_PHEADER:
	case CSD_PKT_ATOM:
		atoms_string(p, atoms, sizeof(atoms));
		q = PUT_LIT(q, ",\"atoms\":\"");
		q = put_str(q, atoms);
		q = PUT_LIT(q, "\",\"num\":");
		q = put_dec(q, p->atoms.num);
		if (p->type == CSD_PKT_PHEADER) {
			q = PUT_LIT(q, ",\"w\":");
			q = put_dec(q, p->atoms.w);
			q = PUT_LIT(q, ",\"format\":");
			q = put_dec(q, p->atoms.format);
		}
		break;
	case CSD_PKT_BRANCH:
	case CSD_PKT_WAYPOINT:
		q = PUT_LIT(q, ",\"addr\":\"0x");
		q = put_hex_min(q, p->addr, 8);
		q = PUT_LIT(q, "\",\"addr_bytes\":");
		q = put_dec(q, p->addr_bytes);
		if (p->flags & CSD_PKTF_EXCEPTION) {
			q = PUT_LIT(q, ",\"exception\":");
			q = put_dec(q, p->exception);
		}
		if (p->flags & CSD_PKTF_CANCEL)
			q = put_json_bool(q, "cancel", 1);
		if (p->flags & CSD_PKTF_RESUME)
			q = put_json_bool(q, "resume", 1);
		break;
	case CSD_PKT_CONTEXT_ID:
		q = PUT_LIT(q, ",\"context_id\":\"0x");
		q = put_hex_min(q, p->context_id, 8);
		*q++ = '"';
		break;
	case CSD_PKT_VMID:
		q = PUT_LIT(q, ",\"vmid\":");
		q = put_dec(q, p->vmid);
		break;
	case CSD_PKT_TIMESTAMP:
		q = PUT_LIT(q, ",\"timestamp\":");
		q = put_dec(q, p->timestamp);
		q = PUT_LIT(q, ",\"ts_bits\":");
		q = put_dec(q, p->ts_bits);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (p->tag) {
			q = PUT_LIT(q, ",\"tag\":");
			q = put_dec(q, p->tag);
		}
		if (p->flags & CSD_PKTF_DATA_ADDR) {
			q = PUT_LIT(q, ",\"data_addr\":\"0x");
			q = put_hex_min(q, p->data_addr, 8);
			*q++ = '"';
		}
		if (p->flags & CSD_PKTF_DATA_VALUE) {
			q = PUT_LIT(q, ",\"data_value\":\"0x");
			q = put_hex_min(q, p->data_value, 1);
			q = PUT_LIT(q, "\",\"data_size\":");
			q = put_dec(q, p->data_size);
		}
		if (p->flags & CSD_PKTF_BIG_ENDIAN)
			q = put_json_bool(q, "big_endian", 1);
		break;
	case CSD_PKT_ERROR:
	case CSD_PKT_TRUNCATED:
		reason = p->error ? p->error : "bad packet";
		break;
	default:
		break;
	}
	if (reason)
		q = put_json_reason(out, buf, q, reason);
	if ((p->flags & CSD_PKTF_ISA) && p->type != CSD_PKT_NOSYNC) {
		q = PUT_LIT(q, ",\"isa\":\"");
		q = put_str(q, csd_isa_name(p->isa));
		*q++ = '"';
	}
	if (p->flags & CSD_PKTF_SECURITY) {
		q = put_json_bool(q, "ns", p->flags & CSD_PKTF_NS);
		q = put_json_bool(q, "hyp", p->flags & CSD_PKTF_HYP);
	}
	if (p->flags & CSD_PKTF_ALTISA)
		q = put_json_bool(q, "altisa", 1);
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->type != CSD_PKT_CONTEXT_ID) {
		q = PUT_LIT(q, ",\"context_id\":\"0x");
		q = put_hex_min(q, p->context_id, 8);
		*q++ = '"';
	}
	if (p->flags & CSD_PKTF_CYCLE_COUNT) {
		q = PUT_LIT(q, ",\"cycle_count\":");
		q = put_dec(q, p->cycle_count);
	}
	q = PUT_LIT(q, "}\n");
	fwrite(buf, 1, (size_t)(q - buf), out);
}

/* " %s" of an error or truncation reason, which may be of any length:
 * the line so far, buf[0, end), straight to the stream with it; the line
 * goes on at buf. */
static char *put_text_reason(FILE *out, char *buf, char *end, const char *reason)
{
	fwrite(buf, 1, (size_t)(end - buf), out);
	fputc(' ', out);
	fputs(reason, out);
	return buf;
}

/* Built by hand in one buffer, as the JSON Lines are: printf was most of
 * `csdec packets`' time. The layout is that of the format
 * "0x%02x %8" PRIu64 "  %-12s" and the fields' formats noted below
 * (tests/test_print_json.c holds it to them). */
void print_packet_text_src(FILE *out, uint8_t id, const struct source_slot *s, const struct csd_packet *p)
{
	/* At most: 512 of a data value (2 x a data_size of 255, which no
	 * decoder gives), 196 of bytes, 63 of atoms, about 250 of the rest. */
	_Static_assert(CSD_PKT_RAW_MAX <= 64, "the packet's bytes fit the line buffer");
	char buf[1280], atoms[64], num[24];
	char *q = buf;
	if (s && s->perf) {     /* "cpu%d " */
		q = PUT_LIT(q, "cpu");
		q = put_dec_signed(q, s->cpu);
		*q++ = ' ';
	}
	q = PUT_LIT(q, "0x");
	q = put_hex_min(q, id, 2);
	*q++ = ' ';
	const size_t off_len = (size_t)(put_dec(num, p->offset) - num);
	for (size_t k = off_len; k < 8; k++)
		*q++ = ' ';
	memcpy(q, num, off_len);
	q += off_len;
	q = PUT_LIT(q, "  ");
	q = put_pad(q, csd_pkt_type_name((int)p->type), 12);
	switch (p->type) {
	case CSD_PKT_NOSYNC:
	case CSD_PKT_ASYNC:
	case CSD_PKT_IGNORE:    /* " %" PRIu64 " bytes" */
		*q++ = ' ';
		q = put_dec(q, p->size);
		q = PUT_LIT(q, " bytes");
		break;
	case CSD_PKT_ISYNC:
		if (p->flags & CSD_PKTF_DATA_ONLY) {
			q = PUT_LIT(q, " data-only");
		} else {        /* " addr=0x%08" PRIx32 */
			q = PUT_LIT(q, " addr=0x");
			q = put_hex_min(q, p->addr, 8);
		}
		if (p->flags & CSD_PKTF_LSIP) {
			q = PUT_LIT(q, " lsip data_insn=0x");
			q = put_hex_min(q, p->data_insn_addr, 8);
		}
		q = PUT_LIT(q, " reason=");
		q = put_str(q, csd_reason_name(p->reason));
		break;
	case CSD_PKT_PHEADER:
	case CSD_PKT_ATOM:
		atoms_string(p, atoms, sizeof(atoms));
		*q++ = ' ';
		q = put_str(q, atoms);
		if (p->type == CSD_PKT_PHEADER) {       /* " (format %u)" */
			q = PUT_LIT(q, " (format ");
			q = put_dec(q, p->atoms.format);
			*q++ = ')';
		}
		break;
	case CSD_PKT_BRANCH:
	case CSD_PKT_WAYPOINT:  /* " addr=0x%08" PRIx32 " (%u bytes)" */
		q = PUT_LIT(q, " addr=0x");
		q = put_hex_min(q, p->addr, 8);
		q = PUT_LIT(q, " (");
		q = put_dec(q, p->addr_bytes);
		q = PUT_LIT(q, " bytes)");
		if (p->flags & CSD_PKTF_EXCEPTION) {
			q = PUT_LIT(q, " exception=");
			q = put_dec(q, p->exception);
		}
		if (p->flags & CSD_PKTF_CANCEL)
			q = PUT_LIT(q, " cancel");
		if (p->flags & CSD_PKTF_RESUME)
			q = PUT_LIT(q, " resume");
		break;
	case CSD_PKT_CONTEXT_ID:
		q = PUT_LIT(q, " 0x");
		q = put_hex_min(q, p->context_id, 8);
		break;
	case CSD_PKT_VMID:
		*q++ = ' ';
		q = put_dec(q, p->vmid);
		break;
	case CSD_PKT_TIMESTAMP: /* " %" PRIu64 " (0x%" PRIx64 ", %u bits)" */
		*q++ = ' ';
		q = put_dec(q, p->timestamp);
		q = PUT_LIT(q, " (0x");
		q = put_hex_min(q, p->timestamp, 1);
		q = PUT_LIT(q, ", ");
		q = put_dec(q, p->ts_bits);
		q = PUT_LIT(q, " bits)");
		break;
	case CSD_PKT_CYCLE_COUNT:
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (p->tag) {
			q = PUT_LIT(q, " tag=");
			q = put_dec(q, p->tag);
		}
		if (p->flags & CSD_PKTF_DATA_ADDR) {
			q = PUT_LIT(q, " daddr=0x");
			q = put_hex_min(q, p->data_addr, 8);
		}
		if (p->flags & CSD_PKTF_DATA_VALUE) {   /* " value=0x%0*" PRIx32 */
			q = PUT_LIT(q, " value=0x");
			q = put_hex_min(q, p->data_value, 2 * (p->data_size ? p->data_size : 1));
		}
		if (p->flags & CSD_PKTF_BIG_ENDIAN)
			q = PUT_LIT(q, " be");
		break;
	case CSD_PKT_ERROR:
	case CSD_PKT_TRUNCATED:
		q = put_text_reason(out, buf, q, p->error ? p->error : "bad packet");
		break;
	default:
		break;
	}
	if ((p->flags & CSD_PKTF_ISA) && p->type != CSD_PKT_NOSYNC) {
		q = PUT_LIT(q, " isa=");
		q = put_str(q, csd_isa_name(p->isa));
	}
	if (p->flags & CSD_PKTF_SECURITY) {
		q = p->flags & CSD_PKTF_NS ? PUT_LIT(q, " NS") : PUT_LIT(q, " S");
		if (p->flags & CSD_PKTF_HYP)
			q = PUT_LIT(q, " hyp");
	}
	if (p->flags & CSD_PKTF_ALTISA)
		q = PUT_LIT(q, " altisa");
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->type != CSD_PKT_CONTEXT_ID) {
		q = PUT_LIT(q, " ctxid=0x");
		q = put_hex_min(q, p->context_id, 8);
	}
	if (p->flags & CSD_PKTF_CYCLE_COUNT) {
		q = PUT_LIT(q, " cc=");
		q = put_dec(q, p->cycle_count);
	}
	q = PUT_LIT(q, "  [");
	q = put_raw_hex(q, p, 1);
	if (p->size > CSD_PKT_RAW_MAX)
		q = PUT_LIT(q, " ...");
	q = PUT_LIT(q, "]\n");
	fwrite(buf, 1, (size_t)(q - buf), out);
}

/* The per-instruction record, the hot path of --insn --format jsonl: built
 * by hand in one buffer (printf would dominate the run time). */
static void print_insn_json(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	char buf[256];
	char *p = PUT_LIT(buf, "{\"type\":\"insn\",\"id\":");
	p = put_dec(p, s->id);
	p = put_json_perf(p, s);
	p = PUT_LIT(p, ",\"addr\":\"0x");
	p = put_hex(p, r->addr, r->addr > 0xFFFFFFFFu ? 16 : 8);
	p = PUT_LIT(p, "\",\"isa\":\"");
	p = put_str(p, csd_isa_name(r->isa));
	p = PUT_LIT(p, "\",\"size\":");
	p = put_dec(p, r->size);
	p = PUT_LIT(p, ",\"opcode\":\"0x");
	p = put_hex(p, r->opcode, r->size == 2 ? 4 : 8);
	p = PUT_LIT(p, "\",\"cond\":\"");
	p = put_str(p, csd_cond_name(r->cond));
	*p++ = '"';
	if (r->flags & CSD_RECF_CYCLES) {
		p = PUT_LIT(p, ",\"cycles\":");
		p = put_dec(p, r->cycles);
	}
	p = PUT_LIT(p, "}\n");
	fwrite(buf, 1, (size_t)(p - buf), out);
}

/* {"type":"data","id":N,"insn":"0x<pc>","dir":"load"|"store","size":N,
 * "addr":"0x...","value":"0x..."}, addr and value only when traced; insn,
 * dir and size only when the instruction is known (not in a data-only
 * trace, where the value is of one 32-bit transfer). */
static void print_data_json(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	const int no_insn = (r->flags & CSD_RECF_DATA_NO_INSN) != 0;
	fprintf(out, "{\"type\":\"data\",\"id\":%u", s->id);
	json_perf(out, s);
	if (!no_insn)
		fprintf(out, ",\"insn\":\"0x%08" PRIx64 "\",\"dir\":\"%s\",\"size\":%" PRIu64, r->last,
			r->flags & CSD_RECF_STORE ? "store" : "load", r->size);
	if (r->flags & CSD_RECF_DATA_ADDR)
		fprintf(out, ",\"addr\":\"0x%08" PRIx64 "\"", r->addr);
	if (r->flags & CSD_RECF_DATA_VALUE)
		fprintf(out, ",\"value\":\"0x%0*" PRIx64 "\"", no_insn ? 8 : value_digits(r->size), r->target);
	fputs("}\n", out);
}

void print_record_json(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	if (r->type == CSD_REC_INSN) {
		print_insn_json(out, s, r);
		return;
	}
	if (r->type == CSD_REC_DATA) {
		print_data_json(out, s, r);
		return;
	}
	/* Built by hand in one buffer: decode --format jsonl is mostly these
	 * lines, and printf was most of its time. (The names put here are
	 * the library's, a few dozen characters at most.) */
	char buf[512];
	char *p = PUT_LIT(buf, "{\"type\":\"");
	p = put_str(p, csd_rec_type_name((int)r->type));
	p = PUT_LIT(p, "\",\"id\":");
	p = put_dec(p, s->id);
	p = put_json_perf(p, s);
	p = PUT_LIT(p, ",\"offset\":");
	p = put_dec(p, r->offset);
	const char *reason = NULL; /* ERROR, TRUNCATED: a string to escape */
	switch (r->type) {
	case CSD_REC_RANGE:
		p = PUT_LIT(p, ",\"addr\":\"0x");
		p = put_hex_min(p, r->addr, 8);
		p = PUT_LIT(p, "\",\"end\":\"0x");
		p = put_hex_min(p, r->end, 8);
		p = PUT_LIT(p, "\",\"last\":\"0x");
		p = put_hex_min(p, r->last, 8);
		p = PUT_LIT(p, "\",\"count\":");
		p = put_dec(p, r->count);
		p = PUT_LIT(p, ",\"isa\":\"");
		p = put_str(p, csd_isa_name(r->isa));
		p = PUT_LIT(p, "\",\"cond\":\"");
		p = put_str(p, csd_cond_name(r->cond));
		*p++ = '"';
		if (r->flags & CSD_RECF_BRANCH)
			p = put_json_bool(p, "taken", r->flags & CSD_RECF_TAKEN);
		break;
	case CSD_REC_EXCEPTION:
		p = PUT_LIT(p, ",\"number\":");
		p = put_dec(p, r->exception);
		p = PUT_LIT(p, ",\"name\":\"");
		p = put_str(p, exc_name(s, r->exception));
		p = PUT_LIT(p, "\",\"return\":\"0x");
		p = put_hex_min(p, r->addr, 8);
		p = PUT_LIT(p, "\",\"target\":\"0x");
		p = put_hex_min(p, r->target, 8);
		*p++ = '"';
		p = put_json_bool(p, "cancelled", r->flags & CSD_RECF_CANCELLED);
		break;
	case CSD_REC_TRACE_ON:
		p = PUT_LIT(p, ",\"reason\":\"");
		p = put_str(p, csd_reason_name(r->reason));
		p = PUT_LIT(p, "\",\"addr\":\"0x");
		p = put_hex_min(p, r->addr, 8);
		p = PUT_LIT(p, "\",\"isa\":\"");
		p = put_str(p, csd_isa_name(r->isa));
		*p++ = '"';
		break;
	case CSD_REC_CONTEXT:
		p = PUT_LIT(p, ",\"isa\":\"");
		p = put_str(p, csd_isa_name(r->isa));
		*p++ = '"';
		p = put_json_bool(p, "ns", r->flags & CSD_RECF_NS);
		p = put_json_bool(p, "hyp", r->flags & CSD_RECF_HYP);
		if (r->flags & CSD_RECF_CONTEXT_ID) {
			p = PUT_LIT(p, ",\"context_id\":\"0x");
			p = put_hex_min(p, r->context_id, 8);
			*p++ = '"';
		}
		if (r->flags & CSD_RECF_VMID) {
			p = PUT_LIT(p, ",\"vmid\":");
			p = put_dec(p, r->vmid);
		}
		break;
	case CSD_REC_TIMESTAMP:
		p = PUT_LIT(p, ",\"timestamp\":");
		p = put_dec(p, r->timestamp);
		break;
	case CSD_REC_NO_MEMORY:
		p = PUT_LIT(p, ",\"addr\":\"0x");
		p = put_hex_min(p, r->addr, 8);
		p = PUT_LIT(p, "\",\"count\":");
		p = put_dec(p, r->count);
		break;
	case CSD_REC_ADDRESS_UNKNOWN:
		p = PUT_LIT(p, ",\"count\":");
		p = put_dec(p, r->count);
		p = PUT_LIT(p, ",\"isa\":\"");
		p = put_str(p, csd_isa_name(r->isa));
		*p++ = '"';
		break;
	case CSD_REC_NOSYNC:
		p = PUT_LIT(p, ",\"size\":");
		p = put_dec(p, r->size);
		break;
	case CSD_REC_ISA_UNSUPPORTED:
		p = PUT_LIT(p, ",\"addr\":\"0x");
		p = put_hex_min(p, r->addr, 8);
		p = PUT_LIT(p, "\",\"isa\":\"");
		p = put_str(p, csd_isa_name(r->isa));
		*p++ = '"';
		break;
	case CSD_REC_ERROR:
		reason = r->error ? r->error : "bad trace";
		break;
	case CSD_REC_TRUNCATED:
		p = PUT_LIT(p, ",\"size\":");
		p = put_dec(p, r->size);
		reason = r->error ? r->error : "packet cut by the end of the capture";
		break;
	case CSD_REC_DATA_LOST:
		if (r->last) {
			p = PUT_LIT(p, ",\"insn\":\"0x");
			p = put_hex_min(p, r->last, 8);
			*p++ = '"';
		}
		break;
	default:
		break;
	}
	if (reason)
		p = put_json_reason(out, buf, p, reason);
	if (r->flags & CSD_RECF_CYCLES) {
		p = PUT_LIT(p, ",\"cycles\":");
		p = put_dec(p, r->cycles);
	}
	p = PUT_LIT(p, "}\n");
	fwrite(buf, 1, (size_t)(p - buf), out);
}


void print_order_text(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting)
{
	struct line_buf b;
	b.n = 0;
	if (s->perf)
		lb_add(&b, "cpu%" PRId32 " ", s->cpu);
	lb_add(&b, "0x%02x  -- order: %s", s->id, reason);
	if (waiting)
		lb_add(&b, " (0x%02x's timestamps lag behind)", waiting->id);
	print_line(out, &b);
}

void print_order_json(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting)
{
	fprintf(out, "{\"type\":\"order\",\"id\":%u", s->id);
	json_perf_as(out, s, s->taken_pid, s->taken_tid);
	fprintf(out, ",\"reason\":\"%s\"", reason);
	if (waiting)
		fprintf(out, ",\"waiting\":%u", waiting->id);
	fputs("}\n", out);
}

/* perf.data input: the thread the next records of s belong to. */
void print_thread_text(FILE *out, const struct source_slot *s)
{
	struct line_buf b;
	b.n = 0;
	lb_add(&b, "cpu%" PRId32 " 0x%02x  -- thread", s->cpu, s->id);
	if (s->pid >= 0)
		lb_add(&b, " pid=%" PRId32, s->pid);
	if (s->tid >= 0)
		lb_add(&b, " tid=%" PRId32, s->tid);
	if (s->pid < 0 && s->tid < 0)
		lb_add(&b, " unknown");
	print_line(out, &b);
}

static const struct {
	uint64_t bit;
	const char *name;
} aux_flag_names[] = {
	{ CSD_PERF_AUX_TRUNCATED, "truncated" },
	{ CSD_PERF_AUX_PARTIAL, "partial" },
	{ CSD_PERF_AUX_COLLISION, "collision" },
};

void print_aux_lost_text(FILE *out, const struct csd_perf_event *ev)
{
	struct line_buf b;
	b.n = 0;
	lb_add(&b, "---- %8" PRIu64 "  aux_lost", ev->offset);
	const char *sep = " ";
	for (size_t i = 0; i < sizeof(aux_flag_names) / sizeof(aux_flag_names[0]); i++)
		if (ev->aux_flags & aux_flag_names[i].bit) {
			lb_add(&b, "%s%s", sep, aux_flag_names[i].name);
			sep = ",";
		}
	lb_add(&b, " aux_offset=%" PRIu64 " aux_size=%" PRIu64, ev->aux_offset, ev->aux_size);
	if (ev->cpu >= 0)
		lb_add(&b, " cpu=%" PRId32, ev->cpu);
	if (ev->pid >= 0)
		lb_add(&b, " pid=%" PRId32, ev->pid);
	if (ev->tid >= 0)
		lb_add(&b, " tid=%" PRId32, ev->tid);
	print_line(out, &b);
}

void print_aux_lost_json(FILE *out, const struct csd_perf_event *ev)
{
	fputs("{\"type\":\"aux_lost\"", out);
	if (ev->cpu >= 0)
		fprintf(out, ",\"cpu\":%" PRId32, ev->cpu);
	if (ev->pid >= 0)
		fprintf(out, ",\"pid\":%" PRId32, ev->pid);
	if (ev->tid >= 0)
		fprintf(out, ",\"tid\":%" PRId32, ev->tid);
	fprintf(out, ",\"offset\":%" PRIu64 ",\"aux_offset\":%" PRIu64 ",\"aux_size\":%" PRIu64 ",\"flags\":[", ev->offset,
		ev->aux_offset, ev->aux_size);
	const char *sep = "";
	for (size_t i = 0; i < sizeof(aux_flag_names) / sizeof(aux_flag_names[0]); i++)
		if (ev->aux_flags & aux_flag_names[i].bit) {
			fprintf(out, "%s\"%s\"", sep, aux_flag_names[i].name);
			sep = ",";
		}
	fputs("]}\n", out);
}
