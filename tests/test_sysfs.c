/*
 * `csdec decode --trace FILE --formatted --sysfs DIR`: the trace
 * configuration from a copy of an ETM's sysfs directory, as the Linux
 * coresight-etm3x driver lays it out (mgmt/etmcr, mgmt/etmidr,
 * mgmt/etmccer, mgmt/etmtraceidr or traceid, values written "0x..."). The
 * directories are made from TC2's register values (read from its device
 * files, not written here), and each decode must equal the snapshot's
 * decode of that source, record for record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"

static char tmpdir[] = "/tmp/csd_test_sysfs_XXXXXX";
static const char *tool, *tc2;
static char out_a[1 << 20], out_b[1 << 20], err_text[4096], err_path[1200];

/* A register's value in a TC2 device file ("ETMCR(0x000)=0x10001860"). */
static int ini_reg(const char *file, const char *reg, unsigned long *v)
{
	char path[1200], line[256];
	snprintf(path, sizeof(path), "%s/%s", tc2, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int found = 0;
	size_t n = strlen(reg);
	while (!found && fgets(line, sizeof(line), f))
		if (strncasecmp(line, reg, n) == 0 && (line[n] == '(' || line[n] == '=')) {
			char *eq = strchr(line, '=');
			if (eq) {
				*v = strtoul(eq + 1, NULL, 0);
				found = 1;
			}
		}
	fclose(f);
	return found;
}

static void put(const char *dir, const char *name, unsigned long v)
{
	char path[1400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "%#lx\n", v);
		fclose(f);
	}
}

/* sysfs copy of the source in TC2 device file `dev`; the trace ID in
 * traceid or mgmt/etmtraceidr. Returns the trace ID. */
static unsigned long make_sysfs(const char *dir, const char *dev, int id_in_mgmt)
{
	char mgmt[1300];
	snprintf(mgmt, sizeof(mgmt), "%s/mgmt", dir);
	mkdir(dir, 0700);
	mkdir(mgmt, 0700);
	static const char *const regs[] = { "ETMCR", "ETMIDR", "ETMCCER" };
	static const char *const files[] = { "etmcr", "etmidr", "etmccer" };
	unsigned long v, id = 0;
	for (int k = 0; k < 3; k++) {
		CHECK(ini_reg(dev, regs[k], &v));
		put(mgmt, files[k], v);
	}
	CHECK(ini_reg(dev, "ETMTRACEIDR", &id));
	put(id_in_mgmt ? mgmt : dir, id_in_mgmt ? "etmtraceidr" : "traceid", id);
	/* Other files of the directory are there too and change nothing. */
	put(dir, "cpu", 0);
	put(mgmt, "etmccr", 0x8c802000);
	return id & 0x7f;
}

static int run(const char *args, char *out, size_t cap)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "timeout 60 %s %s", tool, args);
	int rc = cli_run_cmd(cmd, err_path, out, cap);
	cli_read_text(err_path, err_text, sizeof(err_text));
	return rc;
}

