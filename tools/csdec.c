/*
 * csdec.c - the command-line tool's entry point: commands and their help.
 * The tool (tools/) is the only place in csdec that prints.
 *
 *   csdec packets <snapshot-dir>|<perf.data> [--id ID]... [--format text|jsonl]
 *   csdec decode  <snapshot-dir>|<perf.data> [--id ID]... [--format text|jsonl|none] [--insn] [--data-only]
 *   csdec decode  --trace FILE --protocol etm3|ptm [--formatted] [--trace-id ID] [--core NAME]
 *                 [--reg NAME=VALUE]... [--image FILE@ADDR]... [--elf FILE[@BIAS]]...
 *   csdec gen     --qemu-log LOG --elf ELF --protocol ptm|etm3 ... -o DIR
 *
 * Exit status: 0 clean, 1 the trace had errors (everything decodable was
 * still printed), 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "merge.h"
#include "gen_cmd.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: csdec <command> [options]\n"
		"\n"
		"Decode ARM CoreSight ETMv3 and PTM program-flow trace.\n"
		"\n"
		"Commands:\n"
		"  packets <snapshot-dir>   list every packet of every trace source\n"
		"  decode  <snapshot-dir>   the executed instructions, with exceptions, cycles\n"
		"                           and context (also: decode --trace FILE ...)\n"
		"                           (every command but gen also reads a perf.data file)\n"
		"  coverage <snapshot-dir>  executed instructions, lines and branches of a program\n"
		"                           (--elf): summary, lcov tracefile\n"
		"  profile  <snapshot-dir>  instructions and cycles per function, callers and\n"
		"                           callees: top list, callgrind file, folded stacks\n"
		"  timeline <snapshot-dir>  the calls over time as a Chrome trace-event JSON\n"
		"                           file (Perfetto, chrome://tracing, speedscope)\n"
		"  gen --qemu-log LOG ...   make the trace an ETM / PTM would have produced for a\n"
		"                           program run recorded by qemu-arm, as a snapshot\n"
		"                           or as a perf.data file (--perf-data)\n"
		"\n"
		"\n"
		"Options:\n"
		"  --help                   this text; 'csdec <command> --help' for the options\n"
		"                           of a command\n"
		"  --version                print the version\n");
}

static void usage_packets(FILE *out)
{
	fprintf(out,
		"Usage: csdec packets <snapshot-dir> [--id ID]... [--format text|jsonl] [--jobs N]\n"
		"       csdec packets <perf.data> [options]\n"
		"\n"
		"List the packets of each ETMv3 / PTM trace source of a CoreSight snapshot\n"
		"or of a perf.data file (perf record -e cs_etm//), with the capture offset\n"
		"and raw bytes of each packet.\n"
		"\n"
		"  --id ID          only this trace ID (decimal or 0x hex); may be repeated\n"
		"  --format FMT     text (default): one line per packet\n"
		"                   jsonl: one JSON object per packet, with at least\n"
		"                   \"packet\" (kind), \"id\", \"offset\" and the decoded fields;\n"
		"                   from a perf.data file also \"cpu\", and \"pid\" / \"tid\"\n"
		"                   where known\n"
		"  --jobs N         decode on up to N threads: one source per thread, the\n"
		"                   one source of a capture cut into chunks (default: the\n"
		"                   online cores; one for a capture under 1 MiB; 1: all on\n"
		"                   one); the output is the same whatever N\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (all decodable packets were\n"
		"still printed), 2 usage or I/O error.\n");
}

static void usage_decode(FILE *out)
{
	fprintf(out,
		"Usage: csdec decode <snapshot-dir> [--id ID]... [--format text|jsonl|none] [--insn] [--data-only] [--jobs N]\n"
		"       csdec decode <perf.data> [--symfs DIR] [--buildid-dir DIR] [--vmlinux FILE] [options]\n"
		"       csdec decode --trace FILE --protocol etm3|ptm [--formatted] [--trace-id ID] [--core NAME]\n"
		"                    [--reg NAME=VALUE]... [--sysfs DIR] [--image FILE@ADDR]... [--elf FILE[@BIAS]]...\n"
		"\n"
		"Decode trace into the instructions the core executed, with exceptions,\n"
		"cycle counts, timestamps and context changes.\n"
		"\n"
		"  --id ID            only this trace ID (decimal or 0x hex); may be repeated;\n"
		"                     with --trace, the one source's ID (as --trace-id)\n"
		"  --format FMT       text (default: one line per executed instruction, with\n"
		"                     the events), jsonl (one JSON object per record, with\n"
		"                     \"type\"), or none (decode all, print one summary line)\n"
		"  --order ORDER      time (default): several sources interleaved by their\n"
		"                     timestamps; capture: in the order of the capture.\n"
		"                     In time order, records printed before their order is\n"
		"                     known follow a note {\"type\":\"order\",\"id\":N,\"reason\":...}\n"
		"  --insn             jsonl: one record per instruction instead of ranges:\n"
		"                     {\"type\":\"insn\",\"id\":N,\"addr\":\"0x...\",\"isa\":\"A32|T32|...\",\n"
		"                      \"size\":N,\"opcode\":\"0x...\",\"cond\":\"pass|fail|unknown\",\n"
		"                      \"cycles\":N} (the text listing is always per instruction)\n"
		"  --data-only        ETMv3 data trace: only the data accesses (instruction,\n"
		"                     direction, size, address, value), \"data\" and\n"
		"                     \"data_lost\" records, with the \"error\" and \"truncated\"\n"
		"                     records; a data-only trace (ETMCR bit 20) has no\n"
		"                     instruction, so its records have no \"insn\", \"dir\" or \"size\"\n"
		"  --jobs N           decode on up to N threads: one source of a snapshot per\n"
		"                     thread, a capture decoded for one source cut into\n"
		"                     chunks; from perf.data, pieces of trace on the threads\n"
		"                     and a large piece of a source decoding alone in chunks\n"
		"                     (default: the online cores; one for a capture\n"
		"                     under 1 MiB, and for a formatted one of several sources\n"
		"                     with --format none; 1: all on one); the output is the\n"
		"                     same whatever N\n"
		"Without a snapshot:\n"
		"  --trace FILE       the captured trace (- for standard input)\n"
		"  --protocol P       etm3 or ptm (with --sysfs: from its ETMIDR unless given)\n"
		"  --formatted        FILE holds 16-byte CoreSight formatter frames (ETB/ETR);\n"
		"                     --formatted=port for a TPIU/DSTREAM capture (frames found\n"
		"                     at its syncs, or without them inferred from its bytes)\n"
		"  --trace-id ID      the source's trace ID (default 0x10)\n"
		"  --core NAME        the traced core: cortex-a (default), cortex-r or cortex-m\n"
		"                     (cortex-a9, cortex-m3...): exception names and numbers,\n"
		"                     and the Cortex-M forms of ETMv3 packets\n"
		"  --reg NAME=VALUE   ETMCR, ETMCCER, ETMIDR, ETMTRACEIDR (the registers during\n"
		"                     capture)\n"
		"  --sysfs DIR        the registers and trace ID from a copy of the ETM's sysfs\n"
		"                     directory (/sys/bus/coresight/devices/<etm>/); --reg wins\n"
		"perf.data input (a file perf record -e cs_etm// wrote): records also have\n"
		"\"cpu\", and \"pid\" / \"tid\" where known; lost trace is an \"aux_lost\" record.\n"
		"The programs are the files the recording mapped, looked up in the build-ID\n"
		"cache, then at their recorded paths:\n"
		"  --buildid-dir DIR  the build-ID cache (default ~/.debug)\n"
		"  --symfs DIR        the recorded paths under DIR (default: as they are)\n"
		"  --vmlinux FILE     the kernel (ELF), for kernel addresses\n"
		"Program image (with a snapshot, a perf.data file or --trace):\n"
		"  --image FILE@ADDR  a raw binary loaded at ADDR; may be repeated\n"
		"  --elf FILE[@BIAS]  the PT_LOAD segments of an ELF file, moved by BIAS; its\n"
		"                     symbols and lines (<func+0x..> file:line) in the listing\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (everything decodable was\n"
		"still printed), 2 usage or I/O error.\n");
}

static int cmd_packets(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	cli_parse_options(argc, argv, &o, CLI_PACKETS, usage_packets, NULL, NULL);
	if (o.trace)
		die_usage("packets reads a snapshot directory");
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = o.format;
	return cli_run(&o, &ctx, SLOT_PACKETS);
}

static int cmd_decode(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_decode, NULL, NULL);
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = o.format;
	ctx.data_only = o.data_only;
	/* Printed records of several sources come out in timestamp order. */
	if (ctx.format != FMT_NONE && !o.capture_order) {
		ctx.merge = merge_new(cli_deliver_merged, cli_deliver_order_note);
		if (!ctx.merge)
			die_io("out of memory");
	}
	int rc = cli_run(&o, &ctx, SLOT_FLOW);
	merge_free(ctx.merge);
	return rc;
}

int main(int argc, char **argv)
{
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return EXIT_CLEAN;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("csdec %s\n", csd_version());
		return EXIT_CLEAN;
	}
	static const char *const commands[] = { "packets", "decode", "gen", "coverage", "profile", "timeline" };
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (strcmp(cmd, commands[k]) == 0)
			cli_command = commands[k];
	if (strcmp(cmd, "packets") == 0)
		return cmd_packets(argc - 1, argv + 1);
	if (strcmp(cmd, "decode") == 0)
		return cmd_decode(argc - 1, argv + 1);
	if (strcmp(cmd, "gen") == 0)
		return csd_cmd_gen(argc - 1, argv + 1);
	if (strcmp(cmd, "coverage") == 0)
		return csd_cmd_coverage(argc - 1, argv + 1);
	if (strcmp(cmd, "profile") == 0)
		return csd_cmd_profile(argc - 1, argv + 1);
	if (strcmp(cmd, "timeline") == 0)
		return csd_cmd_timeline(argc - 1, argv + 1);
	die_usage("unknown command '%s'", cmd);
	return EXIT_USAGE;
}
