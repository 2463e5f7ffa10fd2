/* test_snapshot.c - snapshot reader: the two shared snapshots, field by
 * field against their .ini text, and error cases on hand-written snapshots
 * created in a temporary directory (line numbers counted in the arrays). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "csdec.h"

static char path_buf[4096];

/* a + "/" + b into buf; the tests' paths always fit. */
static void path_into(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s/%s", a, b);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "path too long: %s/%s\n", a, b);
		exit(1);
	}
}

static const char *join2(const char *dir, const char *name)
{
	path_into(path_buf, sizeof(path_buf), dir, name);
	return path_buf;
}

/* ---- TC2 -------------------------------------------------------------- */

struct want_source {
	const char *name, *type, *core_name, *core_type;
	int buffer;
	uint32_t protocol, etmcr, etmccer, etmidr;
	uint8_t trace_id, profile;
};

static void check_source(const struct csd_snapshot_source *s, const struct want_source *w)
{
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_STR(s->name, w->name);
	CHECK_STR(s->type, w->type);
	if (w->core_name)
		CHECK_STR(s->core_name, w->core_name);
	else
		CHECK(s->core_name == NULL);
	if (w->core_type)
		CHECK_STR(s->core_type, w->core_type);
	else
		CHECK(s->core_type == NULL);
	CHECK_EQ(s->buffer, w->buffer);
	CHECK_EQ(s->config.size, sizeof(struct csd_trace_config));
	CHECK_EQ(s->config.protocol, w->protocol);
	CHECK_EQ(s->config.etmcr, w->etmcr);
	CHECK_EQ(s->config.etmccer, w->etmccer);
	CHECK_EQ(s->config.etmidr, w->etmidr);
	CHECK_EQ(s->config.trace_id, w->trace_id);
	CHECK_EQ(s->config.core_profile, w->profile);
}

