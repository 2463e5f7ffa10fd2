/* Tests of the qemu-user exec log reader (tools/qemu_log.c, compiled in):
 *  - hand-written logs: both line kinds, the fields (ISA from cs_base bit
 *    23, IT state from bits 31:24), cancelled blocks, every kind of bad line,
 *    line ends, a big log through a FILE in chunks, every truncation of a
 *    log, random and mutated bytes;
 *  - real runs (the cross compiler and qemu-arm are required; missing ones
 *    fail the test): a hand-written assembly program whose executed
 *    instructions follow from its objdump listing, and a C program with
 *    ARM, Thumb and veneers whose every record is checked against the ELF's
 *    mapping symbols ($a/$t) and against the flow of the instruction
 *    before it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "arm_isa.h"
#include "../tools/qemu_log.c"

#define MAX_RECS 64
#define MAX_BADS 64

struct outcome {
	struct qemu_log_insn rec[MAX_RECS];
	size_t nrec;
	uint64_t bad_line[MAX_BADS];
	const char *bad_reason[MAX_BADS];
	size_t nbad;
	struct qemu_log_reader r;
};

/* Reads text to the end. Every call of qemu_log_next consumes a line or
 * ends, so more calls than lines + 2 would be a loop. */
static void read_all(struct outcome *o, const char *text, size_t len)
{
	struct qemu_log_insn in;
	size_t calls = 0;
	int rc;

	memset(o, 0, sizeof *o);
	qemu_log_reader_init_mem(&o->r, text, len);
	while ((rc = qemu_log_next(&o->r, &in)) != QEMU_LOG_END) {
		if (++calls > len + 2) {
			CHECK(!"reader does not end");
			return;
		}
		if (rc == QEMU_LOG_INSN && o->nrec < MAX_RECS)
			o->rec[o->nrec++] = in;
		else if (rc == QEMU_LOG_BAD_LINE && o->nbad < MAX_BADS) {
			o->bad_line[o->nbad] = o->r.bad_line;
			o->bad_reason[o->nbad++] = o->r.bad_reason;
		} else if (rc != QEMU_LOG_INSN && rc != QEMU_LOG_BAD_LINE) {
			CHECK(!"unexpected result");
			return;
		}
	}
	/* every line is exactly one of: a returned record, a cancelled
	 * Trace line with its Stopped line, a bad line */
	CHECK_EQ(o->r.lines, o->r.insns + 2 * o->r.cancelled + o->r.bad_lines);
	CHECK_EQ(qemu_log_next(&o->r, &in), QEMU_LOG_END);
}

static void read_str(struct outcome *o, const char *text)
{
	read_all(o, text, strlen(text));
}

static void check_rec(const struct qemu_log_insn *in, uint32_t addr, int isa, int itstate, int line)
{
	CHECK_EQ(in->addr, addr);
	CHECK_EQ(in->isa, isa);
	CHECK_EQ(in->itstate, itstate);
	CHECK_EQ(in->line, line);
}

/* Lines as qemu 7.2 writes them: ARM, Thumb, Thumb in an IT block, with
 * and without a symbol name. */
static void test_fields(void)
{
	struct outcome o;

	read_str(&o,
	         "Trace 0: 0x7f0f750000c0 [00000480/00010000/00000000/00000201] \n"
	         "Trace 0: 0x7f0f75000940 [00800480/00010028/00000000/00000201] thumb_part\n"
	         "Trace 0: 0x7f0f75000c40 [0c800480/0001002e/00000000/00000201] thumb_part\n"
	         "Trace 0: 0x7f0f75000d40 [18800480/00010030/00000000/00000201] \n"
	         "Trace 0: 0x7F0F75000D40 [00000480/FFFF0FE0/00000000/00000201]\n");
	CHECK_EQ(o.nrec, 5);
	CHECK_EQ(o.nbad, 0);
	check_rec(&o.rec[0], 0x10000, CSD_ISA_ARM, 0, 1);
	check_rec(&o.rec[1], 0x10028, CSD_ISA_THUMB, 0, 2);
	check_rec(&o.rec[2], 0x1002e, CSD_ISA_THUMB, 0x0c, 3);
	check_rec(&o.rec[3], 0x10030, CSD_ISA_THUMB, 0x18, 4);
	/* the kuser helper page: a record like any other, upper-case hex */
	check_rec(&o.rec[4], 0xffff0fe0, CSD_ISA_ARM, 0, 5);
	CHECK(o.rec[4].addr >= QEMU_LOG_KUSER_BASE);
	CHECK_EQ(o.r.lines, 5);
	CHECK_EQ(o.r.insns, 5);

	/* qemu 8.1 and later print the pc with 16 digits, cs_base with at
	 * least 8; other CPUs than 0 are fine if it stays the same one */
	read_str(&o,
	         "Trace 2: 0x7fff00001000 [00800480/0000000000010002/00000000/00000201] main\n"
	         "Trace 2: 0x7fff00001100 [0000000000000480/0000000000010004/00000000/00000201] main\n");
	CHECK_EQ(o.nrec, 2);
	check_rec(&o.rec[0], 0x10002, CSD_ISA_THUMB, 0, 1);
	check_rec(&o.rec[1], 0x10004, CSD_ISA_ARM, 0, 2);
	CHECK_EQ(o.nbad, 0);
}

