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
	uint64_t items;
	uint64_t insns;
	uint64_t errors;
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
};

/* Hand one record to the context's handler or printer. */
void cli_deliver_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);
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
	/* decode without a snapshot */
	const char *trace;
	int protocol;
	uint32_t frame_format;
	int trace_id;
	uint32_t etmcr, etmccer, etmidr;
	int have_etmidr;
	const char *images[MAX_LIST];
	int n_images;
	const char *elfs[MAX_LIST];
	int n_elfs;
};

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

/* Commands in their own files: argv[0] is the command name. */
int csd_cmd_coverage(int argc, char **argv);
int csd_cmd_profile(int argc, char **argv);

/* print.c */
/* The text listing of records names instructions and, with symbols,
 * their functions and lines; cli_run() brackets a text decode with these. */
void print_text_begin(const struct symtab *syms);
void print_text_end(void);
void print_packet_text(FILE *out, uint8_t id, const struct csd_packet *p);
void print_packet_json(FILE *out, uint8_t id, const struct csd_packet *p);
void print_record_text(FILE *out, const struct source_slot *s, const struct csd_record *r);
void print_record_json(FILE *out, const struct source_slot *s, const struct csd_record *r);
/* The note that records of s may be out of time order (`waiting`: the
 * source lagging behind them, or NULL). */
void print_order_text(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting);
void print_order_json(FILE *out, const struct source_slot *s, const char *reason, const struct source_slot *waiting);

#endif
