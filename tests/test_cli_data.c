/*
 * test_cli_data.c - `csdec decode --data-only` on ETMv3 data trace.
 *
 * Traces made here with the library's encoder, decoded with --trace:
 * - a normal trace (ETMCR[3:2] = both) of a store then a load, then a data
 *   packet no instruction is left to match: --data-only prints the two
 *   accesses and the error record, and nothing of the instructions (no
 *   insn, range, trace_on or context records), in JSON Lines and in text;
 *   without --data-only the instruction records are there;
 * - a data-only trace (ETMCR[20]): its records have the address and value
 *   and no "insn", "dir" or "size", with --data-only and without.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csdec.h"

#include "check.h"
#include "cli_run.h"

#define ETMIDR 0x410CF250u
#define CODE_ADDR 0x8000u

static char tmpdir[] = "/tmp/csd_test_cli_data_XXXXXX";
static char out[65536];

struct enc {
	csd_etm3_encoder *e;
	uint8_t buf[512];
	size_t n;
};

static void put(struct enc *w, const struct csd_packet *p)
{
	int k = csd_etm3_enc_packet(w->e, p, w->buf + w->n, sizeof(w->buf) - w->n);
	CHECK(k > 0);
	if (k > 0)
		w->n += (size_t)k;
}

static struct csd_packet pkt(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static struct csd_packet data(uint32_t addr, int with_addr, uint32_t value)
{
	struct csd_packet p = pkt(CSD_PKT_NORMAL_DATA);
	p.flags = CSD_PKTF_DATA_VALUE;
	p.data_value = value;
	p.data_size = value == 0 ? 0 : value < 0x100 ? 1 : value < 0x10000 ? 2 : 4;
	if (with_addr) {
		p.flags |= CSD_PKTF_DATA_ADDR;
		p.data_addr = addr;
	}
	return p;
}

static void e_atom(struct enc *w)
{
	struct csd_packet p = pkt(CSD_PKT_PHEADER);
	p.atoms.format = 1;
	p.atoms.num = 1;
	p.atoms.en = 1;
	put(w, &p);
}

/* A-sync, then an I-sync at CODE_ADDR (ARM) or its data-only form. */
static void start(struct enc *w, uint32_t etmcr)
{
	struct csd_trace_config cfg = { .size = sizeof(cfg), .protocol = CSD_PROTO_ETM3, .etmcr = etmcr, .etmidr = ETMIDR };
	w->e = csd_etm3_enc_new(&cfg);
	CHECK(w->e != NULL);
	w->n = 0;
	struct csd_packet p = pkt(CSD_PKT_ASYNC);
	put(w, &p);
	p = pkt(CSD_PKT_ISYNC);
	p.addr = CODE_ADDR;
	p.isa = CSD_ISA_ARM;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	p.reason = CSD_REASON_TRACE_ON;
	put(w, &p);
}

static void save(struct enc *w, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(w->buf, 1, w->n, f), w->n);
		fclose(f);
	}
	csd_etm3_enc_free(w->e);
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

static int decode(const char *trace, uint32_t etmcr, const char *opts)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "%s decode --trace %s/%s --protocol etm3 --reg ETMIDR=0x%08x --reg ETMCR=0x%08x "
		 "--image %s/code.bin@0x%x %s",
		 getenv("CSD_TOOL"), tmpdir, trace, ETMIDR, etmcr, tmpdir, CODE_ADDR, opts);
	return cli_run_cmd(cmd, "/dev/null", out, sizeof(out));
}