/* "Stopped execution" right after a Trace line of the same block undoes
 * it (qemu left the block before its instruction ran). */
static void test_cancelled(void)
{
	struct outcome o;

	read_str(&o,
	         "Trace 0: 0x7f3e594a4500 [00000480/000103b4/00000000/00000201] main\n"
	         "Trace 0: 0x7f3e594a4600 [00000480/000103b8/00000000/00000201] main\n"
	         "Stopped execution of TB chain before 0x7f3e594a4600 [000103b8] main\n"
	         "Trace 0: 0x7f3e594a4700 [00000480/00010504/00000000/00000201] h\n"
	         "Trace 0: 0x7f3e594a4600 [00000480/000103b8/00000000/00000201] main\n");
	CHECK_EQ(o.nrec, 3);
	CHECK_EQ(o.nbad, 0);
	CHECK_EQ(o.r.cancelled, 1);
	check_rec(&o.rec[0], 0x103b4, CSD_ISA_ARM, 0, 1);
	check_rec(&o.rec[1], 0x10504, CSD_ISA_ARM, 0, 4);
	check_rec(&o.rec[2], 0x103b8, CSD_ISA_ARM, 0, 5);

	/* a Stopped line that does not match the block before it is bad and
	 * cancels nothing: other pc, other host pointer, nothing before */
	read_str(&o,
	         "Stopped execution of TB chain before 0x7f3e594a4600 [000103b8] main\n"
	         "Trace 0: 0x7f3e594a4600 [00000480/000103b8/00000000/00000201] main\n"
	         "Stopped execution of TB chain before 0x7f3e594a4600 [000103bc] main\n"
	         "Stopped execution of TB chain before 0x7f3e594a4700 [000103b8]\n"
	         "Stopped execution of TB chain before 0x7f3e594a4600 [000103b8]\n"
	         "Stopped execution of TB chain before 0x7f3e594a4600 [000103b8]\n");
	CHECK_EQ(o.nrec, 0);
	CHECK_EQ(o.r.cancelled, 1);
	CHECK_EQ(o.nbad, 4);
	CHECK_EQ(o.bad_line[0], 1);
	CHECK_EQ(o.bad_line[1], 3);
	CHECK_EQ(o.bad_line[2], 4);
	CHECK_EQ(o.bad_line[3], 6);
}

/* Each bad line is reported with its number, and the good lines around it
 * still count. */
