/* test_qemu_data.c - ETMv3 data trace round trip of the qemu-user test
 * programs (tests/programs/, every program ARM and Thumb, -O0 and -O2).
 *
 * tests/programs.mk runs each program once more with both `-d exec` and our
 * TCG plugin (tests/qemu_memlog.c), which logs every executed instruction
 * with the address, size and direction of each of its data accesses; qemu
 * 7.2's plugin API gives no values. This test joins the two logs of that
 * run (the instruction set from the -d exec log, record by record, the
 * addresses having to agree) into an execution log for `csdec gen
 * --exec-log`, with value 0, and generates ETMv3 traces with data trace of
 * addresses only (`--data-trace address`).
 * `csdec decode --format jsonl` (instructions, and ranges) must give back
 * every instruction, and every access's instruction, direction, size and
 * address, each right after its instruction's record.
 *
 * qemu-user performs a store-exclusive as an atomic compare-and-swap, whose
 * read the plugin sees too; the architecture (and an ETM) sees only the
 * store, so that read is left out, as scripts/unicorn_log.py does.
 *
 * Skipped (with the reason) when the programs were not recorded (not run
 * from make) or qemu-arm refused the plugin (programs.mk then writes the
 * reason into the .mem files).
 */
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../tools/qemu_log.c"
#include "data_check.h"

/* The encoding b (len bytes) is a store-exclusive: STREX{,B,H,D}. */
static int is_store_exclusive(const uint8_t *b, size_t len, int thumb)
{
	if (len != 4)
		return 0;
	if (!thumb) {
		uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
		return (w & 0x0F9000F0) == 0x01800090 && w >> 28 != 0xF;
	}
	unsigned hw1 = b[0] | b[1] << 8, op = b[2] >> 4 & 0xF;
	return (hw1 & 0xFFF0) == 0xE840 || ((hw1 & 0xFFF0) == 0xE8C0 && (op == 4 || op == 5 || op == 7));
}

static int hex_bytes(const char *s, uint8_t *b, size_t max, size_t *len)
{
	size_t n = 0;
	while (s[0] && s[1] && s[0] != '\n' && n < max) {
		char two[3] = { s[0], s[1], 0 };
		char *end;
		b[n++] = (uint8_t)strtoul(two, &end, 16);
		if (*end)
			return 0;
		s += 2;
	}
	*len = n;
	return n > 0;
}

/* Join exec (qemu -d exec) and mem (the plugin's log) of one run into
 * log_insn / log_acc and the execution log out_path. 1 if they agree
 * record by record, 0 (with a message) if not. */
static int join_logs(const char *exec_path, const char *mem_path, const char *out_path, size_t *stores, size_t *sizes8, size_t *strex_reads)
{
	FILE *ef = fopen(exec_path, "r"), *mf = fopen(mem_path, "r"), *of = fopen(out_path, "w");
	int ok = ef && mf && of;
	static struct qemu_log_reader qr;
	if (ok)
		qemu_log_reader_init_file(&qr, ef);
	n_log_insn = n_log_acc = 0;
	*stores = *sizes8 = *strex_reads = 0;
	char line[256];
	int strex = 0;
	uint64_t mline = 0;
	while (ok && fgets(line, sizeof line, mf)) {
		mline++;
		char kind;
		unsigned long long addr;
		char rest[64];
		if (sscanf(line, "%c %llx %63s", &kind, &addr, rest) != 3) {
			fprintf(stderr, "%s:%llu: not a plugin log line: %s", mem_path, (unsigned long long)mline, line);
			ok = 0;
			break;
		}
		if (kind == 'I') {
			struct qemu_log_insn qi;
			int r = qemu_log_next(&qr, &qi);
			uint8_t enc[16];
			size_t len = 0;
			if (r != QEMU_LOG_INSN || qi.addr != addr || !hex_bytes(rest, enc, sizeof enc, &len) ||
			    n_log_insn == MAX_ITEMS) {
				fprintf(stderr, "%s:%llu: instruction %#llx: the -d exec log has %s %#x\n", mem_path,
					(unsigned long long)mline, addr, r == QEMU_LOG_INSN ? "" : "no instruction, or a bad line,",
					r == QEMU_LOG_INSN ? qi.addr : 0);
				ok = 0;
				break;
			}
			strex = is_store_exclusive(enc, len, qi.isa == CSD_ISA_THUMB);
			log_insn[n_log_insn++] = (uint32_t)addr;
			fprintf(of, "I %llx %s\n", addr, qi.isa == CSD_ISA_THUMB ? "T32" : "A32");
			continue;
		}
		unsigned size = (unsigned)strtoul(rest, NULL, 10);
		if ((kind != 'R' && kind != 'W') || !n_log_insn || (size != 1 && size != 2 && size != 4 && size != 8) ||
		    n_log_acc == MAX_ITEMS) {
			fprintf(stderr, "%s:%llu: bad access line: %s", mem_path, (unsigned long long)mline, line);
			ok = 0;
			break;
		}
		if (kind == 'R' && strex) {
			++*strex_reads;
			continue;
		}
		log_acc[n_log_acc++] = (struct acc){ log_insn[n_log_insn - 1], (uint32_t)addr, 0, kind == 'W' ? 2 : 1,
						     (uint8_t)size };
		*stores += kind == 'W';
		*sizes8 += size == 8;
		fprintf(of, "%c %llx %u 0\n", kind, addr, size);
	}
	if (ok) {
		struct qemu_log_insn qi;
		if (qemu_log_next(&qr, &qi) != QEMU_LOG_END) {
			fprintf(stderr, "%s: more instructions than in %s\n", exec_path, mem_path);
			ok = 0;
		}
	}
	if (ef)
		fclose(ef);
	if (mf)
		fclose(mf);
	if (of && fclose(of) != 0)
		ok = 0;
	return ok;
}

