/*
 * test_flow_text.c - flow cases written as text (the .txt files in
 * tests/flow): a few
 * lines of code, the packets of a trace, and the records the flow decoder
 * must give for it. The runner encodes the packets with the library's
 * encoders, decodes them over the code and compares record by record.
 *
 * A case file, one item a line ('#' starts a comment):
 *   protocol ptm | etm3         (first)
 *   etmcr VALUE                 trace configuration (default 0)
 *   code ADDR WORD...           A32 words (or T32 halfwords with `code16`)
 *                               placed at ADDR, little-endian
 *   async
 *   isync ADDR ISA [reason=R] [lsip=ADDR] [cycles=N]
 *   atoms E|N... [cycles=N]     one atom packet / P-header (ETMv3: format 1
 *                               or 2, not cycle-accurate)
 *   pheader FORMAT W E|N...|-   ETMv3 P-header of that format (IHI 0014Q
 *                               tables 7.2, 7.3), W cycle (W) atoms
 *   branch ADDR ISA [exception=N] [cancel] [cycles=N]
 *   waypoint ADDR ISA           PTM waypoint update
 *   exception_exit              ETMv3
 *   cycle_count N               ETMv3 cycle count packet
 *   timestamp VALUE [cycles=N]
 *   data [addr=A] [value=V]     ETMv3 Normal data (value: V's bytes, as the
 *                               SS field gives them)
 *   placeholder tag=T [addr=A]  ETMv3 out-of-order placeholder
 *   ooo_data tag=T value=V      ETMv3 out-of-order data
 *   store_failed | value_not_traced | data_suppressed
 *   repeat N ITEM               packet ITEM (a line above) N times
 *   mode range | insn           decode in that mode; the `>` lines after it
 *                               are its records (a file may hold both)
 *   > TYPE [key=value | flag]...
 *   > repeat N TYPE ...         N records alike
 * A record line names the record type (csd_rec_type_name) and the fields
 * to check: addr, last, end, count, target, exception, cycles, timestamp,
 * size (numbers), cond (pass / fail / unknown), isa (arm / thumb /
 * thumbee / jazelle), and flags that must be set: link, taken, branch,
 * return_stack, cancelled, store, data_addr, data_value, no_insn (data
 * records), or must not be: !FLAG; why=WORD: an error record's reason
 * holds WORD.
 * Fields not named are not checked; the number of records must match.
 * CONTEXT and NOSYNC records are left out (no case is about them).
 * With CSD_FLOW_TEXT_SHOW set, every decoded record is printed (for
 * writing a new case: each record is then checked against the spec by
 * hand, never copied in unread).
 * ISA names: arm, thumb, thumbee, jazelle. Numbers: C syntax (0x...).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec.h"

#define MAX_RECS 512
#define MAX_CODE 4096

struct expect {
	char line[256];
	int lineno;
};

struct flow_case {
	const char *path;
	uint32_t protocol;
	uint32_t etmcr;
	uint8_t code[MAX_CODE];
	uint32_t code_addr;
	size_t code_n;
	uint8_t trace[4096];
	size_t trace_n;
	csd_ptm_encoder *pe;
	csd_etm3_encoder *ee;
	int modes;           /* decodes checked */
	int bad;             /* a line could not be read */
};

static void fail_line(struct flow_case *c, int lineno, const char *what, const char *text)
{
	fprintf(stderr, "%s:%d: %s: %s\n", c->path, lineno, what, text);
	c->bad = 1;
	CHECK(0);
}

static int parse_isa(const char *s, uint8_t *isa)
{
	static const char *const names[] = { "unknown", "arm", "thumb", "thumbee", "jazelle" };
	for (unsigned i = 1; i < 5; i++)
		if (strcmp(s, names[i]) == 0) {
			*isa = (uint8_t)i;
			return 1;
		}
	return 0;
}

static int parse_num(const char *s, uint64_t *v)
{
	char *end;
	*v = strtoull(s, &end, 0);
	return *s && !*end;
}