static void test_tc2(void)
{
	char dir[4096], err[256];
	csd_snapshot *snap = NULL;

	path_into(dir, sizeof(dir), check_shared_dir(), "traces/TC2");
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc) {
		fprintf(stderr, "TC2: %s\n", err);
		return;
	}
	/* trace.ini: buffers=buffer0; [buffer0] name=ETB_0 file=cstrace.bin
	 * format=coresight. */
	CHECK_EQ(csd_snapshot_num_buffers(snap), 1);
	const struct csd_snapshot_buffer *b = csd_snapshot_buffer(snap, 0);
	CHECK(b != NULL);
	if (b) {
		CHECK_STR(b->name, "ETB_0");
		CHECK_STR(b->path, join2(dir, "cstrace.bin"));
		CHECK_STR(b->format, "coresight");
		CHECK_EQ(b->frame_format, CSD_FRAME_ALIGNED);
	}
	CHECK(csd_snapshot_buffer(snap, 1) == NULL);

	/* device_5.ini .. device_10.ini, [core_trace_sources] cpu_N=..., all
	 * sources in ETB_0; ITMTCR 0x00200006 carries trace ID 0x20. */
	static const struct want_source want[] = {
		{ "ETM_0", "ETM3.5", "cpu_0", "Cortex-A7", 0, CSD_PROTO_ETM3, 0x10001860, 0x344008F2, 0x410CF250, 0x10, CSD_CORE_A },
		{ "ETM_1", "ETM3.5", "cpu_1", "Cortex-A7", 0, CSD_PROTO_ETM3, 0x10001860, 0x344008F2, 0x410CF250, 0x11, CSD_CORE_A },
		{ "ETM_2", "ETM3.5", "cpu_2", "Cortex-A7", 0, CSD_PROTO_ETM3, 0x10001860, 0x344008F2, 0x410CF250, 0x12, CSD_CORE_A },
		{ "PTM_0", "PTM1.1", "cpu_3", "Cortex-A15", 0, CSD_PROTO_PTM, 0x10001000, 0x34C01AC2, 0x411CF312, 0x13, CSD_CORE_A },
		{ "PTM_1", "PTM1.1", "cpu_4", "Cortex-A15", 0, CSD_PROTO_PTM, 0x10001000, 0x34C01AC2, 0x411CF312, 0x14, CSD_CORE_A },
		{ "ITM_0", "ITM", NULL, NULL, 0, CSD_PROTO_UNKNOWN, 0, 0, 0, 0x20, CSD_CORE_A },
	};
	CHECK_EQ(csd_snapshot_num_sources(snap), 6);
	for (size_t i = 0; i < 6; i++)
		check_source(csd_snapshot_source(snap, i), &want[i]);
	CHECK(csd_snapshot_source(snap, 6) == NULL);

	/* cpu_N.ini [dump]: file=kernel_dump.bin address=0xC0008000
	 * length=0x00050000. */
	CHECK_EQ(csd_snapshot_num_dumps(snap), 5);
	for (size_t i = 0; i < 5; i++) {
		const struct csd_snapshot_dump *d = csd_snapshot_dump(snap, i);
		char name[16];
		snprintf(name, sizeof(name), "cpu_%zu", i);
		CHECK(d != NULL);
		if (!d)
			continue;
		CHECK_STR(d->device, name);
		CHECK_STR(d->path, join2(dir, "kernel_dump.bin"));
		CHECK(d->space == NULL);
		CHECK_EQ(d->address, 0xC0008000u);
		CHECK_EQ(d->offset, 0);
		CHECK_EQ(d->length, 0x50000);
	}
	CHECK(csd_snapshot_dump(snap, 5) == NULL);

	uint64_t v = 0;
	CHECK_EQ(csd_snapshot_reg(snap, "cpu_0", "R15", &v), 0);
	CHECK_EQ(v, 0xC0008000u);
	CHECK_EQ(csd_snapshot_reg(snap, "cpu_3", "cpsr", &v), 0);
	CHECK_EQ(v, 0x1D3);
	CHECK_EQ(csd_snapshot_reg(snap, "cpu_3", "R13", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(csd_snapshot_reg(snap, "etm_2", "etmcr", &v), 0);
	CHECK_EQ(v, 0x10001860);
	CHECK_EQ(csd_snapshot_reg(snap, "PTM_1", "ETMTRACEIDR(0x080)", &v), 0);
	CHECK_EQ(v, 0x14);
	CHECK_EQ(csd_snapshot_reg(snap, "ITM_0", "ITMTCR", &v), 0);
	CHECK_EQ(v, 0x00200006);
	CHECK_EQ(csd_snapshot_reg(snap, "ETM_0", "ETMCR2", &v), CSD_ENOENT);
	CHECK_EQ(csd_snapshot_reg(snap, "ETM_0", "ETM", &v), CSD_ENOENT);
	CHECK_EQ(csd_snapshot_reg(snap, "ETM_9", "ETMCR", &v), CSD_ENOENT);
	CHECK_EQ(csd_snapshot_reg(snap, NULL, "ETMCR", &v), CSD_EINVAL);
	CHECK_EQ(csd_snapshot_reg(snap, "ETM_0", "ETMCR", NULL), CSD_EINVAL);
	csd_snapshot_free(snap);
}

/* ---- trace_cov_a15 ---------------------------------------------------- */

static void test_cov_a15(void)
{
	char dir[4096], err[256];
	csd_snapshot *snap = NULL;

	path_into(dir, sizeof(dir), check_shared_dir(), "traces/trace_cov_a15");
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc) {
		fprintf(stderr, "trace_cov_a15: %s\n", err);
		return;
	}
	/* [buffer0] name=PTM_0_2 file=PTM_0_2.bin format=source_data. */
	CHECK_EQ(csd_snapshot_num_buffers(snap), 1);
	const struct csd_snapshot_buffer *b = csd_snapshot_buffer(snap, 0);
	if (b) {
		CHECK_STR(b->name, "PTM_0_2");
		CHECK_STR(b->path, join2(dir, "PTM_0_2.bin"));
		CHECK_STR(b->format, "source_data");
		CHECK_EQ(b->frame_format, CSD_FRAME_RAW);
	}
	/* device2..device6; [core_trace_sources] names cores Cortex-A7_0..2
	 * and Cortex-A15_1 that have no device file (so no core type), and
	 * Cortex-A15_0 = device1.ini (type Cortex-A15); only PTM_0_2 is in
	 * [source_buffers]. */
	static const struct want_source want[] = {
		{ "ETM_0_4", "ETM3.5", "Cortex-A7_0", NULL, -1, CSD_PROTO_ETM3, 0x000E2C42, 0x344008F2, 0x410CF250, 4, CSD_CORE_A },
		{ "ETM_1_5", "ETM3.5", "Cortex-A7_1", NULL, -1, CSD_PROTO_ETM3, 0x000E2C42, 0x344008F2, 0x410CF250, 5, CSD_CORE_A },
		{ "ETM_2_6", "ETM3.5", "Cortex-A7_2", NULL, -1, CSD_PROTO_ETM3, 0x000E2C42, 0x344008F2, 0x410CF250, 6, CSD_CORE_A },
		{ "PTM_0_2", "PFT1.1", "Cortex-A15_0", "Cortex-A15", 0, CSD_PROTO_PTM, 0x20000400, 0x34C01AC2, 0x411CF312, 2, CSD_CORE_A },
		{ "PTM_1_3", "PFT1.1", "Cortex-A15_1", NULL, -1, CSD_PROTO_PTM, 0x20000400, 0x34C01AC2, 0x411CF312, 3, CSD_CORE_A },
	};
	CHECK_EQ(csd_snapshot_num_sources(snap), 5);
	for (size_t i = 0; i < 5; i++)
		check_source(csd_snapshot_source(snap, i), &want[i]);

	/* device1.ini [dump1]..[dump9]: space=S, address, file; no length. */
	static const struct {
		uint64_t address;
		const char *file;
	} dumps[] = {
		{ 0x80000000, "mem_Cortex-A15_0_0_VECTORS.bin" },
		{ 0x80000278, "mem_Cortex-A15_0_1_RO_CODE.bin" },
		{ 0x80001C28, "mem_Cortex-A15_0_2_RO_DATA.bin" },
		{ 0x80001D58, "mem_Cortex-A15_0_3_RW_DATA.bin" },
		{ 0x80001D68, "mem_Cortex-A15_0_4_ZI_DATA.bin" },
		{ 0x80040000, "mem_Cortex-A15_0_5_ARM_LIB_HEAP.bin" },
		{ 0x80080000, "mem_Cortex-A15_0_6_ARM_LIB_STACK.bin" },
		{ 0x80090000, "mem_Cortex-A15_0_7_IRQ_STACK.bin" },
		{ 0x80100000, "mem_Cortex-A15_0_8_TTB.bin" },
	};
	CHECK_EQ(csd_snapshot_num_dumps(snap), 9);
	for (size_t i = 0; i < 9; i++) {
		const struct csd_snapshot_dump *d = csd_snapshot_dump(snap, i);
		CHECK(d != NULL);
		if (!d)
			continue;
		CHECK_STR(d->device, "Cortex-A15_0");
		CHECK_STR(d->path, join2(dir, dumps[i].file));
		CHECK_STR(d->space, "S");
		CHECK_EQ(d->address, dumps[i].address);
		CHECK_EQ(d->offset, 0);
		CHECK_EQ(d->length, 0);
	}

	uint64_t v = 0;
	CHECK_EQ(csd_snapshot_reg(snap, "Cortex-A15_0", "CNTPCT", &v), 0);      /* CNTPCT(size:64) */
	CHECK_EQ(v, 0x0000042492EE776Dull);
	CHECK_EQ(csd_snapshot_reg(snap, "Cortex-A15_0", "PC", &v), 0);
	CHECK_EQ(v, 0x8000055C);
	CHECK_EQ(csd_snapshot_reg(snap, "PTM_0_2", "ETMVMIDCVR", &v), 0);      /* (id:0x90) */
	CHECK_EQ(v, 9);
	CHECK_EQ(csd_snapshot_reg(snap, "ptm_0_2", "ETMCCR(id:0x1)", &v), 0);
	CHECK_EQ(v, 0x8D294004);
	csd_snapshot_free(snap);
}

