/* cli.h - what the parts of the csdec tool share: exit codes, options,
 * the decode pipeline (capture -> frames -> per-source decoders -> a
 * handler per packet or record) and the printers. */
#ifndef CSD_CLI_H
#define CSD_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "csdec.h"

#define EXIT_CLEAN 0
#define EXIT_TRACE_ERRORS 1
#define EXIT_USAGE 2

#define MAX_IDS 128
#define MAX_LIST 64

enum out_format { FMT_TEXT, FMT_JSONL, FMT_NONE };

extern const char *prog;
/* The command being run ("decode"...), for usage errors to point at its help; NULL before one is. */
extern const char *cli_command;

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Print "csdec: message" and exit 2 (usage errors also suggest --help). */
void die_usage(const char *fmt, ...) CLI_PRINTF(1, 2);
void die_io(const char *fmt, ...) CLI_PRINTF(1, 2);

enum slot_kind { SLOT_PACKETS, SLOT_FLOW };

/* One trace source being decoded. */
struct source_slot {
	int kind;
	uint8_t id;
	struct csd_trace_config cfg;
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
	csd_flow_decoder *flow;
	csd_image *image;
	int insn;                       /* a record per instruction (CSD_FLOW_INSN) */
	uint64_t items;
	uint64_t insns;
	uint64_t errors;
	/* perf.data input (perf = 1 for a thread's AUX queue, 2 for a
	 * CPU's): the CPU, and the process and thread the records belong to
	 * (-1: not known); printed with each record. */
	int perf;
	int32_t cpu, pid, tid;
	int32_t shown_pid, shown_tid;   /* the text listing's last thread line */
	/* pid and tid as of the last record the calling thread took (with
	 * --jobs a worker may be further on): what order notes print. */
	int32_t taken_pid, taken_tid;
	int worker;                     /* --jobs: the thread that decodes it (jobs.h) */
};

struct run_ctx;
typedef void (*cli_record_fn)(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);
typedef void (*cli_packet_fn)(struct run_ctx *ctx, struct source_slot *s, const struct csd_packet *p);

struct run_ctx {
	enum out_format format;
	FILE *out;
	struct source_slot *slot[MAX_IDS];
	uint64_t items;
	uint64_t insns;
	uint64_t errors;
	uint64_t frame_errors;
	uint64_t skipped_sources;  /* sources that could not be decoded (warned about) */
	/* A formatted capture's bytes per trace ID this buffer (run.c), for
	 * the warnings of trace without a source and sources without trace;
	 * IDs whose sources were skipped or not asked for (--id) are quiet. */
	uint64_t id_bytes[MAX_IDS];
	uint8_t id_quiet[MAX_IDS];
	/* --trace: the one source asked for, whose missing trace is said (a
	 * snapshot's sources without trace are cores that ran nothing). */
	int warn_no_trace;
	/* What to do with each record / packet (NULL: print per `format`). */
	cli_record_fn on_record;
	cli_packet_fn on_packet;
	void *user;
	/* Interleave the sources' records by timestamp (NULL: capture order). */
	struct merge *merge;
	/* Decode this source instruction by instruction? (NULL: as --insn says.) */
	int (*insn_mode)(struct run_ctx *ctx, const struct csd_trace_config *cfg);
	/* A source's records are all delivered; its image still exists. */
	void (*on_source_end)(struct run_ctx *ctx, struct source_slot *s);
	/* decode --data-only: print only the data records and the errors. */
	int data_only;
	/* Threads that may decode (--jobs; 1: all on the calling thread). */
	int jobs;
	/* jobs is the default (no --jobs): jobs_new() may take fewer. */
	int jobs_default;
	/* The buffer's one source may be decoded in chunks (chunks.c). */
	int chunk_ok;
	/* perf.data's records held by the merge: their text, printed when
	 * taken (cli_take_record; freed by cli_end_held_text). */
	FILE *held_out;
	char *held_text;
	size_t held_len, held_cap;
	/* perf.data input: the context ID `cid` that source s reports names
	 * the process of its next records (called as s's records are taken,
	 * in s's order, on the thread that takes them). */
	void (*on_context_id)(struct run_ctx *ctx, struct source_slot *s, uint32_t cid);
};

/* Hand one record to the context's handler or printer. */
void cli_deliver_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);
/* Print r to `out` as cli_deliver_record prints it: for a perf.data
 * source in the text listing, after a thread line when the process or
 * thread changed. On the thread that takes s's records. */
void cli_print_taken(const struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r);
/* r taken from s's decoder, in s's order, and printed at once to `out`
 * (for another thread's or the merge's text): what the record changes of
 * a perf.data source (its process, by a context ID), then
 * cli_print_taken. */
void cli_take_print(struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r);
/* cli_take_print of a perf.data source's record as the serial decode
 * takes it (cli_take_record): with the merge, r's process and thread are
 * then noted as the last taken (what order notes print). */
void cli_take_print_noted(struct run_ctx *ctx, FILE *out, struct source_slot *s, const struct csd_record *r);
/* The merge's delivery (merge.h: merge_deliver_fn): r's text, printed on
 * another thread, written out; or r handed on as cli_deliver_record. */
