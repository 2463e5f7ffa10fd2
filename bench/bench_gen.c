/*
 * bench_gen.c - large generated inputs for `make bench` until `csdec gen`
 * can repeat a program run: the library's trace generator (src/gen.c) fed
 * the instruction sequence DS-5 decoded from one TC2 source (real Thumb-2
 * kernel code, with its trace gaps), over and over until the trace reaches
 * the requested size. The jump from the end of the list back to its start
 * is traced as a gap, as the generator does for any unexplainable
 * successor.
 *
 *   bench_gen ptm|etm3 MB TC2_DIR OUT_DIR
 *
 * OUT_DIR becomes a snapshot: one source with the registers of TC2's PTM_0
 * (ptm, DS-5 list of 0x13) or ETM_0 (etm3, list of 0x10) - cycle-accurate,
 * timestamps - its raw trace (format source_data) and TC2's kernel dump
 * (a symlink) as the core's memory.
 */
/* realpath(), symlink() */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds5_dump.h"
#include "gen.h"

struct out_file {
	FILE *f;
	uint64_t bytes;
};

static int sink(void *ctx, const uint8_t *b, size_t n)
{
	struct out_file *o = ctx;
	if (fwrite(b, 1, n, o->f) != n)
		return CSD_EIO;
	o->bytes += n;
	return 0;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_gen: %s: %s\n", what, why);
	exit(2);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		die(path, "cannot write");
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "ptm") != 0 && strcmp(argv[1], "etm3") != 0)) {
		fprintf(stderr, "usage: bench_gen ptm|etm3 MB TC2_DIR OUT_DIR\n");
		return 2;
	}
	const int ptm = strcmp(argv[1], "ptm") == 0;
	const uint64_t want = strtoull(argv[2], NULL, 10) * 1024 * 1024;
	const char *tc2 = argv[3], *out = argv[4];
	char path[PATH_MAX], src_path[PATH_MAX];

	/* TC2's registers of the source whose instructions are replayed. */
	struct csd_trace_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.protocol = ptm ? CSD_PROTO_PTM : CSD_PROTO_ETM3;
	cfg.etmcr = ptm ? 0x10001000u : 0x10001860u;
	cfg.etmccer = ptm ? 0x34C01AC2u : 0x344008F2u;
	cfg.etmidr = ptm ? 0x411CF312u : 0x410CF250u;
	cfg.trace_id = ptm ? 0x13 : 0x10;

	struct ds5_dump d;
	snprintf(path, sizeof(path), "%s/ds5-dumps/%s", tc2, ptm ? "ptmv1_0x13.txt" : "etmv3_0x10.txt");
	if (ds5_load(path, &d) < 0)
		die(path, "cannot read");
	snprintf(src_path, sizeof(src_path), "%s/kernel_dump.bin", tc2);
	csd_image *img = csd_image_new();
	if (!img || csd_image_add_file(img, src_path, 0, 0, 0xC0008000u) < 0)
		die(src_path, "cannot load");

	if (mkdir(out, 0777) < 0 && errno != EEXIST)
		die(out, strerror(errno));
	snprintf(path, sizeof(path), "%s/trace.bin", out);
	struct out_file of = { fopen(path, "wb"), 0 };
	if (!of.f)
		die(path, "cannot create");
	static char iobuf[1 << 20];
	setvbuf(of.f, iobuf, _IOFBF, sizeof(iobuf));

	struct csdi_gen_config gc;
	memset(&gc, 0, sizeof(gc));
	gc.trace = cfg;
	gc.context_id = 0x4a5b6c7d;
	struct csdi_gen *g = csdi_gen_new(&gc, img, sink, &of);
	if (!g)
		die("generator", "bad configuration");
	uint64_t passes = 0;
	while (of.bytes < want) {
		for (size_t i = 0; i < d.n; i++)
			if (d.rec[i].kind == DS5_INSN && csdi_gen_insn(g, d.rec[i].addr, CSD_ISA_THUMB) < 0)
				die("generator", "cannot encode");
		passes++;
	}
	if (csdi_gen_finish(g) < 0 || fclose(of.f) != 0)
		die(path, "cannot write");
	const struct csdi_gen_stats *st = csdi_gen_stats(g);

	char text[1024];
	write_text(out, "snapshot.ini",
		   "[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\ndevice1=source.ini\n\n"
		   "[trace]\nmetadata=trace.ini\n");
	write_text(out, "cpu_0.ini",
		   "[device]\nname=cpu_0\nclass=core\ntype=Cortex-A15\n\n[regs]\nR15=0xC0008000\n\n"
		   "[dump]\nfile=kernel_dump.bin\naddress=0xC0008000\n");
	snprintf(text, sizeof(text),
		 "[device]\nname=%s\nclass=trace_source\ntype=%s\n\n[regs]\nETMCR(0x000)=0x%08X\n"
		 "ETMIDR(0x079)=0x%08X\nETMCCER(0x07A)=0x%08X\nETMTRACEIDR(0x080)=0x%08X\n",
		 ptm ? "PTM_0" : "ETM_0", ptm ? "PTM1.1" : "ETM3.5", cfg.etmcr, cfg.etmidr, cfg.etmccer,
		 cfg.trace_id);
	write_text(out, "source.ini", text);
	snprintf(text, sizeof(text),
		 "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=TRACE_0\nfile=trace.bin\nformat=source_data\n\n"
		 "[source_buffers]\n%s=TRACE_0\n\n[core_trace_sources]\ncpu_0=%s\n",
		 ptm ? "PTM_0" : "ETM_0", ptm ? "PTM_0" : "ETM_0");
	write_text(out, "trace.ini", text);
	snprintf(path, sizeof(path), "%s/kernel_dump.bin", out);
	unlink(path);
	char abs_src[PATH_MAX];
	if (!realpath(src_path, abs_src) || symlink(abs_src, path) < 0)
		die(path, "cannot link the kernel dump");

	printf("bench_gen: %s: %llu passes, %llu instructions traced, %llu bytes, %llu gaps\n", out,
	       (unsigned long long)passes, (unsigned long long)st->traced, (unsigned long long)st->bytes,
	       (unsigned long long)st->gaps);
	csdi_gen_free(g);
	csd_image_free(img);
	ds5_free(&d);
	return 0;
}