/* ---- error cases ------------------------------------------------------ */

static char tmpdir[] = "/tmp/csd_snapshot_test_XXXXXX";
static char names[64][64];
static int n_names;

static void write_file(const char *name, const char *const *lines, size_t n)
{
	char path[4096];
	path_into(path, sizeof(path), tmpdir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fclose(f);
	for (int i = 0; i < n_names; i++)
		if (!strcmp(names[i], name))
			return;
	if (n_names < 64)
		snprintf(names[n_names++], sizeof(names[0]), "%s", name);
}

static void write_bytes(const char *name, const uint8_t *p, size_t n)
{
	char path[4096];
	path_into(path, sizeof(path), tmpdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n)
		exit(1);
	fclose(f);
	for (int i = 0; i < n_names; i++)
		if (!strcmp(names[i], name))
			return;
	if (n_names < 64)
		snprintf(names[n_names++], sizeof(names[0]), "%s", name);
}

#define WRITE(name, ...) do { \
	static const char *const l_[] = { __VA_ARGS__ }; \
	write_file(name, l_, sizeof(l_) / sizeof(l_[0])); \
} while (0)

/* Open the temporary snapshot; expect rc and an error starting with msg. */
static void expect_error(int want_rc, const char *msg)
{
	char err[512];
	csd_snapshot *snap = (csd_snapshot *)&err;     /* must be reset to NULL */
	int rc = csd_snapshot_open(tmpdir, &snap, err, sizeof(err));
	CHECK_EQ(rc, want_rc);
	CHECK(snap == NULL);
	if (strncmp(err, msg, strlen(msg)) != 0) {
		CHECK_STR(err, msg);
	} else {
		CHECK(1);
	}
}