int main(void)
{
	const char *progs = getenv("CSD_PROGRAMS");
	char path[1300], exec_path[1300], log_path[1300], elf[1200], dir[1400], cmd[8192], what[512];
	snprintf(path, sizeof path, "%s/bare-arm-O0.mem", progs ? progs : ".");
	FILE *probe = progs ? fopen(path, "r") : NULL;
	if (!probe) {
		printf("test_qemu_data: skipped: no recorded programs (CSD_PROGRAMS unset or no %s; make test records "
		       "them)\n", path);
		return 0;
	}
	char first[512] = "";
	if (!fgets(first, sizeof first, probe))
		first[0] = '\0';
	fclose(probe);
	if (first[0] == '#') {
		printf("test_qemu_data: skipped: %s", first + 1 + (first[1] == ' '));
		return 0;
	}
	char tmp[] = "/tmp/csdec-qdata-XXXXXX";
	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return check_done("test_qemu_data");
	}
	/* The programs: tests/programs/<name>.c. */
	snprintf(path, sizeof path, "%s/tests/programs/*.c", getenv("CSD_SRCDIR") ? getenv("CSD_SRCDIR") : ".");
	glob_t names;
	CHECK_EQ(glob(path, 0, NULL, &names), 0);
	static const char *const variants[] = { "arm-O0", "arm-O2", "thumb-O0", "thumb-O2" };
	/* (Address mode only: --out-of-order moves load values, which it does
	 * not trace, so gen refuses it there; test_data_roundtrip has it.) */
	static const char *const orders[] = { "" };
	size_t runs = 0, all_insns = 0, all_accs = 0, all_stores = 0, all_sizes8 = 0, all_strex_reads = 0;
	for (size_t n = 0; n < names.gl_pathc; n++) {
		char name[256];
		const char *base = strrchr(names.gl_pathv[n], '/');
		snprintf(name, sizeof name, "%s", base ? base + 1 : names.gl_pathv[n]);
		name[strlen(name) - 2] = '\0';
		for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
			snprintf(elf, sizeof elf, "%s/%s-%s", progs, name, variants[v]);
			snprintf(path, sizeof path, "%s.mem", elf);
			snprintf(exec_path, sizeof exec_path, "%s.mexec", elf);
			snprintf(log_path, sizeof log_path, "%s/%s-%s.exec", tmp, name, variants[v]);
			size_t stores = 0, sizes8 = 0, strex_reads = 0;
			if (!join_logs(exec_path, path, log_path, &stores, &sizes8, &strex_reads)) {
				CHECK(!"the plugin log and the -d exec log of the run agree");
				continue;
			}
			/* Every program loads and stores (its stack at least). */
			CHECK(n_log_insn > 100 && n_log_acc > 10 && stores > 5);
			runs++;
			all_insns += n_log_insn;
			all_accs += n_log_acc;
			all_stores += stores;
			all_sizes8 += sizes8;
			all_strex_reads += strex_reads;
			for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
				snprintf(dir, sizeof dir, "%s/snap-%s-%s%s", tmp, name, variants[v], orders[o]);
				snprintf(cmd, sizeof cmd,
					 "%s gen --exec-log %s --elf %s --protocol etm3 --data-trace address %s -o %s 2>/dev/null",
					 getenv("CSD_TOOL"), log_path, elf, orders[o], dir);
				CHECK_EQ(system(cmd), 0);
				for (int im = 1; im >= 0; im--) {
					snprintf(what, sizeof what, "%s-%s address%s%s%s", name, variants[v],
						 *orders[o] ? " " : "", orders[o], im ? "" : " ranges");
					check_decode(dir, 1, 0, im, what);
				}
			}
		}
	}
	CHECK(names.gl_pathc >= 9);
	CHECK_EQ(runs, names.gl_pathc * (sizeof variants / sizeof variants[0]));
	globfree(&names);
	printf("%zu runs, %zu instructions, %zu data accesses (%zu stores, %zu of 8 bytes), %zu reads of "
	       "store-exclusives left out\n",
	       runs, all_insns, all_accs, all_stores, all_sizes8, all_strex_reads);
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_qemu_data");
}
