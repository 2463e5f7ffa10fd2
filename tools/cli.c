/* cli.c - the decode pipeline's parts and the option parsing shared by
 * csdec's commands (a source's decoder, taking and handing on its records
 * and packets, printing them); the runs that use them are in run.c. */
/* fopencookie(): the text of perf.data's held records */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "merge.h"
#include "symbols.h"

const char *prog = "csdec";
const char *cli_command;

void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	if (cli_command)
		fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cli_command);
	else
		fprintf(stderr, "\nTry '%s --help'.\n", prog);
	va_end(ap);
	exit(EXIT_USAGE);
}

void die_io(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(EXIT_USAGE);
}

/* A write error (a full disk, a closed pipe when SIGPIPE is ignored) ends
 * the run at once: decoding on would only produce more output to lose. */
static void say_write_error(const char *name, int e)
{
	fprintf(stderr, "%s: %s%swrite error: %s\n", prog, name ? name : "", name ? ": " : "",
		e ? strerror(e) : "output stream failed");
}

void cli_check_output(struct run_ctx *ctx)
{
	if (ferror(ctx->out)) {
		say_write_error(NULL, errno);
		exit(EXIT_USAGE);
	}
}

int cli_end_output(FILE *f, const char *name)
{
	errno = 0;
	if (f == stdout ? fflush(f) == 0 && !ferror(f) : fclose(f) == 0)
		return 0;
	say_write_error(name, errno);
	return -1;
}

int cli_slot_feed(struct source_slot *s, const struct csd_bytes *b)
{
	if (s->flow)
		return csd_flow_feed(s->flow, b);
	return s->etm3 ? csd_etm3_pkt_feed(s->etm3, b) : csd_ptm_pkt_feed(s->ptm, b);
}

void cli_slot_finish(struct source_slot *s)
{
	if (s->flow)
		csd_flow_finish(s->flow);
	else if (s->etm3)
		csd_etm3_pkt_finish(s->etm3);
	else
		csd_ptm_pkt_finish(s->ptm);
}

/* decode --data-only: only data records and what tells of trouble. */
static int data_only_skips(const struct run_ctx *ctx, const struct csd_record *r)
{
	return ctx->data_only && r->type != CSD_REC_DATA && r->type != CSD_REC_DATA_LOST && r->type != CSD_REC_ERROR &&
	       r->type != CSD_REC_TRUNCATED;
}

/* perf.data's sources: a context ID names the process from this record on
 * (what the thread table knows as the source's trace is decoded, so that
 * the process a record names does not depend on how long the merge holds
 * it, nor on the thread it is decoded on). */
static void perf_take(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	if (r->type == CSD_REC_CONTEXT && (r->flags & CSD_RECF_CONTEXT_ID) && ctx->on_context_id)
		ctx->on_context_id(ctx, s, r->context_id);
}

void cli_print_taken(const struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r)
{
	if (s->perf && ctx->format == FMT_TEXT && (s->pid != s->shown_pid || s->tid != s->shown_tid)) {
		print_thread_text(out, s);
		s->shown_pid = s->pid;
		s->shown_tid = s->tid;
	}
	cli_print_record(ctx, out, s, r);
}

void cli_take_print(struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r)
{
	if (s->perf)
		perf_take(ctx, s, r);
	cli_print_taken(ctx, out, s, r);
}

void cli_deliver_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	if (ctx->on_record) {
		if (!data_only_skips(ctx, r))
			ctx->on_record(ctx, s, r);
	} else {
		cli_print_taken(ctx, ctx->out, s, r);
	}
}

void cli_deliver_merged(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r, const char *text,
			size_t len)
{
	if (text)
		fwrite(text, 1, len, ctx->out);
	else
		cli_deliver_record(ctx, s, r);
}

void cli_print_record(const struct run_ctx *ctx, FILE *out, const struct source_slot *s,
		      const struct csd_record *r)
{
	if (data_only_skips(ctx, r))
		return;
	if (ctx->format == FMT_JSONL)
		print_record_json(out, s, r);
	else if (ctx->format == FMT_TEXT)
		print_record_text(out, s, r);
}