int main(void)
{
	tool = getenv("CSD_TOOL");
	if (!tool) {
		fprintf(stderr, "CSD_TOOL is not set (run through make test)\n");
		return 1;
	}
	static char tc2buf[1024];
	snprintf(tc2buf, sizeof(tc2buf), "%s/traces/TC2", check_shared_dir());
	tc2 = tc2buf;
	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(err_path, sizeof(err_path), "%s/stderr", tmpdir);

	/* The kernel's code, as the snapshot's cores have it. */
	unsigned long dump_at = 0;
	{
		char path[1200], line[256];
		snprintf(path, sizeof(path), "%s/cpu_0.ini", tc2);
		FILE *f = fopen(path, "r");
		CHECK(f != NULL);
		while (f && fgets(line, sizeof(line), f))
			if (strncmp(line, "address=", 8) == 0)
				dump_at = strtoul(line + 8, NULL, 0);
		if (f)
			fclose(f);
	}
	CHECK(dump_at != 0);

	/* ETMv3.5 (ETM_0, trace ID in traceid) and PTM (PTM_0, in mgmt). */
	static const struct {
		const char *dev;
		int id_in_mgmt;
		int with_protocol;
	} src[] = { { "device_5.ini", 0, 1 }, { "device_8.ini", 1, 0 }, { "device_6.ini", 1, 1 } };
	for (size_t k = 0; k < sizeof(src) / sizeof(src[0]); k++) {
		char dir[1200], args[4096];
		snprintf(dir, sizeof(dir), "%s/etm%zu", tmpdir, k);
		unsigned long id = make_sysfs(dir, src[k].dev, src[k].id_in_mgmt);
		unsigned long idr = 0;
		CHECK(ini_reg(src[k].dev, "ETMIDR", &idr));
		const char *proto = ((idr >> 8) & 0xF) == 3 ? "ptm" : "etm3";
		snprintf(args, sizeof(args), "decode --trace %s/cstrace.bin --formatted --sysfs %s%s%s "
			 "--image %s/kernel_dump.bin@%#lx --format jsonl", tc2, dir,
			 src[k].with_protocol ? " --protocol " : "", src[k].with_protocol ? proto : "", tc2, dump_at);
		int ra = run(args, out_a, sizeof(out_a));
		snprintf(args, sizeof(args), "decode %s --id %#lx --format jsonl", tc2, id);
		int rb = run(args, out_b, sizeof(out_b));
		CHECK_EQ(ra, rb);
		CHECK(strlen(out_a) > 10000);
		CHECK_STR(out_a, out_b);
	}

	/* --reg wins over the directory; a protocol ETMIDR contradicts, a
	 * directory without the driver's registers, a value that is no number. */
	char dir0[1200], args[4096];
	snprintf(dir0, sizeof(dir0), "%s/etm0", tmpdir);
	snprintf(args, sizeof(args), "decode --trace %s/cstrace.bin --formatted --sysfs %s --protocol ptm", tc2, dir0);
	CHECK_EQ(run(args, out_a, sizeof(out_a)), 2);
	CHECK(strstr(err_text, "is not a PTM ID") != NULL);
	CHECK(strstr(err_text, "--sysfs") != NULL);
	snprintf(args, sizeof(args), "decode --trace %s/cstrace.bin --formatted --sysfs %s --reg ETMTRACEIDR=0x13 "
		 "--reg ETMIDR=0x411CF312 --reg ETMCR=0x10001000 --reg ETMCCER=0x34C01AC2 --image %s/kernel_dump.bin@%#lx "
		 "--format jsonl", tc2, dir0, tc2, dump_at);
	CHECK_EQ(run(args, out_a, sizeof(out_a)), 0);
	snprintf(args, sizeof(args), "decode %s --id 0x13 --format jsonl", tc2);
	CHECK_EQ(run(args, out_b, sizeof(out_b)), 0);
	CHECK_STR(out_a, out_b);
	snprintf(args, sizeof(args), "decode --trace %s/cstrace.bin --sysfs %s", tc2, tmpdir);
	CHECK_EQ(run(args, out_a, sizeof(out_a)), 2);
	CHECK(strstr(err_text, "no mgmt/etmcr") != NULL);
	char mgmt[1300];
	snprintf(mgmt, sizeof(mgmt), "%s/mgmt", dir0);
	FILE *f = fopen(strcat(mgmt, "/etmccer"), "w");
	if (f) {
		fputs("oops\n", f);
		fclose(f);
	}
	snprintf(args, sizeof(args), "decode --trace %s/cstrace.bin --formatted --sysfs %s", tc2, dir0);
	CHECK_EQ(run(args, out_a, sizeof(out_a)), 2);
	CHECK(strstr(err_text, "expected a 32-bit number") != NULL);
	snprintf(args, sizeof(args), "decode %s --sysfs %s", tc2, dir0);
	CHECK_EQ(run(args, out_a, sizeof(out_a)), 2);

	char cmd[1300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_sysfs");
}
