/*
 * The csdec tool against what a hostile or careless user gives it: special
 * files where regular ones belong, values out of range, sources that cannot
 * be told apart, broken ELFs, output that cannot be written. Each case must
 * end promptly, with exit status 2 (or 1 where trace was lost) and a
 * message that names the file and the reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "csdec.h"

static char tmpdir[] = "/tmp/csd_test_cli_hostile_XXXXXX";
static const char *tool;
static char out[1 << 16], err_text[1 << 14], err_path[1100];

static const char *tmp(const char *name)
{
	static char bufs[4][1100];
	static int k;
	char *b = bufs[k++ & 3];
	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(p, 1, n, f), n);
		fclose(f);
	}
}

static void write_text(const char *path, const char *text)
{
	write_bytes(path, text, strlen(text));
}

/* Run `args` of the tool under a time limit; the exit status (124 when the
 * limit struck), stdout in out, stderr in err_text. */
static int tool_run(const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "timeout 20 %s %s", tool, args);
	int rc = cli_run_cmd(cmd, err_path, out, sizeof(out));
	cli_read_text(err_path, err_text, sizeof(err_text));
	return rc;
}

#define EXPECT(args, status, msg) do { \
	int st_ = tool_run(args); \
	CHECK_EQ(st_, status); \
	if (!strstr(err_text, msg)) { \
		fprintf(stderr, "%s:%d: stderr of '%s' lacks \"%s\":\n%s\n", __FILE__, __LINE__, args, msg, err_text); \
		CHECK(0); \
	} \
} while (0)

/* PTM bytes: A-sync, I-sync at addr (ARM), then `atoms` atom packets of
 * five E atoms each. */
static size_t ptm_trace(uint8_t *buf, size_t cap, uint32_t addr, unsigned atoms)
{
	struct csd_trace_config cfg = { .size = sizeof(cfg), .protocol = CSD_PROTO_PTM, .etmidr = 0x411CF312u };
	csd_ptm_encoder *enc = csd_ptm_enc_new(&cfg);
	CHECK(enc != NULL);
	size_t n = 0;
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ASYNC;
	n += (size_t)csd_ptm_enc_packet(enc, &p, buf + n, cap - n);
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ISYNC;
	p.addr = addr;
	p.isa = CSD_ISA_ARM;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	p.reason = CSD_REASON_PERIODIC;
	n += (size_t)csd_ptm_enc_packet(enc, &p, buf + n, cap - n);
	for (unsigned i = 0; i < atoms; i++) {
		memset(&p, 0, sizeof(p));
		p.type = CSD_PKT_ATOM;
		p.atoms.num = 5;
		p.atoms.en = 0x1F;
		int k = csd_ptm_enc_packet(enc, &p, buf + n, cap - n);
		CHECK(k > 0);
		n += (size_t)(k > 0 ? k : 0);
	}
	csd_ptm_enc_free(enc);
	return n;
}