static int encoders(struct flow_case *c)
{
	if (c->pe || c->ee)
		return 1;
	struct csd_trace_config t = { .size = sizeof(t), .protocol = c->protocol, .etmcr = c->etmcr };
	t.etmidr = c->protocol == CSD_PROTO_PTM ? 0x411CF312 : 0x410CF250;
	t.etmccer = c->protocol == CSD_PROTO_PTM ? 0x34C01AC2 : 0x344008F2;
	if (c->protocol == CSD_PROTO_PTM)
		c->pe = csd_ptm_enc_new(&t);
	else if (c->protocol == CSD_PROTO_ETM3)
		c->ee = csd_etm3_enc_new(&t);
	return c->pe || c->ee;
}

static void put(struct flow_case *c, const struct csd_packet *p, int lineno)
{
	if (!encoders(c)) {
		fail_line(c, lineno, "no protocol before the first packet", "");
		return;
	}
	int n = c->pe ? csd_ptm_enc_packet(c->pe, p, c->trace + c->trace_n, sizeof(c->trace) - c->trace_n)
		      : csd_etm3_enc_packet(c->ee, p, c->trace + c->trace_n, sizeof(c->trace) - c->trace_n);
	if (n <= 0) {
		fail_line(c, lineno, "the encoder refused the packet", csd_errstr(n));
		return;
	}
	c->trace_n += (size_t)n;
}

/* Split s into at most max words (in place). */
static int split(char *s, char **w, int max)
{
	int n = 0;
	for (char *tok = strtok(s, " \t"); tok && n < max; tok = strtok(NULL, " \t"))
		w[n++] = tok;
	return n;
}

/* E / N letters into p's atoms; 0 if s is not such a string. */
static int parse_atoms(const char *s, struct csd_packet *p)
{
	if (strlen(s) > 16)
		return 0;
	for (unsigned i = 0; s[i]; i++) {
		if (s[i] != 'E' && s[i] != 'N')
			return 0;
		if (s[i] == 'E')
			p->atoms.en |= 1u << i;
		p->atoms.num++;
	}
	return 1;
}

