/*
 * The text listing of `csdec decode`: one line per instruction with its
 * mnemonic, cycles and branch / condition result, events in between.
 *
 * TC2: every instruction's mnemonic is compared with DS-5's own decode
 * (ds5-dumps, column Detail), and the events DS-5 shows (trace on, the
 * cycle count of a trace gap, timestamps, exception returns) must appear
 * between the same two instructions with the same values.
 *
 * The test program (prog_trace.h): with its ELF, each instruction is
 * named by the function objdump puts it in and the file:line addr2line
 * gives, in the order qemu executed them, and the system call shows as an
 * SVC exception followed by trace on at the return address. Without
 * libdw (a test knob makes its loading fail) the listing is the same
 * minus the file:line, with one warning.
 */
#include <dirent.h>
#include <strings.h>

#include "check.h"
#include "ds5_dump.h"
#include "prog_trace.h"

enum ev_kind { EV_TRACE_ON = 1, EV_CYCLE_COUNT, EV_TIMESTAMP, EV_EXC_RETURN };

struct event {
	size_t before;         /* instructions listed before it */
	int kind;
	uint64_t value;
};

struct listed {
	uint32_t *addr;
	char (*mn)[16];
	size_t n, cap;
	struct event *ev;
	size_t nev, capev;
	size_t named;          /* lines with a <function> */
};

static void listed_free(struct listed *l)
{
	free(l->addr);
	free(l->mn);
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

static void add_event(struct event **ev, size_t *n, size_t *cap, size_t before, int kind, uint64_t value)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*ev = realloc(*ev, *cap * sizeof(**ev));
		if (!*ev)
			exit(1);
	}
	(*ev)[*n].before = before;
	(*ev)[*n].kind = kind;
	(*ev)[*n].value = value;
	(*n)++;
}

/* Parse the listing lines of one source. */
static int read_listing(const char *cmd, struct listed *l)
{
	FILE *p = popen(cmd, "r");
	char line[1024];
	memset(l, 0, sizeof(*l));
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		unsigned id, addr, opcode;
		char isa[8], mn[16], *ev;
		unsigned long long v;
		if ((ev = strstr(line, "  -- ")) != NULL) {
			ev += 5;
			if (strncmp(ev, "trace on (", 10) == 0)
				add_event(&l->ev, &l->nev, &l->capev, l->n, EV_TRACE_ON, 0);
			else if (sscanf(ev, "cycle count %llu", &v) == 1)
				add_event(&l->ev, &l->nev, &l->capev, l->n, EV_CYCLE_COUNT, v);
			else if (sscanf(ev, "timestamp %llu", &v) == 1)
				add_event(&l->ev, &l->nev, &l->capev, l->n, EV_TIMESTAMP, v);
			else if (strncmp(ev, "exception return", 16) == 0)
				add_event(&l->ev, &l->nev, &l->capev, l->n, EV_EXC_RETURN, 0);
			continue;
		}
		if (sscanf(line, "0x%x %x %7s %x %15s", &id, &addr, isa, &opcode, mn) != 5)
			continue;
		l->named += strchr(line, '<') != NULL;
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 4096;
			l->addr = realloc(l->addr, l->cap * sizeof(*l->addr));
			l->mn = realloc(l->mn, l->cap * sizeof(*l->mn));
			if (!l->addr || !l->mn)
				exit(1);
		}
		l->addr[l->n] = addr;
		snprintf(l->mn[l->n], sizeof(l->mn[l->n]), "%s", mn);
		l->n++;
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *ev_name(int kind)
{
	return kind == EV_TRACE_ON ? "trace on" : kind == EV_CYCLE_COUNT ? "cycle count"
		: kind == EV_TIMESTAMP ? "timestamp" : "exception return";
}