void cli_deliver_order_note(struct run_ctx *ctx, struct source_slot *s, const char *reason,
			    struct source_slot *waiting)
{
	if (ctx->on_record)
		return; /* the commands that accumulate keep no order */
	if (ctx->format == FMT_JSONL)
		print_order_json(ctx->out, s, reason, waiting);
	else if (ctx->format == FMT_TEXT)
		print_order_text(ctx->out, s, reason, waiting);
}

int cli_text_append(char **text, size_t *len, size_t *cap, size_t first, const char *buf, size_t n)
{
	if (*cap - *len < n) {
		size_t c = *cap ? *cap : first;
		while (c - *len < n)
			c *= 2;
		char *t = realloc(*text, c);
		if (!t)
			return -1;
		*text = t;
		*cap = c;
	}
	memcpy(*text + *len, buf, n);
	*len += n;
	return 0;
}

/* The held text's stream writes here (unbuffered: each line comes in one
 * write, and nothing waits in the stream). */
static ssize_t held_write(void *cookie, const char *buf, size_t n)
{
	struct run_ctx *ctx = cookie;
	if (cli_text_append(&ctx->held_text, &ctx->held_len, &ctx->held_cap, 4096, buf, n) < 0)
		die_io("out of memory");
	return (ssize_t)n;
}

void cli_take_print_noted(struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r)
{
	cli_take_print(ctx, out, s, r);
	if (ctx->merge) {
		s->taken_pid = s->pid;
		s->taken_tid = s->tid;
	}
}

/* A perf.data source's record for the merge: printed now (what it prints
 * of the process is what is known now), its text held with it. */
static void take_perf_merged(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	if (r->type != CSD_REC_TIMESTAMP && merge_sole(ctx->merge, s)) {
		/* It would go out at once: printed straight out. */
		cli_take_print_noted(ctx, ctx->out, s, r);
		return;
	}
	if (!ctx->held_out) {
		cookie_io_functions_t io = { .write = held_write };
		ctx->held_out = fopencookie(ctx, "w", io);
		if (!ctx->held_out || setvbuf(ctx->held_out, NULL, _IONBF, 0) != 0)
			die_io("out of memory");
	}
	ctx->held_len = 0;
	cli_take_print_noted(ctx, ctx->held_out, s, r);
	merge_push_text(ctx->merge, ctx, s, r, ctx->held_text ? ctx->held_text : "", ctx->held_len);
}

void cli_take_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	cli_count_record(s, r);
	if (s->perf && ctx->merge) {
		take_perf_merged(ctx, s, r);
		return;
	}
	if (s->perf)
		perf_take(ctx, s, r);
	if (ctx->merge)
		merge_push(ctx->merge, ctx, s, r);
	else
		cli_deliver_record(ctx, s, r);
}

void cli_end_held_text(struct run_ctx *ctx)
{
	if (ctx->held_out)
		fclose(ctx->held_out);
	free(ctx->held_text);
	ctx->held_out = NULL;
	ctx->held_text = NULL;
	ctx->held_len = ctx->held_cap = 0;
}

int cli_record_text_straight(const struct run_ctx *ctx, const struct source_slot *s, const struct csd_record *r)
{
	/* What the merge would deliver at once goes straight out (as in
	 * take_perf_merged). */
	return !ctx->merge || (r->type != CSD_REC_TIMESTAMP && merge_sole(ctx->merge, s));
}

void cli_take_record_text(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r, const char *text,
			  size_t len)
{
	cli_count_record(s, r);
	if (cli_record_text_straight(ctx, s, r))
		fwrite(text, 1, len, ctx->out);
	else
		merge_push_text(ctx->merge, ctx, s, r, text, len);
}

void cli_print_packet(const struct run_ctx *ctx, FILE *out, const struct source_slot *s, const struct csd_packet *p)
{
	if (ctx->format == FMT_JSONL)
		print_packet_json_src(out, s->id, s, p);
	else if (ctx->format == FMT_TEXT)
		print_packet_text_src(out, s->id, s, p);
}