static void special_files(void)
{
	char args[2048];
	/* A FIFO opened for reading would wait for a writer; never. */
	CHECK_EQ(mkfifo(tmp("fifo"), 0600), 0);
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm", tmp("fifo"));
	EXPECT(args, 2, "fifo: not a regular file (a FIFO)");
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --image %s@0", tmp("t.bin"), tmp("fifo"));
	write_bytes(tmp("t.bin"), "", 0);
	EXPECT(args, 2, "fifo: not a regular file (a FIFO)");
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --elf %s --format none", tmp("t.bin"),
		 tmp("fifo"));
	EXPECT(args, 2, "fifo: not a regular file (a FIFO)");
	/* The same where the ELF file's symbols are read too (the listing,
	 * coverage, profile, timeline). */
	static const char *const with_symbols[] = { "decode", "coverage", "profile", "timeline -o /dev/null" };
	for (size_t k = 0; k < sizeof(with_symbols) / sizeof(with_symbols[0]); k++) {
		snprintf(args, sizeof(args), "%s --trace %s --protocol ptm --elf %s", with_symbols[k], tmp("t.bin"),
			 tmp("fifo"));
		EXPECT(args, 2, "fifo: not a regular file (a FIFO)");
	}
	/* /dev/zero would be read for ever; a directory is no trace either. */
	EXPECT("decode --trace /dev/zero --protocol ptm --format none", 2,
	       "/dev/zero: not a regular file (a character device)");
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --format none", tmpdir);
	EXPECT(args, 2, "not a regular file (a directory)");

	/* In a snapshot: a device file, a dump, a buffer. */
	mkdir(tmp("snap"), 0700);
	write_text(tmp("snap/snapshot.ini"), "[device_list]\ndevice0=ptm.ini\ndevice1=cpu.ini\n[trace]\nmetadata=trace.ini\n");
	write_text(tmp("snap/ptm.ini"), "[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n[regs]\n"
					"ETMIDR=0x411CF312\nETMTRACEIDR=0x10\n");
	write_text(tmp("snap/cpu.ini"), "[device]\nname=cpu_0\nclass=core\ntype=Cortex-A9\n[dump1]\nfile=../fifo\n"
					"address=0x8000\n");
	/* The buffer file is found through the snapshot directory: ../../dev/zero. */
	write_text(tmp("snap/trace.ini"), "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB\n"
					  "file=../../../dev/zero\nformat=source_data\n[source_buffers]\nPTM_0=ETB\n"
					  "[core_trace_sources]\ncpu_0=PTM_0\n");
	snprintf(args, sizeof(args), "decode %s --format none", tmp("snap"));
	EXPECT(args, 2, "memory dump of cpu_0: ");
	CHECK(strstr(err_text, "snap/../fifo: not a regular file (a FIFO)") != NULL);
	write_text(tmp("snap/cpu.ini"), "[device]\nname=cpu_0\nclass=core\ntype=Cortex-A9\n");
	EXPECT(args, 2, "dev/zero: not a regular file (a character device)");
	/* No summary line for a run that failed. */
	CHECK_STR(out, "");
	write_text(tmp("snap/ptm.ini"), "[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n");
	write_text(tmp("snap/snapshot.ini"), "[device_list]\ndevice0=ptm.ini\ndevice1=fifo.ini\n");
	if (symlink("../fifo", tmp("snap/fifo.ini")) == 0)
		EXPECT(args, 2, "fifo.ini: cannot open: not a regular file (a FIFO)");
	unlink(tmp("snap/fifo.ini"));
	/* A missing dump: its path and the OS reason. */
	write_text(tmp("snap/snapshot.ini"), "[device_list]\ndevice0=ptm.ini\ndevice1=cpu.ini\n[trace]\nmetadata=trace.ini\n");
	write_text(tmp("snap/ptm.ini"), "[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n[regs]\nETMTRACEIDR=0x10\n");
	write_text(tmp("snap/cpu.ini"), "[device]\nname=cpu_0\nclass=core\n[dump1]\nfile=gone.bin\naddress=0x8000\n");
	EXPECT(args, 2, "snap/gone.bin: cannot open: No such file or directory");
	/* A byte-order mark in front of an .ini file is fine. */
	static const char bom[] = "\xEF\xBB\xBF[device_list]\ndevice0=ptm.ini\n[trace]\nmetadata=trace.ini\n";
	write_text(tmp("snap/snapshot.ini"), bom);
	uint8_t trace[256];
	size_t n = ptm_trace(trace, sizeof(trace), 0x8000, 4);
	write_bytes(tmp("snap/trace.bin"), trace, n);
	write_text(tmp("snap/trace.ini"), "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB\nfile=trace.bin\n"
					  "format=source_data\n[source_buffers]\nPTM_0=ETB\n");
	CHECK_EQ(tool_run(args), 0); /* no image: the atoms are spent in unknown memory, no error */
	CHECK(strstr(out, "records") != NULL);
}

static void bad_values(void)
{
	char args[2048];
	write_bytes(tmp("t.bin"), "", 0);
	snprintf(args, sizeof(args), "decode --trace %s --protocol etm3 --reg ETMCR=0x100000000", tmp("t.bin"));
	EXPECT(args, 2, "does not fit in 32 bits");
	snprintf(args, sizeof(args), "decode --trace %s --protocol etm3 --reg ETMTRACEIDR=0x7F", tmp("t.bin"));
	EXPECT(args, 2, "bad trace ID (expected 1..0x6f)");
	snprintf(args, sizeof(args), "decode --trace %s --protocol etm3 --reg ETMTRACEIDR=0", tmp("t.bin"));
	EXPECT(args, 2, "bad trace ID");
	snprintf(args, sizeof(args), "decode --trace %s --protocol etm3 --reg ETMTRACEIDR=0x6f --format none",
		 tmp("t.bin"));
	CHECK_EQ(tool_run(args), 0);
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --reg ETMIDR=0x410CF250", tmp("t.bin"));
	EXPECT(args, 2, "is not a PTM ID");
	snprintf(args, sizeof(args), "decode --trace %s --protocol etm3 --reg ETMIDR=0x411CF312", tmp("t.bin"));
	EXPECT(args, 2, "is not an ETMv3 ID");
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --image @0x8000", tmp("t.bin"));
	EXPECT(args, 2, "no file name");
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --elf @0x8000 --format none", tmp("t.bin"));
	EXPECT(args, 2, "no file name");
	/* An ELF whose program headers pass its end: which check, which offset. */
	uint8_t elf[52] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };
	elf[28] = 0x34;       /* e_phoff */
	elf[42] = 32;         /* e_phentsize */
	elf[44] = 3;          /* e_phnum */
	write_bytes(tmp("bad.elf"), elf, sizeof(elf));
	snprintf(args, sizeof(args), "decode --trace %s --protocol ptm --elf %s --format none", tmp("t.bin"),
		 tmp("bad.elf"));
	EXPECT(args, 2, "bad.elf: 3 program headers of 32 bytes at offset 0x34");
	elf[4] = 2;           /* ELFCLASS64 */
	write_bytes(tmp("bad.elf"), elf, sizeof(elf));
	EXPECT(args, 2, "not a 32-bit little-endian ELF (class 2 at offset 4");
}