static void tc2_source(const char *tool, const char *dump_name, unsigned id)
{
	char dir[1024], path[1200], cmd[2400];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	snprintf(path, sizeof(path), "%s/ds5-dumps/%s", dir, dump_name);
	struct ds5_dump d;
	CHECK_EQ(ds5_load(path, &d), 0);
	struct listed l;
	snprintf(cmd, sizeof(cmd), "%s decode %s --id 0x%x", tool, dir, id);
	CHECK_EQ(read_listing(cmd, &l), 0);

	/* DS-5's instructions with known address and opcode, and its events
	 * counted the same way (instructions before them). */
	struct event *dev = NULL;
	size_t ndev = 0, capdev = 0, k = 0, same = 0, compared = 0, addr_bad = 0;
	for (size_t i = 0; i < d.n; i++) {
		const struct ds5_rec *r = &d.rec[i];
		switch (r->kind) {
		case DS5_INSN:
			if (k < l.n && l.addr[k] == r->addr) {
				compared++;
				if (strcasecmp(l.mn[k], r->mnemonic) == 0)
					same++;
				else if (compared - same <= 5)
					fprintf(stderr, "%s line %d: 0x%08x DS-5 %s, csdec %s\n", dump_name, r->line, r->addr,
						r->mnemonic, l.mn[k]);
			} else {
				addr_bad++;
			}
			k++;
			break;
		case DS5_TRACE_ON:
			add_event(&dev, &ndev, &capdev, k, EV_TRACE_ON, 0);
			break;
		case DS5_CYCLE_COUNT:
			add_event(&dev, &ndev, &capdev, k, EV_CYCLE_COUNT, r->value);
			break;
		case DS5_TIMESTAMP:
			add_event(&dev, &ndev, &capdev, k, EV_TIMESTAMP, r->value);
			break;
		case DS5_EXC_RETURN:
			add_event(&dev, &ndev, &capdev, k, EV_EXC_RETURN, 0);
			break;
		default:
			break;
		}
	}
	/* Events: csdec also reports the I-sync that starts the trace as
	 * trace on, and a timestamp that comes before the first instruction;
	 * DS-5 shows neither. Everything else must match one to one. */
	size_t j = 0, ev_same = 0, ev_bad = 0, extra_later = 0;
	for (size_t i = 0; i < ndev; i++) {
		while (j < l.nev && l.ev[j].before == 0 && !(dev[i].before == 0 && l.ev[j].kind == dev[i].kind))
			j++;
		if (j < l.nev && l.ev[j].before == dev[i].before && l.ev[j].kind == dev[i].kind &&
		    l.ev[j].value == dev[i].value) {
			ev_same++;
			j++;
		} else if (ev_bad++ < 5) {
			fprintf(stderr, "%s: DS-5 %s %llu after %zu instructions; csdec has %s %llu after %zu\n", dump_name,
				ev_name(dev[i].kind), (unsigned long long)dev[i].value, dev[i].before,
				j < l.nev ? ev_name(l.ev[j].kind) : "nothing",
				j < l.nev ? (unsigned long long)l.ev[j].value : 0ULL, j < l.nev ? l.ev[j].before : 0);
		}
	}
	for (; j < l.nev; j++)
		extra_later += l.ev[j].before != 0;
	printf("%s: %zu instructions, mnemonic as DS-5 for %zu (%.2f%%); %zu of %zu events in place, %zu extra\n",
	       dump_name, compared, same, compared ? 100.0 * (double)same / (double)compared : 0.0, ev_same, ndev,
	       l.nev - ev_same);
	CHECK_EQ(addr_bad, 0);
	CHECK_EQ(k, l.n);
	CHECK(compared > 1000);
	/* The issue asks for 95%; this capture reaches all of them. */
	CHECK(same * 100 >= compared * 95);
	CHECK_EQ(same, compared);
	CHECK_EQ(ev_bad, 0);
	CHECK_EQ(ev_same, ndev);
	CHECK_EQ(extra_later, 0);
	CHECK(l.nev - ev_same <= 2);
	/* No ELF: no function names. */
	CHECK_EQ(l.named, 0);
	free(dev);
	listed_free(&l);
	ds5_free(&d);
}

/* The test program: function names and source lines, the exception. */
/* A line's " file:line" at its end (after the "<function>"), or NULL. */
static const char *line_info(const char *line)
{
	const char *gt = strchr(line, '>');
	unsigned ln;
	char file[256];
	return gt && sscanf(gt + 1, " %255[^:]:%u", file, &ln) == 2 ? gt + 1 : NULL;
}

/*
 * Without libdw (made to fail to load, CSD_TEST_NO_LIB): one warning that
 * says so, and the same listing without the file:line of each line.
 */