/* The counting part of cli_take_packet. */
void cli_count_packet_text(struct run_ctx *ctx, struct source_slot *s, const struct csd_packet *p)
{
	if ((++s->items & 255) == 0)
		cli_check_output(ctx);
	if (p->type == CSD_PKT_ERROR)
		s->errors++;
}

void cli_take_packet(struct run_ctx *ctx, struct source_slot *s, const struct csd_packet *p)
{
	cli_count_packet_text(ctx, s, p);
	if (ctx->on_packet)
		ctx->on_packet(ctx, s, p);
	else
		cli_print_packet(ctx, ctx->out, s, p);
}

int cli_counts_only(const struct run_ctx *ctx)
{
	return ctx->format == FMT_NONE && !ctx->on_record && !ctx->on_packet && !ctx->merge;
}

void cli_drain_slot(struct run_ctx *ctx, struct source_slot *s)
{
	if (s->flow) {
		/* Records in batches, read in place (nothing here calls the
		 * decoder while they are used). Only counted: what
		 * cli_take_record would do of them (a perf.data source's
		 * process is only printed). */
		const struct csd_record *batch;
		const int count_only = cli_counts_only(ctx);
		int n;
		while ((n = csd_flow_next_batch(s->flow, &batch)) > 0) {
			if (count_only)
				cli_count_records(s, batch, n);
			else
				for (int i = 0; i < n; i++)
					cli_take_record(ctx, s, &batch[i]);
			cli_check_output(ctx);
		}
		return;
	}
	struct csd_packet p;
	while ((s->etm3 ? csd_etm3_pkt_next(s->etm3, &p) : csd_ptm_pkt_next(s->ptm, &p)) == 0)
		cli_take_packet(ctx, s, &p);
}

void cli_report_frame_error(struct run_ctx *ctx, const struct csd_frame_out *fo)
{
	const char *why = fo->reason ? fo->reason : "bad frame";
	/* An inferred frame alignment and a frame cut by the end of the
	 * capture are notices, not errors. */
	const char *kind = fo->event == CSD_FRAME_ALIGN_INFERRED ? "frame_sync"
			   : fo->event == CSD_FRAME_TRUNCATED    ? "frame_truncated"
								 : "frame_error";
	ctx->frame_errors += fo->event == CSD_FRAME_ERROR;
	if (ctx->format == FMT_JSONL)
		fprintf(ctx->out, "{\"type\":\"%s\",\"packet\":\"%s\",\"offset\":%" PRIu64
			",\"reason\":\"%s\"}\n", kind, kind, fo->offset, why);
	else if (ctx->format == FMT_TEXT)
		fprintf(ctx->out, "---- %8" PRIu64 "  %-11s  %s\n", fo->offset, kind, why);
}

FILE *cli_open_input(const char *path, int allow_stdin)
{
	if (allow_stdin && strcmp(path, "-") == 0)
		return stdin;
	const char *what;
	int fd = csdi_open_regular(path, &what);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (what)
			fprintf(stderr, "%s: %s: not a regular file (%s)%s\n", prog, path, what,
				allow_stdin ? "; give '-' to read standard input" : "");
		else
			fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(e));
	}
	return f;
}

uint64_t parse_number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *s == 0 || *end != 0 || *s == '-')
		die_usage("bad %s '%s'", what, s);
	return v;
}

static int parse_id(const char *s)
{
	uint64_t v = parse_number(s, "trace ID");
	if (v == 0 || v >= 0x70)
		die_usage("bad trace ID '%s' (expected 1..0x6f)", s);
	return (int)v;
}

static enum out_format parse_format(const char *s, int allow_none)
{
	if (strcmp(s, "text") == 0)
		return FMT_TEXT;
	if (strcmp(s, "jsonl") == 0)
		return FMT_JSONL;
	if (allow_none && strcmp(s, "none") == 0)
		return FMT_NONE;
	die_usage("unknown format '%s' (expected text, jsonl%s)", s, allow_none ? " or none" : "");
	return FMT_TEXT;
}


