/* symbols.h - what an ELF file says about addresses: function symbols
 * (.symtab / .dynsym FUNC, Thumb bit removed), ARM mapping symbols ($a,
 * $t, $d: code or data) and, when the tool is built with libdw
 * (CSD_HAVE_LIBDW), the DWARF line table. */
#ifndef CSD_SYMBOLS_H
#define CSD_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct sym_func {
	uint64_t start, end;   /* [start, end): the symbol's size, or up to the next function */
	const char *name;
	int thumb;             /* the symbol value had bit 0 set */
	int sized;             /* the symbol had a size (else `end` is a guess) */
};

/* One row of the line table (moved by the ELF's bias). */
struct sym_line {
	uint64_t addr;
	uint32_t file;         /* index for symtab_file() */
	uint32_t line;
	int end_sequence;      /* first address after a sequence: no line */
	uint32_t order;        /* position in the tables as read (keeps sorting stable) */
};

struct symtab;

struct symtab *symtab_new(void);
void symtab_free(struct symtab *st);

/*
 * Read the symbols (and line table) of a 32-bit little-endian ELF file,
 * every address moved by `bias`. Returns the number of function symbols
 * added, or -1 with a reason in err. Call symtab_finish() after the last.
 */
int symtab_add_elf(struct symtab *st, const char *path, int64_t bias, char *err, size_t errlen);
/* The same for a file's bytes already in memory (`name` for messages);
 * reading the line table may change data. */
int symtab_add_elf_mem(struct symtab *st, uint8_t *data, uint64_t size, const char *name, int64_t bias, char *err,
		       size_t errlen);
/* What the last symtab_add_elf() could not read of the file (a table
 * skipped, and why and where), first SYMTAB_WARNINGS of them; and how
 * many more there were. */
#define SYMTAB_WARNINGS 8
unsigned symtab_num_warnings(const struct symtab *st);
const char *symtab_warning(const struct symtab *st, unsigned i);
unsigned symtab_more_warnings(const struct symtab *st);
void symtab_finish(struct symtab *st);

size_t symtab_num_funcs(const struct symtab *st);
const struct sym_func *symtab_func(const struct symtab *st, size_t i);   /* by address */
/* The function containing addr, or NULL. */
const struct sym_func *symtab_find(const struct symtab *st, uint64_t addr);
/* Index of f in address order (for per-function arrays). */
size_t symtab_func_index(const struct symtab *st, const struct sym_func *f);

/* Nonzero if the tool can read line tables at all: built with libdw, and
 * libdw was not found missing when an ELF file with DWARF needed it. */
int symtab_reads_lines(void);
/* Nonzero if any ELF had DWARF line information. */
int symtab_has_lines(const struct symtab *st);
/* Source position of addr: 1 with *file and *line set, 0 if unknown. */
int symtab_line(const struct symtab *st, uint64_t addr, const char **file, unsigned *line);
size_t symtab_num_lines(const struct symtab *st);
const struct sym_line *symtab_line_row(const struct symtab *st, size_t i); /* by address */
const char *symtab_file(const struct symtab *st, uint32_t index);

/* What the mapping symbols say about addr: CSD_ISA_ARM or CSD_ISA_THUMB
 * (code), 0 (data, e.g. a literal pool), -1 (no mapping symbol before it). */
int symtab_code_isa(const struct symtab *st, uint64_t addr);
/* Address of the first mapping symbol after addr, or UINT64_MAX. */
uint64_t symtab_next_map(const struct symtab *st, uint64_t addr);

#endif
