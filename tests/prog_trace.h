/*
 * prog_trace.h - a real program with a known execution, for the tests of
 * csdec's listing, coverage and profile (header-only).
 *
 * PROG_SOURCE is cross-compiled with debug info (arm-linux-gnueabihf-gcc
 * -g, Thumb with one A32 function, freestanding) and run under qemu-arm,
 * whose exec log (one line per instruction with -singlestep) is the ground
 * truth: which instructions ran, how often, and in which order. The
 * library's trace generator turns that run into PTM trace; the tests feed
 * the trace to the tool and compare its output with what the log and
 * binutils (objdump, addr2line) say. Nothing here uses the tool's own ELF
 * or DWARF readers.
 */
#ifndef CSD_TEST_PROG_TRACE_H
#define CSD_TEST_PROG_TRACE_H

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csdec.h"
#include "gen.h"

/* Small on purpose: every function, branch and line is checked. */
static const char PROG_SOURCE[] =
	"/* csdec test program */\n"
	"static volatile int sink;\n"
	"\n"
	"__attribute__((noinline)) static int square(int x)\n"
	"{\n"
	"\treturn x * x;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int collatz_steps(int n)\n"
	"{\n"
	"\tint steps = 0;\n"
	"\twhile (n != 1) {\n"
	"\t\tif (n & 1)\n"
	"\t\t\tn = 3 * n + 1;\n"
	"\t\telse\n"
	"\t\t\tn /= 2;\n"
	"\t\tsteps++;\n"
	"\t}\n"
	"\treturn steps;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int fib(int n)\n"
	"{\n"
	"\tif (n < 2)\n"
	"\t\treturn n;\n"
	"\treturn fib(n - 1) + fib(n - 2);\n"
	"}\n"
	"\n"
	"__attribute__((noinline, target(\"arm\"))) static int arm_mix(int a, int b)\n"
	"{\n"
	"\treturn (a << 3) ^ (b >> 1);\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int never_called(int x)\n"
	"{\n"
	"\treturn x + 41;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int clamp(int x)\n"
	"{\n"
	"\tif (x == 12345678)\n"
	"\t\treturn never_called(x);\n"
	"\treturn x;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int op(int k, int v)\n"
	"{\n"
	"\tswitch (k) {\n"
	"\tcase 0: return v + 3;\n"
	"\tcase 1: return v * 5;\n"
	"\tcase 2: return v - 7;\n"
	"\tcase 3: return v ^ 0x55;\n"
	"\tcase 4: return v >> 2;\n"
	"\tcase 5: return v | 0x100;\n"
	"\tdefault: return v;\n"
	"\t}\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) static int getpid_syscall(void)\n"
	"{\n"
	"\tregister int r0 __asm__(\"r0\");\n"
	"\tregister int r7 __asm__(\"r7\") = 20;\n"
	"\t__asm__ volatile(\"svc 0\" : \"=r\"(r0) : \"r\"(r7) : \"memory\");\n"
	"\treturn r0;\n"
	"}\n"
	"\n"
	"int main(void)\n"
	"{\n"
	"\tint acc = 0;\n"
	"\tfor (int i = 1; i < 12; i++) {\n"
	"\t\tacc += collatz_steps(i);\n"
	"\t\tif (i % 4 == 0)\n"
	"\t\t\tacc += square(i);\n"
	"\t\tacc = arm_mix(acc, i);\n"
	"\t\tacc = op(i % 7, acc);\n"
	"\t}\n"
	"\tacc += fib(7);\n"
	"\tacc += getpid_syscall() != 0;\n"
	"\tsink = clamp(acc);\n"
	"\treturn acc & 0x7f;\n"
	"}\n"
	"\n"
	"void _start(void) __attribute__((noreturn));\n"
	"void _start(void)\n"
	"{\n"
	"\tregister int r0 __asm__(\"r0\") = main();\n"
	"\tregister int r7 __asm__(\"r7\") = 1;\n"
	"\t__asm__ volatile(\"svc 0\" : : \"r\"(r0), \"r\"(r7));\n"
	"\tfor (;;)\n"
	"\t\t;\n"
	"}\n";