const char *cli_opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=' && name[1] == '-')
		return a + n + 1;
	if (a[n] != 0)
		return NULL;
	if (*i + 1 >= argc)
		die_usage("%s needs a value", name);
	return argv[++*i];
}

enum { REG_ETMCR = 1, REG_ETMCCER = 2, REG_ETMIDR = 4, REG_TRACEID = 8 };

static void parse_reg(struct options *o, const char *s)
{
	const char *eq = strchr(s, '=');
	if (!eq)
		die_usage("--reg expects NAME=VALUE, got '%s'", s);
	size_t n = (size_t)(eq - s);
	uint64_t v64 = parse_number(eq + 1, "register value");
	/* As the snapshot reader does: registers are 32 bits. */
	if (v64 > UINT32_MAX)
		die_usage("--reg '%s': the value does not fit in 32 bits", s);
	uint32_t v = (uint32_t)v64;
	if (n == 5 && strncasecmp(s, "ETMCR", 5) == 0) {
		o->etmcr = v;
		o->regs_given |= REG_ETMCR;
	} else if (n == 7 && strncasecmp(s, "ETMCCER", 7) == 0) {
		o->etmccer = v;
		o->regs_given |= REG_ETMCCER;
	} else if (n == 6 && strncasecmp(s, "ETMIDR", 6) == 0) {
		o->etmidr = v;
		o->have_etmidr = 1;
		o->regs_given |= REG_ETMIDR;
	} else if (n == 11 && strncasecmp(s, "ETMTRACEIDR", 11) == 0) {
		o->regs_given |= REG_TRACEID;
		/* The ID is bits 6:0, the rest reserved; IDs 0 and 0x70-0x7f
		 * are reserved as for --trace-id. */
		if (v == 0 || v >= 0x70)
			die_usage("--reg '%s': bad trace ID (expected 1..0x6f)", s);
		o->trace_id = (int)v;
	} else
		die_usage("unknown register in --reg '%s' (ETMCR, ETMCCER, ETMIDR, ETMTRACEIDR)", s);
}

/* One register of a copied sysfs directory (as the Linux coresight-etm3x
 * driver shows it: "0x..." and a newline): 1 with *v, 0 when the file is
 * not there; exits on anything else. */
static int sysfs_reg(const char *dir, const char *name, uint32_t *v)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	const char *what;
	int fd = csdi_open_regular(path, &what);
	if (fd < 0) {
		if (!what && errno == ENOENT)
			return 0;
		if (what)
			die_io("--sysfs: %s: not a regular file (%s)", path, what);
		die_io("--sysfs: %s: %s", path, strerror(errno));
	}
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		die_io("--sysfs: %s: %s", path, strerror(e));
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 0);
	if (!buf[0] || *end || errno || buf[0] == '-' || x > UINT32_MAX)
		die_io("--sysfs: %s: expected a 32-bit number as the driver writes it, found '%.20s'", path, buf);
	*v = (uint32_t)x;
	return 1;
}

/* The trace configuration of the ETM whose sysfs directory (a copy of
 * /sys/bus/coresight/devices/<etm>/) --sysfs names: mgmt/etmcr,
 * mgmt/etmidr (both needed), mgmt/etmccer, the trace ID from
 * mgmt/etmtraceidr or traceid. Registers given with --reg win; without
 * --protocol, ETMIDR says which protocol. */