int main(void)
{
	if (!getenv("CSD_TOOL")) {
		fprintf(stderr, "CSD_TOOL not set\n");
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* str r1, [r0]; ldr r2, [r0, #4]; b . */
	static const uint8_t code[] = { 0x00, 0x10, 0x80, 0xE5, 0x04, 0x20, 0x90, 0xE5, 0xFE, 0xFF, 0xFF, 0xEA };
	char path[256];
	snprintf(path, sizeof(path), "%s/code.bin", tmpdir);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(code, 1, sizeof(code), f), sizeof(code));
		fclose(f);
	}

	/* Normal trace: the store, the load, then a packet with nothing to
	 * match (the branch transfers nothing). */
	const uint32_t both = 3u << 2;
	struct enc w;
	start(&w, both);
	e_atom(&w);
	struct csd_packet p = data(0x20000, 1, 0x12);
	put(&w, &p);
	e_atom(&w);
	p = data(0x20004, 1, 0xABCD);
	put(&w, &p);
	e_atom(&w);
	p = data(0x20008, 1, 7);
	put(&w, &p);
	e_atom(&w);
	save(&w, "normal.bin");

	int st = decode("normal.bin", both, "--data-only --format jsonl");
	CHECK_EQ(st, 1); /* the error record */
	CHECK_EQ(count(out, "\n"), 3);
	CHECK(strstr(out, "{\"type\":\"data\",\"id\":16,\"insn\":\"0x00008000\",\"dir\":\"store\",\"size\":4,"
			  "\"addr\":\"0x00020000\",\"value\":\"0x00000012\"}\n") != NULL);
	CHECK(strstr(out, "{\"type\":\"data\",\"id\":16,\"insn\":\"0x00008004\",\"dir\":\"load\",\"size\":4,"
			  "\"addr\":\"0x00020004\",\"value\":\"0x0000abcd\"}\n") != NULL);
	CHECK(strstr(out, "\"type\":\"error\"") != NULL);
	CHECK(strstr(out, "no load or store transfer left") != NULL);
	CHECK(!strstr(out, "\"type\":\"insn\"") && !strstr(out, "\"type\":\"range\"") &&
	      !strstr(out, "\"type\":\"trace_on\"") && !strstr(out, "\"type\":\"context\""));
	/* The same with --insn: the filter does not depend on the mode. */
	st = decode("normal.bin", both, "--data-only --insn --format jsonl");
	CHECK_EQ(st, 1);
	CHECK_EQ(count(out, "\"type\":\"data\""), 2);
	CHECK_EQ(count(out, "\n"), 3);
	/* Text: the accesses with their instruction, and the error. */
	st = decode("normal.bin", both, "--data-only");
	CHECK_EQ(st, 1);
	CHECK(strstr(out, "store 4 [0x00020000] = 0x00000012  (insn 0x00008000)") != NULL);
	CHECK(strstr(out, "load  4 [0x00020004] = 0x0000abcd  (insn 0x00008004)") != NULL);
	CHECK(strstr(out, "error") != NULL);
	CHECK(!strstr(out, "trace on") && !strstr(out, "e5801000"));
	/* Without --data-only the instructions are there too. */
	st = decode("normal.bin", both, "--insn --format jsonl");
	CHECK_EQ(st, 1);
	CHECK_EQ(count(out, "\"type\":\"insn\""), 4);
	CHECK_EQ(count(out, "\"type\":\"data\""), 2);
	CHECK(strstr(out, "\"type\":\"trace_on\"") != NULL);

	/* Data-only trace: two transfers, the second at the next word. */
	const uint32_t data_only = both | 1u << 20;
	start(&w, data_only);
	p = data(0x30000, 1, 0x11223344);
	put(&w, &p);
	p = data(0, 0, 0x55);
	put(&w, &p);
	save(&w, "data-only.bin");
	for (int filtered = 0; filtered <= 1; filtered++) {
		st = decode("data-only.bin", data_only, filtered ? "--data-only --format jsonl" : "--format jsonl");
		CHECK_EQ(st, 0);
		CHECK_EQ(count(out, "\"type\":\"data\""), 2);
		CHECK(strstr(out, "{\"type\":\"data\",\"id\":16,\"addr\":\"0x00030000\",\"value\":\"0x11223344\"}\n") != NULL);
		CHECK(strstr(out, "{\"type\":\"data\",\"id\":16,\"addr\":\"0x00030004\",\"value\":\"0x00000055\"}\n") != NULL);
		CHECK(!strstr(out, "\"insn\"") && !strstr(out, "\"dir\"") && !strstr(out, "\"size\""));
	}
	st = decode("data-only.bin", data_only, "--data-only");
	CHECK_EQ(st, 0);
	CHECK(strstr(out, "data    [0x00030004] = 0x00000055") != NULL);
	CHECK(!strstr(out, "insn 0x"));

	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_cli_data");
}
