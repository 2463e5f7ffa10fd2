/*
 * qemu_log.h - reader of the execution log that qemu-user writes for an
 * AArch32 Linux program run with
 *     qemu-arm -singlestep -d exec,nochain -D LOG PROGRAM
 * (qemu 6.1 or later; facts about the log in docs/qemu-log.md). It yields
 * one record per executed instruction: address, instruction set, IT state.
 *
 * Streaming in constant memory: the caller owns the reader struct (about
 * 18 KiB, no allocation) and may read a log of any size. Lines that are not
 * executed instructions are reported one by one (QEMU_LOG_BAD_LINE with
 * the line number and a reason) and reading goes on after them; no input
 * makes the reader read out of bounds or loop without consuming input.
 */
#ifndef CSD_TOOLS_QEMU_LOG_H
#define CSD_TOOLS_QEMU_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "csdec.h"

/* Longer lines are reported as bad (a real line is under 200 bytes plus
 * the symbol name). */
#define QEMU_LOG_LINE_MAX 1024
#define QEMU_LOG_CHUNK 16384

/* qemu-user's Linux "kuser helper" page: a record at or above this address
 * is not a real instruction but a whole helper routine that qemu emulates
 * (the next record is the return address). */
#define QEMU_LOG_KUSER_BASE 0xFFFF0000u

/* One executed instruction. */
struct qemu_log_insn {
	uint32_t addr;        /* its address */
	uint8_t isa;          /* CSD_ISA_ARM or CSD_ISA_THUMB */
	/* CPSR.IT (ITSTATE) as the instruction executes: firstcond:mask, 0
	 * outside IT blocks. Always 0 for ARM. */
	uint8_t itstate;
	uint64_t line;        /* its line in the log, from 1 */
};

/* Results of qemu_log_next(). */
enum qemu_log_result {
	QEMU_LOG_INSN = 1,       /* *insn is the next executed instruction */
	QEMU_LOG_END = 0,        /* no more instructions (again on every later call) */
	QEMU_LOG_BAD_LINE = -1,  /* line bad_line is not an executed instruction: bad_reason */
	QEMU_LOG_READ_ERROR = -2,/* the FILE reported an error; the reader then ends */
};

struct qemu_log_reader {
	/* Statistics and the last bad line; read them, do not write them. */
	uint64_t lines;          /* lines read so far */
	uint64_t insns;          /* records returned */
	uint64_t cancelled;      /* Trace lines undone by "Stopped execution" lines */
	uint64_t bad_lines;      /* QEMU_LOG_BAD_LINE results */
	uint64_t bad_line;       /* number of the last bad line */
	const char *bad_reason;  /* why it is bad: a static string */

	/* Private. */
	FILE *file;              /* NULL when reading from memory */
	const char *src;         /* current bytes: the memory text or chunk */
	size_t src_len, src_pos;
	int at_end;              /* no more bytes to come */
	int read_error;
	char line[QEMU_LOG_LINE_MAX + 1];
	size_t line_len;
	int line_overlong;
	struct qemu_log_insn pending;  /* last Trace line, not yet returned */
	uint64_t pending_host;         /* its host code pointer */
	int has_pending;
	int cpu_known;
	uint64_t cpu;            /* CPU index of the first Trace line */
	char chunk[QEMU_LOG_CHUNK];
};

/* Start reading the stream f (not closed by the reader). */
void qemu_log_reader_init_file(struct qemu_log_reader *r, FILE *f);

/* Start reading len bytes of text (kept by reference; need not end in
 * a NUL or a newline). */
void qemu_log_reader_init_mem(struct qemu_log_reader *r, const char *text, size_t len);

/* The next executed instruction into *insn: one of enum qemu_log_result.
 * A record is returned only once the line after its Trace line has been
 * read, since a "Stopped execution" line there cancels it. */
int qemu_log_next(struct qemu_log_reader *r, struct qemu_log_insn *insn);

#endif