static void load_sysfs(struct options *o)
{
	uint32_t v;
	if (!sysfs_reg(o->sysfs, "mgmt/etmcr", &v))
		die_io("--sysfs %s: no mgmt/etmcr: not an ETMv3/PTM (coresight-etm3x) sysfs directory", o->sysfs);
	if (!(o->regs_given & REG_ETMCR))
		o->etmcr = v;
	if (!sysfs_reg(o->sysfs, "mgmt/etmidr", &v))
		die_io("--sysfs %s: no mgmt/etmidr: not an ETMv3/PTM (coresight-etm3x) sysfs directory", o->sysfs);
	if (!(o->regs_given & REG_ETMIDR)) {
		o->etmidr = v;
		o->have_etmidr = 1;
	}
	if (sysfs_reg(o->sysfs, "mgmt/etmccer", &v) && !(o->regs_given & REG_ETMCCER))
		o->etmccer = v;
	if ((sysfs_reg(o->sysfs, "mgmt/etmtraceidr", &v) || sysfs_reg(o->sysfs, "traceid", &v)) &&
	    !(o->regs_given & REG_TRACEID) && o->trace_id < 0) {
		v &= 0x7F;
		if (v == 0 || v >= 0x70)
			die_io("--sysfs %s: trace ID 0x%02x is reserved (expected 1..0x6f)", o->sysfs, v);
		o->trace_id = (int)v;
	}
	if (!o->protocol) {
		unsigned major = (o->etmidr >> 8) & 0xF;
		if (major == 2)
			o->protocol = CSD_PROTO_ETM3;
		else if (major == 3)
			o->protocol = CSD_PROTO_PTM;
		else
			die_io("--sysfs %s: ETMIDR 0x%08x is neither an ETMv3 nor a PTM (ETMIDR[11:8] = %u)", o->sysfs,
			       o->etmidr, major);
	}
}

/* ETMIDR[11:8]: 2 for ETMv3 (IHI 0014), 3 for PFTv1 (IHI 0035B 3.16.28). */
static void check_etmidr(const struct options *o)
{
	if (!o->have_etmidr || !o->etmidr)
		return;
	char from[4200];
	if (o->sysfs && !(o->regs_given & REG_ETMIDR))
		snprintf(from, sizeof(from), "--sysfs %s: ETMIDR 0x%08x", o->sysfs, o->etmidr);
	else
		snprintf(from, sizeof(from), "--reg ETMIDR=0x%08x", o->etmidr);
	unsigned major = (o->etmidr >> 8) & 0xF, minor = (o->etmidr >> 4) & 0xF;
	if (o->protocol == CSD_PROTO_ETM3 && major != 2)
		die_usage("%s is not an ETMv3 ID (ETMIDR[11:8] = %u, ETMv3 has 2%s)", from, major,
			  major == 3 ? "; 3 is a PTM: --protocol ptm" : "");
	if (o->protocol == CSD_PROTO_PTM && (major != 3 || minor > 1))
		die_usage("%s is not a PTM ID (ETMIDR[11:8] = %u, [7:4] = %u; PFT 1.0/1.1 has 3, 0 or 1%s)", from, major,
			  minor, major == 2 ? "; 2 is an ETMv3: --protocol etm3" : "");
}

/* --core NAME: the core's profile, as a snapshot's core name gives it
 * (cortex-a9, Cortex-M3...: by the letter after "cortex-"). */
static int parse_core(const char *v)
{
	if (strncasecmp(v, "cortex-", 7) == 0) {
		const char c = v[7];
		if (c == 'a' || c == 'A')
			return CSD_CORE_A;
		if (c == 'r' || c == 'R')
			return CSD_CORE_R;
		if (c == 'm' || c == 'M')
			return CSD_CORE_M;
	}
	die_usage("unknown core '%s' (expected cortex-a, cortex-r or cortex-m, as cortex-a9 or cortex-m3)", v);
	return CSD_CORE_A;
}

/* With --trace there is one source: --id names its trace ID, as
 * --trace-id does (a snapshot's sources have theirs). */
static void trace_id_from_ids(struct options *o)
{
	int id = -1;
	for (int k = 0; k < MAX_IDS; k++) {
		if (!o->want[k])
			continue;
		if (id >= 0)
			die_usage("--trace decodes one source: give its trace ID once (--id or --trace-id)");
		id = k;
	}
	if (o->trace_id >= 0 && o->trace_id != id)
		die_usage("--id 0x%02x and the trace ID 0x%02x given otherwise (--trace-id, --reg ETMTRACEIDR) differ", id,
			  o->trace_id);
	o->trace_id = id;
}

