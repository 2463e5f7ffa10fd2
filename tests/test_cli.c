/*
 * The csdec tool as users and scripts see it: commands, output contracts
 * (JSON keys), and exit statuses (0 clean, 1 trace errors, 2 usage / I/O).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"

static char tmpdir[] = "/tmp/csd_test_cli_XXXXXX";

/* Run a shell command; return its exit status and up to cap bytes of stdout. */
static int run(const char *cmd, char *out, size_t cap)
{
	return cli_run_cmd(cmd, NULL, out, cap);
}

/* cmd exits with `status` and says `says` (its output shown where not). */
static void expect_says(const char *cmd, int status, const char *says, char *out, size_t cap)
{
	CHECK_EQ(run(cmd, out, cap), status);
	if (!strstr(out, says))
		fprintf(stderr, "%s: expected \"%s\" in:\n%s", cmd, says, out);
	CHECK(strstr(out, says) != NULL);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A one-source PTM snapshot whose trace is `bytes`. */
static void make_snapshot(const char *dir, const uint8_t *bytes, size_t n)
{
	mkdir(dir, 0700);
	write_text(dir, "snapshot.ini", "[snapshot]\nversion=1.0\n[device_list]\ndevice0=ptm.ini\n[trace]\nmetadata=trace.ini\n");
	write_text(dir, "ptm.ini", "[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n[regs]\n"
				   "ETMCR(0x000)=0x00000000\nETMIDR(0x079)=0x411CF312\nETMCCER(0x07A)=0x34C01AC2\n"
				   "ETMTRACEIDR(0x080)=0x00000013\n");
	write_text(dir, "trace.ini", "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=B0\nfile=trace.bin\n"
				     "format=source_data\n[source_buffers]\nPTM_0=B0\n");
	char path[1024];
	snprintf(path, sizeof(path), "%s/trace.bin", dir);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(bytes, 1, n, f), n);
		fclose(f);
	}
}

/* csdec gen: a log with no instruction, or of another program than the
 * ELF's, is refused (exit 2) rather than turned into a trace of nothing;
 * the sources of one run share one timestamp clock. */
static void gen_mistakes(const char *tool, const char *dir)
{
	const char *progs = getenv("CSD_PROGRAMS"), *progs_m = getenv("CSD_PROGRAMS_M");
	CHECK(progs != NULL && progs_m != NULL);
	if (!progs || !progs_m)
		return;
	static char out[1 << 20];
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), ": > %s/empty.log && %s gen --qemu-log %s/empty.log --elf %s/hello-arm-O0 --protocol ptm "
		 "-o %s/g1 2>&1", dir, tool, dir, progs, dir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "no executed instruction in it") != NULL);
	snprintf(cmd, sizeof(cmd), "%s gen --qemu-log %s/hello-arm-O0.log --elf %s/cm3demo.elf --protocol ptm -o %s/g2 2>&1",
		 tool, progs, progs_m, dir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "is the log of this program?") != NULL);
	snprintf(cmd, sizeof(cmd), "%s gen --qemu-log %s/hello-arm-O0.log --elf %s/hello-arm-O0 --protocol ptm --protocol etm3 "
		 "--timestamps -o %s/g3 2>/dev/null && %s decode %s/g3 --format jsonl --order capture | grep timestamp",
		 tool, progs, progs, dir, tool, dir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	unsigned long long last[2] = { 0, 0 };
	for (const char *l = out; (l = strstr(l, "\"type\":\"timestamp\",\"id\":")) != NULL; l++) {
		unsigned id = 0;
		unsigned long long ts = 0;
		const char *t = strstr(l, "\"timestamp\":");
		if (sscanf(l, "\"type\":\"timestamp\",\"id\":%u", &id) == 1 && t && sscanf(t, "\"timestamp\":%llu", &ts) == 1 &&
		    (id == 0x10 || id == 0x11))
			last[id - 0x10] = ts;
	}
	printf("gen, two sources of one run: last timestamps %llu and %llu\n", last[0], last[1]);
	CHECK(last[0] > 0 && last[1] > 0);
	/* (each source's last one comes at its own last packet, a few
	 * instructions apart) */
	CHECK(last[0] * 100 > last[1] * 95 && last[1] * 100 > last[0] * 95);
}