static void without_libdw(const char *tool, const struct prog_run *pr)
{
	char cmd[2048], with[300], without[300], err[300];
	snprintf(with, sizeof(with), "%s/with_dw.txt", pr->dir);
	snprintf(without, sizeof(without), "%s/without_dw.txt", pr->dir);
	snprintf(err, sizeof(err), "%s/without_dw.err", pr->dir);
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s " PROG_DECODE_ARGS " --elf %s >%s", tool, pr->trace, pr->elf,
		 with);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "CSD_TEST_NO_LIB=libdw %s decode --trace %s " PROG_DECODE_ARGS " --elf %s >%s 2>%s",
		 tool, pr->trace, pr->elf, without, err);
	CHECK_EQ(system(cmd), 0);
	FILE *a = fopen(with, "r"), *b = fopen(without, "r"), *e = fopen(err, "r");
	CHECK(a && b && e);
	if (!a || !b || !e) {
		if (a)
			fclose(a);
		if (b)
			fclose(b);
		if (e)
			fclose(e);
		return;
	}
	char la[1024], lb[1024];
	size_t lines = 0, lined_with = 0, lined_without = 0, differ = 0, warnings = 0, dw_warnings = 0;
	for (;;) {
		char *ga = fgets(la, sizeof(la), a), *gb = fgets(lb, sizeof(lb), b);
		if (!ga || !gb) {
			CHECK(!ga && !gb); /* as many lines */
			break;
		}
		lines++;
		la[strcspn(la, "\n")] = 0;
		lb[strcspn(lb, "\n")] = 0;
		const char *info = line_info(la);
		lined_with += info != NULL;
		lined_without += line_info(lb) != NULL;
		/* the line, up to where the file:line was */
		size_t keep = info ? (size_t)(info - la) : strlen(la);
		if (strlen(lb) != keep || strncmp(la, lb, keep) != 0) {
			if (differ++ < 3)
				fprintf(stderr, "without libdw: line %zu is \"%s\", with it \"%s\"\n", lines, lb, la);
		}
	}
	while (fgets(la, sizeof(la), e)) {
		warnings++;
		dw_warnings += strstr(la, "warning:") && strstr(la, "no DWARF line info") && strstr(la, "libdw");
		if (warnings == 1)
			printf("without libdw: %s", la);
	}
	fclose(a);
	fclose(b);
	fclose(e);
	printf("without libdw: %zu lines, %zu with a line (with libdw), %zu (without); %zu differ; %zu warnings\n", lines,
	       lined_with, lined_without, differ, warnings);
	CHECK(lines > 100);
	CHECK(lined_with > lines / 2);
	CHECK_EQ(lined_without, 0);
	CHECK_EQ(differ, 0);
	CHECK_EQ(warnings, 1);
	CHECK_EQ(dw_warnings, 1);
}

static void program(const char *tool)
{
	struct prog_run pr;
	char cmd[1024];
	if (prog_setup(&pr) < 0) {
		CHECK(!"program fixture");
		prog_cleanup(&pr);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s " PROG_DECODE_ARGS " --elf %s", tool, pr.trace, pr.elf);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p) {
		prog_cleanup(&pr);
		return;
	}
	char line[1024];
	size_t k = 0, named = 0, lined = 0, with_line = 0, order_bad = 0, name_bad = 0, line_bad = 0;
	int svc_seen = 0, svc_exception = 0, svc_trace_on = 0, prev_was_svc = 0;
	uint32_t svc_next = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned id, addr, opcode;
		char isa[8], mn[16];
		char *ev = strstr(line, "  -- ");
		if (ev) {
			if (prev_was_svc && strstr(ev, "exception SVC"))
				svc_exception = 1;
			unsigned long ta;
			if (svc_exception && sscanf(ev, "  -- trace on (%*[a-z_]) at 0x%lx", &ta) == 1 && ta == svc_next)
				svc_trace_on = 1;
			continue;
		}
		if (sscanf(line, "0x%x %x %7s %x %15s", &id, &addr, isa, &opcode, mn) != 5)
			continue;
		if (k >= pr.n || pr.pc[k] != addr) {
			if (order_bad++ < 3)
				fprintf(stderr, "program: instruction %zu: csdec 0x%x, qemu 0x%x\n", k, addr,
					k < pr.n ? pr.pc[k] : 0);
		}
		prev_was_svc = strcmp(mn, "svc") == 0 && k + 1 < pr.n;
		if (prev_was_svc) {
			svc_seen = 1;
			svc_next = pr.pc[k + 1];
		}
		k++;
		const struct prog_insn *in = prog_find(&pr, addr);
		with_line += in && in->line != 0;
		char *lt = strchr(line, '<'), *gt = lt ? strchr(lt, '>') : NULL;
		if (!in)
			continue;
		if (lt && gt) {
			size_t n = strcspn(lt + 1, "+>");
			named++;
			if (strlen(in->func) != n || strncmp(lt + 1, in->func, n) != 0) {
				if (name_bad++ < 3)
					fprintf(stderr, "program: 0x%x named %.*s, objdump says %s\n", addr, (int)n, lt + 1,
						in->func);
			}
			/* the offset from the function start */
			unsigned long off = 0;
			if (lt[1 + n] == '+')
				off = strtoul(lt + 2 + n, NULL, 16);
			const struct prog_insn *first = in;
			while (first > pr.insn && strcmp(first[-1].func, in->func) == 0)
				first--;
			CHECK_EQ(off, addr - first->addr);
		}
		char file[256];
		unsigned ln;
		if (gt && sscanf(gt + 1, " %255[^:]:%u", file, &ln) == 2) {
			lined++;
			const char *slash = strrchr(in->file, '/');
			if (strcmp(file, slash ? slash + 1 : in->file) != 0 || ln != in->line) {
				if (line_bad++ < 3)
					fprintf(stderr, "program: 0x%x at %s:%u, addr2line says %s:%u\n", addr, file, ln,
						in->file, in->line);
			}
		}
	}
	int st = pclose(p);
	printf("program: %zu instructions listed (qemu ran %zu), %zu named, %zu with a line; %zu / %zu / %zu differ\n",
	       k, pr.n, named, lined, order_bad, name_bad, line_bad);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(k, pr.n);
	CHECK_EQ(order_bad, 0);
	CHECK_EQ(named, k);
	CHECK_EQ(name_bad, 0);
	CHECK_EQ(lined, with_line);
	CHECK_EQ(line_bad, 0);
	CHECK(svc_seen);
	CHECK(svc_exception);
	CHECK(svc_trace_on);

	without_libdw(tool, &pr);
	prog_cleanup(&pr);
}