/* The trace the tests decode: PTM, cycle-accurate, timestamps. */
#define PROG_ETMCR 0x10001000u
#define PROG_DECODE_ARGS "--protocol ptm --reg ETMCR=0x10001000 --reg ETMCCER=0x34C01AC2 --reg ETMIDR=0x411CF312"

/* One instruction of the program as objdump lists it. */
struct prog_insn {
	uint32_t addr;
	uint8_t size;
	char mnemonic[16];
	char func[64];         /* the symbol objdump lists it under */
	char file[256];        /* addr2line */
	unsigned line;
	uint64_t count;        /* executions in the qemu run */
	uint64_t taken;        /* of them, followed by something other than addr + size */
	int outside;           /* not inside any function's symbol size (alignment padding) */
};

struct prog_run {
	char dir[64];          /* temporary directory with everything below */
	char elf[128], trace[128];
	uint32_t *pc;          /* executed instructions in order (qemu) */
	uint8_t *isa;
	size_t n;
	struct prog_insn *insn; /* every instruction of .text, by address */
	size_t ninsn;
	uint64_t gen_cycles;   /* cycles the generated trace reports */
	uint64_t gen_traced;
};

static inline int prog_sh(const char *cmd)
{
	int st = system(cmd);
	if (st != 0)
		fprintf(stderr, "prog_trace: command failed (%d): %s\n", st, cmd);
	return st == 0 ? 0 : -1;
}

/* Read qemu's exec log: "Trace 0: 0x... [flags2/pc/flags/cflags] name";
 * flags2 bit 23 is the Thumb state (qemu 7 TBFLAG_AM32_THUMB). */
static inline int prog_read_log(struct prog_run *pr, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t cap = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *b = strchr(line, '[');
		unsigned long f2, pc;
		if (strncmp(line, "Trace ", 6) != 0 || !b || sscanf(b, "[%lx/%lx/", &f2, &pc) != 2)
			continue;
		if (pr->n == cap) {
			cap = cap ? cap * 2 : 4096;
			pr->pc = realloc(pr->pc, cap * sizeof(*pr->pc));
			pr->isa = realloc(pr->isa, cap);
			if (!pr->pc || !pr->isa) {
				fclose(f);
				return -1;
			}
		}
		pr->pc[pr->n] = (uint32_t)pc;
		pr->isa[pr->n] = (f2 >> 23) & 1 ? CSD_ISA_THUMB : CSD_ISA_ARM;
		pr->n++;
	}
	fclose(f);
	return pr->n ? 0 : -1;
}

static inline int prog_cmp_insn(const void *a, const void *b)
{
	const struct prog_insn *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static inline struct prog_insn *prog_find(const struct prog_run *pr, uint32_t addr)
{
	struct prog_insn key;
	key.addr = addr;
	return bsearch(&key, pr->insn, pr->ninsn, sizeof(key), prog_cmp_insn);
}

/* objdump -d: "<hex addr> <name>:" starts a symbol; "  addr:\tbytes \tmnemonic\toperands"
 * is an instruction unless the mnemonic is a data directive (.word, .short, .byte). */
static inline int prog_read_objdump(struct prog_run *pr)
{
	char cmd[512], line[512], func[64] = "";
	size_t cap = 0;
	snprintf(cmd, sizeof(cmd), "arm-linux-gnueabihf-objdump -d -j .text %s", pr->elf);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		unsigned long a;
		char name[64];
		if (sscanf(line, "%lx <%63[^>]>:", &a, name) == 2) {
			snprintf(func, sizeof(func), "%s", name);
			continue;
		}
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t1 || !t2 || sscanf(line, " %lx:", &a) != 1)
			continue;
		/* the bytes column: "fb00 f000 " (T32 halfwords) or "e1a010c1 " (A32) */
		unsigned digits = 0;
		for (char *c = t1 + 1; c < t2; c++)
			digits += isxdigit((unsigned char)*c) != 0;
		char mn[16];
		if (sscanf(t2 + 1, "%15s", mn) != 1 || mn[0] == '.')
			continue;
		if (pr->ninsn == cap) {
			cap = cap ? cap * 2 : 256;
			pr->insn = realloc(pr->insn, cap * sizeof(*pr->insn));
			if (!pr->insn) {
				pclose(p);
				return -1;
			}
		}
		struct prog_insn *in = &pr->insn[pr->ninsn++];
		memset(in, 0, sizeof(*in));
		in->addr = (uint32_t)a;
		in->size = (uint8_t)(digits / 2);
		snprintf(in->mnemonic, sizeof(in->mnemonic), "%s", mn);
		snprintf(in->func, sizeof(in->func), "%s", func);
	}
	pclose(p);
	qsort(pr->insn, pr->ninsn, sizeof(*pr->insn), prog_cmp_insn);
	/* objdump puts padding after a function under its name; nm -S says where
	 * the functions really end. */
	snprintf(cmd, sizeof(cmd), "arm-linux-gnueabihf-nm -S --defined-only %s", pr->elf);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	for (size_t i = 0; i < pr->ninsn; i++)
		pr->insn[i].outside = 1;
	while (fgets(line, sizeof(line), p)) {
		unsigned long a, size;
		char type;
		if (sscanf(line, "%lx %lx %c", &a, &size, &type) != 3 || (type != 't' && type != 'T'))
			continue;
		a &= ~1ul;
		for (size_t i = 0; i < pr->ninsn; i++)
			if (pr->insn[i].addr >= a && pr->insn[i].addr < a + size)
				pr->insn[i].outside = 0;
	}
	pclose(p);
	return pr->ninsn ? 0 : -1;
}