void cli_deliver_merged(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r, const char *text,
			size_t len);
/* Print r to `out` as cli_deliver_record prints it for a source without
 * perf.data facts (--data-only applied), on any thread. */
void cli_print_record(const struct run_ctx *ctx, FILE *out, const struct source_slot *s,
		      const struct csd_record *r);
/* Print the time-order note of the merge (merge.h: merge_note_fn). */
void cli_deliver_order_note(struct run_ctx *ctx, struct source_slot *s, const char *reason,
			    struct source_slot *waiting);

/* Command-line options of the commands that decode. */
struct options {
	const char *dir;
	int want[MAX_IDS];
	int any_id;
	enum out_format format;
	int insn;
	int capture_order;      /* --order capture: no interleaving by timestamp */
	int data_only;          /* decode --data-only */
	/* decode without a snapshot */
	const char *trace;
	int protocol;
	uint32_t frame_format;
	int trace_id;
	uint32_t etmcr, etmccer, etmidr;
	int have_etmidr;
	unsigned regs_given;    /* REG_* bits: registers given with --reg (they win over --sysfs) */
	const char *sysfs;      /* --sysfs DIR: an ETM's coresight-etm3x sysfs directory, copied */
	int core_profile;       /* --core NAME: enum csd_core_profile (-1: not given) */
	const char *images[MAX_LIST];
	int n_images;
	const char *elfs[MAX_LIST];
	int n_elfs;
	/* perf.data input: where the mapped files are found */
	const char *symfs;          /* --symfs DIR: DIR + the recorded path */
	const char *buildid_dir;    /* --buildid-dir DIR (default ~/.debug) */
	const char *vmlinux;        /* --vmlinux FILE: the kernel's code */
	int jobs;                   /* --jobs N (0: the default, jobs_new()'s rule) */
};

/* The most --jobs a command takes. */
#define JOBS_MAX 256

/* A command's own options: return 1 if argv[*i] (and maybe the following
 * arguments, advancing *i) was taken, 0 if it is not one. */
typedef int (*cli_extra_opt_fn)(void *user, int argc, char **argv, int *i);

enum cli_mode { CLI_PACKETS, CLI_DECODE };

/* Parse argv (argv[0] is the command name). --help prints `help` and exits. */
void cli_parse_options(int argc, char **argv, struct options *o, enum cli_mode mode, void (*help)(FILE *),
		       cli_extra_opt_fn extra, void *user);

/* Decode what the options name (a snapshot, or --trace) with slots of
 * `kind`; every packet/record goes to the context's handler. Returns the
 * exit status (and prints the summary line for FMT_NONE). */
int cli_run(struct options *o, struct run_ctx *ctx, enum slot_kind kind);

uint64_t parse_number(const char *s, const char *what);
/* argv[*i] as "NAME VALUE", or "--name=VALUE" for a long name: the value
 * (*i moved past it), NULL if argv[*i] is another option. A missing value
 * is a usage error. */
const char *cli_opt_value(int argc, char **argv, int *i, const char *name);

/* Open an input file for reading: regular files only (a FIFO or device
 * would block or never end), or standard input for "-" when allow_stdin.
 * NULL after printing why. */
FILE *cli_open_input(const char *path, int allow_stdin);

/* The --elf files' symbols and line tables (NULL without --elf); exits
 * with a message when one cannot be read. Free with symtab_free(). */
struct symtab;
struct symtab *cli_load_symbols(const struct options *o);
/* A new image holding the --elf files' code (exits on errors). */
csd_image *cli_elf_image(const struct options *o);

/* The pipeline's parts, shared with the perf.data input (perf_input.c). */
int cli_slot_init(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn);
/* Does the slot hold a decoder made for this kind, configuration, image
 * and insn (one cli_slot_renew resets rather than makes anew)? */
int cli_slot_fits(const struct source_slot *s, int kind, const struct csd_trace_config *cfg, const csd_image *img,
		  int insn);
/* cli_slot_init() of a slot that may hold the decoder of an earlier
 * stretch of trace: one that fits (cli_slot_fits) is reset rather than
 * made anew (it keeps the code it has classified); any other is freed
 * first. */
int cli_slot_renew(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn);
/* Free the slot's decoders (their pointers cleared). */
void cli_slot_free(struct source_slot *s);
int cli_slot_feed(struct source_slot *s, const struct csd_bytes *b);
void cli_slot_finish(struct source_slot *s);
/* Hand the decoded packets / records of s on (merge, handler or printer). */
void cli_drain_slot(struct run_ctx *ctx, struct source_slot *s);
/* One record / packet of s, as cli_drain_slot hands each on (counted, then
 * to the merge, handler or printer). */
void cli_take_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);
/* Append buf[0, n) to the text *text of *len bytes in *cap, which grows by
 * doubling (from `first`); -1, with nothing appended, if memory is short.
 * (The print streams' writes: perf.data's held records, the workers'.) */