void cli_parse_options(int argc, char **argv, struct options *o, enum cli_mode mode, void (*help)(FILE *),
		       cli_extra_opt_fn extra, void *user)
{
	int decode = mode == CLI_DECODE;
	const char *v;
	memset(o, 0, sizeof(*o));
	o->format = FMT_TEXT;
	o->trace_id = -1;
	o->core_profile = -1;
	o->frame_format = CSD_FRAME_RAW;
	o->jobs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help(stdout);
			exit(EXIT_CLEAN);
		} else if (extra && extra(user, argc, argv, &i)) {
			continue;
		} else if ((v = cli_opt_value(argc, argv, &i, "--id"))) {
			o->want[parse_id(v)] = 1;
			o->any_id = 1;
		} else if ((v = cli_opt_value(argc, argv, &i, "--jobs"))) {
			uint64_t n = parse_number(v, "number of jobs");
			if (n < 1 || n > JOBS_MAX)
				die_usage("bad number of jobs '%s' (expected 1..%d)", v, JOBS_MAX);
			o->jobs = (int)n;
		} else if ((v = cli_opt_value(argc, argv, &i, "--format"))) {
			o->format = parse_format(v, decode);
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--order"))) {
			if (strcmp(v, "capture") == 0)
				o->capture_order = 1;
			else if (strcmp(v, "time") != 0)
				die_usage("unknown order '%s' (expected time or capture)", v);
		} else if (decode && strcmp(a, "--insn") == 0) {
			o->insn = 1;
		} else if (decode && strcmp(a, "--data-only") == 0) {
			o->data_only = 1;
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--trace"))) {
			o->trace = v;
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--protocol"))) {
			if (strcasecmp(v, "etm3") == 0 || strcasecmp(v, "etmv3") == 0)
				o->protocol = CSD_PROTO_ETM3;
			else if (strcasecmp(v, "ptm") == 0 || strcasecmp(v, "pft") == 0)
				o->protocol = CSD_PROTO_PTM;
			else
				die_usage("unknown protocol '%s' (expected etm3 or ptm)", v);
		} else if (decode && strcmp(a, "--formatted") == 0) {
			o->frame_format = CSD_FRAME_ALIGNED;
		} else if (decode && strcmp(a, "--formatted=port") == 0) {
			o->frame_format = CSD_FRAME_PORT;
		} else if (decode && strcmp(a, "--formatted=aligned") == 0) {
			o->frame_format = CSD_FRAME_ALIGNED;
		} else if (decode && strncmp(a, "--formatted=", 12) == 0) {
			die_usage("bad --formatted value '%s' (expected aligned or port)", a + 12);
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--trace-id"))) {
			o->trace_id = parse_id(v);
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--reg"))) {
			parse_reg(o, v);
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--core"))) {
			o->core_profile = parse_core(v);
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--sysfs"))) {
			if (o->sysfs)
				die_usage("--sysfs names the one source of --trace: give it once");
			o->sysfs = v;
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--image"))) {
			if (o->n_images == MAX_LIST)
				die_usage("too many --image options");
			if (!strchr(v, '@'))
				die_usage("--image expects FILE@ADDR, got '%s'", v);
			o->images[o->n_images++] = v;
		} else if ((v = cli_opt_value(argc, argv, &i, "--symfs"))) {
			o->symfs = v;
		} else if ((v = cli_opt_value(argc, argv, &i, "--buildid-dir"))) {
			o->buildid_dir = v;
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--vmlinux"))) {
			o->vmlinux = v;
		} else if (decode && (v = cli_opt_value(argc, argv, &i, "--elf"))) {
			if (o->n_elfs == MAX_LIST)
				die_usage("too many --elf options");
			o->elfs[o->n_elfs++] = v;
		} else if (a[0] == '-' && a[1]) {
			die_usage("unknown option '%s'", a);
		} else if (!o->dir) {
			o->dir = a;
		} else {
			die_usage("unexpected argument '%s'", a);
		}
	}
	if (o->trace && o->dir)
		die_usage("give either a snapshot directory or --trace, not both");
	if (!o->trace && !o->dir)
		die_usage("%s: missing <snapshot-dir>%s", decode ? "decode" : "packets", decode ? " or --trace FILE" : "");
	if (o->sysfs && !o->trace)
		die_usage("--sysfs is for --trace: a snapshot has its registers");
	if (o->core_profile >= 0 && !o->trace)
		die_usage("--core is for --trace: a snapshot names its cores, and perf records Cortex-A ones");
	/* (Given with a snapshot or a perf.data file they would change
	 * nothing, and a user who gives them expects them to.) */
	if (!o->trace && (o->regs_given || o->protocol || o->frame_format != CSD_FRAME_RAW || o->trace_id >= 0))
		die_usage("%s is for --trace: a snapshot and a perf.data file carry their own registers and trace IDs",
			  o->regs_given ? "--reg" : o->protocol ? "--protocol" : o->frame_format != CSD_FRAME_RAW ? "--formatted"
										   : "--trace-id");
	if (o->trace && o->any_id)
		trace_id_from_ids(o);
	if (o->sysfs)
		load_sysfs(o);
	if (o->trace && !o->protocol)
		die_usage("--trace needs --protocol etm3|ptm (or --sysfs DIR)");
	if (o->trace && o->core_profile == CSD_CORE_M && o->protocol == CSD_PROTO_PTM)
		die_usage("--core: a Cortex-M core has an ETM (--protocol etm3), not a PTM");
	if (o->trace)
		check_etmidr(o);
}