static void good_base(void)
{
	WRITE("snapshot.ini",
	      "; test snapshot",                /* 1 */
	      "[snapshot]",                     /* 2 */
	      "version=1.0",                    /* 3 */
	      "",                               /* 4 */
	      "[device_list]",                  /* 5 */
	      "device1=core.ini",               /* 6 */
	      "device2=etm.ini",                /* 7 */
	      "",                               /* 8 */
	      "[trace]",                        /* 9 */
	      "metadata=trace.ini");            /* 10 */
	WRITE("core.ini",
	      "[device]",                       /* 1 */
	      "name=core0",                     /* 2 */
	      "class=core",                     /* 3 */
	      "type=Cortex-M3",                 /* 4 */
	      "[regs]",                         /* 5 */
	      "PC = 0x100  # comment",          /* 6 */
	      "[dump]",                         /* 7 */
	      "file=\"code.bin\"",              /* 8 */
	      "address=4096",                   /* 9 */
	      "offset=0x10",                    /* 10 */
	      "length=32");                     /* 11 */
	WRITE("etm.ini",
	      "[device]",                       /* 1 */
	      "name=ETM_0",                     /* 2 */
	      "class=trace_source",             /* 3 */
	      "type=ETM3.4",                    /* 4 */
	      "",                               /* 5 */
	      "[regs]",                         /* 6 */
	      "ETMCR(0x000)=0x00000C00",        /* 7 */
	      "ETMTRACEIDR(0x080)=0x15");       /* 8 */
	WRITE("trace.ini",
	      "[trace_buffers]",                /* 1 */
	      "buffers=buffer0, buffer1",       /* 2 */
	      "",                               /* 3 */
	      "[buffer0]",                      /* 4 */
	      "name=TPIU",                      /* 5 */
	      "file=tpiu.bin",                  /* 6 */
	      "format=dstream_coresight",       /* 7 */
	      "[buffer1]",                      /* 8 */
	      "name=ETF",                       /* 9 */
	      "file=etf.bin",                   /* 10 */
	      "format=coresight",               /* 11 */
	      "[source_buffers]",               /* 12 */
	      "ETM_0=ETF",                      /* 13 */
	      "[core_trace_sources]",           /* 14 */
	      "core0=ETM_0");                   /* 15 */
}