/* The listing of dir (a snapshot) both ways: the 16-bit T32 texts and
 * the ".w" table as t16_text and the build-time table give them, and as
 * capstone writes them (CSD_TEST_T16_TEXT=capstone). Adds the lines, the
 * 16-bit T32 lines and the ".w" lines of the first to *totals; 0 if the
 * two listings are the same. */
static int t16_both_ways(const char *tool, const char *dir, const char *tmp, size_t totals[3])
{
	char cmd[2400], own[1100], cap[1100];
	snprintf(own, sizeof(own), "%s/own.txt", tmp);
	snprintf(cap, sizeof(cap), "%s/capstone.txt", tmp);
	snprintf(cmd, sizeof(cmd), "%s decode %s --jobs 1 >%s", tool, dir, own);
	if (system(cmd) == -1)
		return -1;
	snprintf(cmd, sizeof(cmd), "CSD_TEST_T16_TEXT=capstone %s decode %s --jobs 1 >%s", tool, dir, cap);
	if (system(cmd) == -1)
		return -1;
	size_t na = 0, nb = 0;
	unsigned char *a = check_read_file(own, &na), *b = check_read_file(cap, &nb);
	int differ = !a || !b || na != nb || memcmp(a, b, na) != 0;
	for (size_t i = 0; a && i < na;) {
		const char *line = (const char *)a + i, *nl = memchr(line, '\n', na - i);
		const size_t len = nl ? (size_t)(nl - line) : na - i;
		char buf[512];
		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		unsigned id, addr;
		char isa[8], op[16], mn[24];
		if (sscanf(buf, "0x%x %x %7s %15s %23s", &id, &addr, isa, op, mn) == 5 && strcmp(isa, "T32") == 0) {
			totals[0]++;
			totals[1] += strlen(op) == 4;
			totals[2] += strstr(mn, ".w") != NULL;
		}
		i += len + 1;
	}
	free(a);
	free(b);
	return differ;
}

/*
 * The 16-bit T32 texts and the ".w" decisions written without capstone
 * (t16_text and the table tools/build/t16_narrow_gen.c makes) are
 * capstone's: the listings of TC2 and of the Thumb builds of the test
 * programs are the same as when capstone writes them.
 */
static void t16_texts(const char *tool)
{
	char tmp[] = "/tmp/csdec-t16-XXXXXX", dir[1200];
	CHECK(mkdtemp(tmp) != NULL);
	size_t totals[3] = { 0, 0, 0 }, inputs = 0, differ = 0;
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	differ += t16_both_ways(tool, dir, tmp, totals) != 0;
	inputs++;
	const char *gen = getenv("CSD_GEN_SNAPSHOTS");
	DIR *d = gen ? opendir(gen) : NULL;
	CHECK(d != NULL);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		/* Each Thumb program once (every configuration lists the same
		 * instructions). */
		const char *t = strstr(e->d_name, "-thumb-");
		if (!t || strcmp(strstr(t, "--") ? strstr(t, "--") : "", "--ptm") != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", gen, e->d_name);
		if (t16_both_ways(tool, dir, tmp, totals) != 0) {
			if (differ++ < 3)
				fprintf(stderr, "t16 texts: %s lists otherwise with capstone's texts\n", e->d_name);
		}
		inputs++;
	}
	if (d)
		closedir(d);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK_EQ(system(cmd), 0);
	printf("t16 texts: %zu inputs, %zu T32 lines (%zu 16-bit, %zu .w), %zu listed otherwise with capstone's\n",
	       inputs, totals[0], totals[1], totals[2], differ);
	CHECK(inputs >= 10);
	CHECK(totals[1] > 10000);
	CHECK(totals[2] > 1000);
	CHECK_EQ(differ, 0);
}

int main(void)
{
	const char *tool = prog_tool();
	tc2_source(tool, "etmv3_0x10.txt", 0x10);
	tc2_source(tool, "etmv3_0x11.txt", 0x11);
	tc2_source(tool, "etmv3_0x12.txt", 0x12);
	tc2_source(tool, "ptmv1_0x13.txt", 0x13);
	program(tool);
	t16_texts(tool);
	return check_done("test_listing");
}