/* addr2line for every instruction: "file:line" or "file:line (discriminator N)". */
static inline int prog_read_lines(struct prog_run *pr)
{
	char path[160], cmd[512], line[512];
	snprintf(path, sizeof(path), "%s/addrs.txt", pr->dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	for (size_t i = 0; i < pr->ninsn; i++)
		fprintf(f, "0x%x\n", pr->insn[i].addr);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "arm-linux-gnueabihf-addr2line -e %s < %s", pr->elf, path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t i = 0;
	while (i < pr->ninsn && fgets(line, sizeof(line), p)) {
		char *colon = strrchr(line, ':');
		char *disc = strstr(line, " (discriminator");
		if (disc) {
			*disc = 0;
			colon = strrchr(line, ':');
		}
		if (colon && colon[1] != '?') {
			*colon = 0;
			snprintf(pr->insn[i].file, sizeof(pr->insn[i].file), "%.255s", line);
			pr->insn[i].line = (unsigned)atoi(colon + 1);
		}
		i++;
	}
	pclose(p);
	return i == pr->ninsn ? 0 : -1;
}

static inline int prog_sink(void *ctx, const uint8_t *bytes, size_t n)
{
	return fwrite(bytes, 1, n, (FILE *)ctx) == n ? 0 : CSD_EIO;
}

static inline int prog_generate(struct prog_run *pr)
{
	csd_image *img = csd_image_new();
	FILE *out = fopen(pr->trace, "wb");
	int rc = -1;
	struct csdi_gen *g = NULL;
	if (!img || !out || csd_image_add_elf(img, pr->elf, 0) <= 0)
		goto done;
	struct csdi_gen_config gc;
	memset(&gc, 0, sizeof(gc));
	gc.trace.size = sizeof(gc.trace);
	gc.trace.protocol = CSD_PROTO_PTM;
	gc.trace.etmcr = PROG_ETMCR;
	gc.trace.etmccer = 0x34C01AC2u;
	gc.trace.etmidr = 0x411CF312u;
	gc.trace.trace_id = 0x10;
	gc.sync_period = 512;
	gc.timestamp_every = 64;
	g = csdi_gen_new(&gc, img, prog_sink, out);
	if (!g)
		goto done;
	for (size_t i = 0; i < pr->n; i++)
		if (csdi_gen_insn(g, pr->pc[i], pr->isa[i]) < 0)
			goto done;
	if (csdi_gen_finish(g) < 0)
		goto done;
	pr->gen_cycles = csdi_gen_stats(g)->cycles;
	pr->gen_traced = csdi_gen_stats(g)->traced;
	rc = 0;
done:
	csdi_gen_free(g);
	if (out && fclose(out) != 0)
		rc = -1;
	csd_image_free(img);
	return rc;
}

/* Build, run, trace. Returns 0, or -1 (message on stderr). */
static inline int prog_setup(struct prog_run *pr)
{
	char path[160], cmd[1024];
	memset(pr, 0, sizeof(*pr));
	snprintf(pr->dir, sizeof(pr->dir), "/tmp/csd_prog_XXXXXX");
	if (!mkdtemp(pr->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/prog.c", pr->dir);
	FILE *f = fopen(path, "w");
	if (!f || fputs(PROG_SOURCE, f) < 0 || fclose(f) != 0)
		return -1;
	snprintf(pr->elf, sizeof(pr->elf), "%s/prog.elf", pr->dir);
	snprintf(pr->trace, sizeof(pr->trace), "%s/trace.bin", pr->dir);
	snprintf(cmd, sizeof(cmd),
		 "arm-linux-gnueabihf-gcc -g -O1 -mthumb -ffreestanding -nostdlib -static -fno-pie -no-pie "
		 "-o %s %s/prog.c",
		 pr->elf, pr->dir);
	if (prog_sh(cmd) < 0)
		return -1;
	/* The program's exit status is its result, not an error. */
	snprintf(cmd, sizeof(cmd), "qemu-arm -singlestep -d exec,nochain -D %s/exec.log %s; test -s %s/exec.log",
		 pr->dir, pr->elf, pr->dir);
	if (prog_sh(cmd) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/exec.log", pr->dir);
	if (prog_read_log(pr, path) < 0 || prog_read_objdump(pr) < 0 || prog_read_lines(pr) < 0)
		return -1;
	for (size_t i = 0; i < pr->n; i++) {
		struct prog_insn *in = prog_find(pr, pr->pc[i]);
		if (!in)
			continue;
		in->count++;
		if (i + 1 < pr->n && pr->pc[i + 1] != in->addr + in->size)
			in->taken++;
	}
	return prog_generate(pr);
}

static inline void prog_cleanup(struct prog_run *pr)
{
	char cmd[128];
	if (pr->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", pr->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "prog_trace: could not remove %s\n", pr->dir);
	}
	free(pr->pc);
	free(pr->isa);
	free(pr->insn);
	memset(pr, 0, sizeof(*pr));
}

/* Is this objdump mnemonic a conditional branch (B<c>, CBZ, CBNZ)? */
static inline int prog_is_cond_branch(const char *mn)
{
	static const char *const conds[] = { "eq", "ne", "cs", "cc", "hs", "lo", "mi", "pl",
					     "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le" };
	if (strcmp(mn, "cbz") == 0 || strcmp(mn, "cbnz") == 0)
		return 1;
	if (mn[0] != 'b')
		return 0;
	for (size_t i = 0; i < sizeof(conds) / sizeof(conds[0]); i++)
		if (strncmp(mn + 1, conds[i], 2) == 0 && (mn[3] == 0 || strcmp(mn + 3, ".n") == 0 ||
							   strcmp(mn + 3, ".w") == 0))
			return 1;
	return 0;
}

/* Run a shell command, keep up to cap bytes of its stdout; exit status or -1. */
static inline int prog_run_cmd(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = 0, got;
	char sink[4096];
	while ((got = fread(n < cap ? out + n : sink, 1, n < cap ? cap - n : sizeof(sink), p)) > 0)
		if (n < cap)
			n += got;
	if (cap)
		out[n < cap ? n : cap - 1] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The tool to test: the sanitizer build of it in the sanitizer build of
 * the test (CSD_TOOL_SAN), else CSD_TOOL. */
static inline const char *prog_tool(void)
{
	const char *t = NULL;
#if defined(__SANITIZE_ADDRESS__)
	t = getenv("CSD_TOOL_SAN");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	t = getenv("CSD_TOOL_SAN");
#endif
#endif
	if (t && *t && access(t, X_OK) != 0) {
		fprintf(stderr, "%s not built (make test-san builds it): testing CSD_TOOL instead\n", t);
		t = NULL;
	}
	if (!t || !*t)
		t = getenv("CSD_TOOL");
	if (!t) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		exit(1);
	}
	return t;
}

#endif