static void test_bad_lines(void)
{
	static const char *const bad[] = {
		/* not single-stepped: up to 512 instructions per block */
		"Trace 0: 0x7f00 [00000480/00010000/00000000/00000000] ",
		"Trace 0: 0x7f00 [00000480/00010000/00000000/00000200] ",
		"Trace 0: 0x7f00 [00000480/00010000/00000000/00000202] ",
		/* misaligned for the instruction set */
		"Trace 0: 0x7f00 [00000480/00010002/00000000/00000201] ",
		"Trace 0: 0x7f00 [00800480/00010001/00000000/00000201] ",
		/* IT state in ARM state */
		"Trace 0: 0x7f00 [0c000480/00010000/00000000/00000201] ",
		/* beyond 32 bits */
		"Trace 0: 0x7f00 [00000480/100010000/00000000/00000201] ",
		"Trace 0: 0x7f00 [100000480/00010000/00000000/00000201] ",
		/* a second CPU */
		"Trace 1: 0x7f00 [00000480/00010000/00000000/00000201] ",
		/* malformed */
		"Trace 0: 0x7f00 [00000480/00010000/00000000/00000201",
		"Trace 0: 0x7f00 [00000480/00010000/00000000/00000201]x",
		"Trace 0: 0x7f00 [00000480/00010000/00000000]",
		"Trace 0: 0x7f00 [00000480//00000000/00000201] ",
		"Trace 0: 0x7f00 [00000480/0001000g/00000000/00000201] ",
		"Trace 0: 0x7f00 [00000480/00000000000000010000/00000000/00000201] ",
		"Trace 0: 0x7f00 [00000480/00010000/000000000/00000201] ",
		"Trace 0: (nil) [00000480/00010000/00000000/00000201] ",
		"Trace 0:0x7f00 [00000480/00010000/00000000/00000201] ",
		"Trace x: 0x7f00 [00000480/00010000/00000000/00000201] ",
		"Trace 0123456789: 0x7f00 [00000480/00010000/00000000/00000201] ",
		" Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] ",
		"Stopped execution of TB chain before 0x7f00 [00010000",
		/* other qemu log items */
		"Linking TBs 0x7f3e594a4600 [000103b8] index 0 -> 0x7f3e594a4700 [00010504]",
		"----------------",
		"IN: main",
		"0x00010000:  e3a00003  mov      r0, #3",
		"",
		"qemu: uncaught target signal 11 (Segmentation fault) - core dumped",
	};
	static const char good[] = "Trace 0: 0x7f00 [00000480/00020000/00000000/00000201] ok\n";
	char text[4096];
	struct outcome o;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int n = snprintf(text, sizeof text, "%s%s\n%s", good, bad[i], good);
		CHECK(n > 0 && (size_t)n < sizeof text);
		read_all(&o, text, (size_t)n);
		CHECK_EQ(o.nbad, 1);
		CHECK_EQ(o.bad_line[0], 2);
		CHECK(o.bad_reason[0] != NULL && o.bad_reason[0][0] != 0);
		CHECK_EQ(o.nrec, 2);
		if (o.nbad != 1 || o.nrec != 2)
			fprintf(stderr, "  bad line case %zu: \"%s\"\n", i, bad[i]);
		else
			CHECK_EQ(o.rec[1].line, 3);
	}
	/* the reasons name the qemu option that was missing */
	read_str(&o, "Trace 0: 0x7f00 [00000480/00010000/00000000/00000000] \n"
	             "Linking TBs 0x7f3e594a4600 [000103b8] index 0 -> 0x7f3e594a4700 [00010504]\n");
	CHECK_EQ(o.nbad, 2);
	CHECK(strstr(o.bad_reason[0], "-singlestep") != NULL);
	CHECK(strstr(o.bad_reason[1], "nochain") != NULL);
}

/* Line ends: CRLF, a last line without a newline, an overlong line, NULs. */
static void test_line_ends(void)
{
	static const char crlf[] = "Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] a\r\n"
	                           "Trace 0: 0x7f00 [00800480/00010004/00000000/00000201]\r\n";
	static const char nul[] = "Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] a\n"
	                          "Trace 0: 0x7f00 [00000480/000\00010004/00000000/00000201]\n"
	                          "Trace 0: 0x7f00 [00000480/00010008/00000000/00000201] x\0y\n";
	char big[3 * QEMU_LOG_LINE_MAX];
	struct outcome o;
	size_t n;

	read_str(&o, crlf);
	CHECK_EQ(o.nrec, 2);
	CHECK_EQ(o.nbad, 0);
	CHECK_EQ(o.rec[1].isa, CSD_ISA_THUMB);

	read_str(&o, "Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] a\n"
	             "Trace 0: 0x7f00 [00000480/00010004/00000000/00000201]");
	CHECK_EQ(o.nrec, 2);
	CHECK_EQ(o.r.lines, 2);
	read_str(&o, "Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] a\n"
	             "Trace 0: 0x7f00 [00000480/0001");
	CHECK_EQ(o.nrec, 1);
	CHECK_EQ(o.nbad, 1);

	/* NUL bytes are ordinary bytes: a bad pc, a harmless symbol */
	read_all(&o, nul, sizeof nul - 1);
	CHECK_EQ(o.nrec, 2);
	CHECK_EQ(o.nbad, 1);
	CHECK_EQ(o.bad_line[0], 2);
	CHECK_EQ(o.rec[1].addr, 0x10008);

	/* a line longer than the buffer: one bad line, the next one fine, at
	 * every length around the limit */
	for (size_t len = QEMU_LOG_LINE_MAX - 2; len <= QEMU_LOG_LINE_MAX + 2; len++) {
		static const char tail[] = "\nTrace 0: 0x7f00 [00000480/00010000/00000000/00000201]\n";
		static const char head[] = "Trace 0: 0x7f00 [00000480/00010000/00000000/00000201] ";
		memset(big, 'A', len);
		memcpy(big, head, sizeof head - 1);
		memcpy(big + len, tail, sizeof tail - 1);
		n = len + sizeof tail - 1;
		read_all(&o, big, n);
		CHECK_EQ(o.nrec, len <= QEMU_LOG_LINE_MAX ? 2 : 1);
		CHECK_EQ(o.nbad, len <= QEMU_LOG_LINE_MAX ? 0 : 1);
		CHECK_EQ(o.r.lines, 2);
	}

	/* nothing at all */
	read_all(&o, "", 0);
	CHECK_EQ(o.nrec, 0);
	CHECK_EQ(o.r.lines, 0);
	read_all(&o, NULL, 5);
	CHECK_EQ(o.r.lines, 0);
	read_str(&o, "\n\n");
	CHECK_EQ(o.nbad, 2);
}

