/*
 * fuzz_symbols.c - libFuzzer harness for the tool's ELF symbol reader
 * (tools/symbols.c): symbol tables, mapping symbols and, when built with
 * libdw, the DWARF line table. The input is an ELF file.
 *
 * Checked: a refusal has a reason; warnings stay within their bound; at
 * most one function or mapping symbol per 16-byte symbol entry in the file
 * (each table is read once, however many section headers name it); after
 * symtab_finish() the functions are sorted with distinct starts, non-empty
 * and each found by its start; names and file names have no control
 * characters; mapping symbols and line rows are sorted and the lookups
 * agree with them; reading the same bytes again gives the same result.
 */
#include <elf.h>

#include "fuzz_common.h"
#include "fuzz_tools.h"

static void sym_printable(const char *s)
{
	FUZZ_CHECK(s != NULL);
	for (; *s; s++)
		FUZZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7F);
}

static struct symtab *sym_read(const uint8_t *data, size_t size, int *rc)
{
	uint8_t *copy = malloc(size ? size : 1);
	char err[512];
	FUZZ_CHECK(copy != NULL);
	if (size)
		memcpy(copy, data, size);
	struct symtab *st = symtab_new();
	FUZZ_CHECK(st != NULL);
	err[0] = 0;
	*rc = symtab_add_elf_mem(st, copy, size, "fuzz.elf", 0, err, sizeof(err));
	free(copy);
	FUZZ_CHECK(*rc >= -1);
	if (*rc < 0)
		FUZZ_CHECK(err[0] != 0);
	else
		FUZZ_CHECK((size_t)*rc == st->nfn);
	FUZZ_CHECK(st->nfn + st->nmap <= size / sizeof(Elf32_Sym));
	FUZZ_CHECK(symtab_num_warnings(st) <= SYMTAB_WARNINGS);
	for (unsigned i = 0; i < symtab_num_warnings(st); i++)
		sym_printable(symtab_warning(st, i) + strlen("fuzz.elf"));
	symtab_finish(st);
	return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc, rc2;
	struct symtab *st = sym_read(data, size, &rc);
	for (size_t i = 0; i < st->nfn; i++) {
		const struct sym_func *f = &st->fn[i];
		FUZZ_CHECK(f->start < f->end && f->end <= (UINT64_C(1) << 32));
		FUZZ_CHECK(i == 0 || st->fn[i - 1].start < f->start);
		FUZZ_CHECK(symtab_find(st, f->start) == f);
		FUZZ_CHECK(symtab_func_index(st, f) == i);
		sym_printable(f->name);
		FUZZ_CHECK(f->name[0] != 0);
	}
	for (size_t i = 0; i < st->nmap; i++) {
		uint64_t a = st->map[i].addr;
		FUZZ_CHECK(i == 0 || st->map[i - 1].addr <= a);
		int isa = symtab_code_isa(st, a);
		FUZZ_CHECK(isa == 0 || isa == CSD_ISA_ARM || isa == CSD_ISA_THUMB);
		FUZZ_CHECK(symtab_next_map(st, a) > a);
	}
	for (size_t i = 0; i < st->nrows; i++) {
		const struct sym_line *r = &st->rows[i];
		const char *file;
		unsigned line;
		FUZZ_CHECK(i == 0 || st->rows[i - 1].addr <= r->addr);
		FUZZ_CHECK(r->file < st->nfiles);
		/* the row in effect at its address is the last one there */
		if (i + 1 == st->nrows || st->rows[i + 1].addr != r->addr) {
			int known = symtab_line(st, r->addr, &file, &line);
			FUZZ_CHECK(known == !r->end_sequence);
			if (known) {
				FUZZ_CHECK(line == r->line && file == st->files[r->file]);
				sym_printable(file);
			}
		}
	}
	FUZZ_CHECK(!st->nrows == !symtab_has_lines(st) || !st->nrows);
	/* The same bytes again: the same symbols and lines. */
	struct symtab *again = sym_read(data, size, &rc2);
	FUZZ_CHECK(rc == rc2 && again->nfn == st->nfn && again->nmap == st->nmap && again->nrows == st->nrows);
	for (size_t i = 0; i < st->nfn; i++)
		FUZZ_CHECK(again->fn[i].start == st->fn[i].start && again->fn[i].end == st->fn[i].end &&
			   strcmp(again->fn[i].name, st->fn[i].name) == 0);
	for (size_t i = 0; i < st->nrows; i++)
		FUZZ_CHECK(again->rows[i].addr == st->rows[i].addr && again->rows[i].line == st->rows[i].line);
	symtab_free(again);
	symtab_free(st);
	return 0;
}