static void packet_line(struct flow_case *c, char **w, int n, int lineno)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	uint64_t v;
	/* A last word cycles=N: the packet's cycle count. */
	if (n > 1 && strncmp(w[n - 1], "cycles=", 7) == 0) {
		if (!parse_num(w[n - 1] + 7, &v)) {
			fail_line(c, lineno, "cycles=N", w[n - 1]);
			return;
		}
		p.flags |= CSD_PKTF_CYCLE_COUNT;
		p.cycle_count = (uint32_t)v;
		n--;
	}
	if (strcmp(w[0], "async") == 0 && n == 1) {
		p.type = CSD_PKT_ASYNC;
	} else if (strcmp(w[0], "isync") == 0 && n >= 3 && parse_num(w[1], &v) && parse_isa(w[2], &p.isa)) {
		p.type = CSD_PKT_ISYNC;
		p.addr = (uint32_t)v;
		p.reason = CSD_REASON_TRACE_ON;
		p.flags |= CSD_PKTF_ISA | CSD_PKTF_SECURITY;
		for (int i = 3; i < n; i++) {
			if (strncmp(w[i], "reason=", 7) == 0 && parse_num(w[i] + 7, &v)) {
				p.reason = (uint8_t)v;
			} else if (strncmp(w[i], "lsip=", 5) == 0 && parse_num(w[i] + 5, &v)) {
				p.flags |= CSD_PKTF_LSIP;
				p.data_insn_addr = (uint32_t)v;
			} else {
				fail_line(c, lineno, "unknown isync field", w[i]);
				return;
			}
		}
	} else if (strcmp(w[0], "atoms") == 0 && n == 2) {
		p.type = c->protocol == CSD_PROTO_PTM ? CSD_PKT_ATOM : CSD_PKT_PHEADER;
		if (!parse_atoms(w[1], &p)) {
			fail_line(c, lineno, "atoms are E or N", w[1]);
			return;
		}
		/* ETMv3 (not cycle-accurate): format 1 is E..E with at most
		 * one N at the end; anything else needs format 2. */
		const char *nat = strchr(w[1], 'N');
		p.atoms.format = c->protocol == CSD_PROTO_PTM ? 0 : (nat && nat[1]) ? 2 : 1;
	} else if ((strcmp(w[0], "branch") == 0 || strcmp(w[0], "waypoint") == 0) && n >= 3 && parse_num(w[1], &v) &&
		   parse_isa(w[2], &p.isa)) {
		p.type = w[0][0] == 'b' ? CSD_PKT_BRANCH : CSD_PKT_WAYPOINT;
		p.addr = (uint32_t)v;
		p.flags |= CSD_PKTF_ISA;
		for (int i = 3; i < n; i++) {
			if (p.type == CSD_PKT_BRANCH && strncmp(w[i], "exception=", 10) == 0 && parse_num(w[i] + 10, &v)) {
				p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
				p.exception = (uint16_t)v;
			} else if (p.type == CSD_PKT_BRANCH && strcmp(w[i], "cancel") == 0) {
				p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_CANCEL;
			} else {
				fail_line(c, lineno, "unknown branch field", w[i]);
				return;
			}
		}
	} else if (strcmp(w[0], "exception_exit") == 0 && n == 1) {
		p.type = CSD_PKT_EXCEPTION_EXIT;
	} else if (strcmp(w[0], "pheader") == 0 && n == 4 && c->protocol == CSD_PROTO_ETM3 && parse_num(w[1], &v)) {
		p.type = CSD_PKT_PHEADER;
		p.atoms.format = (uint8_t)v;
		if (!parse_num(w[2], &v) || (strcmp(w[3], "-") != 0 && !parse_atoms(w[3], &p))) {
			fail_line(c, lineno, "pheader FORMAT W E|N...|-", w[2]);
			return;
		}
		p.atoms.w = (uint8_t)v;
	} else if (strcmp(w[0], "cycle_count") == 0 && n == 2 && c->protocol == CSD_PROTO_ETM3 && parse_num(w[1], &v)) {
		p.type = CSD_PKT_CYCLE_COUNT;
		p.flags |= CSD_PKTF_CYCLE_COUNT;
		p.cycle_count = (uint32_t)v;
	} else if (strcmp(w[0], "timestamp") == 0 && n == 2 && parse_num(w[1], &v)) {
		p.type = CSD_PKT_TIMESTAMP;
		p.timestamp = v;
	} else if (strcmp(w[0], "data") == 0 || strcmp(w[0], "placeholder") == 0 || strcmp(w[0], "ooo_data") == 0) {
		p.type = w[0][0] == 'd' ? CSD_PKT_NORMAL_DATA : w[0][0] == 'p' ? CSD_PKT_OOO_PLACEHOLDER : CSD_PKT_OOO_DATA;
		for (int i = 1; i < n; i++) {
			if (strncmp(w[i], "addr=", 5) == 0 && p.type != CSD_PKT_OOO_DATA && parse_num(w[i] + 5, &v)) {
				p.flags |= CSD_PKTF_DATA_ADDR;
				p.data_addr = (uint32_t)v;
			} else if (strncmp(w[i], "value=", 6) == 0 && p.type != CSD_PKT_OOO_PLACEHOLDER &&
				   parse_num(w[i] + 6, &v) && v <= 0xFFFFFFFFu) {
				p.flags |= CSD_PKTF_DATA_VALUE;
				p.data_value = (uint32_t)v;
				p.data_size = v == 0 ? 0 : v < 0x100 ? 1 : v < 0x10000 ? 2 : 4;
			} else if (strncmp(w[i], "tag=", 4) == 0 && p.type != CSD_PKT_NORMAL_DATA && parse_num(w[i] + 4, &v) &&
				   v >= 1 && v <= 3) {
				p.tag = (uint8_t)v;
			} else {
				fail_line(c, lineno, "unknown data field", w[i]);
				return;
			}
		}
	} else if (strcmp(w[0], "store_failed") == 0 && n == 1) {
		p.type = CSD_PKT_STORE_FAILED;
	} else if (strcmp(w[0], "value_not_traced") == 0 && n == 1) {
		p.type = CSD_PKT_VALUE_NOT_TRACED;
	} else if (strcmp(w[0], "data_suppressed") == 0 && n == 1) {
		p.type = CSD_PKT_DATA_SUPPRESSED;
	} else {
		fail_line(c, lineno, "cannot read the line", w[0]);
		return;
	}
	put(c, &p, lineno);
}