/* "FILE@NUMBER": split at the last '@'. */
static uint64_t split_at(const char *spec, char *path, size_t cap, const char *what, int required)
{
	const char *at = strrchr(spec, '@');
	if (!at) {
		if (required)
			die_usage("%s expects FILE@ADDR", what);
		if (!*spec)
			die_usage("%s: no file name", what);
		if (strlen(spec) >= cap)
			die_usage("%s: path too long", what);
		snprintf(path, cap, "%s", spec);
		return 0;
	}
	size_t n = (size_t)(at - spec);
	if (n == 0)
		die_usage("%s expects FILE@ADDR, got '%s' (no file name)", what, spec);
	if (n >= cap)
		die_usage("%s: path too long", what);
	memcpy(path, spec, n);
	path[n] = 0;
	char label[64];
	snprintf(label, sizeof(label), "%s %s", what, required ? "address" : "bias");
	return parse_number(at + 1, label);
}

void cli_load_extra_images(const struct options *o, csd_image *img)
{
	char path[4096];
	for (int i = 0; i < o->n_images; i++) {
		uint64_t addr = split_at(o->images[i], path, sizeof(path), "--image", 1);
		int rc = csd_image_add_file(img, path, 0, 0, addr);
		if (rc < 0)
			die_io("--image %s", csd_image_error(img));
	}
	for (int i = 0; i < o->n_elfs; i++) {
		uint64_t bias = split_at(o->elfs[i], path, sizeof(path), "--elf", 0);
		int rc = csd_image_add_elf(img, path, (int64_t)bias);
		if (rc < 0)
			die_io("--elf %s", csd_image_error(img));
	}
}

void cli_slot_free(struct source_slot *s)
{
	csd_etm3_pkt_free(s->etm3);
	csd_ptm_pkt_free(s->ptm);
	csd_flow_free(s->flow);
	s->etm3 = NULL;
	s->ptm = NULL;
	s->flow = NULL;
}

/* The slot's fields as a new decoder of cfg on img starts them (its
 * decoders left to the caller). */
static void slot_clear(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	memcpy(&s->cfg, cfg, sizeof(*cfg));  /* (padding too: cli_slot_fits compares the bytes) */
	s->id = cfg->trace_id;
	s->image = img;
	s->insn = insn;
}

int cli_slot_fits(const struct source_slot *s, int kind, const struct csd_trace_config *cfg, const csd_image *img,
		  int insn)
{
	return (s->flow || s->etm3 || s->ptm) && s->kind == kind && s->image == img && s->insn == insn &&
	       memcmp(&s->cfg, cfg, sizeof(*cfg)) == 0;
}