/* TC2 with its trace IDs changed: sources that cannot be decoded are named. */
static void ambiguous_sources(void)
{
	const char *tc2 = getenv("CSD_SHARED");
	char src[2048], dst[2048], args[2048];
	static const char *const files[] = { "cpu_0.ini", "cpu_1.ini", "cpu_2.ini", "cpu_3.ini", "cpu_4.ini",
					     "cstrace.bin", "device_10.ini", "device_5.ini", "device_6.ini",
					     "device_8.ini", "device_9.ini", "kernel_dump.bin", "snapshot.ini",
					     "trace.ini" };
	mkdir(tmp("tc2"), 0700);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(src, sizeof(src), "%s/traces/TC2/%s", tc2, files[i]);
		snprintf(dst, sizeof(dst), "%s/tc2/%s", tmpdir, files[i]);
		CHECK_EQ(symlink(src, dst), 0);
	}
	/* device_7.ini is ETM_2 (ID 0x12), written anew with other IDs. */
	snprintf(src, sizeof(src), "%s/traces/TC2/device_7.ini", tc2);
	size_t len;
	unsigned char *text = check_read_file(src, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	char *ini = malloc(len + 64);
	memcpy(ini, text, len);
	ini[len] = 0;
	char *id = strstr(ini, "ETMTRACEIDR(0x080)=0x00000012");
	CHECK(id != NULL);
	snprintf(args, sizeof(args), "decode %s --format none", tmp("tc2"));
	static const struct {
		const char *value, *why;
	} cases[] = {
		{ "0x00000010", "source ETM_0 has the same trace ID" },
		{ "0x00000000", "ID 0 cannot appear in a formatted buffer" },
		{ "0x0000007F", "IDs 0x70-0x7f are reserved" },
	};
	for (size_t c = 0; id && c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(id + strlen("ETMTRACEIDR(0x080)="), cases[c].value, 10);
		write_bytes(tmp("tc2/device_7.ini"), ini, len);
		EXPECT(args, 1, cases[c].why);
		CHECK(strstr(err_text, "warning: source ETM_2") != NULL);
		/* The other three sources decode as before. */
		unsigned long long insns = 0;
		CHECK_EQ(sscanf(out, "%llu instructions", &insns), 1);
		CHECK(insns > 0 && insns < 26171);
	}
	memcpy(id + strlen("ETMTRACEIDR(0x080)="), "0x00000012", 10);
	write_bytes(tmp("tc2/device_7.ini"), ini, len);
	CHECK_EQ(tool_run(args), 0);
	CHECK(strstr(out, "26171 instructions") != NULL);
	CHECK_STR(err_text, "");
	free(ini);
	free(text);
}

/* Output that cannot be written ends the run at once. The input is
 * endless (a loop at 0x8000 traced for ever through standard input), so
 * only the write error can end it. */
static void write_errors(void)
{
	uint8_t trace[4096];
	size_t n = ptm_trace(trace, sizeof(trace), 0x8000, 500);
	write_bytes(tmp("loop.bin"), trace, n);
	static const uint8_t b_self[4] = { 0xFE, 0xFF, 0xFF, 0xEA }; /* b . */
	write_bytes(tmp("code.bin"), b_self, sizeof(b_self));
	char args[3000];
	snprintf(args, sizeof(args), "decode --trace - --protocol ptm --image %s@0x8000 --insn --format jsonl "
		 "< /dev/null > /dev/full", tmp("code.bin"));
	EXPECT(args, 0, ""); /* nothing to write: fine */
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "while cat %s; do :; done | timeout 20 %s decode --trace - --protocol ptm "
		 "--image %s@0x8000 --insn --format jsonl > /dev/full", tmp("loop.bin"), tool, tmp("code.bin"));
	CHECK_EQ(cli_run_cmd(cmd, err_path, out, sizeof(out)), 2);
	cli_read_text(err_path, err_text, sizeof(err_text));
	CHECK(strstr(err_text, "write error: No space left on device") != NULL);
	/* A closed pipe while SIGPIPE is ignored: EPIPE instead of the signal. */
	snprintf(cmd, sizeof(cmd), "trap '' PIPE; while cat %s 2>/dev/null; do :; done | (timeout 20 %s decode "
		 "--trace - --protocol ptm --image %s@0x8000 --insn --format jsonl; echo \"status $?\" >&2) | head -c 1",
		 tmp("loop.bin"), tool, tmp("code.bin"));
	cli_run_cmd(cmd, err_path, out, sizeof(out));
	cli_read_text(err_path, err_text, sizeof(err_text));
	CHECK(strstr(err_text, "write error: Broken pipe") != NULL);
	CHECK(strstr(err_text, "status 2") != NULL);
}

int main(void)
{
	tool = getenv("CSD_TOOL");
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	check_shared_dir();
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(err_path, sizeof(err_path), "%s/stderr", tmpdir);
	special_files();
	bad_values();
	ambiguous_sources();
	write_errors();
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return check_done("test_cli_hostile");
}