static void code_line(struct flow_case *c, char **w, int n, int lineno, unsigned width)
{
	uint64_t addr, v;
	if (n < 3 || !parse_num(w[1], &addr)) {
		fail_line(c, lineno, "code ADDR WORD...", w[0]);
		return;
	}
	if (!c->code_n)
		c->code_addr = (uint32_t)addr;
	if (addr != c->code_addr + c->code_n) {
		fail_line(c, lineno, "code lines must follow one another", w[1]);
		return;
	}
	for (int i = 2; i < n; i++) {
		if (!parse_num(w[i], &v) || c->code_n + width > MAX_CODE) {
			fail_line(c, lineno, "bad code word", w[i]);
			return;
		}
		for (unsigned k = 0; k < width; k++)
			c->code[c->code_n++] = (uint8_t)(v >> (8 * k));
	}
}

/* Decode the case's trace in `flags` mode; records but CONTEXT / NOSYNC. */
static size_t decode(struct flow_case *c, uint32_t flags, struct csd_record *out, size_t cap)
{
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	if (!img)
		return 0;
	if (c->code_n)
		CHECK_EQ(csd_image_add_buffer(img, c->code_addr, c->code, c->code_n, 0), 0);
	struct csd_trace_config tc;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	tc.protocol = c->protocol;
	tc.etmcr = c->etmcr;
	tc.etmidr = c->protocol == CSD_PROTO_PTM ? 0x411CF312 : 0x410CF250;
	tc.etmccer = c->protocol == CSD_PROTO_PTM ? 0x34C01AC2 : 0x344008F2;
	fc.image = img;
	fc.flags = flags;
	csd_flow_decoder *d = csd_flow_new(&fc);
	CHECK(d != NULL);
	size_t n = 0;
	if (d) {
		struct csd_bytes in = { .data = c->trace, .size = c->trace_n, .base = 0 };
		CHECK_EQ(csd_flow_feed(d, &in), 0);
		CHECK_EQ(csd_flow_finish(d), 0);
		struct csd_record r;
		while (csd_flow_next(d, &r) == 0) {
			if (r.type == CSD_REC_CONTEXT || r.type == CSD_REC_NOSYNC)
				continue;
			if (n < cap)
				out[n] = r;
			n++;
		}
		csd_flow_free(d);
	}
	csd_image_free(img);
	return n;
}