/* Every prefix of a log: the records are a prefix of the full log's, the
 * cut line is at worst one bad line. One exception: cut before the end of
 * the "Stopped execution" line (3), the Trace line before it (2) stands. */
static void test_truncations(void)
{
	static const char text[] =
		"Trace 0: 0x7f3e594a4500 [00000480/000103b4/00000000/00000201] main\n"
		"Trace 0: 0x7f3e594a4600 [00800480/000103b8/00000000/00000201] main\n"
		"Stopped execution of TB chain before 0x7f3e594a4600 [000103b8] main\n"
		"Trace 0: 0x7f3e594a4700 [0c800480/00010504/00000000/00000201] h\n"
		"Trace 0: 0x7f3e594a4800 [00000480/00010508/00000000/00000201]\n";
	struct outcome full, o;

	read_str(&full, text);
	CHECK_EQ(full.nrec, 3);
	for (size_t len = 0; len <= sizeof text - 1; len++) {
		read_all(&o, text, len);
		CHECK(o.nrec <= full.nrec);
		CHECK(o.nbad <= 1);
		for (size_t i = 0; i < o.nrec && i < full.nrec; i++) {
			if (i == o.nrec - 1 && o.rec[i].line == 2) {
				CHECK_EQ(o.rec[i].addr, 0x103b8);
				CHECK(len < (size_t)(strstr(text, "main\nTrace 0: 0x7f3e594a4700") - text) + 4);
				break;
			}
			CHECK_EQ(o.rec[i].addr, full.rec[i].addr);
			CHECK_EQ(o.rec[i].isa, full.rec[i].isa);
			CHECK_EQ(o.rec[i].itstate, full.rec[i].itstate);
			CHECK_EQ(o.rec[i].line, full.rec[i].line);
		}
	}
}

static uint64_t rng_state;
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Lines counted independently of the reader. */
static uint64_t count_lines(const char *text, size_t len)
{
	uint64_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	return n + (len > 0 && text[len - 1] != '\n');
}

/* Random bytes drawn mostly from the log's own alphabet, and random edits
 * of a good log: the reader ends, counts every line once, and returns
 * only records that make sense. */
