/*
 * fuzz_exec_log.c - harness of the execution log reader of `csdec gen
 * --exec-log` (tools/exec_log.c).
 *
 * Input: the log text (any bytes). It is read from memory and as a FILE
 * (fmemopen; the reader's own 16 KiB chunks), which must give the same
 * items and bad lines in the same order. Checked as well:
 *   - the reader ends: no more calls than lines + 2, then EXEC_LOG_END on
 *     every call;
 *   - counters: `insns` and `accesses` count the items returned,
 *     `bad_lines` the bad lines, and no more lines than the text has;
 *   - a bad line reports the current line with a non-empty reason; item
 *     and bad line numbers increase strictly;
 *   - an instruction is A32 (4-aligned) or T32 (2-aligned); an access
 *     comes after an instruction, has size 1, 2, 4 or 8, a value that fits
 *     it, direction 1 or 2; written back in the log's own format it reads
 *     back as the same item.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "../tools/exec_log.h"

struct elog_event {
	int kind;
	struct exec_log_item it;
	uint64_t bad_line;
};

static uint64_t elog_count_lines(const uint8_t *t, size_t len)
{
	uint64_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += t[i] == '\n';
	return n + (len && t[len - 1] != '\n');
}

/* Read everything; returns the number of events (at most cap kept). */
static size_t elog_read(struct exec_log_reader *r, struct elog_event *ev, size_t cap, uint64_t max_lines)
{
	size_t n = 0;
	uint64_t calls = 0, last_item = 0, last_bad = 0;
	int seen_insn = 0;
	for (;;) {
		struct exec_log_item it;
		int k = exec_log_next(r, &it);
		FUZZ_CHECK(++calls <= max_lines + 2);
		if (k == EXEC_LOG_END)
			break;
		FUZZ_CHECK(k == EXEC_LOG_INSN || k == EXEC_LOG_ACCESS || k == EXEC_LOG_BAD_LINE);
		if (k == EXEC_LOG_BAD_LINE) {
			FUZZ_CHECK(r->bad_line == r->lines && r->bad_reason && *r->bad_reason);
			FUZZ_CHECK(r->bad_line > last_bad);
			last_bad = r->bad_line;
		} else {
			FUZZ_CHECK(it.line == r->lines && it.line > last_item);
			last_item = it.line;
			if (k == EXEC_LOG_INSN) {
				seen_insn = 1;
				FUZZ_CHECK(it.isa == CSD_ISA_ARM ? (it.addr & 3) == 0
								  : it.isa == CSD_ISA_THUMB && (it.addr & 1) == 0);
			} else {
				FUZZ_CHECK(seen_insn);
				FUZZ_CHECK(it.size == 1 || it.size == 2 || it.size == 4 || it.size == 8);
				FUZZ_CHECK(it.size == 8 || (it.value >> (8 * it.size)) == 0);
				FUZZ_CHECK(it.dir == 1 || it.dir == 2);
			}
			/* Written back, it reads back the same. */
			char line[96];
			int len = k == EXEC_LOG_INSN
					  ? snprintf(line, sizeof line, "I %x %s\n", it.addr, it.isa == CSD_ISA_ARM ? "A32" : "T32")
					  : snprintf(line, sizeof line, "%c %x %u %llx\n", it.dir == 1 ? 'R' : 'W', it.addr,
						     it.size, (unsigned long long)it.value);
			static struct exec_log_reader back;
			exec_log_reader_init_mem(&back, line, (size_t)len);
			back.have_insn = 1;
			struct exec_log_item b;
			FUZZ_CHECK(exec_log_next(&back, &b) == k);
			FUZZ_CHECK(b.addr == it.addr && b.isa == it.isa && b.dir == it.dir && b.size == it.size &&
				   b.value == it.value);
		}
		if (n < cap) {
			ev[n].kind = k;
			ev[n].it = it;
			ev[n].bad_line = k == EXEC_LOG_BAD_LINE ? r->bad_line : 0;
		}
		n++;
	}
	for (int i = 0; i < 3; i++) {
		struct exec_log_item it;
		FUZZ_CHECK(exec_log_next(r, &it) == EXEC_LOG_END);
	}
	FUZZ_CHECK(r->lines <= max_lines);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	const uint64_t lines = elog_count_lines(data, size);
	enum { CAP = 4096 };
	static struct elog_event a[CAP], b[CAP];
	static struct exec_log_reader rm, rf;
	exec_log_reader_init_mem(&rm, (const char *)data, size);
	size_t na = elog_read(&rm, a, CAP, lines);
	FUZZ_CHECK(rm.insns + rm.accesses + rm.bad_lines == na);
	if (!size)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	exec_log_reader_init_file(&rf, f);
	size_t nb = elog_read(&rf, b, CAP, lines);
	fclose(f);
	FUZZ_CHECK(na == nb);
	FUZZ_CHECK(rm.lines == rf.lines && rm.insns == rf.insns && rm.accesses == rf.accesses &&
		   rm.bad_lines == rf.bad_lines);
	for (size_t i = 0; i < na && i < CAP; i++) {
		FUZZ_CHECK(a[i].kind == b[i].kind && a[i].bad_line == b[i].bad_line);
		FUZZ_CHECK(a[i].it.addr == b[i].it.addr && a[i].it.isa == b[i].it.isa && a[i].it.dir == b[i].it.dir &&
			   a[i].it.size == b[i].it.size && a[i].it.value == b[i].it.value && a[i].it.line == b[i].it.line);
	}
	return 0;
}