int main(void)
{
	const char *tool = getenv("CSD_TOOL");
	char cmd[2048];
	static char out[1 << 20];
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	const char *tc2 = NULL;
	char tc2buf[1024];
	snprintf(tc2buf, sizeof(tc2buf), "%s/traces/TC2", check_shared_dir());
	tc2 = tc2buf;
	CHECK(mkdtemp(tmpdir) != NULL);

	/* Usage errors exit 2. */
	snprintf(cmd, sizeof(cmd), "%s 2>/dev/null", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	snprintf(cmd, sizeof(cmd), "%s frobnicate 2>/dev/null", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	snprintf(cmd, sizeof(cmd), "%s packets %s --format xml 2>/dev/null", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	snprintf(cmd, sizeof(cmd), "%s packets %s --id 0x99 2>/dev/null", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	/* I/O errors exit 2 and name the file. */
	snprintf(cmd, sizeof(cmd), "%s packets /nonexistent/snap 2>&1", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "snapshot.ini") != NULL);
	/* Help works for every command. */
	snprintf(cmd, sizeof(cmd), "%s packets --help", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "--format") != NULL);
	snprintf(cmd, sizeof(cmd), "%s decode --help", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "--insn") != NULL);

	/* The real capture decodes cleanly. */
	snprintf(cmd, sizeof(cmd), "%s packets %s --id 0x13 --format jsonl", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strncmp(out, "{\"packet\":\"nosync\",\"id\":19,\"offset\":26436,", 42) == 0);
	/* The frame at 0x67c0 is 27 10 cc 01 ce 0e 00 00 00 00 00 80 08 83 8c | 80:
	 * ID 0x13 from byte 0, so the A-sync's five zeros are bytes 6-10
	 * (offset 26566) and the I-sync header is byte 12 (26572). OpenCSD's
	 * listing says 26565 / 26571: it reports offsets one lower here. */
	CHECK(strstr(out, "{\"packet\":\"async\",\"id\":19,\"offset\":26566,") != NULL);
	CHECK(strstr(out, "{\"packet\":\"isync\",\"id\":19,\"offset\":26572,") != NULL);
	CHECK(strstr(out, "\"addr\":\"0xc0018d82\"") != NULL);
	CHECK(strstr(out, "\"id\":16") == NULL); /* --id filters */
	snprintf(cmd, sizeof(cmd), "%s packets %s | wc -l", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(atoi(out) > 20000);
	snprintf(cmd, sizeof(cmd), "%s decode %s --format none", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, " instructions, ") != NULL);
	snprintf(cmd, sizeof(cmd), "%s decode %s --id 0x10 --insn --format jsonl | grep -m1 '\"type\":\"insn\"'", tool, tc2);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_STR(out, "{\"type\":\"insn\",\"id\":16,\"addr\":\"0xc002115c\",\"isa\":\"T32\",\"size\":2,"
		       "\"opcode\":\"0x6963\",\"cond\":\"pass\",\"cycles\":1}\n");

	/* Several sources: records come out interleaved by timestamp, so the
	 * timestamps of all sources never go back; in capture order (the
	 * ETB's) they do, a few times. Both orders print the same records. */
	for (int order = 0; order < 2; order++) {
		snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl%s", tool, tc2, order ? " --order capture" : "");
		FILE *p = popen(cmd, "r");
		CHECK(p != NULL);
		if (!p)
			continue;
		char line[4096];
		unsigned long long last = 0, back = 0, lines = 0, stamps = 0;
		static unsigned long long lines_time;
		while (fgets(line, sizeof(line), p)) {
			lines++;
			const char *t = strstr(line, "\"type\":\"timestamp\"");
			const char *v = t ? strstr(line, "\"timestamp\":") : NULL;
			if (!v)
				continue;
			unsigned long long ts = strtoull(v + 12, NULL, 10);
			stamps++;
			if (ts < last)
				back++;
			if (ts > last)
				last = ts;
		}
		CHECK_EQ(pclose(p), 0);
		CHECK(stamps > 100);
		if (order == 0) {
			CHECK_EQ(back, 0);
			lines_time = lines;
		} else {
			CHECK(back > 0);
			CHECK_EQ(lines, lines_time);
		}
	}

	/* A capture that ends inside a packet ends normally (exit 0): a valid
	 * A-sync and I-sync, then an I-sync header cut off by the end. */
	const uint8_t cut[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0x01, 0x80, 0x00, 0x80, 0x00, 0x08, 0x08 };
	char snapdir[600];
	snprintf(snapdir, sizeof(snapdir), "%s/cut", tmpdir);
	make_snapshot(snapdir, cut, sizeof(cut));
	snprintf(cmd, sizeof(cmd), "%s packets %s --format jsonl", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "\"packet\":\"isync\"") != NULL);
	CHECK(strstr(out, "\"packet\":\"truncated\",\"id\":19,\"offset\":12") != NULL);
	CHECK(strstr(out, "\"packet\":\"error\"") == NULL);
	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "{\"type\":\"truncated\",\"id\":19,\"offset\":12,\"size\":2,\"reason\":\"truncated I-sync "
			  "packet at end of stream\"}") != NULL);
	CHECK(strstr(out, "\"type\":\"error\"") == NULL);

	/* A trace with an error still prints everything and exits 1: the same,
	 * with a reserved packet header (0x10) before the end. */
	const uint8_t bad[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0x01, 0x80, 0x00, 0x80, 0x00, 0x10, 0x08, 0x08 };
	snprintf(snapdir, sizeof(snapdir), "%s/bad", tmpdir);
	make_snapshot(snapdir, bad, sizeof(bad));
	snprintf(cmd, sizeof(cmd), "%s packets %s --format jsonl", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK(strstr(out, "\"packet\":\"async\"") != NULL);
	CHECK(strstr(out, "\"packet\":\"isync\"") != NULL);
	CHECK(strstr(out, "\"packet\":\"error\",\"id\":19,\"offset\":12") != NULL);
	snprintf(cmd, sizeof(cmd), "%s decode %s --format jsonl", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK(strstr(out, "\"type\":\"error\",\"id\":19,\"offset\":12,\"reason\":\"reserved packet header\"") != NULL);

	/* Decoding without a snapshot: the same bytes, raw. */
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s/trace.bin --protocol ptm --trace-id 0x13 --format jsonl", tool,
		 snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK(strstr(out, "\"type\":\"trace_on\"") != NULL);
	/* --id names the one source's trace ID there, as --trace-id does;
	 * two IDs, or two that differ, are a usage error. */
	static char by_trace_id[sizeof(out)];
	memcpy(by_trace_id, out, sizeof(out));
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s/trace.bin --protocol ptm --id 0x13 --format jsonl", tool,
		 snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK(strstr(out, "\"id\":19,") != NULL);
	CHECK_EQ(strcmp(out, by_trace_id), 0);
	/* ... and --core: only with --trace, a known profile, and no PTM on a
	 * Cortex-M. */
	static const char *const usage_errors[] = { "--id 0x13 --id 0x14", "--id 0x13 --trace-id 0x14", "--core cortex-x",
						    "--core cortex-m4" };
	for (size_t k = 0; k < sizeof(usage_errors) / sizeof(usage_errors[0]); k++) {
		snprintf(cmd, sizeof(cmd), "%s decode --trace %s/trace.bin --protocol ptm %s 2>&1", tool, snapdir,
			 usage_errors[k]);
		expect_says(cmd, 2, "Try 'csdec decode --help'", out, sizeof(out));
	}
	snprintf(cmd, sizeof(cmd), "%s decode %s --core cortex-m3 2>&1", tool, snapdir);
	expect_says(cmd, 2, "--core is for --trace", out, sizeof(out));
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s/trace.bin --protocol ptm --trace-id 0x13 --core Cortex-A15 --format jsonl",
		 tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK_EQ(strcmp(out, by_trace_id), 0);
	/* decode's own options are refused by the commands that take
	 * records, and a usage error points at the command's help. */
	static const char *const takers[] = { "coverage", "profile", "timeline -o /dev/null" };
	for (size_t k = 0; k < sizeof(takers) / sizeof(takers[0]); k++) {
		snprintf(cmd, sizeof(cmd), "%s %s %s --data-only 2>&1", tool, takers[k], snapdir);
		CHECK_EQ(run(cmd, out, sizeof(out)), 2);
		CHECK(strstr(out, "--data-only is an option of decode") != NULL);
		char want[64];
		snprintf(want, sizeof(want), "Try 'csdec %.*s --help'", (int)strcspn(takers[k], " "), takers[k]);
		CHECK(strstr(out, want) != NULL);
	}
	/* Options of --trace given with a snapshot would do nothing: refused,
	 * as is a file that is neither a snapshot nor a perf.data file, and a
	 * bad value says which option's. */
	static const char *const trace_only[][2] = {
		{ "--reg ETMCR=0", "--reg is for --trace" }, { "--protocol ptm", "--protocol is for --trace" },
		{ "--formatted", "--formatted is for --trace" }, { "--trace-id 0x13", "--trace-id is for --trace" },
		{ "--formatted=tpiu", "bad --formatted value 'tpiu'" }, { "--elf x@zz", "bad --elf bias 'zz'" },
		{ "--image x@zz", "bad --image address 'zz'" },
	};
	for (size_t k = 0; k < sizeof(trace_only) / sizeof(trace_only[0]); k++) {
		snprintf(cmd, sizeof(cmd), "%s decode %s %s 2>&1", tool, snapdir, trace_only[k][0]);
		expect_says(cmd, 2, trace_only[k][1], out, sizeof(out));
	}
	snprintf(cmd, sizeof(cmd), "%s decode %s/trace.bin 2>&1", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2);
	CHECK(strstr(out, "trace.bin is neither a snapshot directory nor a perf.data file") != NULL);
	/* Trace that nothing decodes is said: an ID the capture lacks, and
	 * a capture's ID that no source of the snapshot claims (trace.ini
	 * naming a source that does not exist). A snapshot's source without
	 * trace (a core that ran nothing) is not. */
	snprintf(cmd, sizeof(cmd), "%s decode --trace examples/sample/trace.bin --protocol ptm --formatted --trace-id 0x33 "
		 "--format none 2>&1", tool);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "no trace of ID 0x33 (the capture has 0x10, 0x11)") != NULL);
	snprintf(cmd, sizeof(cmd), "cp -r examples/sample %s/misnamed && sed -i 's/^PTM_0=/PTM_9=/' %s/misnamed/trace.ini && "
		 "%s decode %s/misnamed --format none 2>&1", tmpdir, tmpdir, tool, tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "bytes of trace ID 0x10 and no source with that ID: not decoded") != NULL);
	snprintf(cmd, sizeof(cmd), "cp -r examples/sample %s/misformat && sed -i 's/^format=coresight/format=coresigt/' "
		 "%s/misformat/trace.ini && %s decode %s/misformat --format none 2>&1", tmpdir, tmpdir, tool, tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 1);
	CHECK(strstr(out, "warning: buffer ETB_0: unknown format 'coresigt'") != NULL);
	/* A snapshot with nothing to decode says what it lacks. */
	static const char *const lacks[][3] = {
		{ "s/\\[device_list\\]/[device_lst]/", "snapshot.ini", "is snapshot.ini's [device_list] there?" },
		{ "s/\\[trace\\]/[trce]/", "snapshot.ini", "(no trace buffer: snapshot.ini's [trace] metadata=" },
		{ "s/\\[source_buffers\\]/[source_buffer]/", "trace.ini", "trace.ini's [source_buffers] links them" },
	};
	for (size_t k = 0; k < sizeof(lacks) / sizeof(lacks[0]); k++) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s/lacks && cp -r examples/sample %s/lacks && sed -i '%s' %s/lacks/%s && "
			 "%s decode %s/lacks --format none 2>&1", tmpdir, tmpdir, lacks[k][0], tmpdir, lacks[k][1], tool, tmpdir);
		expect_says(cmd, 2, lacks[k][2], out, sizeof(out));
	}
	snprintf(cmd, sizeof(cmd), "%s decode %s/misnamed --format none --id 0x11 2>&1", tool, tmpdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "warning") == NULL);
	snprintf(cmd, sizeof(cmd), "%s decode %s/traces/TC2 --format none 2>&1", tool, check_shared_dir());
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "warning") == NULL);
	snprintf(cmd, sizeof(cmd), "%s coverage %s 2>&1 >/dev/full", tool, snapdir);
	run(cmd, out, sizeof(out));
	CHECK(strstr(out, "write error: No space left on device") != NULL);
	snprintf(cmd, sizeof(cmd), "%s decode --trace %s/trace.bin 2>/dev/null", tool, snapdir);
	CHECK_EQ(run(cmd, out, sizeof(out)), 2); /* --protocol missing */

	gen_mistakes(tool, tmpdir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_cli");
}
