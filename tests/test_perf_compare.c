/*
 * test_perf_compare.c - Linux perf decodes csdec's perf.data files to the
 * runs. Every recorded test program run (tests/programs.mk) is turned by
 * `csdec gen --perf-data` into the file `perf record -e cs_etm//u
 * --per-thread` would have written (PTM and ETMv3: plain, cycle-accurate,
 * with context IDs), and `perf script --itrace=i1i -F ip` (an instruction
 * sample for every instruction; OpenCSD decodes) must list exactly the
 * run's instructions that lie in the program's image, but for the
 * differences explained in docs/opencsd-differences.md, each checked here
 * from the addresses and csdec's own decode of the file:
 *   - ETMv3, OpenCSD's "instruction set forgotten at the next P-header":
 *     where the run had switched instruction set by a direct BLX (only
 *     fall-throughs and direct branches since), perf's instructions are one
 *     walk of the code in the other set, one per atom, until that walk
 *     cannot go on, and perf goes on with the run at the first instruction
 *     after the next address in the trace (branch address or I-sync, as
 *     csdec's decode places them), having added nothing;
 *   - perf's "end of an AUX buffer lost": what perf leaves out is the run
 *     up to the end of an AUX buffer exactly, traced by its last bytes, and
 *     perf goes on with the next buffer's first instruction (where each
 *     buffer ends in the run comes from decoding the file's buffers one by
 *     one with csdec, which must give the run);
 * anything else fails. The plain PTM and ETMv3 files are one AUX buffer
 * each, and there PTM must be exact; the other configurations are cut into
 * buffers of about 4 KiB. PTM with the return stack is left out: perf gives
 * OpenCSD neither ETMCCER nor ETMIDR, so OpenCSD never enables its return
 * stack (a perf defect, same document).
 *
 * Files are written in AUXTRACE_INFO version 1, which perf 6.1 reads; when
 * the perf binary handles AUX_OUTPUT_HW_ID records (newer perf, which reads
 * version 2), version 2 files are compared too.
 *
 * Skipped (exit 0, saying why) where no perf is installed or the perf
 * binary has no CoreSight decoder (it carries cs_etm's message texts only
 * when built with OpenCSD). CSD_PERF names the perf to use; CSD_PERF_PROGRAM
 * one program to compare; CSD_PERF_VERBOSE=1 prints every explained
 * difference. The sanitizer build compares three programs (perf, the slow
 * part, is the same binary there).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arm_isa.h"
#include "check.h"
#include "perf_enc.h"
#include "perf_file.h"
#include "../tools/qemu_log.c"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#endif

static int verbose;

/* The end of an AUX buffer that perf loses is what OpenCSD had taken in but
 * not given out when perf moved on: no more than the last few frames. */
#define TAIL_BYTES 512

#define LOOKBACK 4096    /* how far back a BLX is looked for */

struct seq {
	uint32_t *addr;
	uint8_t *isa;    /* run only */
	size_t n, cap;
};

static void seq_push(struct seq *s, uint32_t addr, uint8_t isa)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 65536;
		s->addr = realloc(s->addr, s->cap * sizeof(*s->addr));
		s->isa = realloc(s->isa, s->cap);
		if (!s->addr || !s->isa)
			abort();
	}
	s->addr[s->n] = addr;
	s->isa[s->n] = isa;
	s->n++;
}

static void seq_free(struct seq *s)
{
	free(s->addr);
	free(s->isa);
	memset(s, 0, sizeof(*s));
}