/* Record r against the expectation text; 1 if it matches. */
static int record_matches(struct flow_case *c, const struct csd_record *r, const struct expect *e)
{
	char buf[sizeof(e->line)];
	char *w[32] = { 0 };
	memcpy(buf, e->line, sizeof(buf));
	const int n = split(buf, w, 32);
	if (n < 1 || strcmp(w[0], csd_rec_type_name((int)r->type)) != 0)
		return 0;
	static const struct {
		const char *name;
		uint32_t flag;
	} flags[] = {
		{ "link", CSD_RECF_LINK },       { "taken", CSD_RECF_TAKEN },
		{ "branch", CSD_RECF_BRANCH },   { "return_stack", CSD_RECF_RETURN_STACK },
		{ "cancelled", CSD_RECF_CANCELLED }, { "store", CSD_RECF_STORE },
		{ "data_addr", CSD_RECF_DATA_ADDR }, { "data_value", CSD_RECF_DATA_VALUE },
		{ "no_insn", CSD_RECF_DATA_NO_INSN },
	};
	for (int i = 1; i < n; i++) {
		char *eq = strchr(w[i], '=');
		int known = 0;
		if (!eq) {
			const int neg = w[i][0] == '!';
			const char *name = w[i] + neg;
			for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
				if (strcmp(name, flags[k].name) == 0) {
					known = 1;
					if ((!(r->flags & flags[k].flag)) != neg)
						return 0;
				}
			if (!known)
				fail_line(c, e->lineno, "unknown record flag", w[i]);
			continue;
		}
		*eq = 0;
		const char *key = w[i], *val = eq + 1;
		uint64_t v;
		if (strcmp(key, "cond") == 0) {
			if (strcmp(csd_cond_name(r->cond), val) != 0)
				return 0;
			continue;
		}
		if (strcmp(key, "why") == 0) {
			/* an error record's reason holds this word */
			if (!r->error || !strstr(r->error, val))
				return 0;
			continue;
		}
		if (strcmp(key, "isa") == 0) {
			uint8_t isa;
			if (!parse_isa(val, &isa))
				fail_line(c, e->lineno, "unknown isa", val);
			else if (r->isa != isa)
				return 0;
			continue;
		}
		if (!parse_num(val, &v)) {
			fail_line(c, e->lineno, "not a number", val);
			continue;
		}
		uint64_t got;
		if (strcmp(key, "addr") == 0)
			got = r->addr;
		else if (strcmp(key, "last") == 0)
			got = r->last;
		else if (strcmp(key, "end") == 0)
			got = r->end;
		else if (strcmp(key, "count") == 0)
			got = r->count;
		else if (strcmp(key, "target") == 0)
			got = r->target;
		else if (strcmp(key, "exception") == 0)
			got = r->exception;
		else if (strcmp(key, "cycles") == 0)
			got = (r->flags & CSD_RECF_CYCLES) ? r->cycles : UINT64_MAX;
		else if (strcmp(key, "timestamp") == 0)
			got = r->timestamp;
		else if (strcmp(key, "size") == 0)
			got = r->size;
		else {
			fail_line(c, e->lineno, "unknown record field", key);
			continue;
		}
		if (got != v)
			return 0;
	}
	return 1;
}

static void check_mode(struct flow_case *c, uint32_t flags, const struct expect *ex, size_t nex)
{
	struct csd_record r[MAX_RECS];
	const size_t n = decode(c, flags, r, MAX_RECS);
	const char *mode = flags & CSD_FLOW_INSN ? "insn" : "range";
	c->modes++;
	for (size_t i = 0; getenv("CSD_FLOW_TEXT_SHOW") && i < n && i < MAX_RECS; i++)
		printf("%s: %s: %s addr=0x%llx last=0x%llx end=0x%llx count=%u target=0x%llx exception=%u cond=%s "
		       "isa=%u flags=0x%x cycles=%llu timestamp=%llu\n",
		       c->path, mode, csd_rec_type_name((int)r[i].type), (unsigned long long)r[i].addr,
		       (unsigned long long)r[i].last, (unsigned long long)r[i].end, r[i].count,
		       (unsigned long long)r[i].target, r[i].exception, csd_cond_name(r[i].cond), r[i].isa, r[i].flags,
		       (unsigned long long)r[i].cycles, (unsigned long long)r[i].timestamp);
	if (n != nex)
		fprintf(stderr, "%s: %s mode: %zu records, %zu expected\n", c->path, mode, n, nex);
	CHECK_EQ(n, nex);
	for (size_t i = 0; i < n && i < nex && i < MAX_RECS; i++) {
		const int ok = record_matches(c, &r[i], &ex[i]);
		if (!ok)
			fprintf(stderr,
				"%s:%d: %s mode record %zu is %s addr=0x%llx last=0x%llx count=%u target=0x%llx "
				"exception=%u cond=%s isa=%u flags=0x%x cycles=%llu timestamp=%llu, expected: %s\n",
				c->path, ex[i].lineno, mode, i, csd_rec_type_name((int)r[i].type),
				(unsigned long long)r[i].addr, (unsigned long long)r[i].last, r[i].count,
				(unsigned long long)r[i].target, r[i].exception, csd_cond_name(r[i].cond), r[i].isa,
				r[i].flags, (unsigned long long)r[i].cycles, (unsigned long long)r[i].timestamp,
				ex[i].line);
		CHECK(ok);
	}
}