static void test_random(void)
{
	static const char alphabet[] = "Trace 0: 0x7f [00800480/0001000c/00000000/00000201]\n"
	                               "Stopped execution of TB chain before \r\0\377";
	static const char good[] =
		"Trace 0: 0x7f3e594a4500 [00000480/000103b4/00000000/00000201] main\n"
		"Trace 0: 0x7f3e594a4600 [00800480/000103b8/00000000/00000201] main\n"
		"Stopped execution of TB chain before 0x7f3e594a4600 [000103b8] main\n"
		"Trace 0: 0x7f3e594a4700 [0c800480/00010504/00000000/00000201] h\n";
	char buf[1200];
	struct outcome o;
	unsigned bad_records = 0, records = 0;

	rng_state = 0x9E3779B97F4A7C15ull;
	for (int iter = 0; iter < 3000; iter++) {
		size_t len;
		if (iter & 1) {
			len = rnd() % sizeof buf;
			for (size_t i = 0; i < len; i++)
				buf[i] = (rnd() & 7) ? alphabet[rnd() % (sizeof alphabet - 1)] : (char)rnd();
		} else {
			len = sizeof good - 1;
			memcpy(buf, good, len);
			for (unsigned e = 1 + rnd() % 4; e > 0; e--) {
				size_t at = rnd() % len;
				switch (rnd() % 3) {
				case 0: buf[at] = alphabet[rnd() % (sizeof alphabet - 1)]; break;
				case 1: memmove(buf + at, buf + at + 1, len - at - 1); len--; break;
				default:
					if (len < sizeof buf) {
						memmove(buf + at + 1, buf + at, len - at);
						buf[at] = alphabet[rnd() % (sizeof alphabet - 1)];
						len++;
					}
				}
			}
		}
		read_all(&o, buf, len);
		CHECK_EQ(o.r.lines, count_lines(buf, len));
		for (size_t i = 0; i < o.nrec; i++) {
			const struct qemu_log_insn *in = &o.rec[i];
			records++;
			if (!(in->isa == CSD_ISA_ARM ? (in->addr & 3) == 0 && in->itstate == 0
			                             : in->isa == CSD_ISA_THUMB && (in->addr & 1) == 0) ||
			    in->line < 1 || in->line > o.r.lines || (i > 0 && in->line <= o.rec[i - 1].line))
				bad_records++;
		}
	}
	CHECK_EQ(bad_records, 0);
	CHECK(records > 1000);
}

/* A big log through a FILE: lines of every length cross the chunk
 * boundaries; expected values come from the generator. */
static void test_file(void)
{
	FILE *f = tmpfile();
	struct qemu_log_reader *r = malloc(sizeof *r);
	struct qemu_log_insn in;
	uint64_t want_sum = 0, got_sum = 0, want_recs = 0, want_bad = 0, want_lines = 0, line = 0;
	uint64_t wrong_line = 0, bad_seen = 0;
	int rc;

	CHECK(f != NULL && r != NULL);
	if (!f || !r) {
		free(r);
		return;
	}
	for (uint32_t i = 0; i < 150000; i++) {
		uint32_t pc = 0x10000 + 4 * (i % 5000);
		int thumb = (i % 3) == 0;
		int symlen = (int)(i % 97);
		if (thumb)
			pc += 2 * (i & 1);
		fprintf(f, "Trace 0: 0x7f%08x [%08x/%08x/00000000/00000201] %.*s\n", i,
		        thumb ? 0x00800480u : 0x480u, pc, symlen,
		        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		line++;
		if (i % 1000 == 999) {
			/* cancel this one */
			fprintf(f, "Stopped execution of TB chain before 0x7f%08x [%08x] x\n", i, pc);
			line++;
		} else {
			want_recs++;
			want_sum += (uint64_t)pc * (thumb ? 3 : 1) + line;
		}
		if (i % 4999 == 0) {
			fprintf(f, "junk line %u\n", i);
			want_bad++;
			line++;
		}
	}
	want_lines = line;
	rewind(f);
	qemu_log_reader_init_file(r, f);
	while ((rc = qemu_log_next(r, &in)) != QEMU_LOG_END) {
		if (rc == QEMU_LOG_INSN) {
			got_sum += (uint64_t)in.addr * (in.isa == CSD_ISA_THUMB ? 3 : 1) + in.line;
		} else if (rc == QEMU_LOG_BAD_LINE) {
			bad_seen++;
			if (r->bad_line > want_lines)
				wrong_line++;
		} else {
			CHECK(!"read error");
			break;
		}
	}
	CHECK_EQ(r->insns, want_recs);
	CHECK_EQ(got_sum, want_sum);
	CHECK_EQ(bad_seen, want_bad);
	CHECK_EQ(r->lines, want_lines);
	CHECK_EQ(r->cancelled, 150);
	CHECK_EQ(wrong_line, 0);
	fclose(f);
	free(r);
}

/* --- real runs --- */

static char tmpdir[] = "/tmp/csdec-qlog-XXXXXX";

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[3000];
	snprintf(cmd, sizeof cmd, fmt, a, b);
	return system(cmd);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		*len = fread(buf, 1, (size_t)n, f);
		buf[*len] = 0;
	}
	fclose(f);
	return buf;
}

