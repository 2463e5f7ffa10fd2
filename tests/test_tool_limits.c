/*
 * `csdec coverage` and `csdec profile` on hostile inputs, under a memory
 * limit (the address space in the plain build; the sanitizer build, whose
 * shadow memory needs a huge address space, is held to a peak resident
 * size instead) and a CPU time limit:
 *
 * - a PTM trace of a few dozen bytes whose branch packets send the
 *   decoder walking through a 16 MiB all-zero image (no waypoint: each
 *   walk runs to the end of the image, about 4 million instructions): the
 *   instructions and addresses reported are those of the decoder's own
 *   ranges (their count, the size of their union);
 * - an ELF file with 4,000 more section headers naming its symbol table:
 *   `profile --elf` reports exactly what it reports with the original.
 */
#define _DEFAULT_SOURCE /* wait4: the peak resident size of one child */
#include <elf.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "prog_trace.h"

#define ZERO_IMAGE_SIZE (16u << 20)
#define AS_LIMIT ((rlim_t)256 << 20)       /* plain build: address space */
#define RSS_LIMIT_KB (200L << 10)           /* sanitizer build: peak resident size */
#define CPU_LIMIT 120                       /* seconds */

static char out[1 << 16];

static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

/* Run argv under the limits: stdout into out, stderr into the file
 * errpath. The exit status (-1: killed), *rss_kb the peak resident size. */