static void run_file(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static struct flow_case c;
	memset(&c, 0, sizeof(c));
	c.path = path;
	static struct expect ex[MAX_RECS];
	size_t nex = 0;
	uint32_t mode = 0;
	int have_mode = 0;
	char line[512];
	int lineno = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		line[strcspn(line, "\r\n")] = 0;
		char *s = line + strspn(line, " \t");
		if (!*s)
			continue;
		if (*s == '>') {
			if (!have_mode || nex == MAX_RECS) {
				fail_line(&c, lineno, "a record line needs a `mode` line before it", s);
				continue;
			}
			s++;
			s += strspn(s, " \t");
			unsigned long times = 1;
			if (strncmp(s, "repeat ", 7) == 0) {
				char *end;
				times = strtoul(s + 7, &end, 0);
				s = end + strspn(end, " \t");
				if (times == 0 || times > MAX_RECS - nex || !*s) {
					fail_line(&c, lineno, "> repeat N TYPE ... (N records in all fit)", s);
					continue;
				}
			}
			const size_t len = strlen(s) < sizeof(ex[nex].line) - 1 ? strlen(s) : sizeof(ex[nex].line) - 1;
			for (; times > 0; times--) {
				memcpy(ex[nex].line, s, len);
				ex[nex].line[len] = 0;
				ex[nex++].lineno = lineno;
			}
			continue;
		}
		char *w[64] = { 0 };
		const int n = split(s, w, 64);
		uint64_t v;
		if (n < 1)
			continue;
		if (strcmp(w[0], "protocol") == 0 && n == 2) {
			c.protocol = strcmp(w[1], "ptm") == 0 ? CSD_PROTO_PTM : strcmp(w[1], "etm3") == 0 ? CSD_PROTO_ETM3 : 0;
			if (!c.protocol)
				fail_line(&c, lineno, "protocol ptm or etm3", w[1]);
		} else if (strcmp(w[0], "etmcr") == 0 && n == 2 && parse_num(w[1], &v)) {
			c.etmcr = (uint32_t)v;
		} else if (strcmp(w[0], "code") == 0) {
			code_line(&c, w, n, lineno, 4);
		} else if (strcmp(w[0], "code16") == 0) {
			code_line(&c, w, n, lineno, 2);
		} else if (strcmp(w[0], "mode") == 0 && n == 2 &&
			   (strcmp(w[1], "range") == 0 || strcmp(w[1], "insn") == 0)) {
			if (have_mode)
				check_mode(&c, mode, ex, nex);
			have_mode = 1;
			mode = w[1][0] == 'i' ? CSD_FLOW_INSN : 0;
			nex = 0;
		} else if (strcmp(w[0], "repeat") == 0 && n >= 3 && !have_mode && parse_num(w[1], &v) && v >= 1 &&
			   v <= 4096) {
			for (; v > 0 && !c.bad; v--)
				packet_line(&c, w + 2, n - 2, lineno);
		} else if (!have_mode) {
			packet_line(&c, w, n, lineno);
		} else {
			fail_line(&c, lineno, "packets go before the first `mode` line", w[0]);
		}
	}
	fclose(f);
	if (have_mode)
		check_mode(&c, mode, ex, nex);
	if (!c.modes)
		fail_line(&c, lineno, "no `mode` line: nothing is checked", "");
	csd_ptm_enc_free(c.pe);
	csd_etm3_enc_free(c.ee);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *src = getenv("CSD_SRCDIR");
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/tests/flow", src ? src : ".");
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "test_flow_text: no %s (run through make test, or from the source directory)\n", dir);
		return 1;
	}
	char *names[256];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 256) {
		const size_t len = strlen(de->d_name);
		if (len > 4 && strcmp(de->d_name + len - 4, ".txt") == 0)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	/* The cases the issue asks for at least; fewer files means some went
	 * missing. */
	CHECK(n >= 5);
	for (size_t i = 0; i < n; i++) {
		char path[8192];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		run_file(path);
		free(names[i]);
	}
	printf("test_flow_text: %zu case files\n", n);
	return check_done("test_flow_text");
}