/* qemu-arm in an empty environment, one instruction per block */
#define QEMU_RUN "cd %s && env -i \"$(command -v qemu-arm)\" -0 prog " \
	"$(qemu-arm -h | grep -q one-insn-per-tb && echo -one-insn-per-tb || echo -singlestep) " \
	"-d exec,nochain -D run.log ./%s > run.out"

/* Straight-line code plus one loop: after the first instruction, the
 * second and third run three times, then the rest once each in listing
 * order. Thumb part reached by BX, with an IT block; two system calls. */
static const char tiny_asm[] =
	"	.syntax unified\n"
	"	.text\n"
	"	.arm\n"
	"	.global _start\n"
	"_start:\n"
	"	mov	r0, #3\n"
	"1:	subs	r0, r0, #1\n"
	"	bne	1b\n"
	"	mov	r0, #1\n"
	"	adr	r1, msg\n"
	"	mov	r2, #3\n"
	"	mov	r7, #4\n"          /* write(1, msg, 3) */
	"	svc	#0\n"
	"	adr	r3, thumb_part + 1\n"
	"	bx	r3\n"
	"	.thumb\n"
	"	.thumb_func\n"
	"thumb_part:\n"
	"	movs	r0, #0\n"
	"	cmp	r0, #0\n"
	"	ite	eq\n"
	"	moveq	r0, #0\n"
	"	movne	r0, #1\n"
	"	movs	r7, #1\n"          /* exit(0) */
	"	svc	#0\n"
	"	.arm\n"
	"msg:	.ascii	\"ok\\n\"\n";

struct listed {
	uint32_t addr;
	int isa;
	uint32_t opcode;
};

/* Instructions of an objdump -d listing, in order: "addr:\tHEX\tmnemonic";
 * 8 hex digits are an ARM word, 4 or 4+4 a Thumb instruction; data
 * (.word, .short, ...) is skipped. */
static size_t parse_listing(char *text, struct listed *out, size_t cap)
{
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *colon, *hex, *mn, *end;
		unsigned long addr = strtoul(line, &colon, 16);
		size_t digits = 0;
		uint32_t op = 0;

		if (colon == line || colon[0] != ':' || colon[1] != '\t')
			continue;
		hex = colon + 2;
		mn = strchr(hex, '\t');
		if (!mn || mn[1] == '.')
			continue;
		for (end = hex; end < mn; end++) {
			if (*end == ' ')
				continue;
			if (hex_value(*end) < 0)
				break;
			op = op << 4 | (uint32_t)hex_value(*end);
			digits++;
		}
		if (end != mn || n == cap || (digits != 4 && digits != 8))
			continue;
		out[n].addr = (uint32_t)addr;
		out[n].opcode = op;
		/* "xxxxxxxx" is an ARM word, "xxxx xxxx" two Thumb halfwords */
		out[n].isa = digits == 8 && hex[4] != ' ' ? CSD_ISA_ARM : CSD_ISA_THUMB;
		n++;
	}
	return n;
}