/* The run's instructions inside the ELF image. */
static int load_run(const char *elf, csd_image *img, struct seq *run)
{
	char path[2100];
	snprintf(path, sizeof(path), "%s.log", elf);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	static struct qemu_log_reader rd;
	qemu_log_reader_init_file(&rd, f);
	struct qemu_log_insn qi;
	int r;
	while ((r = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
		uint8_t b;
		if (r == QEMU_LOG_INSN && csd_image_read(img, qi.addr, &b, 1) == 1)
			seq_push(run, qi.addr, qi.isa);
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Finding perf */

/* The file contains the text. */
static int file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t nl = strlen(needle), keep = nl - 1, have = 0;
	static char buf[1 << 16];
	int found = 0;
	size_t got;
	while (!found && (got = fread(buf + have, 1, sizeof(buf) - have, f)) > 0) {
		have += got;
		for (size_t i = 0; i + nl <= have && !found; i++)
			found = buf[i] == needle[0] && memcmp(buf + i, needle, nl) == 0;
		if (have > keep) {
			memmove(buf, buf + have - keep, keep);
			have = keep;
		}
	}
	fclose(f);
	return found;
}

/* The perf executable: CSD_PERF, or `perf` on the PATH. */
static int find_perf(char *out, size_t cap)
{
	const char *env = getenv("CSD_PERF");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		return 0;
	while (*path) {
		size_t len = strcspn(path, ":");
		snprintf(out, cap, "%.*s/perf", (int)len, path);
		if (len && access(out, X_OK) == 0)
			return 1;
		path += len + (path[len] == ':');
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Running the tool and perf */

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* perf's instruction samples of the file: one address per line. Returns
 * perf's exit status. */
static int perf_insns(const char *perf, const char *tmp, const char *file, struct seq *out)
{
	char cmd[16384];
	snprintf(cmd, sizeof(cmd),
		 "HOME='%s' '%s' --buildid-dir '%s/bid' script -i '%s' --itrace=i1i -F ip 2>'%s/perf.err'", tmp,
		 perf, tmp, file, tmp);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[256];
	while (fgets(line, sizeof(line), p)) {
		char *end;
		unsigned long a = strtoul(line, &end, 16);
		if (end != line)
			seq_push(out, (uint32_t)a, 0);
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------------ */
/* The comparison */

static int insn_at(csd_image *img, uint32_t addr, int isa, struct csdi_insn *in)
{
	uint8_t code[4];
	int got = csd_image_read(img, addr, code, sizeof(code));
	return got > 0 && csdi_isa_decode(addr, code, (size_t)got, isa, in) > 0;
}

/* `to` follows `from` when the code is walked in *isa without an address
 * (a fall-through or a direct branch); *isa follows a BLX. */
static int walk_step(csd_image *img, uint32_t from, uint32_t to, int *isa)
{
	struct csdi_insn in;
	if (!insn_at(img, from, *isa, &in))
		return 0;
	if (from + in.size == to)
		return 1;
	if (in.cls == CSDI_INSN_DIRECT && in.target == to) {
		*isa = in.target_isa;
		return 1;
	}
	return 0;
}

/* The run reached instruction p in its set from a direct branch that
 * switched from `wrong` to that set, through fall-throughs and direct
 * branches only (no indirect branch or exception, which bring an address
 * with the set). */
static int reached_by_blx(csd_image *img, const struct seq *run, size_t p, int wrong)
{
	int right = run->isa[p];
	for (size_t steps = 0; p > 0 && steps < LOOKBACK; steps++, p--) {
		struct csdi_insn in;
		uint32_t prev = run->addr[p - 1], next = run->addr[p];
		if (!insn_at(img, prev, run->isa[p - 1], &in) || (in.flags & CSDI_INSNF_EXCEPTION))
			return 0;
		int direct = in.cls == CSDI_INSN_DIRECT && in.target == next;
		if (!direct && prev + in.size != next)
			return 0;
		if (direct && in.target_isa != in.isa)
			return in.isa == wrong && in.target_isa == right;
	}
	return 0;
}

/* Where each AUX buffer of the file ends in the run, and which of the run's
 * instructions come right after an address (branch address packet or
 * I-sync: where a decoder waiting for an address starts again). Each
 * buffer is decoded alone (a new decoder each, as perf resets its decoder
 * there) by csdec, whose instructions must be the run's. Returns the number
 * of buffers, or -1 if the file cannot be read or its decode is not the run. */
static long decode_buffers(const char *file, const struct csd_trace_config *tc, csd_image *img, const struct seq *run,
			   size_t *ends, size_t cap, uint8_t *addr_pt, uint32_t *to_end)
{
	size_t n;
	uint8_t *d = check_read_file(file, &n);
	static struct parsed p;
	if (!d)
		return -1;
	parse_perf(d, n, &p);
	long nb = p.errors || p.naux != p.nat || p.naux > cap ? -1 : (long)p.naux;
	size_t k = 0;
	const size_t max = 1u << 20;
	uint8_t *src = malloc(max);
	uint64_t *addr_off = malloc(max * sizeof(*addr_off));
	for (long b = 0; b < nb && src && addr_off; b++) {
		/* The source's bytes of the buffer. */
		struct csd_frame_config frc = { .size = sizeof(frc), .format = CSD_FRAME_ALIGNED };
		csd_frame_decoder *frd = csd_frame_new(&frc);
		csd_frame_feed(frd, d + p.at[b].payload, (size_t)p.aux[b].aux_size, 0);
		csd_frame_finish(frd);
		struct csd_frame_out o;
		size_t len = 0;
		while (csd_frame_next(frd, &o) == 0)
			if (o.event == CSD_FRAME_DATA && o.bytes.id == tc->trace_id && len + o.bytes.size <= max) {
				memcpy(src + len, o.bytes.data, o.bytes.size);
				len += o.bytes.size;
			}
		csd_frame_free(frd);
		struct csd_bytes in = { .data = src, .size = len, .id = tc->trace_id };

		/* Its address packets (ETMv3). */
		size_t naddr = 0;
		struct csd_packet pk;
		if (tc->protocol == CSD_PROTO_ETM3) {
			csd_etm3_pkt_decoder *pd = csd_etm3_pkt_new(tc);
			csd_etm3_pkt_feed(pd, &in);
			csd_etm3_pkt_finish(pd);
			while (csd_etm3_pkt_next(pd, &pk) == 0)
				if ((pk.type == CSD_PKT_BRANCH || pk.type == CSD_PKT_ISYNC) && naddr < max)
					addr_off[naddr++] = pk.offset;
			csd_etm3_pkt_free(pd);
		}

		/* Its instructions, each with the offset of the packet that
		 * traced it: an address packet between that of the one before
		 * and its own means it came right after an address. */
		struct csd_flow_config fc;
		memset(&fc, 0, sizeof(fc));
		fc.size = sizeof(fc);
		fc.trace = tc;
		fc.image = img;
		fc.flags = CSD_FLOW_INSN;
		csd_flow_decoder *fd = csd_flow_new(&fc);
		csd_flow_feed(fd, &in);
		csd_flow_finish(fd);
		struct csd_record r;
		size_t a = 0, first = k;
		uint64_t prev = 0;
		while (csd_flow_next(fd, &r) == 0) {
			if (r.type != CSD_REC_INSN)
				continue;
			if (k >= run->n || run->addr[k] != r.addr) {
				nb = -1;
				break;
			}
			int pt = k == first;
			for (; a < naddr && addr_off[a] < r.offset; a++)
				pt |= addr_off[a] > prev;
			addr_pt[k] = (uint8_t)pt;
			to_end[k] = (uint32_t)(len - r.offset);
			prev = r.offset;
			k++;
		}
		csd_flow_free(fd);
		if (nb >= 0)
			ends[b] = k;
	}
	if (!src || !addr_off)
		nb = -1;
	free(src);
	free(addr_off);
	free(d);
	return nb >= 0 && k == run->n ? nb : -1;
}

/* What csdec's decode of the file says about the run: which instructions
 * come right after an address, and where each AUX buffer ends. */
struct layout {
	const uint8_t *addr_pt;
	const uint32_t *to_end; /* bytes from the packet that traced it to its buffer's end */
	const size_t *ends;
	long nb;
};

/* The end of the AUX buffer holding run instruction i. */
static size_t end_of_buffer(const size_t *ends, long nb, size_t i)
{
	for (long b = 0; b < nb; b++)
		if (ends[b] > i)
			return ends[b];
	return (size_t)-1;
}

/* The first run instruction from k on that comes right after an address;
 * run->n if none. */
static size_t next_addr_point(const struct seq *run, const uint8_t *addr_pt, size_t k)
{
	while (k < run->n && !addr_pt[k])
		k++;
	return k;
}

/* Where perf can go on with the run once its walk ended before run
 * instruction k: the first instruction after an address from k on, or,
 * when the end of the AUX buffer was lost too, the next buffer's first. */
static int resumes_at(const struct seq *run, const struct layout *L, size_t k, uint32_t addr, size_t *b)
{
	size_t c[2] = { next_addr_point(run, L->addr_pt, k), end_of_buffer(L->ends, L->nb, k) };
	for (int n = 0; n < 2; n++)
		if (c[n] < run->n && run->addr[c[n]] == addr) {
			*b = c[n];
			return 1;
		}
	return 0;
}

/* No instruction of set isa can be walked at addr: it cannot be read, or
 * is no defined instruction. */
static int unwalkable(csd_image *img, uint32_t addr, int isa)
{
	struct csdi_insn in;
	return !insn_at(img, addr, isa, &in) || (in.flags & CSDI_INSNF_UNDEFINED);
}

/* A walk in set isa that reached addr goes no further: an indirect branch
 * there (the walk waits for an address), or what would come next cannot
 * be walked. */
static int wrong_set_stops(csd_image *img, uint32_t addr, int isa)
{
	struct csdi_insn in;
	if (!insn_at(img, addr, isa, &in) || in.cls == CSDI_INSN_INDIRECT)
		return 1;
	if (unwalkable(img, addr + in.size, in.isa))
		return 1;
	return in.cls == CSDI_INSN_DIRECT && unwalkable(img, in.target, in.target_isa);
}

#define AGREE_MAX 16

/* Instructions from run b and perf a on that are equal (up to AGREE_MAX). */
static size_t agree_len(const struct seq *run, size_t b, const struct seq *pf, size_t a)
{
	size_t n = 0;
	while (n < AGREE_MAX && a + n < pf->n && b + n < run->n && pf->addr[a + n] == run->addr[b + n])
		n++;
	return n;
}

/* Steps perf's instructions take from a on as one walk in set isa (up to
 * AGREE_MAX). Where a perf instruction at an address after a branch in the
 * run is also the next one of the wrong walk, the longer of the two
 * readings is the one perf followed (recursive code returns to where the
 * wrong walk passes). */
static size_t walk_len(csd_image *img, const struct seq *pf, size_t a, int isa)
{
	size_t n = 0;
	while (n < AGREE_MAX && a + n + 1 < pf->n && walk_step(img, pf->addr[a + n], pf->addr[a + n + 1], &isa))
		n++;
	return n;
}

/* perf's instructions from a on read better as the run's from b on than as
 * the wrong walk going on in set isa: they agree with the run longer, or
 * as far as is looked. */
static int agrees_better(const struct seq *run, size_t b, const struct seq *pf, size_t a, csd_image *img, int isa)
{
	size_t agree = agree_len(run, b, pf, a);
	return agree == AGREE_MAX || agree > walk_len(img, pf, a - 1, isa);
}

/*
 * Section "ETMv3: instruction set forgotten at the next P-header". Run and
 * perf agree up to (i, j) and differ there. OpenCSD walked a P-header's
 * atoms from some instruction E on in the instruction set the run had left
 * by a direct BLX (no address packet since), one instruction per atom,
 * until the walk could not go on (after an indirect branch, or before code
 * it cannot read or that is no defined instruction in that set); then it
 * drops atoms until the next address. So:
 *   - E before i: perf's instructions from j - 1 on are one walk in the
 *     wrong set (its first ones may have the same addresses as the run's),
 *     and the run got to i - 1 by the BLX; if the walk has no step of its
 *     own, the wrong set must stop at i - 1;
 *   - E at i: the run's instruction i cannot be walked in the wrong set at
 *     all (unreadable, or undefined there), and the run got to i by the
 *     BLX;
 * and perf goes on with the run's first instruction after an address at or
 * after the atom where its walk ended, or, where the end of that AUX buffer
 * was lost as well (section "perf: the end of an AUX buffer lost"), with
 * the next buffer's first.
 */
static int blx_hunk(csd_image *img, const struct seq *run, const struct layout *L, const struct seq *pf, size_t i,
		    size_t j, size_t *ri, size_t *rj)
{
	if (i == 0 || j == 0 || run->addr[i - 1] != pf->addr[j - 1])
		return 0;
	/* E at i. */
	int wrong_i = run->isa[i] == CSD_ISA_ARM ? CSD_ISA_THUMB : CSD_ISA_ARM;
	if (unwalkable(img, run->addr[i], wrong_i) && reached_by_blx(img, run, i, wrong_i)) {
		size_t b;
		if (j < pf->n && resumes_at(run, L, i + 1, pf->addr[j], &b) && agrees_better(run, b, pf, j, img, wrong_i)) {
			*ri = b;
			*rj = j;
			return 1;
		}
	}
	/* E before i. */
	int wrong = run->isa[i - 1] == CSD_ISA_ARM ? CSD_ISA_THUMB : CSD_ISA_ARM;
	if (!reached_by_blx(img, run, i - 1, wrong))
		return 0;
	int w = wrong;
	for (size_t a = j;; a++) {
		if (a == pf->n) {
			/* perf's trace ends in the walk. */
			*ri = run->n;
			*rj = pf->n;
			return pf->n - j <= run->n - i;
		}
		/* Back at an address: the walk's a - j atoms were the run's
		 * i .. i + a - j - 1. */
		size_t b;
		if (resumes_at(run, L, i + (a - j), pf->addr[a], &b) &&
		    (a > j || wrong_set_stops(img, pf->addr[j - 1], wrong)) && agrees_better(run, b, pf, a, img, w)) {
			*ri = b;
			*rj = a;
			return 1;
		}
		if (!walk_step(img, pf->addr[a - 1], pf->addr[a], &w))
			return 0;
	}
}

struct tally {
	size_t files, buffers, insns, equal, blx_hunks, tail_hunks, tail_lost, unexplained;
};


/*
 * Compare perf's instructions with the run. At a difference, ETMv3 only:
 * the hunk is explained if perf's instructions from the last equal one on
 * walk the code in the other instruction set than the run's (no address
 * between them), the run got there by a BLX from that set, and perf meets
 * the run again later, having dropped instructions but added none (one
 * instruction per atom; atoms it cannot walk are lost).
 */
static void compare(const char *name, csd_image *img, int etm3, const struct seq *run, const uint8_t *addr_pt,
		    const uint32_t *to_end, const struct seq *pf, const size_t *ends, long nb, struct tally *t)
{
	size_t i = 0, j = 0, equal = 0, blx = 0, tail = 0, lost = 0, bad = 0;
	const struct layout L = { addr_pt, to_end, ends, nb };
	while (i < run->n) {
		if (j < pf->n && run->addr[i] == pf->addr[j]) {
			i++, j++, equal++;
			continue;
		}
		/* perf lost the end of the buffer (what its last bytes traced):
		 * it goes on with the first instruction of the next one (or
		 * ends with the last). */
		size_t e = end_of_buffer(ends, nb, i);
		if (to_end[i] <= TAIL_BYTES &&
		    (e == run->n ? j == pf->n : e < run->n && j < pf->n && pf->addr[j] == run->addr[e])) {
			tail++;
			lost += e - i;
			if (verbose)
				fprintf(stderr, "%s: run %zu-%zu lost at the end of an AUX buffer (perf %zu), %u bytes\n", name, i, e,
					j, to_end[i]);
			i = e;
			continue;
		}
		size_t ri = 0, rj = 0;
		int ok = etm3 && blx_hunk(img, run, &L, pf, i, j, &ri, &rj);
		if (!ok) {
			bad++;
			fprintf(stderr, "%s: instruction %zu of the run is 0x%x (%s), perf's %zu is 0x%x: unexplained\n", name,
				i, run->addr[i], run->isa[i] == CSD_ISA_ARM ? "A32" : "T32", j, j < pf->n ? pf->addr[j] : 0);
			break;
		}
		blx++;
		if (verbose)
			fprintf(stderr, "%s: run %zu-%zu (0x%x-0x%x), perf %zu-%zu: ETMv3 instruction set forgotten\n", name, i,
				ri, run->addr[i], ri < run->n ? run->addr[ri] : 0, j, rj);
		i = ri;
		j = rj;
	}
	if (!bad && j != pf->n) {
		fprintf(stderr, "%s: perf gave %zu instructions, the run has %zu (%zu and %zu compared)\n", name, pf->n,
			run->n, j, i);
		bad++;
	}
	t->files++;
	t->buffers += (size_t)nb;
	t->insns += run->n;
	t->equal += equal;
	t->blx_hunks += blx;
	t->tail_hunks += tail;
	t->tail_lost += lost;
	t->unexplained += bad;
}

/* ------------------------------------------------------------------ */

struct config {
	const char *name;
	const char *opts;
	int etm3;
	unsigned aux_size;
};

/* The trace configurations of the round-trip matrix that perf can read
 * right (not the return stack; not timestamps, which make perf 6.1 decode
 * by time and attribute code by context ID only). */
static const struct config configs[] = {
	{ "ptm", "--protocol ptm", 0, 65536 },
	{ "ptm-ca", "--protocol ptm --cycle-accurate", 0, 4096 },
	{ "ptm-cid", "--protocol ptm --context-id-bytes 4", 0, 4096 },
	{ "etm3", "--protocol etm3 --sync-period 256", 1, 65536 },
	{ "etm3-ca", "--protocol etm3 --cycle-accurate --context-id-bytes 1", 1, 4096 },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *progdir = getenv("CSD_PROGRAMS"), *tool = getenv("CSD_TOOL");
	if (!progdir || !tool) {
		fprintf(stderr, "CSD_PROGRAMS / CSD_TOOL not set (run through make test)\n");
		return 1;
	}
	verbose = getenv("CSD_PERF_VERBOSE") != NULL;
	char perf[4096];
	if (!find_perf(perf, sizeof(perf))) {
		printf("test_perf_compare: skipped: no perf on the PATH (scripts/install-deps installs linux-perf; "
		       "CSD_PERF names another)\n");
		return 0;
	}
	if (!file_has(perf, "CS ETM Trace: Unrecognised magic number")) {
		printf("test_perf_compare: skipped: %s has no CoreSight (cs_etm) decoder: built without OpenCSD, "
		       "or a wrapper script (CSD_PERF names the binary)\n", perf);
		return 0;
	}
	int v2 = file_has(perf, "PERF_RECORD_AUX_OUTPUT_HW_ID version");
	if (!v2)
		printf("test_perf_compare: %s reads AUXTRACE_INFO version 1 only (perf 6.1: cs-etm.c refuses a version "
		       "above CS_HEADER_CURRENT_VERSION, 1): version 2 files not compared\n", perf);

	char tmp[] = "/tmp/csd_test_perf_compare_XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char cmd[16384];
	snprintf(cmd, sizeof(cmd), "mkdir '%s/bid'", tmp);
	CHECK_EQ(sh(cmd), 0);

	/* The programs, sorted. */
	DIR *d = opendir(progdir);
	CHECK(d != NULL);
	if (!d)
		return check_done("test_perf_compare");
	char *progs[256];
	size_t nprogs = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nprogs < 256) {
		size_t len = strlen(de->d_name);
		if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0)
			progs[nprogs++] = strndup(de->d_name, len - 4);
	}
	closedir(d);
	qsort(progs, nprogs, sizeof(progs[0]), cmp_str);
	CHECK(nprogs >= 36 || getenv("CSD_PERF_PROGRAM"));
	/* CSD_PERF_PROGRAM=name: that program only (to look at one). */
	const char *only = getenv("CSD_PERF_PROGRAM");
	if (only) {
		size_t use = 0;
		for (size_t p = 0; p < nprogs; p++)
			if (!strcmp(progs[p], only))
				progs[use++] = progs[p];
			else
				free(progs[p]);
		nprogs = use;
	}
#ifdef UNDER_SANITIZER
	/* One program of each kind: bare, interworking, Thumb. */
	if (!only) {
		size_t use = 0;
		for (size_t p = 0; p < nprogs; p++)
			if (!strcmp(progs[p], "bare_mix-arm-O0") || !strcmp(progs[p], "interwork-thumb-O2") ||
			    !strcmp(progs[p], "switch-thumb-O0"))
				progs[use++] = progs[p];
			else
				free(progs[p]);
		CHECK_EQ(use, 3);
		nprogs = use;
	}
#endif

	struct tally t[NCONFIGS][2];
	memset(t, 0, sizeof(t));
	char file[128], name[512];
	snprintf(file, sizeof(file), "%s/f.data", tmp);
	for (size_t p = 0; p < nprogs; p++) {
		char elf[2048];
		snprintf(elf, sizeof(elf), "%s/%s", progdir, progs[p]);
		csd_image *img = csd_image_new();
		CHECK(csd_image_add_elf(img, elf, 0) > 0);
		struct seq run = { 0 };
		CHECK_EQ(load_run(elf, img, &run), 0);
		CHECK(run.n > 100);
		/* The code as perf reads it: the file's bytes over the whole
		 * mapping of each executable segment (whole pages), where a walk
		 * in the wrong instruction set may wander past the segment. */
		uint8_t *addr_pt = calloc(run.n, 1);
		uint32_t *to_end = calloc(run.n, sizeof(*to_end));
		csd_image *mapped = csd_image_new();
		struct csdi_perf_elf pe;
		char elf_err[512];
		CHECK_EQ(csdi_perf_elf_read(elf, &pe, elf_err, sizeof(elf_err)), 0);
		struct stat st;
		CHECK_EQ(stat(elf, &st), 0);
		for (unsigned m = 0; m < pe.nmaps; m++) {
			uint64_t len = pe.map[m].len;
			if (pe.map[m].pgoff + len > (uint64_t)st.st_size)
				len = (uint64_t)st.st_size - pe.map[m].pgoff;
			CHECK_EQ(csd_image_add_file(mapped, elf, pe.map[m].pgoff, len, pe.map[m].start), 0);
		}
		for (size_t c = 0; c < NCONFIGS; c++) {
			for (unsigned version = 1; version <= (v2 ? 2u : 1u); version++) {
				snprintf(cmd, sizeof(cmd),
					 "'%s' gen --qemu-log '%s.log' --elf '%s' %s --perf-data '%s' --perf-data-version %u "
					 "--perf-aux-size %u 2>'%s/gen.err'",
					 tool, elf, elf, configs[c].opts, file, version, configs[c].aux_size, tmp);
				CHECK_EQ(sh(cmd), 0);
				struct csd_trace_config tc;
				memset(&tc, 0, sizeof(tc));
				tc.size = sizeof(tc);
				tc.protocol = configs[c].etm3 ? CSD_PROTO_ETM3 : CSD_PROTO_PTM;
				tc.etmcr = (strstr(configs[c].opts, "cycle") ? 1u << 12 : 0) |
					   (strstr(configs[c].opts, "id-bytes 4") ? 3u << 14 : 0) |
					   (strstr(configs[c].opts, "id-bytes 1") ? 1u << 14 : 0);
				tc.etmidr = configs[c].etm3 ? 0x410CF250u : 0x411CF312u;
				tc.etmccer = configs[c].etm3 ? 0x344008F2u : 0x34C01AC2u;
				tc.trace_id = 0x10;
				static size_t ends[MAXREC];
				long nb = decode_buffers(file, &tc, img, &run, ends, MAXREC, addr_pt, to_end);
				CHECK(nb >= 1);
				struct seq pf = { 0 };
				int rc = perf_insns(perf, tmp, file, &pf);
				snprintf(name, sizeof(name), "%s %s v%u", progs[p], configs[c].name, version);
				if (rc != 0) {
					char err[1024] = "";
					snprintf(cmd, sizeof(cmd), "%s/perf.err", tmp);
					FILE *ef = fopen(cmd, "r");
					if (ef) {
						size_t got = fread(err, 1, sizeof(err) - 1, ef);
						err[got] = 0;
						fclose(ef);
					}
					fprintf(stderr, "%s: perf script exited with %d: %s\n", name, rc, err);
				}
				CHECK_EQ(rc, 0);
				struct tally *ty = &t[c][version - 1];
				size_t before = ty->unexplained;
				compare(name, mapped, configs[c].etm3, &run, addr_pt, to_end, &pf, ends, nb < 0 ? 0 : nb, ty);
				CHECK_EQ(ty->unexplained, before);
				seq_free(&pf);
			}
		}
		seq_free(&run);
		free(addr_pt);
		free(to_end);
		csd_image_free(img);
		csd_image_free(mapped);
		free(progs[p]);
	}
	for (size_t c = 0; c < NCONFIGS; c++)
		for (unsigned v = 0; v < 2; v++) {
			const struct tally *ty = &t[c][v];
			if (!ty->files)
				continue;
			printf("test_perf_compare: %-8s v%u: %zu files, %zu AUX buffers, %zu instructions in the runs, %zu of "
			       "them in perf's; differences: %zu ETMv3 instruction set forgotten at a P-header, %zu ends of "
			       "an AUX buffer lost (%zu instructions), %zu unexplained\n",
			       configs[c].name, v + 1, ty->files, ty->buffers, ty->insns, ty->equal, ty->blx_hunks,
			       ty->tail_hunks, ty->tail_lost, ty->unexplained);
			if (!configs[c].etm3)
				CHECK_EQ(ty->blx_hunks, 0);
			/* One buffer per file: PTM exact. */
			if (!configs[c].etm3 && configs[c].aux_size == 65536) {
				CHECK_EQ(ty->buffers, ty->files);
				CHECK_EQ(ty->equal, ty->insns);
			}
			CHECK(ty->equal > 0);
		}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	sh(cmd);
	return check_done("test_perf_compare");
}
