/* test_data_roundtrip.c - ETMv3 data trace round trip against an emulator.
 *
 * tests/programs-data/mem.c (loads and stores of every kind) is built for
 * ARM and Thumb at -O0 and -O1, and neon.c (Advanced SIMD VLDn / VSTn of
 * every form) for ARM and Thumb at -O1, bare metal, and run under Unicorn, whose
 * memory hooks write the execution log (scripts/unicorn_log.py). Each log
 * goes through `csdec gen --exec-log` in every data trace mode (both,
 * address, value), in order and out of order, and `csdec decode --insn
 * --format jsonl` must give back exactly the log: every instruction, and
 * every access's instruction, direction, size, address and value (those
 * the mode traces), each data record right after its instruction's record;
 * the range decode must give the same accesses. `csdec coverage` and
 * `csdec profile` give the same output with and without the data records.
 * Data-only traces (`gen --data-only`, ETMCR[20]) in the same modes must
 * give every 32-bit transfer (a doubleword is two, low word first) with
 * the address and value the mode traces, and nothing of the instructions:
 * no instruction or range records, no "insn", "dir" or "size" keys.
 * Skipped (with the reason) without the cross compiler or python3-unicorn.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "../tools/exec_log.c"
#include "data_check.h"

static int read_log(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	static struct exec_log_reader rd;
	exec_log_reader_init_file(&rd, f);
	struct exec_log_item it;
	int r;
	n_log_insn = n_log_acc = 0;
	while ((r = exec_log_next(&rd, &it)) != EXEC_LOG_END) {
		CHECK(r > 0);
		if (r == EXEC_LOG_INSN && n_log_insn < MAX_ITEMS)
			log_insn[n_log_insn++] = it.addr;
		if (r == EXEC_LOG_ACCESS && n_log_acc < MAX_ITEMS && n_log_insn)
			log_acc[n_log_acc++] = (struct acc){ log_insn[n_log_insn - 1], it.addr, it.value, it.dir, it.size };
	}
	fclose(f);
	return 1;
}

/* A data-only decode of dir against the log's transfers. */
static void check_decode_data_only(const char *dir, int addr_on, int value_on, int insn_mode, const char *what)
{
	FILE *p = open_decode(dir, insn_mode);
	if (!p)
		return;
	static char line[4096];
	size_t na = 0, nt = 0, bad = 0, errors = 0, flow = 0;
	unsigned half = 0;
	while (fgets(line, sizeof line, p)) {
		if (strstr(line, "\"type\":\"error\""))
			errors++;
		if (strstr(line, "\"type\":\"insn\"") || strstr(line, "\"type\":\"range\""))
			flow++;
		if (!strstr(line, "\"type\":\"data\""))
			continue;
		uint64_t addr = 0, value = 0;
		int has_addr = hex_key(line, "\"addr\":\"0x", &addr), has_value = hex_key(line, "\"value\":\"0x", &value);
		const struct acc *e = na < n_log_acc ? &log_acc[na] : NULL;
		uint32_t want_addr = e ? e->addr + 4 * half : 0;
		uint64_t want_value = e ? (e->size == 8 ? (e->value >> (32 * half)) & 0xFFFFFFFFu : e->value) : 0;
		if (!e || strstr(line, "\"insn\"") || strstr(line, "\"dir\"") || strstr(line, "\"size\"") ||
		    has_addr != addr_on || has_value != value_on || (addr_on && addr != want_addr) ||
		    (value_on && value != want_value)) {
			if (bad++ < 5)
				fprintf(stderr, "%s: transfer %zu: got %s  want %#x %#llx\n", what, nt, line, want_addr,
					(unsigned long long)want_value);
		}
		nt++;
		if (e && e->size == 8 && half == 0) {
			half = 1;
		} else {
			half = 0;
			na++;
		}
	}
	CHECK_EQ(pclose(p), 0);
	CHECK_EQ(na, n_log_acc);
	CHECK_EQ(half, 0);
	CHECK_EQ(flow, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(errors, 0);
	printf("  %-40s %zu transfers, %zu accesses%s\n", what, nt, na, bad || na != n_log_acc ? " DIFFER" : " exact");
}

int main(void)
{
	if (system("command -v arm-linux-gnueabihf-gcc >/dev/null 2>&1") != 0) {
		printf("test_data_roundtrip: skipped: no arm-linux-gnueabihf-gcc (scripts/install-deps installs it)\n");
		return 0;
	}
	if (system("/usr/bin/python3 -c 'import unicorn' >/dev/null 2>&1") != 0) {
		printf("test_data_roundtrip: skipped: /usr/bin/python3 has no unicorn module (scripts/install-deps "
		       "installs python3-unicorn)\n");
		return 0;
	}
	char tmp[] = "/tmp/csdec-data-XXXXXX";
	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return check_done("test_data_roundtrip");
	}
	static const char *const variants[][3] = {
		{ "arm-O0", "-marm -O0", "mem" }, { "arm-O1", "-marm -O1", "mem" },
		{ "thumb-O0", "-mthumb -O0", "mem" }, { "thumb-O1", "-mthumb -O1", "mem" },
		{ "neon-arm-O1", "-marm -O1", "neon" }, { "neon-thumb-O1", "-mthumb -O1", "neon" },
	};
	static const struct { const char *mode, *opt; int addr_on, value_on; } modes[] = {
		{ "both", "", 1, 1 }, { "address", "", 1, 0 }, { "value", "", 0, 1 },
		{ "both", "--out-of-order", 1, 1 }, { "value", "--out-of-order", 0, 1 },
	};
	char cmd[8192], elf[1200], logp[1300], dir[1400], what[256];
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		snprintf(elf, sizeof elf, "%s/mem-%s", tmp, variants[v][0]);
		snprintf(cmd, sizeof cmd,
			 "arm-linux-gnueabihf-gcc %s -g -nostdlib -ffreestanding -mgeneral-regs-only -march=armv7-a "
			 "-mfloat-abi=softfp -Wa,--no-warn -T tests/programs-data/mem.ld -Wl,--build-id=none -o %s "
			 "tests/programs-data/start.S tests/programs-data/%s.c",
			 variants[v][1], elf, variants[v][2]);
		CHECK_EQ(system(cmd), 0);
		snprintf(logp, sizeof logp, "%s.log", elf);
		snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/unicorn_log.py %s %s", elf, logp);
		CHECK_EQ(system(cmd), 0);
		if (!read_log(logp)) {
			CHECK(!"no log");
			continue;
		}
		/* The program does what it is there for. */
		CHECK(n_log_acc > 300);
		size_t stores = 0, doubles = 0, bytes = 0, halves = 0;
		for (size_t i = 0; i < n_log_acc; i++) {
			stores += log_acc[i].dir == 2;
			doubles += log_acc[i].size == 8;
			bytes += log_acc[i].size == 1;
			halves += log_acc[i].size == 2;
		}
		CHECK(stores > 50 && doubles >= 6 && bytes > 20);
		if (!strcmp(variants[v][2], "neon"))
			CHECK(doubles > 20 && bytes > 100 && halves > 50);
		/* coverage and profile ignore the data records: the same
		 * output as from the trace without data. */
		snprintf(cmd, sizeof cmd,
			 "T=%s; L=%s; E=%s; D=%s/snap-%s; "
			 "$T gen --exec-log $L --elf $E --protocol etm3 -o $D-none 2>/dev/null && "
			 "$T gen --exec-log $L --elf $E --protocol etm3 --data-trace both -o $D-data 2>/dev/null && "
			 "$T coverage $D-none --elf $E > $D-none.cov && $T coverage $D-data --elf $E > $D-data.cov && "
			 "$T profile $D-none --elf $E > $D-none.prof && $T profile $D-data --elf $E > $D-data.prof && "
			 "cmp -s $D-none.cov $D-data.cov && cmp -s $D-none.prof $D-data.prof && "
			 "$T decode --format jsonl $D-data | grep -q '\"type\":\"data\"'",
			 getenv("CSD_TOOL"), logp, elf, tmp, variants[v][0]);
		CHECK_EQ(system(cmd), 0);
		for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
			snprintf(dir, sizeof dir, "%s/snap-%s-%s%s", tmp, variants[v][0], modes[m].mode, modes[m].opt);
			snprintf(cmd, sizeof cmd, "%s gen --exec-log %s --elf %s --protocol etm3 --data-trace %s %s -o %s 2>/dev/null",
				 getenv("CSD_TOOL"), logp, elf, modes[m].mode, modes[m].opt, dir);
			CHECK_EQ(system(cmd), 0);
			snprintf(what, sizeof what, "%s %s%s%s", variants[v][0], modes[m].mode, *modes[m].opt ? " " : "",
				 modes[m].opt);
			check_decode(dir, modes[m].addr_on, modes[m].value_on, 1, what);
			snprintf(what, sizeof what, "%s %s%s%s ranges", variants[v][0], modes[m].mode,
				 *modes[m].opt ? " " : "", modes[m].opt);
			check_decode(dir, modes[m].addr_on, modes[m].value_on, 0, what);
			/* The same, data only. */
			snprintf(dir, sizeof dir, "%s/snap-%s-%s%s-data-only", tmp, variants[v][0], modes[m].mode,
				 modes[m].opt);
			snprintf(cmd, sizeof cmd,
				 "%s gen --exec-log %s --elf %s --protocol etm3 --data-trace %s %s --data-only -o %s 2>/dev/null "
				 "&& %s packets --format jsonl %s | grep -q '\"data_only\":true'",
				 getenv("CSD_TOOL"), logp, elf, modes[m].mode, modes[m].opt, dir, getenv("CSD_TOOL"), dir);
			CHECK_EQ(system(cmd), 0);
			for (int im = 1; im >= 0; im--) {
				snprintf(what, sizeof what, "%s %s%s%s data-only%s", variants[v][0], modes[m].mode,
					 *modes[m].opt ? " " : "", modes[m].opt, im ? "" : " ranges");
				check_decode_data_only(dir, modes[m].addr_on, modes[m].value_on, im, what);
			}
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_data_roundtrip");
}
