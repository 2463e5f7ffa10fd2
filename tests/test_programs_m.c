/*
 * The Cortex-M test program's recorded run has the shape the trace
 * generator relies on (docs/cortex-m.md): build/programs-m/cm3demo.log from
 * tests/programs-m.mk, which `make test` builds first (so missing tools
 * fail the run).
 *
 * Three sources are compared, each derived on its own:
 *   - the vector table in the ELF (handler address of each exception),
 *   - qemu's exception lines (`-d int`: which exception it took, returned
 *     from, tail-chained),
 *   - the program's own counts, printed through semihosting (.out).
 * cm3demo never calls or branches to a handler's first instruction, so
 * every execution of one is an exception entry.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec.h"

#define NUM_VECTORS   64
#define MAX_INSNS     50000   /* the run is meant to stay below this */
#define EXC_SVC       11
#define EXC_PENDSV    14
#define EXC_SYSTICK   15
#define EXC_SOFT_IRQ  56      /* external interrupt 40 */
#define SEMIHOST_EXIT 0x18

/* One executed instruction: its PC and the first bracketed field of its
 * Trace line (bit 0: Handler mode; bits 31:24: IT state). */
struct insn {
	uint32_t pc;
	uint32_t tbflags;
};

/* What the program printed: "cm3demo systick=... svc=... ...". */
struct counts {
	unsigned systick, svc, pendsv, irq, nested;
};

struct run {
	struct insn *insn;
	size_t n;
	unsigned stated_entry[NUM_VECTORS];   /* "...taking pending ... exception N" */
	unsigned stated_return[NUM_VECTORS];  /* "Exception return: ... previous exception N" */
	unsigned inferred_entry[NUM_VECTORS]; /* executions of a handler's first instruction */
	unsigned tail_chains;
	unsigned preempting_systick;          /* SysTick entries from Handler mode, not tail-chained */
	unsigned it_insns;                    /* instructions inside IT blocks */
	unsigned stopped, rewound, semihost_calls;
	unsigned unknown_lines;
	uint32_t last_semihost_op;
	int last_line_semihost;               /* the log ends with a semihosting call */
	uint32_t reset_sp, reset_pc;          /* "Loaded reset SP .. PC .." (the last one) */
	unsigned resets;
};

static const char *programs_dir(void)
{
	const char *d = getenv("CSD_PROGRAMS_M");
	if (!d || !*d) {
		fprintf(stderr, "CSD_PROGRAMS_M is not set (run through make test)\n");
		exit(1);
	}
	return d;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int read_counts(const char *path, struct counts *c)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	unsigned acc;
	int got = fscanf(f, "cm3demo systick=%8x svc=%8x pendsv=%8x irq=%8x nested=%8x acc=%8x",
			 &c->systick, &c->svc, &c->pendsv, &c->irq, &c->nested, &acc);
	fclose(f);
	return got == 6 ? 0 : -1;
}

/* Handler addresses (Thumb bit cleared) from the ELF's vector table at 0;
 * vec[1] keeps its Thumb bit for the check that it has one. */