static void test_tiny_program(void)
{
	char path[200], *listing, *log, *out;
	struct listed l[32];
	struct listed want[40];
	size_t nl, nwant = 0, len, out_len;
	struct outcome o;

	snprintf(path, sizeof path, "%s/prog.S", tmpdir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(tiny_asm, f);
	fclose(f);
	CHECK_EQ(run("cd %s && arm-linux-gnueabihf-gcc -nostdlib -static -Wl,-Ttext=0x10000 "
	             "-Wl,--build-id=none -o prog prog.S && arm-linux-gnueabihf-objdump -d prog > %s",
	             tmpdir, "listing"), 0);
	CHECK_EQ(run(QEMU_RUN, tmpdir, "prog"), 0);

	snprintf(path, sizeof path, "%s/listing", tmpdir);
	listing = slurp(path, &len);
	CHECK(listing != NULL);
	if (!listing)
		return;
	nl = parse_listing(listing, l, 32);
	free(listing);
	CHECK_EQ(nl, 17);            /* 10 ARM + 7 Thumb instructions */
	if (nl != 17)
		return;
	CHECK_EQ(l[0].addr, 0x10000);
	CHECK_EQ(l[9].isa, CSD_ISA_ARM);
	CHECK_EQ(l[10].isa, CSD_ISA_THUMB);
	want[nwant++] = l[0];
	for (int i = 0; i < 3; i++) {
		want[nwant++] = l[1];
		want[nwant++] = l[2];
	}
	for (size_t i = 3; i < nl; i++)
		want[nwant++] = l[i];

	snprintf(path, sizeof path, "%s/run.log", tmpdir);
	log = slurp(path, &len);
	CHECK(log != NULL);
	if (!log)
		return;
	read_all(&o, log, len);
	free(log);
	CHECK_EQ(o.nbad, 0);
	CHECK_EQ(o.r.cancelled, 0);
	CHECK_EQ(o.nrec, nwant);
	for (size_t i = 0; i < o.nrec && i < nwant; i++) {
		/* the IT instruction (l[12]) sets ITSTATE to its low byte for the
		 * next instruction, which advances it for the one after */
		uint8_t it = (uint8_t)l[12].opcode;
		uint8_t want_it = want[i].addr == l[13].addr ? it
		                : want[i].addr == l[14].addr ? (uint8_t)((it & 0xE0) | ((it << 1) & 0x1F)) : 0;
		CHECK_EQ(o.rec[i].addr, want[i].addr);
		CHECK_EQ(o.rec[i].isa, want[i].isa);
		CHECK_EQ(o.rec[i].itstate, want_it);
		CHECK_EQ(o.rec[i].line, i + 1);
	}
	snprintf(path, sizeof path, "%s/run.out", tmpdir);
	out = slurp(path, &out_len);
	CHECK(out != NULL && strcmp(out, "ok\n") == 0);
	free(out);
	printf("  tiny program: %zu executed instructions as the listing says\n", o.nrec);
}

/* --- ELF mapping symbols: $a ARM, $t Thumb, $d data */

struct mapsym {
	uint32_t addr;
	char kind;
};

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static int cmp_map(const void *a, const void *b)
{
	const struct mapsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Mapping symbols of an ELF32 file, sorted by address; count in *n. */
static struct mapsym *mapping_symbols(const uint8_t *f, size_t len, size_t *n)
{
	struct mapsym *maps = NULL;
	uint32_t shoff, shnum;

	*n = 0;
	if (len < 52 || memcmp(f, "\177ELF\1\1", 6) != 0)
		return NULL;
	shoff = rd32(f + 32);
	shnum = rd16(f + 48);
	if (rd16(f + 46) != 40 || shoff + (uint64_t)shnum * 40 > len)
		return NULL;
	for (uint32_t i = 0; i < shnum; i++) {
		const uint8_t *sh = f + shoff + i * 40, *ls;
		uint32_t off = rd32(sh + 16), size = rd32(sh + 20), link = rd32(sh + 24), stroff, strsize;
		if (rd32(sh + 4) != 2 || link >= shnum || off + (uint64_t)size > len)
			continue;   /* SHT_SYMTAB only */
		ls = f + shoff + link * 40;
		stroff = rd32(ls + 16);
		strsize = rd32(ls + 20);
		if (stroff + (uint64_t)strsize > len)
			continue;
		maps = malloc((size / 16 + 1) * sizeof *maps);
		if (!maps)
			return NULL;
		for (uint32_t s = 0; s < size / 16; s++) {
			const uint8_t *sym = f + off + s * 16;
			uint32_t nm = rd32(sym);
			const char *name = (const char *)f + stroff + nm;
			if (nm + 3 <= strsize && name[0] == '$' && strchr("atd", name[1]) && name[1] &&
			    (name[2] == 0 || name[2] == '.')) {
				maps[*n].addr = rd32(sym + 4);
				maps[*n].kind = name[1];
				(*n)++;
			}
		}
		break;
	}
	if (maps)
		qsort(maps, *n, sizeof *maps, cmp_map);
	return maps;
}

/* Kind of the mapping symbol in force at addr: the last one at or below. */
static char mapping_at(const struct mapsym *maps, size_t n, uint32_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? maps[lo - 1].kind : 0;
}

/* A C program with ARM and Thumb functions, linker veneers and Thumb libc:
 * every record's instruction set is what the linker's mapping symbols
 * say, and every record follows from the one before: the next address
 * after an instruction that cannot branch, the target or the next
 * address after a direct branch, anything after an indirect one. */
static void test_c_program(void)
{
	char path[200], src[1100], cwd[1024];
	uint8_t *elf;
	size_t elf_len, nmaps = 0, pairs = 0, isa_wrong = 0, flow_wrong = 0, unreadable = 0;
	struct mapsym *maps;
	csd_image *img;
	struct qemu_log_reader *r = malloc(sizeof *r);
	struct qemu_log_insn in, prev = { 0 };
	struct csdi_insn prev_insn = { 0 };
	uint64_t isa_switches = 0;
	FILE *f;
	int rc, have_prev = 0;

	CHECK(r != NULL && getcwd(cwd, sizeof cwd) != NULL);
	if (!r || !getcwd(cwd, sizeof cwd)) {
		free(r);
		return;
	}
	/* make test runs from the top of the tree */
	snprintf(src, sizeof src, "%s/tests/programs/interwork.c", cwd);
	CHECK_EQ(run("cd %s && arm-linux-gnueabihf-gcc -static -marm -O2 -o cprog %s", tmpdir, src), 0);
	CHECK_EQ(run(QEMU_RUN, tmpdir, "cprog"), 0);

	snprintf(path, sizeof path, "%s/cprog", tmpdir);
	elf = (uint8_t *)slurp(path, &elf_len);
	maps = elf ? mapping_symbols(elf, elf_len, &nmaps) : NULL;
	CHECK(maps != NULL && nmaps > 100);
	img = csd_image_new();
	CHECK(img != NULL && csd_image_add_elf(img, path, 0) > 0);

	snprintf(path, sizeof path, "%s/run.log", tmpdir);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f || !maps || !img)
		goto out;
	qemu_log_reader_init_file(r, f);
	while ((rc = qemu_log_next(r, &in)) == QEMU_LOG_INSN) {
		struct csdi_insn insn;
		uint8_t code[4];
		char kind = mapping_at(maps, nmaps, in.addr);
		int n = csd_image_read(img, in.addr, code, sizeof code);

		if (kind != (in.isa == CSD_ISA_ARM ? 'a' : 't')) {
			if (isa_wrong++ < 5)
				fprintf(stderr, "  line %llu: %08x logged %s, mapping symbol $%c\n",
				        (unsigned long long)in.line, in.addr, csd_isa_name(in.isa), kind);
		}
		if (n <= 0 || csdi_isa_decode(in.addr, code, (size_t)n, in.isa, &insn) <= 0) {
			unreadable++;
			have_prev = 0;
			continue;
		}
		if (have_prev) {
			uint32_t next = prev.addr + prev_insn.size;
			int ok;
			pairs++;
			isa_switches += in.isa != prev.isa;
			if (prev_insn.cls == CSDI_INSN_INDIRECT)
				ok = 1;
			else if (prev_insn.cls == CSDI_INSN_DIRECT)
				ok = (in.addr == next && in.isa == prev.isa) ||
				     (in.addr == prev_insn.target && in.isa == prev_insn.target_isa);
			else    /* including SVC: no signals in this program */
				ok = in.addr == next && in.isa == prev.isa;
			if (!ok && flow_wrong++ < 5)
				fprintf(stderr, "  line %llu: %08x does not follow %08x\n",
				        (unsigned long long)in.line, in.addr, prev.addr);
		}
		prev = in;
		prev_insn = insn;
		have_prev = 1;
	}
	CHECK_EQ(rc, QEMU_LOG_END);
	CHECK_EQ(r->bad_lines, 0);
	CHECK_EQ(r->cancelled, 0);
	CHECK_EQ(isa_wrong, 0);
	CHECK_EQ(flow_wrong, 0);
	CHECK_EQ(unreadable, 0);
	CHECK(pairs > 10000);
	CHECK(isa_switches > 50);
	/* the last instruction is the exit_group system call */
	CHECK(have_prev && (prev_insn.flags & CSDI_INSNF_EXCEPTION));
	printf("  C program: %zu consecutive pairs follow each other, %llu ISA switches, "
	       "ISA equal to the mapping symbols\n", pairs, (unsigned long long)isa_switches);
out:
	if (f)
		fclose(f);
	csd_image_free(img);
	free(maps);
	free(elf);
	free(r);
}

static void test_real_runs(void)
{
	static const char *const files[] = { "prog.S", "prog", "listing", "run.log", "run.out", "cprog" };
	char path[200];

	if (!mkdtemp(tmpdir)) {
		CHECK(!"cannot make a temporary directory");
		return;
	}
	test_tiny_program();
	test_c_program();
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
		remove(path);
	}
	rmdir(tmpdir);
}

int main(void)
{
	test_fields();
	test_cancelled();
	test_bad_lines();
	test_line_ends();
	test_truncations();
	test_random();
	test_file();
	test_real_runs();
	return check_done("test_qemu_log");
}
