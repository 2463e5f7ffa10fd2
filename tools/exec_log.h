/*
 * exec_log.h - reader of the execution log `csdec gen --exec-log` takes:
 * the instructions a core executed and the data accesses each made, as an
 * emulator with memory hooks writes it (scripts/unicorn_log.py):
 *     I <pc> A32|T32           an executed instruction, in order
 *     R <addr> <size> <value>  a load it made, right after its I line
 *     W <addr> <size> <value>  a store
 *     # ...                    a comment
 * Numbers are hex without 0x, except size: decimal bytes 1, 2, 4 or 8. The
 * value is the little-endian load of `size` bytes at `addr`. Fields are
 * separated by spaces or tabs; an empty line (or a CR before the newline)
 * is allowed.
 *
 * Untrusted input, streamed in constant memory (the caller owns the reader,
 * about 17 KiB, nothing allocated): every line that is not one of these
 * is reported (EXEC_LOG_BAD_LINE with its number and a reason) and reading
 * goes on; a data access before any I line is bad too.
 */
#ifndef CSD_TOOLS_EXEC_LOG_H
#define CSD_TOOLS_EXEC_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXEC_LOG_LINE_MAX 256
#define EXEC_LOG_CHUNK 16384

enum exec_log_result {
	EXEC_LOG_INSN = 1,        /* item: an executed instruction (addr, isa) */
	EXEC_LOG_ACCESS = 2,      /* item: a data access (dir, addr, size, value) of the last instruction */
	EXEC_LOG_END = 0,         /* no more items (again on every later call) */
	EXEC_LOG_BAD_LINE = -1,   /* line bad_line is not a valid item: bad_reason */
	EXEC_LOG_READ_ERROR = -2, /* the FILE reported an error; the reader then ends */
};

struct exec_log_item {
	uint32_t addr;            /* instruction or data address */
	uint8_t isa;              /* INSN: CSD_ISA_ARM or CSD_ISA_THUMB */
	uint8_t dir;              /* ACCESS: 1 load (R), 2 store (W), as CSDI_MEM_LOAD / _STORE */
	uint8_t size;             /* ACCESS: 1, 2, 4 or 8 */
	uint64_t value;           /* ACCESS */
	uint64_t line;            /* its line, from 1 */
};

struct exec_log_reader {
	/* Statistics and the last bad line; read them, do not write them. */
	uint64_t lines, insns, accesses, bad_lines, bad_line;
	const char *bad_reason;   /* static string */

	/* Private. */
	FILE *file;
	const char *src;
	size_t src_len, src_pos;
	int at_end, read_error, have_insn;
	char line[EXEC_LOG_LINE_MAX + 1];
	size_t line_len;
	int line_overlong;
	char chunk[EXEC_LOG_CHUNK];
};

/* Start reading the stream f (not closed by the reader). */
void exec_log_reader_init_file(struct exec_log_reader *r, FILE *f);
/* Start reading len bytes of text (kept by reference; need not end in a
 * NUL or a newline). */
void exec_log_reader_init_mem(struct exec_log_reader *r, const char *text, size_t len);
/* The next item: one of enum exec_log_result; *item is zeroed unless an
 * item is returned. */
int exec_log_next(struct exec_log_reader *r, struct exec_log_item *item);

#endif