static int read_vectors(const char *elf, uint32_t vec[NUM_VECTORS])
{
	csd_image *img = csd_image_new();
	uint8_t raw[NUM_VECTORS * 4];
	int ok = img && csd_image_add_elf(img, elf, 0) > 0 &&
		 csd_image_read(img, 0, raw, sizeof(raw)) == (int)sizeof(raw);
	csd_image_free(img);
	if (!ok)
		return -1;
	for (unsigned i = 0; i < NUM_VECTORS; i++)
		vec[i] = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
			 (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
	return 0;
}

static int opcode_at(const char *elf, uint32_t addr, uint16_t *op)
{
	csd_image *img = csd_image_new();
	uint8_t b[2];
	int ok = img && csd_image_add_elf(img, elf, 0) > 0 && csd_image_read(img, addr, b, 2) == 2;
	csd_image_free(img);
	if (ok)
		*op = (uint16_t)(b[0] | b[1] << 8);
	return ok ? 0 : -1;
}

/* The exception whose handler starts at pc, among those cm3demo uses. */
static int handler_of(const uint32_t vec[NUM_VECTORS], uint32_t pc)
{
	static const int used[] = { EXC_SVC, EXC_PENDSV, EXC_SYSTICK, EXC_SOFT_IRQ };
	for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
		if ((vec[used[i]] & ~1u) == pc)
			return used[i];
	return -1;
}

/* Parse the log into r. Returns -1 when it does not have qemu 7.2's shape
 * (the reason is printed). */
static int read_log(const char *path, const uint32_t vec[NUM_VECTORS], struct run *r)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	r->insn = calloc(MAX_INSNS + 1, sizeof(*r->insn));
	if (!r->insn) {
		fclose(f);
		return -1;
	}
	char line[512];
	unsigned lineno = 0;
	int prev_trace = 0;        /* the previous line was a Trace line */
	int pending = -1;          /* stated exception whose handler runs next */
	int pending_tail = 0;      /* ... reached by tail chaining */
	int bad = 0;
	while (!bad && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "%s:%u: line too long\n", path, lineno);
			bad = 1;
			break;
		}
		int is_trace = 0;
		unsigned cpu, cs, pc, fl, cf, v, n;
		r->last_line_semihost = 0;
		if (starts(line, "Trace ")) {
			if (sscanf(line, "Trace %u: %*s [%8x/%8x/%8x/%8x]", &cpu, &cs, &pc, &fl, &cf) != 5) {
				fprintf(stderr, "%s:%u: bad Trace line\n", path, lineno);
				bad = 1;
				break;
			}
			if (r->n == MAX_INSNS) {
				fprintf(stderr, "%s: more than %d instructions\n", path, MAX_INSNS);
				bad = 1;
				break;
			}
			r->insn[r->n].pc = pc;
			r->insn[r->n].tbflags = cs;
			r->n++;
			is_trace = 1;
		} else if (sscanf(line, "Stopped execution of TB chain before %*s [%8x]", &pc) == 1 ||
			   sscanf(line, "cpu_io_recompile: rewound execution of TB to %8x", &pc) == 1) {
			/* The instruction just logged did not run: an interrupt
			 * came first, or it is re-run as the last of its block. */
			if (!prev_trace || r->insn[r->n - 1].pc != pc) {
				fprintf(stderr, "%s:%u: does not follow the Trace line of %08x\n", path, lineno, pc);
				bad = 1;
				break;
			}
			r->n--;
			if (line[0] == 'S')
				r->stopped++;
			else
				r->rewound++;
		} else if (sscanf(line, "...taking pending nonsecure exception %u", &n) == 1) {
			if (n >= NUM_VECTORS) {
				fprintf(stderr, "%s:%u: exception %u outside the vector table\n", path, lineno, n);
				bad = 1;
				break;
			}
			pending = (int)n;
		} else if (starts(line, "...tailchaining to pending exception")) {
			pending_tail = 1;
		} else if (sscanf(line, "Exception return: magic PC %8x previous exception %u", &v, &n) == 2) {
			if (n < NUM_VECTORS)
				r->stated_return[n]++;
		} else if (sscanf(line, "...handling as semihosting call 0x%x", &v) == 1) {
			r->semihost_calls++;
			r->last_semihost_op = v;
			r->last_line_semihost = 1;
		} else if (sscanf(line, "Loaded reset SP 0x%x PC 0x%x from vector table", &v, &n) == 2) {
			/* Logged at each reset, the first before -kernel's image
			 * is in place; instructions come after the last one. */
			if (r->n) {
				fprintf(stderr, "%s:%u: reset after the first instruction\n", path, lineno);
				bad = 1;
				break;
			}
			r->resets++;
			r->reset_sp = v;
			r->reset_pc = n;
		} else if (starts(line, "Taking exception ") || starts(line, "...loading from element ") ||
			   starts(line, "...loaded new PC ") || starts(line, "...successful exception return")) {
			/* restated by the lines above or by the next Trace line */
		} else {
			if (r->unknown_lines++ < 5)
				fprintf(stderr, "%s:%u: unknown line: %s", path, lineno, line);
		}
		prev_trace = is_trace;
		if (!is_trace)
			continue;

		/* A Trace line that may be a handler's first instruction. */
		const struct insn *in = &r->insn[r->n - 1];
		const struct insn *before = r->n > 1 ? &r->insn[r->n - 2] : NULL;
		if (pending >= 0) {
			CHECK_EQ(in->pc, vec[pending] & ~1u);
			CHECK_EQ(in->tbflags & 1, 1);
			r->stated_entry[pending]++;
			if (pending_tail)
				r->tail_chains++;
			else if (pending == EXC_SYSTICK && before && (before->tbflags & 1))
				r->preempting_systick++;
			pending = -1;
			pending_tail = 0;
		}
		int h = handler_of(vec, in->pc);
		if (h >= 0)
			r->inferred_entry[h]++;
		if (in->tbflags >> 24)
			r->it_insns++;
	}
	fclose(f);
	return bad ? -1 : 0;
}