int cli_text_append(char **text, size_t *len, size_t *cap, size_t first, const char *buf, size_t n);
/* Free what cli_take_record kept for perf.data's merged records. */
void cli_end_held_text(struct run_ctx *ctx);
/* The counting part of cli_take_record (items, instructions, errors of
 * s) for r[0, n); inline, as --format none counts every record and nothing
 * else. The counts are held in locals (through *s, each record's adds
 * would wait on the last one's store). */
static inline void cli_count_records(struct source_slot *s, const struct csd_record *r, int n)
{
	uint64_t insns = s->insns, errors = s->errors;
	for (int i = 0; i < n; i++) {
		const uint32_t type = r[i].type;
		if (type == CSD_REC_RANGE)
			insns += r[i].count;
		else if (type == CSD_REC_INSN)
			insns++;
		else if (type == CSD_REC_ERROR)
			errors++;
	}
	s->items += (uint64_t)(n > 0 ? n : 0);
	s->insns = insns;
	s->errors = errors;
}
static inline void cli_count_record(struct source_slot *s, const struct csd_record *r)
{
	cli_count_records(s, r, 1);
}
/* Nothing but the counts is wanted of the records (--format none, no
 * handler, no merge): cli_count_record is all cli_take_record would do. */
int cli_counts_only(const struct run_ctx *ctx);
void cli_take_packet(struct run_ctx *ctx, struct source_slot *s, const struct csd_packet *p);
/* The same for a record that another thread has printed to text[0, len)
 * exactly as cli_take_print would print it: only where the context has no
 * handler. */
void cli_take_record_text(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r, const char *text,
			  size_t len);
/* Would cli_take_record_text write r's text straight out (1), or push it
 * to the merge? Where it would, counting r (cli_count_record) and writing
 * the text is all it does, so the caller may gather the texts of such
 * records into one write. A packet printed by another thread
 * (cli_print_packet) always goes straight out: what else cli_take_packet
 * does is cli_count_packet_text. */
int cli_record_text_straight(const struct run_ctx *ctx, const struct source_slot *s, const struct csd_record *r);
void cli_count_packet_text(struct run_ctx *ctx, struct source_slot *s, const struct csd_packet *p);
/* Print p as cli_take_packet prints it, to `out`, on any thread. */
void cli_print_packet(const struct run_ctx *ctx, FILE *out, const struct source_slot *s, const struct csd_packet *p);
/* Stop the run (exit 2) when the output stream has failed. */
void cli_check_output(struct run_ctx *ctx);
/* A command's output done: standard output flushed, or its own file f
 * (named `name`) closed. 0, or -1 after saying why (as cli_check_output,
 * `name` first where given). */
int cli_end_output(FILE *f, const char *name);
void cli_report_frame_error(struct run_ctx *ctx, const struct csd_frame_out *fo);
/* Add the --image and --elf files to img (exits on errors). */
void cli_load_extra_images(const struct options *o, csd_image *img);
/* Decode this source instruction by instruction? */
int cli_slot_insn(const struct options *o, struct run_ctx *ctx, const struct csd_trace_config *cfg);
void cli_add_totals(struct run_ctx *ctx, const struct source_slot *s);
/* The exit status (and the summary of FMT_NONE) at the end of a run. */
int cli_finish_status(struct run_ctx *ctx, int io_failed, int decode);

/* perf_input.c: is `path` a perf.data file (a regular file starting with
 * a perf magic)? Decode it. */
int cli_is_perf_data(const char *path);
int cli_run_perf(struct options *o, struct run_ctx *ctx, enum slot_kind kind);

/* Commands in their own files: argv[0] is the command name. */
int csd_cmd_coverage(int argc, char **argv);
int csd_cmd_profile(int argc, char **argv);
int csd_cmd_timeline(int argc, char **argv);

/* print.c */
/* The text listing of records names instructions and, with symbols,
 * their functions and lines; cli_run() brackets a text decode with these. */
void print_text_begin(const struct symtab *syms);
void print_text_end(void);
/* The same for another thread that prints records (between the two). */
void print_text_thread_begin(void);
void print_text_thread_end(void);
void print_packet_text(FILE *out, uint8_t id, const struct csd_packet *p);
void print_packet_json(FILE *out, uint8_t id, const struct csd_packet *p);
/* The same with the source's perf.data facts (cpu, pid, tid); s may be NULL. */
void print_packet_text_src(FILE *out, uint8_t id, const struct source_slot *s, const struct csd_packet *p);
void print_packet_json_src(FILE *out, uint8_t id, const struct source_slot *s, const struct csd_packet *p);
/* perf.data input: a text line naming the thread of s's next records, and
 * the record of a PERF_RECORD_AUX that says trace was lost. */
void print_thread_text(FILE *out, const struct source_slot *s);
void print_aux_lost_text(FILE *out, const struct csd_perf_event *ev);
void print_aux_lost_json(FILE *out, const struct csd_perf_event *ev);
void print_record_text(FILE *out, const struct source_slot *s, const struct csd_record *r);
void print_record_json(FILE *out, const struct source_slot *s, const struct csd_record *r);
/* The note that records of s may be out of time order (`waiting`: the
 * source lagging behind them, or NULL). */
void print_order_text(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting);
void print_order_json(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting);

#endif
