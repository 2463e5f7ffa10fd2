/*
 * Cortex-M round trip: the cm3demo run recorded by qemu-system-arm
 * (tests/programs-m: SysTick, SVC, PendSV tail chaining, interrupt 40 with a
 * two-byte exception number, IT blocks) was turned into ETMv3.4 trace by
 * `csdec gen --core cortex-m3`. Decoding it must give back every executed
 * instruction of the log, and every exception entry and return that qemu
 * logged (its -d int lines), in order, with the ARMv7-M exception number.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flow_run.h"
#include "../tools/qemu_log.c"

/* ARMv7-M exception number from the value ETMv3 traces (Cortex-M3 TRM,
 * "Exception tracing mapping"). */
static unsigned m_number(unsigned traced)
{
	static const int8_t sys[24] = { 0, 17, 18, 19, 20, 21, 22, 23, 16, 6, 2, 11, 12, 4, 14, 15,
					-1, 1, -1, 3, -1, 5, -1, -1 };
	if (traced < 24)
		return sys[traced] < 0 ? 0 : (unsigned)sys[traced];
	return traced; /* IRQ8 and up: traced 24 is IRQ8, exception number 24 */
}

/* Events of the log: 'E' + number for an entry, 'R' for a return. */
struct events {
	char kind[4096];
	unsigned num[4096];
	size_t n;
};

static void load_log(const char *path, uint32_t **addr, size_t *n, struct events *ev)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static struct qemu_log_reader rd;
	qemu_log_reader_init_file(&rd, f);
	struct qemu_log_insn qi;
	size_t cap = 0;
	int r;
	*n = 0;
	while ((r = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
		if (r != QEMU_LOG_INSN)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 65536;
			*addr = realloc(*addr, cap * sizeof(**addr));
			if (!*addr)
				abort();
		}
		(*addr)[(*n)++] = qi.addr;
	}
	/* The exception lines, read a second time as plain text. */
	rewind(f);
	char line[512];
	ev->n = 0;
	while (fgets(line, sizeof(line), f) && ev->n < 4096) {
		unsigned num;
		if (sscanf(line, "...taking pending nonsecure exception %u", &num) == 1) {
			ev->kind[ev->n] = 'E';
			ev->num[ev->n++] = num;
		} else if (strncmp(line, "Exception return: magic PC", 26) == 0) {
			ev->kind[ev->n] = 'R';
			ev->num[ev->n++] = 0;
		}
	}
	fclose(f);
}

static void check_snapshot(const char *snap, const uint32_t *addr, size_t n, const struct events *ev)
{
	for (int insn = 0; insn < 2; insn++) {
		struct flow_run fr;
		memset(&fr, 0, sizeof(fr));
		CHECK_EQ(flow_run_snapshot(snap, 0x10, insn ? CSD_FLOW_INSN : 0, 13, &fr), 0);
		size_t k = 0, e = 0, bad = 0, ebad = 0;
		for (size_t i = 0; i < fr.n; i++) {
			const struct csd_record *r = &fr.rec[i];
			if (r->type == CSD_REC_ERROR || r->type == CSD_REC_NO_MEMORY)
				bad++;
			if (r->type == CSD_REC_EXCEPTION || r->type == CSD_REC_EXCEPTION_RETURN) {
				char kind = r->type == CSD_REC_EXCEPTION ? 'E' : 'R';
				unsigned num = kind == 'E' ? m_number(r->exception) : 0;
				if (e >= ev->n || ev->kind[e] != kind || ev->num[e] != num) {
					if (ebad++ == 0)
						fprintf(stderr, "%s: event %zu: decoded %c%u, qemu %c%u\n", snap, e, kind, num,
							e < ev->n ? ev->kind[e] : '-', e < ev->n ? ev->num[e] : 0);
				}
				e++;
			}
			if (r->type != CSD_REC_INSN && r->type != CSD_REC_RANGE)
				continue;
			uint32_t count = r->type == CSD_REC_INSN ? 1 : r->count;
			for (uint32_t j = 0; j < count; j++, k++) {
				int ok = k < n && (j ? addr[k] - addr[k - 1] == 2 || addr[k] - addr[k - 1] == 4
						     : addr[k] == r->addr);
				if (ok && j + 1 == count && r->type == CSD_REC_RANGE)
					ok = addr[k] == r->last;
				if (!ok && bad++ == 0)
					fprintf(stderr, "%s: instruction %zu (0x%x) is not where record %zu says\n", snap, k,
						k < n ? addr[k] : 0, i);
			}
		}
		printf("%s (%s): %zu of %zu instructions, %zu of %zu exception events\n", snap, insn ? "insn" : "range",
		       k, n, e, ev->n);
		CHECK_EQ(bad, 0);
		CHECK_EQ(ebad, 0);
		CHECK_EQ(k, n);
		CHECK_EQ(e, ev->n);
		flow_run_free(&fr);
	}
}

/* The tool on the TPIU capture alone (--trace, as a probe's user has it),
 * told the core with --core: the same records as from the snapshot, whose
 * cpu_0.ini names the Cortex-M3 (exception names and numbers are the
 * profile's). */
static void tool_trace_file(const char *gen, const char *progs)
{
	const char *tool = getenv("CSD_TOOL");
	CHECK(tool != NULL);
	if (!tool)
		return;
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "d=%s/cm3demo--etm3-ca-tpiu; t=$(mktemp -d) && "
		 "%s decode $d --format jsonl > $t/snap && grep -q '\"name\":\"SysTick\"' $t/snap && "
		 "%s decode --trace $d/trace.bin --formatted=port --protocol etm3 --reg ETMCR=0x1000 --core cortex-m3 "
		 "--elf %s/cm3demo.elf --format jsonl > $t/trace && cmp $t/snap $t/trace; r=$?; rm -rf $t; exit $r",
		 gen, tool, tool, progs);
	int rc = system(cmd);
	printf("decode --trace --core cortex-m3 of the TPIU capture against the snapshot: %s\n",
	       rc == 0 ? "same records" : "differ");
	CHECK_EQ(rc, 0);
}

int main(void)
{
	const char *gen = getenv("CSD_GEN_M"), *progs = getenv("CSD_PROGRAMS_M");
	if (!gen || !progs) {
		fprintf(stderr, "CSD_GEN_M / CSD_PROGRAMS_M not set (run through make test)\n");
		return 1;
	}
	char path[2048];
	snprintf(path, sizeof(path), "%s/cm3demo.log", progs);
	uint32_t *addr = NULL;
	size_t n = 0;
	static struct events ev;
	load_log(path, &addr, &n, &ev);
	CHECK(n > 10000);
	CHECK(ev.n > 100); /* dozens of exceptions and returns */
	static const char *const snaps[] = { "cm3demo--etm3", "cm3demo--etm3-ca-tpiu" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", gen, snaps[i]);
		check_snapshot(path, addr, n, &ev);
	}
	free(addr);
	tool_trace_file(gen, progs);
	return check_done("test_roundtrip_m");
}
