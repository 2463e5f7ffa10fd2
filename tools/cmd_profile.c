/*
 * cmd_profile.c - `csdec profile`: where the traced instructions and
 * cycles went, per function, and who called whom. The counting and the
 * reports are in prof_accum.c; sources are decoded as ranges except where
 * only instructions give each its cycles (prof_needs_insns).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "prof_accum.h"
#include "slotmap.h"
#include "symbols.h"

struct profile {
	struct prof *acc;
	/* options */
	const char *callgrind_path;
	unsigned long top;
	int by_cycles;
	int folded;                /* --format folded */
	int weight;                /* folded: 0 as the trace allows, 'i' instructions, 'c' cycles */
};

static void usage_profile(FILE *out)
{
	fprintf(out,
		"Usage: csdec profile <snapshot-dir> [--id ID]... [--elf FILE[@BIAS]]... [--top N]\n"
		"                     [--sort instr|cycles] [--callgrind FILE]\n"
		"                     [--format text|folded] [--weight instr|cycles]\n"
		"       csdec profile <perf.data> [--symfs DIR] [decode options] ...\n"
		"       csdec profile --trace FILE --protocol etm3|ptm [decode options] ...\n"
		"\n"
		"Instructions and cycles per function (self), the number of calls to each,\n"
		"as a flat list of the top functions; with --callgrind also the call graph\n"
		"with inclusive costs, for KCachegrind / callgrind_annotate. Functions are\n"
		"the ELF's symbols; without --elf, the targets of the calls in the trace\n"
		"(named by address).\n"
		"\n"
		"  --top N            list the N functions with the most instructions (or\n"
		"                     cycles); 0: all (default 20)\n"
		"  --sort KEY         instr (default) or cycles\n"
		"  --callgrind FILE   write the profile in callgrind format\n"
		"                     (events: Instr Cycles; positions: instr line)\n"
		"  --format FMT       text (default): the top list; folded: collapsed call\n"
		"                     stacks for flame graphs (flamegraph.pl, inferno,\n"
		"                     speedscope), one line 'outer;...;inner WEIGHT' per stack,\n"
		"                     the weight being the innermost function's self cost\n"
		"  --weight W         folded: cycles (default when the trace has cycle counts)\n"
		"                     or instr; the weights add up to the profile's total\n"
		"  --elf FILE[@BIAS]  symbols and code of the program; may be repeated\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"  --jobs N           decode on up to N threads, one source per thread (default:\n"
		"                     the online cores, one for one source or a capture under\n"
		"                     1 MiB; 1: all on one; N >= 2 given: a capture's one\n"
		"                     source is cut into chunks); the result is the same\n"
		"Other options as for 'csdec decode' (--trace, --protocol, --reg, --image...).\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (the profile of what decoded\n"
		"is still written), 2 usage or I/O error.\n");
}

static int profile_option(void *user, int argc, char **argv, int *i)
{
	struct profile *p = user;
	const char *v;
	if ((v = cli_opt_value(argc, argv, i, "--callgrind"))) {
		p->callgrind_path = v;
	} else if ((v = cli_opt_value(argc, argv, i, "--top"))) {
		p->top = (unsigned long)parse_number(v, "--top count");
	} else if ((v = cli_opt_value(argc, argv, i, "--sort"))) {
		if (strcmp(v, "instr") != 0 && strcmp(v, "cycles") != 0)
			die_usage("--sort expects instr or cycles, got '%s'", v);
		p->by_cycles = v[0] == 'c';
	} else if ((v = cli_opt_value(argc, argv, i, "--format"))) {
		if (strcmp(v, "text") != 0 && strcmp(v, "folded") != 0)
			die_usage("profile: --format expects text or folded, got '%s'", v);
		p->folded = v[0] == 'f';
	} else if ((v = cli_opt_value(argc, argv, i, "--weight"))) {
		if (strcmp(v, "instr") != 0 && strcmp(v, "cycles") != 0)
			die_usage("--weight expects instr or cycles, got '%s'", v);
		p->weight = v[0];
	} else {
		if (strcmp(argv[*i], "--insn") == 0 || strcmp(argv[*i], "--data-only") == 0)
			die_usage("profile: %s is an option of decode", argv[*i]);
		return 0;
	}
	return 1;
}

static void on_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	struct profile *p = ctx->user;
	if (prof_record(p->acc, s->id, r) < 0)
		die_io("profile: %s", prof_error(p->acc));
}

static void on_source_end(struct run_ctx *ctx, struct source_slot *s)
{
	struct profile *p = ctx->user;
	if (prof_source_end(p->acc, s->id, s->image) < 0)
		die_io("profile: %s", prof_error(p->acc));
}

static int insn_mode(struct run_ctx *ctx, const struct csd_trace_config *cfg)
{
	(void)ctx;
	return prof_needs_insns(cfg);
}

int csd_cmd_profile(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.top = 20;
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_profile, profile_option, &p);
	struct symtab *st = cli_load_symbols(&o);
	p.acc = prof_new(st, p.callgrind_path != NULL, ACCUM_MEM_LIMIT);
	if (!p.acc || (p.folded && prof_keep_stacks(p.acc) < 0))
		die_io("out of memory");
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stderr; /* only frame errors are printed by the pipeline */
	ctx.on_record = on_record;
	ctx.on_source_end = on_source_end;
	ctx.insn_mode = insn_mode;
	ctx.user = &p;
	int status = cli_run(&o, &ctx, SLOT_FLOW);
	if (status != EXIT_USAGE) {
		if (prof_finish(p.acc) < 0)
			die_io("profile: %s", prof_error(p.acc));
		int folded_cycles = p.weight ? p.weight == 'c' : prof_cycles(p.acc) != 0;
		if (p.folded ? prof_write_folded(p.acc, stdout, folded_cycles) < 0
			     : prof_print_top(p.acc, stdout, p.top, p.by_cycles) < 0)
			die_io("profile: %s", prof_error(p.acc));
		if (p.callgrind_path) {
			FILE *f = fopen(p.callgrind_path, "w");
			if (f && prof_write_callgrind(p.acc, f, argc, argv) < 0)
				die_io("profile: %s", prof_error(p.acc));
			if (!f || fclose(f) != 0) {
				fprintf(stderr, "%s: %s: cannot write: %s\n", prog, p.callgrind_path, strerror(errno));
				status = EXIT_USAGE;
			}
		}
		if (cli_end_output(stdout, NULL) < 0)
			status = EXIT_USAGE;
	}
	prof_free(p.acc);
	symtab_free(st);
	return status;
}
