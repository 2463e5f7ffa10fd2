/*
 * cmd_coverage.c - `csdec coverage`: which instructions, lines and
 * branches of a program the trace shows executed.
 *
 * Every decoded instruction is counted per address (with how often it was
 * a taken branch). The program's code comes from the --elf files: each
 * function symbol's range is walked with the library's instruction
 * classifier (mapping symbols mark literal pools and tables as data), so
 * instructions that never ran are known too. Lines come from DWARF; a
 * line's count is the highest count of its instructions. A conditional
 * branch (B<c>, CBZ/CBNZ, a branch in an IT block) is exercised both ways
 * when it was seen taken and not taken. The counting and the reports are
 * in cov_accum.c; the sources are decoded as ranges.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cov_accum.h"
#include "slotmap.h"
#include "symbols.h"

struct coverage {
	struct cov *acc;
	const char *lcov_path;
	int list_insns;
};

static void usage_coverage(FILE *out)
{
	fprintf(out,
		"Usage: csdec coverage <snapshot-dir> [--id ID]... [--elf FILE[@BIAS]]... [--lcov FILE] [--insns]\n"
		"       csdec coverage <perf.data> [--symfs DIR] [decode options] [--elf FILE]...\n"
		"       csdec coverage --trace FILE --protocol etm3|ptm [decode options] [--elf FILE]...\n"
		"\n"
		"What the trace shows executed of a program: per function the instructions\n"
		"executed of those present and the conditional branches exercised both ways,\n"
		"then every conditional branch that was not. The program's code, functions\n"
		"and lines come from the ELF files (symbols; DWARF line info when built\n"
		"with -g). Without an ELF, coverage is per executed instruction only.\n"
		"\n"
		"  --elf FILE[@BIAS]  the program (also its code for the decoder); may be repeated\n"
		"  --lcov FILE        write line and branch coverage as an lcov tracefile\n"
		"                     (genhtml FILE makes HTML); needs DWARF line info\n"
		"  --insns            also list every instruction with its count\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"  --jobs N           decode on up to N threads, one source per thread (default:\n"
		"                     the online cores, one for one source or a capture under\n"
		"                     1 MiB; 1: all on one; N >= 2 given: a capture's one\n"
		"                     source is cut into chunks); the result is the same\n"
		"Other options as for 'csdec decode' (--trace, --protocol, --reg, --image...).\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (coverage of what decoded\n"
		"is still reported), 2 usage or I/O error.\n");
}

static int coverage_option(void *user, int argc, char **argv, int *i)
{
	struct coverage *c = user;
	const char *a = argv[*i];
	if (strcmp(a, "--insns") == 0) {
		c->list_insns = 1;
		return 1;
	}
	if (strncmp(a, "--lcov=", 7) == 0) {
		c->lcov_path = a + 7;
		return 1;
	}
	if (strcmp(a, "--lcov") == 0) {
		if (*i + 1 >= argc)
			die_usage("--lcov needs a file name");
		c->lcov_path = argv[++*i];
		return 1;
	}
	if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0 || strcmp(a, "--insn") == 0 ||
	    strcmp(a, "--data-only") == 0)
		die_usage("coverage: %s is an option of decode", a);
	return 0;
}

static void on_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	struct coverage *c = ctx->user;
	if (cov_record(c->acc, s->id, r) < 0)
		die_io("coverage: %s", cov_error(c->acc));
}

static void on_source_end(struct run_ctx *ctx, struct source_slot *s)
{
	struct coverage *c = ctx->user;
	if (cov_source_end(c->acc, s->id, s->image) < 0)
		die_io("coverage: %s", cov_error(c->acc));
}

int csd_cmd_coverage(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	struct coverage c;
	memset(&c, 0, sizeof(c));
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_coverage, coverage_option, &c);
	struct symtab *st = cli_load_symbols(&o);
	if (c.lcov_path && !symtab_has_lines(st))
		die_usage("--lcov needs DWARF line info: %s", !symtab_reads_lines() ? "csdec was built without libdw"
			  : o.n_elfs ? "an --elf file built with -g" : "an --elf file built with -g (no --elf given)");
	c.acc = cov_new(st, ACCUM_MEM_LIMIT);
	if (!c.acc)
		die_io("out of memory");
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stderr; /* only frame errors are printed by the pipeline */
	ctx.on_record = on_record;
	ctx.on_source_end = on_source_end;
	ctx.user = &c;
	o.insn = 0; /* ranges: O(1) per range, however long */
	int status = cli_run(&o, &ctx, SLOT_FLOW);
	if (status == EXIT_USAGE) {
		cov_free(c.acc);
		symtab_free(st);
		return status;
	}
	csd_image *img = cli_elf_image(&o);
	if (cov_load_code(c.acc, img) < 0 || cov_print_summary(c.acc, stdout) < 0 ||
	    (c.list_insns && cov_print_insns(c.acc, stdout) < 0))
		die_io("coverage: %s", cov_error(c.acc));
	csd_image_free(img);
	if (c.lcov_path) {
		FILE *f = fopen(c.lcov_path, "w");
		if (f && cov_write_lcov(c.acc, f) < 0)
			die_io("coverage: %s", cov_error(c.acc));
		if (!f || fclose(f) != 0) {
			fprintf(stderr, "%s: %s: cannot write: %s\n", prog, c.lcov_path, strerror(errno));
			status = EXIT_USAGE;
		}
	}
	if (cli_end_output(stdout, NULL) < 0)
		status = EXIT_USAGE;
	cov_free(c.acc);
	symtab_free(st);
	return status;
}