static void test_good_fixture(void)
{
	char err[256];
	csd_snapshot *snap = NULL;

	good_base();
	int rc = csd_snapshot_open(tmpdir, &snap, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc) {
		fprintf(stderr, "fixture: %s\n", err);
		return;
	}
	CHECK_EQ(csd_snapshot_num_buffers(snap), 2);
	const struct csd_snapshot_buffer *b = csd_snapshot_buffer(snap, 0);
	if (b) {
		CHECK_STR(b->name, "TPIU");
		CHECK_EQ(b->frame_format, CSD_FRAME_PORT);
	}
	b = csd_snapshot_buffer(snap, 1);
	if (b) {
		CHECK_STR(b->name, "ETF");
		CHECK_EQ(b->frame_format, CSD_FRAME_ALIGNED);
	}
	CHECK_EQ(csd_snapshot_num_sources(snap), 1);
	static const struct want_source w = { "ETM_0", "ETM3.4", "core0", "Cortex-M3", 1, CSD_PROTO_ETM3,
					      0xC00, 0, 0, 0x15, CSD_CORE_M };
	check_source(csd_snapshot_source(snap, 0), &w);
	CHECK_EQ(csd_snapshot_num_dumps(snap), 1);
	const struct csd_snapshot_dump *d = csd_snapshot_dump(snap, 0);
	if (d) {
		CHECK_STR(d->device, "core0");
		CHECK_STR(d->path, join2(tmpdir, "code.bin"));
		CHECK_EQ(d->address, 4096);
		CHECK_EQ(d->offset, 16);
		CHECK_EQ(d->length, 32);
	}
	uint64_t v;
	CHECK_EQ(csd_snapshot_reg(snap, "core0", "pc", &v), 0);
	CHECK_EQ(v, 0x100);
	csd_snapshot_free(snap);
}