static int run_limited(char *const argv[], const char *errpath, long *rss_kb)
{
	int pfd[2];
	fflush(NULL);
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		struct rlimit cpu = { CPU_LIMIT, CPU_LIMIT }, as = { AS_LIMIT, AS_LIMIT };
		if (efd < 0 || dup2(pfd[1], 1) < 0 || dup2(efd, 2) < 0 || setrlimit(RLIMIT_CPU, &cpu) != 0 ||
		    (!sanitized() && setrlimit(RLIMIT_AS, &as) != 0))
			_exit(126);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	ssize_t got;
	char sink[4096];
	while ((got = read(pfd[0], n + 1 < sizeof(out) ? out + n : sink,
			   n + 1 < sizeof(out) ? sizeof(out) - 1 - n : sizeof(sink))) > 0)
		if (n + 1 < sizeof(out))
			n += (size_t)got;
	out[n] = 0;
	close(pfd[0]);
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid)
		return -1;
	*rss_kb = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void show_stderr(const char *errpath)
{
	char buf[2048];
	FILE *f = fopen(errpath, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	if (n)
		fprintf(stderr, "  its stderr: %s\n", buf);
}

#define ANY_STATUS (-2) /* 0 or 1: clean, or the trace had errors */

/* Status and memory of one run, reported and checked. */
static int limited(const char *what, char *const argv[], const char *errpath, int want_status)
{
	long rss = 0;
	int rc = run_limited(argv, errpath, &rss);
	printf("%s: exit %d, peak resident %ld KiB\n", what, rc, rss);
	if (rc != want_status && (want_status != ANY_STATUS || rc < 0 || rc > 1))
		show_stderr(errpath);
	if (want_status == ANY_STATUS)
		CHECK(rc == 0 || rc == 1);
	else
		CHECK_EQ(rc, want_status);
	CHECK(rss < RSS_LIMIT_KB);
	return rc;
}

static int cmp_u64p(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The decoder's own account of the trace: instructions, and addresses
 * (the size of the union of its A32 ranges, 4 bytes an instruction). */
static void expected_walks(const uint8_t *trace, size_t n, csd_image *img, uint64_t *insns, uint64_t *addrs)
{
	struct csd_trace_config tc;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	tc.protocol = CSD_PROTO_PTM;
	tc.etmidr = 0x411CF312;
	tc.etmccer = 0x34C01AC2;
	tc.trace_id = 0x10;
	fc.image = img;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	uint64_t span[64][2];
	size_t ns = 0;
	struct csd_bytes in = { .data = trace, .size = n, .base = 0, .id = 0x10 };
	struct csd_record r;
	*insns = *addrs = 0;
	CHECK(fd != NULL);
	if (!fd)
		return;
	csd_flow_feed(fd, &in);
	csd_flow_finish(fd);
	while (csd_flow_next(fd, &r) == 0) {
		if (r.type != CSD_REC_RANGE)
			continue;
		CHECK_EQ(r.isa, CSD_ISA_ARM);
		*insns += r.count;
		if (ns < 64) {
			span[ns][0] = r.addr;
			span[ns][1] = r.end;
			ns++;
		}
	}
	csd_flow_free(fd);
	qsort(span, ns, sizeof(span[0]), cmp_u64p);
	uint64_t end = 0;
	for (size_t i = 0; i < ns; i++) {
		uint64_t from = span[i][0] > end ? span[i][0] : end;
		if (span[i][1] > from)
			*addrs += (span[i][1] - from) / 4;
		end = span[i][1] > end ? span[i][1] : end;
	}
}

static void zero_image(const char *tool, const char *dir)
{
	char img_path[256], trace_path[256], image_arg[300], errpath[256];
	snprintf(img_path, sizeof(img_path), "%s/zeros.bin", dir);
	snprintf(trace_path, sizeof(trace_path), "%s/walks.bin", dir);
	snprintf(image_arg, sizeof(image_arg), "%s@0", img_path);
	snprintf(errpath, sizeof(errpath), "%s/stderr.txt", dir);
	uint8_t *zeros = calloc(1, ZERO_IMAGE_SIZE);
	FILE *f = fopen(img_path, "wb");
	CHECK(zeros && f);
	if (!zeros || !f)
		return;
	CHECK_EQ(fwrite(zeros, 1, ZERO_IMAGE_SIZE, f), ZERO_IMAGE_SIZE);
	fclose(f);

	/* A-sync, I-sync, then branch address packets into the zeros, each
	 * with an E atom: every one a walk to the end of the image. */
	static const uint32_t targets[] = { 0x100, 0x123400, 0x800000, 0x40 };
	struct csd_trace_config c = { .size = sizeof(c), .protocol = CSD_PROTO_PTM, .etmidr = 0x411CF312,
				      .etmccer = 0x34C01AC2 };
	csd_ptm_encoder *e = csd_ptm_enc_new(&c);
	uint8_t trace[256];
	size_t len = 0;
	for (size_t k = 0; e && k < 2 + 2 * sizeof(targets) / sizeof(targets[0]); k++) {
		struct csd_packet p;
		memset(&p, 0, sizeof(p));
		p.type = k == 0 ? CSD_PKT_ASYNC : k == 1 ? CSD_PKT_ISYNC : k % 2 == 0 ? CSD_PKT_BRANCH : CSD_PKT_ATOM;
		p.addr = k == 1 ? 0x1000 : k >= 2 && k % 2 == 0 ? targets[k / 2 - 1] : 0;
		p.isa = CSD_ISA_ARM;
		p.flags = k == 1 ? CSD_PKTF_ISA | CSD_PKTF_SECURITY : k % 2 == 0 ? CSD_PKTF_ISA : 0;
		p.reason = CSD_REASON_TRACE_ON;
		p.atoms.num = 1;
		p.atoms.en = 1;
		int w = csd_ptm_enc_packet(e, &p, trace + len, sizeof(trace) - len);
		CHECK(w > 0);
		len += w > 0 ? (size_t)w : 0;
	}
	csd_ptm_enc_free(e);
	f = fopen(trace_path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(fwrite(trace, 1, len, f), len);
	fclose(f);

	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_buffer(img, 0, zeros, ZERO_IMAGE_SIZE, 0), 0);
	uint64_t insns, addrs;
	expected_walks(trace, len, img, &insns, &addrs);
	csd_image_free(img);
	free(zeros);
	printf("zero image: %zu bytes of trace, %llu instructions walked at %llu addresses\n", len,
	       (unsigned long long)insns, (unsigned long long)addrs);
	CHECK(insns > 4 * 4000000ull && addrs > 4000000);

	char want[128];
	char *cov[] = { (char *)tool, "coverage", "--trace", trace_path, "--protocol", "ptm", "--image", image_arg, NULL };
	if (limited("coverage, zero image", cov, errpath, 0) == 0) {
		snprintf(want, sizeof(want), "%llu instructions executed, at %llu addresses\n", (unsigned long long)insns,
			 (unsigned long long)addrs);
		if (strncmp(out, want, strlen(want)) != 0)
			fprintf(stderr, "coverage said: %.200s\nexpected: %s", out, want);
		CHECK(strncmp(out, want, strlen(want)) == 0);
	}
	char *prof[] = { (char *)tool, "profile", "--trace", trace_path, "--protocol", "ptm", "--image", image_arg, NULL };
	if (limited("profile, zero image", prof, errpath, 0) == 0) {
		snprintf(want, sizeof(want), "%llu instructions, 0 cycles in them", (unsigned long long)insns);
		CHECK(strncmp(out, want, strlen(want)) == 0);
		snprintf(want, sizeof(want), "\n%12llu 100.00%% ", (unsigned long long)insns);
		CHECK(strstr(out, want) != NULL && strstr(out, "(unknown)") != NULL);
	}
}

/* A static program's ELF (its symbol table has thousands of symbols)
 * with 4,000 more section headers naming that table. */
static void many_headers(const char *tool, const char *dir)
{
	char src[256], elf[256], many[256], errpath[256], cmd[1024];
	snprintf(src, sizeof(src), "%s/prog.c", dir);
	snprintf(elf, sizeof(elf), "%s/prog.elf", dir);
	snprintf(many, sizeof(many), "%s/many.elf", dir);
	snprintf(errpath, sizeof(errpath), "%s/stderr.txt", dir);
	FILE *f = fopen(src, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("#include <stdio.h>\nint main(void)\n{\n\tputs(\"hello\");\n\treturn 0;\n}\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "arm-linux-gnueabihf-gcc -O2 -static -o %s %s", elf, src);
	CHECK_EQ(system(cmd), 0);
	size_t n = 0;
	uint8_t *b = check_read_file(elf, &n);
	CHECK(b != NULL && n > 50000);
	if (!b)
		return;
	Elf32_Ehdr eh;
	Elf32_Shdr sh, symsh;
	memcpy(&eh, b, sizeof(eh));
	size_t at = (n + 3) & ~(size_t)3, nsym = 0;
	uint8_t *m = calloc(1, at + ((size_t)eh.e_shnum + 4000) * sizeof(sh));
	CHECK(m != NULL);
	if (!m)
		return;
	memcpy(m, b, n);
	memset(&symsh, 0, sizeof(symsh));
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, b + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		memcpy(m + at + i * sizeof(sh), &sh, sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB) {
			symsh = sh;
			nsym = sh.sh_size / sizeof(Elf32_Sym);
		}
	}
	for (unsigned i = 0; i < 4000; i++)
		memcpy(m + at + ((size_t)eh.e_shnum + i) * sizeof(sh), &symsh, sizeof(sh));
	eh.e_shoff = (Elf32_Off)at;
	eh.e_shnum = (Elf32_Half)(eh.e_shnum + 4000);
	memcpy(m, &eh, sizeof(eh));
	f = fopen(many, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	size_t mlen = at + (size_t)eh.e_shnum * sizeof(sh);
	CHECK_EQ(fwrite(m, 1, mlen, f), mlen);
	fclose(f);
	free(m);
	free(b);
	printf("ELF: %zu bytes, %zu symbols; with 4000 more section headers naming them: %zu bytes\n", n, nsym, mlen);
	CHECK(nsym > 1000);

	char *orig[] = { (char *)tool, "profile", "examples/sample", "--elf", elf, "--top", "0", NULL };
	int want = limited("profile --elf, the program", orig, errpath, ANY_STATUS);
	char *first = strdup(out);
	char *dup[] = { (char *)tool, "profile", "examples/sample", "--elf", many, "--top", "0", NULL };
	limited("profile --elf, 4000 more section headers", dup, errpath, want);
	CHECK(first && strcmp(first, out) == 0);
	CHECK(strstr(out, "functions") != NULL);
	free(first);
	size_t elen = 0;
	char *err = (char *)check_read_file(errpath, &elen);
	CHECK(err && elen && strstr(err, "4000 more section headers name a symbol table already read"));
	free(err);
}

int main(void)
{
	const char *tool = prog_tool();
	char dir[] = "/tmp/csd_test_limits_XXXXXX", cmd[128];
	CHECK(mkdtemp(dir) != NULL);
	zero_image(tool, dir);
	many_headers(tool, dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return check_done("test_tool_limits");
}