int main(void)
{
	const char *dir = programs_dir();
	char elf[1024], log[1024], out[1024];
	snprintf(elf, sizeof(elf), "%s/cm3demo.elf", dir);
	snprintf(log, sizeof(log), "%s/cm3demo.log", dir);
	snprintf(out, sizeof(out), "%s/cm3demo.out", dir);

	uint32_t vec[NUM_VECTORS];
	struct counts c;
	struct run r;
	memset(&r, 0, sizeof(r));
	CHECK_EQ(read_vectors(elf, vec), 0);
	CHECK_EQ(read_counts(out, &c), 0);
	if (check_failures)
		return check_done("test_programs_m");
	CHECK_EQ(read_log(log, vec, &r), 0);
	CHECK_EQ(r.unknown_lines, 0);
	if (check_failures) {
		free(r.insn);
		return check_done("test_programs_m");
	}

	/* Starts at the reset handler, in Thread mode, in Thumb state, with
	 * the SP and PC qemu says it loaded from the vector table. */
	CHECK(r.resets > 0);
	CHECK_EQ(r.reset_sp, vec[0]);
	CHECK_EQ(r.reset_pc, vec[1]);
	CHECK(r.n > 0);
	if (r.n == 0) {
		free(r.insn);
		return check_done("test_programs_m");
	}
	CHECK_EQ(vec[1] & 1, 1);
	CHECK_EQ(r.insn[0].pc, vec[1] & ~1u);
	CHECK_EQ(r.insn[0].tbflags & 1, 0);

	/* Every exception the program counted, qemu stated, and the vector
	 * table places at the instruction that ran next. */
	const struct { int exc; unsigned counted; } seen[] = {
		{ EXC_SYSTICK, c.systick }, { EXC_SVC, c.svc },
		{ EXC_PENDSV, c.pendsv }, { EXC_SOFT_IRQ, c.irq },
	};
	unsigned stated_total = 0, returns_total = 0;
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		int e = seen[i].exc;
		CHECK_EQ(r.stated_entry[e], seen[i].counted);
		CHECK_EQ(r.inferred_entry[e], r.stated_entry[e]);
		/* All of them returned: the program ends in Thread mode. */
		CHECK_EQ(r.stated_return[e], r.stated_entry[e]);
	}
	for (unsigned e = 0; e < NUM_VECTORS; e++) {
		stated_total += r.stated_entry[e];
		returns_total += r.stated_return[e];
	}
	CHECK_EQ(stated_total, c.systick + c.svc + c.pendsv + c.irq);
	CHECK_EQ(returns_total, stated_total);

	/* The run has the variety it was written for: a few dozen SysTicks,
	 * some of them preempting another handler (as many as the program saw
	 * through ICSR.RETTOBASE), PendSV tail-chained, IT blocks. */
	CHECK(c.systick >= 24);
	CHECK(c.svc > 0 && c.pendsv > 0 && c.irq > 0);
	CHECK(c.nested > 0);
	CHECK_EQ(r.preempting_systick, c.nested);
	CHECK(r.tail_chains > 0);
	CHECK(r.it_insns > 0);
	/* Interrupts show up as logged-but-not-run instructions. */
	CHECK(r.stopped > 0);

	/* Ends with the semihosting exit: the last instruction is BKPT 0xAB and
	 * qemu's last line handles SYS_EXIT. */
	uint16_t op = 0;
	CHECK_EQ(opcode_at(elf, r.insn[r.n - 1].pc, &op), 0);
	CHECK_EQ(op, 0xBEAB);
	CHECK(r.last_line_semihost);
	CHECK_EQ(r.last_semihost_op, SEMIHOST_EXIT);
	CHECK(r.semihost_calls >= 2);   /* the summary line, then the exit */

	printf("cm3demo: %zu instructions, %u exception entries (%u tail-chained), "
	       "%u logged-not-run (%u interrupted, %u I/O re-run)\n",
	       r.n, stated_total, r.tail_chains, r.stopped + r.rewound, r.stopped, r.rewound);
	free(r.insn);
	return check_done("test_programs_m");
}