static void test_errors(void)
{
	char err[512], missing[4200];
	csd_snapshot *snap = NULL;

	/* Missing snapshot.ini. */
	path_into(missing, sizeof(missing), tmpdir, "no_such_dir");
	CHECK_EQ(csd_snapshot_open(missing, &snap, err, sizeof(err)), CSD_EIO);
	CHECK(snap == NULL);
	CHECK(strncmp(err, "snapshot.ini: cannot open: ", 27) == 0);
	CHECK(strstr(err, missing) != NULL);
	CHECK_EQ(csd_snapshot_open(NULL, &snap, err, sizeof(err)), CSD_EINVAL);
	CHECK_EQ(csd_snapshot_open(tmpdir, NULL, err, sizeof(err)), CSD_EINVAL);

	/* Missing device file: named with the line that lists it. */
	good_base();
	WRITE("snapshot.ini",
	      "[device_list]",                  /* 1 */
	      "device1=core.ini",               /* 2 */
	      "; the next file does not exist", /* 3 */
	      "device2=absent.ini");            /* 4 */
	expect_error(CSD_EIO, "snapshot.ini:4: device file absent.ini: cannot open: ");

	/* A device file that is a directory cannot be read. */
	char sub[4200];
	path_into(sub, sizeof(sub), tmpdir, "subdir.ini");
	mkdir(sub, 0700);
	WRITE("snapshot.ini", "[device_list]", "device1=subdir.ini");
	expect_error(CSD_EIO, "snapshot.ini:2: device file subdir.ini: cannot open: not a regular file (a directory)");
	rmdir(sub);

	/* Missing trace metadata. */
	good_base();
	WRITE("snapshot.ini", "[device_list]", "d=core.ini", "[trace]", "metadata=nothere.ini");
	expect_error(CSD_EIO, "snapshot.ini:4: trace metadata nothere.ini: cannot open: ");

	/* Malformed line. */
	good_base();
	WRITE("trace.ini",
	      "[trace_buffers]",                /* 1 */
	      "buffers=buffer0",                /* 2 */
	      "",                               /* 3 */
	      "[buffer0]",                      /* 4 */
	      "name=ETB",                       /* 5 */
	      "file=etb.bin",                   /* 6 */
	      "format coresight");              /* 7 */
	expect_error(CSD_EFORMAT, "trace.ini:7: expected key=value");

	/* Bad numbers. */
	good_base();
	WRITE("etm.ini",
	      "[device]",                       /* 1 */
	      "name=ETM_0",                     /* 2 */
	      "class=trace_source",             /* 3 */
	      "type=ETM3.5",                    /* 4 */
	      "[regs]",                         /* 5 */
	      "ETMCR(0x000)=0x12G4");           /* 6 */
	expect_error(CSD_EFORMAT, "etm.ini:6: bad number '0x12G4' for ETMCR(0x000)");
	WRITE("etm.ini", "[device]", "name=ETM_0", "class=trace_source", "type=ETM3.5", "[regs]",
	      "ETMIDR=0x1FFFFFFFF");            /* 6 */
	expect_error(CSD_EFORMAT, "etm.ini:6: ETMIDR value does not fit in 32 bits");
	WRITE("etm.ini", "[device]", "name=ETM_0", "class=trace_source", "type=ETM3.5", "[regs]",
	      "ETMTRACEIDR=");                  /* 6 */
	expect_error(CSD_EFORMAT, "etm.ini:6: bad number '' for ETMTRACEIDR");
	good_base();
	WRITE("core.ini",
	      "[device]",                       /* 1 */
	      "name=core0",                     /* 2 */
	      "[dump1]",                        /* 3 */
	      "file=a.bin",                     /* 4 */
	      "address=0x1000",                 /* 5 */
	      "length=-5");                     /* 6 */
	expect_error(CSD_EFORMAT, "core.ini:6: bad number '-5' for length");
	WRITE("core.ini", "[device]", "name=core0", "[dump1]", "file=a.bin",
	      "address=0x10000000000000000");   /* 5: 65 bits */
	expect_error(CSD_EFORMAT, "core.ini:5: bad number '0x10000000000000000' for address");
	WRITE("core.ini", "[device]", "name=core0", "[dump1]", "file=a.bin");
	expect_error(CSD_EFORMAT, "core.ini:3: [dump1] has no address");
	WRITE("core.ini", "[device]", "name=core0", "[dump]", "address=0");
	expect_error(CSD_EFORMAT, "core.ini:3: [dump] has no file");

	/* Structure errors. */
	good_base();
	WRITE("core.ini", "[device]", "name=core0", "class=core", "name=core1");
	expect_error(CSD_EFORMAT, "core.ini:4: duplicate key 'name' in [device] (first on line 2)");
	WRITE("core.ini", "[regs]", "PC=0", "pc=1");
	expect_error(CSD_EFORMAT, "core.ini:3: duplicate key 'pc' in [regs] (first on line 2)");
	WRITE("core.ini", "name=core0", "[device]");
	expect_error(CSD_EFORMAT, "core.ini:1: key=value before the first [section]");
	WRITE("core.ini", "[device", "name=core0");
	expect_error(CSD_EFORMAT, "core.ini:1: expected ']' at the end of the section header");
	WRITE("core.ini", "[ ]");
	expect_error(CSD_EFORMAT, "core.ini:1: empty section name");
	WRITE("core.ini", "[device]", "=core0");
	expect_error(CSD_EFORMAT, "core.ini:2: expected key=value");
	WRITE("core.ini", "[regs]", "PC=0");
	expect_error(CSD_EFORMAT, "core.ini: no [device] section");
	WRITE("core.ini", "[device]", "class=core");
	expect_error(CSD_EFORMAT, "core.ini:1: [device] has no name");
	WRITE("core.ini", "[device]", "name=ETM_0");
	expect_error(CSD_EFORMAT, "etm.ini: device name 'ETM_0' already used by core.ini");
	good_base();
	WRITE("snapshot.ini", "[snapshot]", "version=2.0", "[device_list]", "d=core.ini");
	expect_error(CSD_EFORMAT, "snapshot.ini:2: unsupported snapshot version '2.0'");
	good_base();
	WRITE("trace.ini", "[trace_buffers]", "buffers=buffer0,buffer7", "[buffer0]", "name=A", "file=a.bin");
	expect_error(CSD_EFORMAT, "trace.ini:2: no [buffer7] section for buffer 'buffer7'");
	WRITE("trace.ini", "[trace_buffers]", "buffers=buffer0", "[buffer0]", "name=A");
	expect_error(CSD_EFORMAT, "trace.ini:3: [buffer0] has no file");
	WRITE("trace.ini", "[trace_buffers]", "buffers=buffer0", "[buffer0]", "name=A", "file=a.bin",
	      "[source_buffers]", "ETM_0=B");   /* 7 */
	expect_error(CSD_EFORMAT, "trace.ini:7: source ETM_0 names unknown buffer 'B'");
	WRITE("trace.ini", "[trace_buffers]", "buffers=buffer0", "[buffer0]", "name=A", "file=a.bin",
	      "format=xyz");
	/* An unknown format is kept as written and read unformatted. */
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, err, sizeof(err)), 0);
	if (snap) {
		CHECK_STR(csd_snapshot_buffer(snap, 0)->format, "xyz");
		CHECK_EQ(csd_snapshot_buffer(snap, 0)->frame_format, CSD_FRAME_RAW);
		CHECK_EQ(csd_snapshot_source(snap, 0)->buffer, -1);
		csd_snapshot_free(snap);
		snap = NULL;
	}

	/* Hostile files: binary junk, control characters, a huge line, a
	 * huge file. */
	good_base();
	static const uint8_t junk[] = { '[', 'd', 'e', 'v', 'i', 'c', 'e', ']', '\n', 'n', 0, 'x', '\n' };
	write_bytes("core.ini", junk, sizeof(junk));
	expect_error(CSD_EFORMAT, "core.ini:2: binary data (NUL byte)");
	static const uint8_t ctl[] = { '[', 'd', 'e', 'v', 'i', 'c', 'e', ']', '\n', 'n', 'a', 0x1b, '=', '1', '\n' };
	write_bytes("core.ini", ctl, sizeof(ctl));
	expect_error(CSD_EFORMAT, "core.ini:2: unexpected control character 0x1b");
	size_t big = 5u << 20;
	uint8_t *p = malloc(big);
	CHECK(p != NULL);
	if (p) {
		memset(p, 'a', big);
		memcpy(p, "[device]\nname=x\nk=", 18);
		write_bytes("core.ini", p, 10000);
		expect_error(CSD_EFORMAT, "core.ini:3: line too long");
		for (size_t i = 0; i < big; i += 64)
			p[i] = '\n';
		write_bytes("core.ini", p, big);
		expect_error(CSD_EFORMAT, "core.ini: file too large");
		free(p);
	}

	/* Random bytes in every file: an error, never a crash. */
	uint32_t x = 12345;
	uint8_t rnd[3000];
	for (int round = 0; round < 60; round++) {
		good_base();
		for (size_t i = 0; i < sizeof(rnd); i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* Mostly printable, with structure characters. */
			static const char pick[] = "[]=;#\n \tabcdef0x19ETMCR()\r\"";
			rnd[i] = (x & 0x1000) ? (uint8_t)x : (uint8_t)pick[(x >> 3) % (sizeof(pick) - 1)];
		}
		size_t len = 1 + x % sizeof(rnd);
		const char *victim = round % 4 == 0 ? "snapshot.ini" : round % 4 == 1 ? "core.ini" :
				     round % 4 == 2 ? "etm.ini" : "trace.ini";
		write_bytes(victim, rnd, len);
		int rc = csd_snapshot_open(tmpdir, &snap, err, sizeof(err));
		CHECK(rc == 0 || (rc < 0 && err[0] != 0 && snap == NULL));
		csd_snapshot_free(snap);
		snap = NULL;
	}

	/* A tiny error buffer is truncated, never overrun; NULL is fine. */
	good_base();
	WRITE("core.ini", "[device]", "=core0");
	char small[8];
	memset(small, 'z', sizeof(small));
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, small, 6), CSD_EFORMAT);
	CHECK_STR(small, "core.");
	CHECK_EQ(small[6], 'z');
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, NULL, 0), CSD_EFORMAT);

	/* NULL snapshot accessors. */
	CHECK_EQ(csd_snapshot_num_buffers(NULL), 0);
	CHECK_EQ(csd_snapshot_num_sources(NULL), 0);
	CHECK_EQ(csd_snapshot_num_dumps(NULL), 0);
	CHECK(csd_snapshot_buffer(NULL, 0) == NULL);
	CHECK(csd_snapshot_source(NULL, 0) == NULL);
	CHECK(csd_snapshot_dump(NULL, 0) == NULL);
	uint64_t v;
	CHECK_EQ(csd_snapshot_reg(NULL, "a", "b", &v), CSD_EINVAL);
	csd_snapshot_free(NULL);
}