int cli_slot_renew(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn)
{
	if (cli_slot_fits(s, kind, cfg, img, insn)) {
		csd_flow_decoder *flow = s->flow;
		csd_etm3_pkt_decoder *etm3 = s->etm3;
		csd_ptm_pkt_decoder *ptm = s->ptm;
		const int rc = flow ? csd_flow_reset(flow) : etm3 ? csd_etm3_pkt_reset(etm3) : csd_ptm_pkt_reset(ptm);
		if (rc == 0) {
			slot_clear(s, kind, cfg, img, insn);
			s->flow = flow;
			s->etm3 = etm3;
			s->ptm = ptm;
			return 0;
		}
	}
	cli_slot_free(s);
	return cli_slot_init(s, kind, cfg, img, insn);
}

int cli_slot_init(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn)
{
	slot_clear(s, kind, cfg, img, insn);
	if (kind == SLOT_FLOW) {
		struct csd_flow_config fc;
		memset(&fc, 0, sizeof(fc));
		fc.size = sizeof(fc);
		fc.trace = cfg;
		fc.image = img;
		fc.flags = insn ? CSD_FLOW_INSN : 0;
		s->flow = csd_flow_new(&fc);
		return s->flow ? 0 : -1;
	}
	if (cfg->protocol == CSD_PROTO_ETM3)
		s->etm3 = csd_etm3_pkt_new(cfg);
	else
		s->ptm = csd_ptm_pkt_new(cfg);
	return s->etm3 || s->ptm ? 0 : -1;
}

int cli_slot_insn(const struct options *o, struct run_ctx *ctx, const struct csd_trace_config *cfg)
{
	return ctx->insn_mode ? ctx->insn_mode(ctx, cfg) : o->insn;
}

void cli_add_totals(struct run_ctx *ctx, const struct source_slot *s)
{
	ctx->items += s->items;
	ctx->insns += s->insns;
	ctx->errors += s->errors;
}

int cli_finish_status(struct run_ctx *ctx, int io_failed, int decode)
{
	(void)decode;
	/* No summary of a run that failed: its figures would be partial. */
	if (ctx->format == FMT_NONE && !io_failed)
		printf("%" PRIu64 " instructions, %" PRIu64 " records, %" PRIu64 " errors\n",
		       ctx->insns, ctx->items, ctx->errors + ctx->frame_errors);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
		return EXIT_USAGE;
	}
	if (io_failed)
		return EXIT_USAGE;
	return ctx->errors || ctx->frame_errors || ctx->skipped_sources ? EXIT_TRACE_ERRORS : EXIT_CLEAN;
}

struct symtab *cli_load_symbols(const struct options *o)
{
	char path[4096], err[4200];
	if (o->n_elfs == 0)
		return NULL;
	struct symtab *st = symtab_new();
	if (!st)
		die_io("out of memory");
	for (int i = 0; i < o->n_elfs; i++) {
		uint64_t bias = split_at(o->elfs[i], path, sizeof(path), "--elf", 0);
		if (symtab_add_elf(st, path, (int64_t)bias, err, sizeof(err)) < 0)
			die_io("%s", err);
		for (unsigned w = 0; w < symtab_num_warnings(st); w++)
			fprintf(stderr, "%s: warning: %s\n", prog, symtab_warning(st, w));
		if (symtab_more_warnings(st))
			fprintf(stderr, "%s: warning: %s: %u more problems not shown\n", prog, path, symtab_more_warnings(st));
	}
	symtab_finish(st);
	return st;
}

csd_image *cli_elf_image(const struct options *o)
{
	char path[4096];
	csd_image *img = csd_image_new();
	if (!img)
		die_io("out of memory");
	for (int i = 0; i < o->n_elfs; i++) {
		uint64_t bias = split_at(o->elfs[i], path, sizeof(path), "--elf", 0);
		int rc = csd_image_add_elf(img, path, (int64_t)bias);
		if (rc < 0)
			die_io("--elf %s", csd_image_error(img));
	}
	return img;
}
