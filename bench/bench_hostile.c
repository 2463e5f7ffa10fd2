/*
 * bench_hostile.c - the "hostile walk" input of `make bench`: PTM trace
 * whose every packet sends the decoder into 16 MiB of zeros, which holds
 * no waypoint, so that each walk runs to the end of the image (up to 2^22
 * instructions, the walk limit). Before the walk cache (src/walk_cache.c)
 * a packet cost milliseconds; the row shows what such input costs now
 * against normal trace.
 *
 *   bench_hostile MB OUT_DIR
 *
 * OUT_DIR becomes a snapshot: one PTM source (not cycle-accurate, no
 * return stack), its raw trace of MB MiB - an A-sync and an I-sync in A32
 * at the image's start, then branch address packets with full 5-byte
 * addresses (A32), every other one to an address drawn at random from
 * the whole image and the others to 16 fixed addresses in turn - and a
 * core whose memory is 16 MiB of zeros at 0x01000000.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csdec.h"

#define IMAGE_BASE 0x01000000u
#define IMAGE_SIZE (16u << 20)

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_hostile: %s: %s\n", what, why);
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

static void put(csd_ptm_encoder *enc, const struct csd_packet *p, FILE *f, uint64_t *bytes)
{
	uint8_t buf[32];
	int n = csd_ptm_enc_packet(enc, p, buf, sizeof(buf));
	if (n <= 0)
		die("encoder", csd_errstr(n));
	if (fwrite(buf, 1, (size_t)n, f) != (size_t)n)
		die("trace", "cannot write");
	*bytes += (uint64_t)n;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench_hostile MB OUT_DIR\n");
		return 2;
	}
	const uint64_t want = strtoull(argv[1], NULL, 10) * 1024 * 1024;
	const char *out = argv[2];
	char path[PATH_MAX];
	if (mkdir(out, 0777) < 0 && errno != EEXIST)
		die(out, strerror(errno));

	/* The image: zeros (A32 ANDEQ r0, r0, r0; no waypoint). */
	snprintf(path, sizeof(path), "%s/zeros.bin", out);
	FILE *f = fopen(path, "wb");
	static uint8_t zero[1 << 16];
	for (uint32_t done = 0; f && done < IMAGE_SIZE; done += sizeof(zero))
		if (fwrite(zero, 1, sizeof(zero), f) != sizeof(zero))
			die(path, "cannot write");
	if (!f || fclose(f) != 0)
		die(path, "cannot write");

	struct csd_trace_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.protocol = CSD_PROTO_PTM;
	cfg.etmidr = 0x411CF312u;
	cfg.etmccer = 0x34C01AC2u;
	cfg.trace_id = 0x13;
	csd_ptm_encoder *enc = csd_ptm_enc_new(&cfg);
	if (!enc)
		die("encoder", "cannot create");
	snprintf(path, sizeof(path), "%s/trace.bin", out);
	f = fopen(path, "wb");
	if (!f)
		die(path, "cannot create");
	static char iobuf[1 << 20];
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	uint64_t bytes = 0, packets = 0;
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ASYNC;
	put(enc, &p, f, &bytes);
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ISYNC;
	p.addr = IMAGE_BASE;
	p.isa = CSD_ISA_ARM;
	p.reason = CSD_REASON_TRACE_ON;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	put(enc, &p, f, &bytes);
	uint32_t x = 0x2545F491u; /* xorshift32 */
	while (bytes < want) {
		memset(&p, 0, sizeof(p));
		p.type = CSD_PKT_BRANCH;
		p.isa = CSD_ISA_ARM;
		p.flags = CSD_PKTF_ISA;
		p.addr_bytes = 5;
		if (packets & 1) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			p.addr = IMAGE_BASE + (x & (IMAGE_SIZE - 4));
		} else {
			p.addr = IMAGE_BASE + ((uint32_t)(packets / 2 % 16) * 0xFFFF0u & (IMAGE_SIZE - 4));
		}
		put(enc, &p, f, &bytes);
		packets++;
	}
	if (fclose(f) != 0)
		die(path, "cannot write");
	csd_ptm_enc_free(enc);

	char text[1024];
	write_text(out, "snapshot.ini",
		   "[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\ndevice1=source.ini\n\n"
		   "[trace]\nmetadata=trace.ini\n");
	snprintf(text, sizeof(text),
		 "[device]\nname=cpu_0\nclass=core\ntype=Cortex-A9\n\n[regs]\nR15=0x%08X\n\n"
		 "[dump]\nfile=zeros.bin\naddress=0x%08X\nlength=0x%X\n",
		 IMAGE_BASE, IMAGE_BASE, IMAGE_SIZE);
	write_text(out, "cpu_0.ini", text);
	snprintf(text, sizeof(text),
		 "[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n\n[regs]\nETMCR(0x000)=0x%08X\n"
		 "ETMIDR(0x079)=0x%08X\nETMCCER(0x07A)=0x%08X\nETMTRACEIDR(0x080)=0x%08X\n",
		 cfg.etmcr, cfg.etmidr, cfg.etmccer, cfg.trace_id);
	write_text(out, "source.ini", text);
	write_text(out, "trace.ini",
		   "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=TRACE_0\nfile=trace.bin\nformat=source_data\n\n"
		   "[source_buffers]\nPTM_0=TRACE_0\n\n[core_trace_sources]\ncpu_0=PTM_0\n");
	printf("bench_hostile: %s: %llu branch packets, %llu bytes\n", out, (unsigned long long)packets,
	       (unsigned long long)bytes);
	return 0;
}