/* Files that are not what they seem, sections and registers given twice,
 * absolute names, a byte-order mark (issue: hostile snapshots). */
static void test_hostile(void)
{
	char err[512], path[4200];
	csd_snapshot *snap = NULL;

	/* A FIFO as a device file fails at once instead of waiting for a
	 * writer (the test would hang otherwise). */
	good_base();
	path_into(path, sizeof(path), tmpdir, "fifo.ini");
	unlink(path);
	CHECK_EQ(mkfifo(path, 0600), 0);
	WRITE("snapshot.ini", "[device_list]", "device1=core.ini", "device2=fifo.ini");
	expect_error(CSD_EIO, "snapshot.ini:3: device file fifo.ini: cannot open: not a regular file (a FIFO)");
	/* ... and as a memory dump. */
	good_base();
	WRITE("core.ini", "[device]", "name=core0", "class=core", "[dump]", "file=fifo.ini", "address=0x1000");
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, err, sizeof(err)), 0);
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_snapshot_load_image(snap, "core0", img), CSD_EIO);
	char want[4400];
	snprintf(want, sizeof(want), "%s: not a regular file (a FIFO)", path);
	CHECK_STR(csd_image_error(img), want);
	csd_image_free(img);
	csd_snapshot_free(snap);
	snap = NULL;
	unlink(path);

	/* Sections looked up by name must be unique; [regs], [device_list]
	 * and [dump...] may repeat. */
	good_base();
	WRITE("core.ini", "[device]", "name=core0", "class=core", "[device]", "name=core1");
	expect_error(CSD_EFORMAT, "core.ini:4: section [device] given twice (first on line 1)");
	good_base();
	WRITE("trace.ini", "[trace_buffers]", "buffers=buffer0", "[buffer0]", "name=ETB", "file=etb.bin",
	      "[BUFFER0]", "name=ETF", "file=etf.bin");
	expect_error(CSD_EFORMAT, "trace.ini:6: section [BUFFER0] given twice (first on line 3)");
	good_base();
	WRITE("snapshot.ini", "[snapshot]", "version=1.0", "[device_list]", "device1=core.ini", "[trace]",
	      "metadata=trace.ini", "[snapshot]", "version=1.0");
	expect_error(CSD_EFORMAT, "snapshot.ini:7: section [snapshot] given twice (first on line 1)");
	/* A register in two [regs] sections, or under two spellings. */
	good_base();
	WRITE("etm.ini", "[device]", "name=ETM_0", "class=trace_source", "type=ETM3.4", "[regs]",
	      "ETMCR(0x000)=0x00000C00", "[regs]", "ETMTRACEIDR=0x15", "etmcr=0");
	expect_error(CSD_EFORMAT, "etm.ini:9: register etmcr given twice (first as ETMCR(0x000) on line 6)");
	WRITE("etm.ini", "[device]", "name=ETM_0", "class=trace_source", "type=ETM3.4", "[regs]",
	      "ETMCR(0x000)=0x00000C00", "ETMCR =0x1000");
	expect_error(CSD_EFORMAT, "etm.ini:7: register ETMCR given twice (first as ETMCR(0x000) on line 6)");
	good_base();
	WRITE("core.ini", "[device]", "name=core0", "class=core", "[regs]", "R0=1", "[regs]", "R1=2",
	      "[dump1]", "file=code.bin", "address=0", "[dump1]", "file=code.bin", "address=0x100");
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, err, sizeof(err)), 0);
	CHECK_EQ(csd_snapshot_num_dumps(snap), 2);
	csd_snapshot_free(snap);
	snap = NULL;

	/* An absolute file name is used as written, not joined to the
	 * directory ("dir//abs"). */
	good_base();
	path_into(path, sizeof(path), tmpdir, "code.bin");
	char line[4300];
	snprintf(line, sizeof(line), "file=%s", path);
	const char *const core_abs[] = { "[device]", "name=core0", "class=core", "[dump]", line, "address=0x2000" };
	write_file("core.ini", core_abs, 6);
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, err, sizeof(err)), 0);
	CHECK_EQ(csd_snapshot_num_dumps(snap), 1);
	if (csd_snapshot_num_dumps(snap) == 1)
		CHECK_STR(csd_snapshot_dump(snap, 0)->path, path);
	csd_snapshot_free(snap);
	snap = NULL;

	/* A UTF-8 byte-order mark before the first line is not content. */
	good_base();
	static const char bom_ini[] = "\xEF\xBB\xBF[device_list]\ndevice1=core.ini\n";
	write_bytes("snapshot.ini", (const uint8_t *)bom_ini, sizeof(bom_ini) - 1);
	CHECK_EQ(csd_snapshot_open(tmpdir, &snap, err, sizeof(err)), 0);
	csd_snapshot_free(snap);
	snap = NULL;
}

int main(void)
{
	test_tc2();
	test_cov_a15();
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_good_fixture();
	test_errors();
	test_hostile();
	for (int i = 0; i < n_names; i++)
		unlink(join2(tmpdir, names[i]));
	rmdir(tmpdir);
	return check_done("test_snapshot");
}
