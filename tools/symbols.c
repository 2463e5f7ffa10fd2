/* symbols.c - function symbols, mapping symbols and line table of ELF
 * files. The ELF is untrusted input: every offset, size and string is
 * checked against the file before use, and the work is linear in the
 * file's size however its headers point (each symbol table, string table
 * and line table is read once). */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"
#include "file.h"
#include "symbols.h"

#ifdef CSD_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include "dynlib.h"
#endif

/* A function symbol without a size ends at the next one, but not further. */
#define UNSIZED_MAX 0x10000u
/* ELF files bigger than this are not read (a vmlinux is well below). */
#define ELF_MAX ((uint64_t)1 << 31)

struct map_sym {
	uint64_t addr;
	int isa;               /* CSD_ISA_ARM, CSD_ISA_THUMB, 0 = data */
};

struct symtab {
	struct sym_func *fn;
	size_t nfn, capfn;
	struct map_sym *map;
	size_t nmap, capmap;
	struct sym_line *rows;
	size_t nrows, caprows;
	char **files;
	size_t nfiles, capfiles;
	uint32_t *file_hash;   /* open addressing: index + 1, 0 = empty */
	size_t file_slots;
	int have_lines;
	char **names;          /* per ELF file: its string tables, printable (names point into them) */
	size_t nnames, capnames;
	char warn[SYMTAB_WARNINGS][256]; /* of the last symtab_add_elf() */
	unsigned nwarn, more_warn;
};

struct symtab *symtab_new(void)
{
	return calloc(1, sizeof(struct symtab));
}

void symtab_free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nfiles; i++)
		free(st->files[i]);
	for (size_t i = 0; i < st->nnames; i++)
		free(st->names[i]);
	free(st->names);
	free(st->fn);
	free(st->map);
	free(st->rows);
	free(st->files);
	free(st->file_hash);
	free(st);
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 256;
	void *q = realloc(*p, ncap * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = ncap;
	return 0;
}

static int moved(uint64_t addr, int64_t bias, uint64_t *out)
{
	int64_t a = (int64_t)addr + bias;
	if (a < 0 || (uint64_t)a >= (UINT64_C(1) << 32))
		return 0;
	*out = (uint64_t)a;
	return 1;
}

/* ---- ELF symbol tables ---- */

struct elf_in {
	struct symtab *st;
	const uint8_t *data;
	uint64_t size;
	const char *name;      /* for messages */
	int64_t bias;
	Elf32_Ehdr eh;
	unsigned nsec;         /* section headers inside the file */
};

/* A symbol table to read, and its string table. */
struct sym_table {
	unsigned index;        /* section */
	uint64_t off, size, entsize;
	unsigned strndx;
	uint64_t str_off, str_size;
	uint64_t names;        /* where its string table starts in the printable copy */
	int64_t last_nul;      /* file offset of its string table's last NUL; -1: none */
};

static void warn(struct elf_in *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct elf_in *in, const char *fmt, ...)
{
	struct symtab *st = in->st;
	if (st->nwarn == SYMTAB_WARNINGS) {
		st->more_warn++;
		return;
	}
	char *w = st->warn[st->nwarn++];
	int n = snprintf(w, sizeof(st->warn[0]), "%s: ", in->name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w + n, sizeof(st->warn[0]) - (size_t)n, fmt, ap);
	va_end(ap);
}

static uint64_t shdr_offset(const struct elf_in *in, unsigned i)
{
	return (uint64_t)in->eh.e_shoff + (uint64_t)i * in->eh.e_shentsize;
}

/* Section header i (< in->nsec). */
static void section_header(const struct elf_in *in, unsigned i, Elf32_Shdr *sh)
{
	memcpy(sh, in->data + shdr_offset(in, i), sizeof(*sh));
}

/* "$a", "$t", "$d", optionally followed by ".anything". */
static int mapping_isa(const char *name)
{
	if (name[0] != '$' || (name[2] != 0 && name[2] != '.'))
		return -1;
	switch (name[1]) {
	case 'a':
		return CSD_ISA_ARM;
	case 't':
		return CSD_ISA_THUMB;
	case 'd':
		return 0;
	default:
		return -1;
	}
}

/* Control characters as '?', so that no name from the file can break a
 * line of the tool's output (listing, lcov, callgrind). */
static void printable(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != 0) || s[i] == 0x7F)
			s[i] = '?';
}

static int add_func(struct symtab *st, uint64_t addr, uint32_t size, int thumb, const char *name)
{
	if (grow((void **)&st->fn, &st->capfn, st->nfn, sizeof(*st->fn)) < 0)
		return -1;
	struct sym_func *f = &st->fn[st->nfn++];
	f->start = addr;
	f->end = addr + size;
	f->sized = size != 0;
	f->thumb = thumb;
	f->name = name;
	return 0;
}

/* The symbol table of section header i (type SYMTAB or DYNSYM), checked;
 * 0 with a warning when it cannot be read. */
static int check_table(struct elf_in *in, unsigned i, const Elf32_Shdr *sh, struct sym_table *t)
{
	uint64_t at = shdr_offset(in, i);
	Elf32_Shdr strsh;
	memset(t, 0, sizeof(*t));
	t->index = i;
	t->off = sh->sh_offset;
	t->size = sh->sh_size;
	t->entsize = sh->sh_entsize ? sh->sh_entsize : sizeof(Elf32_Sym);
	t->strndx = sh->sh_link;
	if (t->entsize >= sizeof(Elf32_Sym) && t->size / t->entsize < 2)
		return 0; /* nothing after the null symbol */
	if (t->entsize < sizeof(Elf32_Sym)) {
		warn(in, "section %u (header at offset 0x%" PRIx64 "): symbol size %" PRIu64
			 " (sh_entsize) is below %zu; its symbols are not read", i, at, t->entsize, sizeof(Elf32_Sym));
		return 0;
	}
	if (t->off + t->size > in->size) {
		warn(in, "section %u (header at offset 0x%" PRIx64 "): symbol table at 0x%" PRIx64 ", 0x%" PRIx64
			 " bytes, ends past the end of the file (0x%" PRIx64 " bytes); its symbols are not read",
		     i, at, t->off, t->size, in->size);
		return 0;
	}
	if (t->strndx >= in->nsec) {
		warn(in, "section %u (header at offset 0x%" PRIx64 "): string table section %u (sh_link) is not "
			 "one of the %u section headers in the file; its symbols are not read", i, at, t->strndx, in->nsec);
		return 0;
	}
	section_header(in, t->strndx, &strsh);
	t->str_off = strsh.sh_offset;
	t->str_size = strsh.sh_size;
	if (strsh.sh_type == SHT_NOBITS || t->str_off + t->str_size > in->size) {
		warn(in, "section %u (header at offset 0x%" PRIx64 "): its string table, section %u at 0x%" PRIx64
			 ", 0x%" PRIx64 " bytes, %s; its symbols are not read", i, at, t->strndx, t->str_off, t->str_size,
		     strsh.sh_type == SHT_NOBITS ? "has no bytes in the file (SHT_NOBITS)"
						 : "ends past the end of the file");
		return 0;
	}
	return 1;
}

static int cmp_table_off(const void *a, const void *b)
{
	const struct sym_table *x = a, *y = b;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_table_index(const void *a, const void *b)
{
	const struct sym_table *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Sort key of a string table interval: by start, then end. */
struct str_span {
	uint64_t start, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct str_span *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_table_strend(const void *a, const void *b)
{
	const struct sym_table *x = *(struct sym_table *const *)a, *y = *(struct sym_table *const *)b;
	uint64_t ex = x->str_off + x->str_size, ey = y->str_off + y->str_size;
	return ex < ey ? -1 : ex > ey;
}

/*
 * One printable copy of the bytes of every string table the tables use
 * (overlapping ones once), kept with the symtab; each table learns where
 * its strings start in it and where its last NUL is (a name must end
 * inside its own string table). Returns the copy, NULL if memory is short.
 */
static char *copy_strings(struct sym_table *t, size_t n, const uint8_t *data)
{
	struct str_span *sp = malloc((n ? n : 1) * sizeof(*sp));
	struct sym_table **by_end = malloc((n ? n : 1) * sizeof(*by_end));
	char *copy = NULL;
	size_t m = 0, total = 0;
	if (!sp || !by_end)
		goto out;
	for (size_t i = 0; i < n; i++) {
		sp[i].start = t[i].str_off;
		sp[i].end = t[i].str_off + t[i].str_size;
		by_end[i] = &t[i];
	}
	if (n)
		qsort(sp, n, sizeof(*sp), cmp_span);
	for (size_t i = 0; i < n; i++) { /* merge into disjoint spans */
		if (m && sp[i].start <= sp[m - 1].end) {
			if (sp[i].end > sp[m - 1].end)
				sp[m - 1].end = sp[i].end;
		} else {
			sp[m++] = sp[i];
		}
	}
	for (size_t i = 0; i < m; i++)
		total += (size_t)(sp[i].end - sp[i].start);
	copy = malloc(total ? total : 1);
	if (!copy)
		goto out;
	/* Copy the spans in order; the tables sorted by where their string
	 * table ends learn its last NUL on the way. */
	if (n)
		qsort(by_end, n, sizeof(*by_end), cmp_table_strend);
	size_t pos = 0, q = 0;
	for (size_t i = 0; i < m; i++) {
		int64_t last_nul = -1;
		for (uint64_t o = sp[i].start;; o++) {
			while (q < n && by_end[q]->str_off + by_end[q]->str_size == o) {
				struct sym_table *bt = by_end[q++];
				bt->names = pos - (o - bt->str_off);
				bt->last_nul = last_nul >= (int64_t)bt->str_off ? last_nul : -1;
			}
			if (o == sp[i].end)
				break;
			if (!data[o])
				last_nul = (int64_t)o;
			copy[pos++] = (char)data[o];
		}
	}
	printable(copy, total);
out:
	free(sp);
	free(by_end);
	return copy;
}

static int read_table(struct elf_in *in, const struct sym_table *t, const char *names)
{
	struct symtab *st = in->st;
	uint64_t nsym = t->size / t->entsize, bad_names = 0;
	for (uint64_t i = 1; i < nsym; i++) {
		Elf32_Sym s;
		memcpy(&s, in->data + t->off + i * t->entsize, sizeof(s));
		if (s.st_shndx == SHN_UNDEF)
			continue;
		if (s.st_name >= t->str_size || (int64_t)(t->str_off + s.st_name) > t->last_nul) {
			bad_names++;
			continue;
		}
		const char *name = names + t->names + s.st_name;
		if (!*name)
			continue;
		unsigned type = ELF32_ST_TYPE(s.st_info);
		uint64_t addr;
		if (!moved(s.st_value & ~1u, in->bias, &addr))
			continue;
		if (type == STT_FUNC || type == STT_GNU_IFUNC) {
			if (addr + s.st_size > (UINT64_C(1) << 32))
				continue;
			if (add_func(st, addr, s.st_size, s.st_value & 1, name) < 0)
				return -1;
		} else if (type == STT_NOTYPE && mapping_isa(name) >= 0) {
			if (grow((void **)&st->map, &st->capmap, st->nmap, sizeof(*st->map)) < 0)
				return -1;
			st->map[st->nmap].addr = addr;
			st->map[st->nmap].isa = mapping_isa(name);
			st->nmap++;
		}
	}
	if (bad_names)
		warn(in, "section %u: %" PRIu64 " symbols whose names are not inside its string table (section %u) "
			 "are not read", t->index, bad_names, t->strndx);
	return 0;
}

/*
 * The symbol tables: .symtab (which has everything .dynsym has), or
 * .dynsym without it. A table is read once however many section headers
 * name it; one that overlaps a table already taken is not read.
 */
static int read_symbols(struct elf_in *in, char *err, size_t errlen)
{
	struct symtab *st = in->st;
	Elf32_Shdr sh;
	unsigned want = SHT_DYNSYM, n = 0, taken = 0, dups = 0;
	for (unsigned i = 0; i < in->nsec; i++) {
		section_header(in, i, &sh);
		if (sh.sh_type == SHT_SYMTAB)
			want = SHT_SYMTAB;
	}
	for (unsigned i = 0; i < in->nsec; i++) {
		section_header(in, i, &sh);
		n += sh.sh_type == want;
	}
	struct sym_table *t = malloc((n ? n : 1) * sizeof(*t));
	if (!t)
		goto nomem;
	n = 0;
	for (unsigned i = 0; i < in->nsec; i++) {
		section_header(in, i, &sh);
		if (sh.sh_type == want && check_table(in, i, &sh, &t[n]))
			n++;
	}
	if (n)
		qsort(t, n, sizeof(*t), cmp_table_off);
	uint64_t end = 0;
	unsigned end_index = 0; /* the table reaching furthest so far */
	for (unsigned i = 0; i < n; i++) {
		if (taken && t[i].off == t[taken - 1].off && t[i].size == t[taken - 1].size) {
			dups++;
			continue;
		}
		if (taken && t[i].off < end) {
			warn(in, "section %u: symbol table at 0x%" PRIx64 ", 0x%" PRIx64 " bytes, overlaps that of "
				 "section %u; its symbols are not read", t[i].index, t[i].off, t[i].size, end_index);
			continue;
		}
		t[taken++] = t[i];
		if (t[i].off + t[i].size > end) {
			end = t[i].off + t[i].size;
			end_index = t[i].index;
		}
	}
	if (dups)
		warn(in, "%u more section headers name a symbol table already read; each table is read once", dups);
	if (taken)
		qsort(t, taken, sizeof(*t), cmp_table_index);
	char *names = NULL;
	if (taken) {
		if (grow((void **)&st->names, &st->capnames, st->nnames, sizeof(*st->names)) < 0 ||
		    !(names = copy_strings(t, taken, in->data)))
			goto nomem;
		st->names[st->nnames++] = names;
	}
	for (unsigned i = 0; i < taken; i++)
		if (read_table(in, &t[i], names) < 0)
			goto nomem;
	free(t);
	return 0;
nomem:
	free(t);
	snprintf(err, errlen, "%s: out of memory", in->name);
	return -1;
}

/* ---- DWARF line table ---- */

#ifdef CSD_HAVE_LIBDW
static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* Index of file name s, added if new; -1 when memory is short. */
static long intern_file(struct symtab *st, const char *s)
{
	if (st->nfiles * 2 >= st->file_slots) {
		size_t nslots = st->file_slots ? st->file_slots * 2 : 64;
		uint32_t *nh = calloc(nslots, sizeof(*nh));
		if (!nh)
			return -1;
		for (size_t i = 0; i < st->nfiles; i++) {
			size_t k = str_hash(st->files[i]) & (nslots - 1);
			while (nh[k])
				k = (k + 1) & (nslots - 1);
			nh[k] = (uint32_t)i + 1;
		}
		free(st->file_hash);
		st->file_hash = nh;
		st->file_slots = nslots;
	}
	size_t k = str_hash(s) & (st->file_slots - 1);
	while (st->file_hash[k]) {
		if (strcmp(st->files[st->file_hash[k] - 1], s) == 0)
			return (long)st->file_hash[k] - 1;
		k = (k + 1) & (st->file_slots - 1);
	}
	if (grow((void **)&st->files, &st->capfiles, st->nfiles, sizeof(*st->files)) < 0)
		return -1;
	char *copy = strdup(s);
	if (!copy)
		return -1;
	printable(copy, strlen(copy));
	st->files[st->nfiles] = copy;
	st->file_hash[k] = (uint32_t)st->nfiles + 1;
	return (long)st->nfiles++;
}

/* Line tables already read (by .debug_line offset): compilation units
 * may share one, and it is read once. */
struct seen_set {
	uint64_t *v;
	size_t cap, n;
};

/* 1 if off was seen, else notes it (0); -1 when memory is short. */
static int seen_before(struct seen_set *s, uint64_t off)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		uint64_t *nv = malloc(ncap * sizeof(*nv));
		if (!nv)
			return -1;
		memset(nv, 0xFF, ncap * sizeof(*nv));
		for (size_t i = 0; i < s->cap; i++) {
			if (s->v[i] == UINT64_MAX)
				continue;
			size_t k = (size_t)(s->v[i] * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (ncap - 1);
			while (nv[k] != UINT64_MAX)
				k = (k + 1) & (ncap - 1);
			nv[k] = s->v[i];
		}
		free(s->v);
		s->v = nv;
		s->cap = ncap;
	}
	if (off == UINT64_MAX)
		return 0;
	size_t k = (size_t)(off * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (s->cap - 1);
	while (s->v[k] != UINT64_MAX) {
		if (s->v[k] == off)
			return 1;
		k = (k + 1) & (s->cap - 1);
	}
	s->v[k] = off;
	s->n++;
	return 0;
}

/* libdw is loaded when an ELF file with DWARF is first read, not linked:
 * it and its dependencies (libelf, libz, liblzma, libbz2) cost every run
 * of the tool their loading and relocation, though only listings,
 * coverage and profiles with --elf read line tables. CSD_LIBDW_LIB is its
 * file name (tools.mk); libelf's functions come through it (libdw needs
 * libelf, and dlsym searches a library's dependencies). Without it, there
 * is no line info, with a warning. */
static struct {
	unsigned (*elf_version)(unsigned);
	Elf *(*elf_memory)(char *, size_t);
	int (*elf_end)(Elf *);
	Dwarf *(*begin_elf)(Elf *, Dwarf_Cmd, Elf_Scn *);
	int (*nextcu)(Dwarf *, Dwarf_Off, Dwarf_Off *, size_t *, Dwarf_Off *, uint8_t *, uint8_t *);
	Dwarf_Die *(*offdie)(Dwarf *, Dwarf_Off, Dwarf_Die *);
	Dwarf_Attribute *(*attr)(Dwarf_Die *, unsigned, Dwarf_Attribute *);
	int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
	int (*getsrclines)(Dwarf_Die *, Dwarf_Lines **, size_t *);
	Dwarf_Line *(*onesrcline)(Dwarf_Lines *, size_t);
	int (*lineaddr)(Dwarf_Line *, Dwarf_Addr *);
	int (*lineno)(Dwarf_Line *, int *);
	const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
	const char *(*formstring)(Dwarf_Attribute *); /* (optional: comp_dir) */
	int (*lineendsequence)(Dwarf_Line *, bool *);
	int (*end)(Dwarf *);
	struct dynlib lib;
	int ok;
} libdw = { .lib = { CSD_LIBDW_LIB, NULL, 0, "" } };

static int dw_load(void)
{
	if (libdw.lib.tried)
		return libdw.ok;
	if (!dynlib_load(&libdw.lib))
		return 0;
	struct dynlib *l = &libdw.lib;
	libdw.elf_version = (unsigned (*)(unsigned))dynlib_sym(l, "elf_version");
	libdw.elf_memory = (Elf * (*)(char *, size_t)) dynlib_sym(l, "elf_memory");
	libdw.elf_end = (int (*)(Elf *))dynlib_sym(l, "elf_end");
	libdw.begin_elf = (Dwarf * (*)(Elf *, Dwarf_Cmd, Elf_Scn *)) dynlib_sym(l, "dwarf_begin_elf");
	libdw.nextcu = (int (*)(Dwarf *, Dwarf_Off, Dwarf_Off *, size_t *, Dwarf_Off *, uint8_t *, uint8_t *))dynlib_sym(
		l, "dwarf_nextcu");
	libdw.offdie = (Dwarf_Die * (*)(Dwarf *, Dwarf_Off, Dwarf_Die *)) dynlib_sym(l, "dwarf_offdie");
	libdw.attr = (Dwarf_Attribute * (*)(Dwarf_Die *, unsigned, Dwarf_Attribute *)) dynlib_sym(l, "dwarf_attr");
	libdw.formudata = (int (*)(Dwarf_Attribute *, Dwarf_Word *))dynlib_sym(l, "dwarf_formudata");
	libdw.getsrclines = (int (*)(Dwarf_Die *, Dwarf_Lines **, size_t *))dynlib_sym(l, "dwarf_getsrclines");
	libdw.onesrcline = (Dwarf_Line * (*)(Dwarf_Lines *, size_t)) dynlib_sym(l, "dwarf_onesrcline");
	libdw.lineaddr = (int (*)(Dwarf_Line *, Dwarf_Addr *))dynlib_sym(l, "dwarf_lineaddr");
	libdw.lineno = (int (*)(Dwarf_Line *, int *))dynlib_sym(l, "dwarf_lineno");
	libdw.linesrc = (const char *(*)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *))dynlib_sym(l, "dwarf_linesrc");
	libdw.lineendsequence = (int (*)(Dwarf_Line *, bool *))dynlib_sym(l, "dwarf_lineendsequence");
	libdw.formstring = (const char *(*)(Dwarf_Attribute *))dynlib_sym(l, "dwarf_formstring");
	libdw.end = (int (*)(Dwarf *))dynlib_sym(l, "dwarf_end");
	libdw.ok = libdw.elf_version && libdw.elf_memory && libdw.elf_end && libdw.begin_elf && libdw.nextcu &&
		   libdw.offdie && libdw.attr && libdw.formudata && libdw.getsrclines && libdw.onesrcline &&
		   libdw.lineaddr && libdw.lineno && libdw.linesrc && libdw.lineendsequence && libdw.end;
	if (libdw.ok)
		libdw.elf_version(EV_CURRENT);
	return libdw.ok;
}

/* Whether the file may have DWARF: a section whose name has "debug_info"
 * in it (.debug_info, and the compressed and LTO forms libdw also reads).
 * libdw finds its sections by these names too: without a readable section
 * name table it reads nothing. Only then is libdw loaded. Names are looked
 * at up to NAME_LOOK bytes (libdw's are shorter), so the work is linear in
 * the number of sections. */
#define NAME_LOOK 48
static int may_have_dwarf(const struct elf_in *in)
{
	static const char key[] = "debug_info";
	Elf32_Shdr sh, strsh;
	if (in->eh.e_shnum == 0 && in->eh.e_shoff != 0)
		return 1; /* (the count is in section 0, which this reader does not follow: libdw does) */
	unsigned sx = in->eh.e_shstrndx;
	if (sx == SHN_XINDEX && in->nsec) {
		section_header(in, 0, &sh);
		sx = sh.sh_link;
	}
	if (sx >= in->nsec)
		return 0;
	section_header(in, sx, &strsh);
	if (strsh.sh_type == SHT_NOBITS || strsh.sh_offset > in->size || strsh.sh_size > in->size - strsh.sh_offset)
		return 0;
	const char *names = (const char *)in->data + strsh.sh_offset;
	for (unsigned i = 0; i < in->nsec; i++) {
		section_header(in, i, &sh);
		if (sh.sh_name >= strsh.sh_size)
			continue;
		const char *n = names + sh.sh_name;
		size_t len = strnlen(n, strsh.sh_size - sh.sh_name < NAME_LOOK ? strsh.sh_size - sh.sh_name : NAME_LOOK);
		for (size_t j = 0; j + sizeof(key) - 1 <= len; j++)
			if (memcmp(n + j, key, sizeof(key) - 1) == 0)
				return 1;
	}
	return 0;
}

/* A line table's file name as the files that read it want it: a relative
 * name is relative to the unit's compilation directory (DW_AT_comp_dir),
 * not to wherever csdec runs, so it is joined to that directory where the
 * file is found there (lcov's SF: and callgrind's fl= then work from any
 * directory). Where it is not (a program built on another machine, a
 * tree moved since), the name stays as the table gives it. */
static long intern_source(struct symtab *st, const char *src, const char *comp_dir)
{
	if (src[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return intern_file(st, src);
	char path[4096];
	int len = snprintf(path, sizeof(path), "%s/%s", comp_dir, src);
	if (len <= 0 || (size_t)len >= sizeof(path) || access(path, F_OK) != 0)
		return intern_file(st, src);
	return intern_file(st, path);
}

/* The rows of one compilation unit's line table. */
static int read_cu_lines(struct symtab *st, Dwarf_Lines *lines, size_t n, int64_t bias, const char *comp_dir,
			 size_t *rows)
{
	const char *last_src = NULL;
	long last_file = -1;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = libdw.onesrcline(lines, i);
		Dwarf_Addr a;
		int lineno;
		bool end = false;
		const char *src;
		uint64_t addr;
		if (!l || libdw.lineaddr(l, &a) != 0 || libdw.lineno(l, &lineno) != 0 ||
		    !(src = libdw.linesrc(l, NULL, NULL)) || !moved(a, bias, &addr))
			continue;
		libdw.lineendsequence(l, &end);
		/* Rows of one file entry share its name: looked up once. */
		long fi = src == last_src ? last_file : intern_source(st, src, comp_dir);
		if (fi < 0 || grow((void **)&st->rows, &st->caprows, st->nrows, sizeof(*st->rows)) < 0)
			return -1;
		last_src = src;
		last_file = fi;
		struct sym_line *r = &st->rows[st->nrows++];
		r->addr = addr;
		r->file = (uint32_t)fi;
		r->line = lineno > 0 ? (uint32_t)lineno : 0;
		r->end_sequence = end;
		r->order = (uint32_t)st->nrows;
		++*rows;
	}
	return 0;
}

/* The line table of the file (when libdw is there: else a warning, the
 * first time). */
static int read_lines(struct elf_in *in, uint8_t *data)
{
	static int warned;
	struct symtab *st = in->st;
	if (!may_have_dwarf(in))
		return 0;
	if (!dw_load()) {
		if (!warned)
			warn(in, "no DWARF line info (file:line): %s", libdw.lib.why);
		warned = 1;
		return 0;
	}
	uint64_t size = in->size;
	int64_t bias = in->bias;
	Elf *elf = libdw.elf_memory((char *)data, (size_t)size);
	Dwarf *dw = elf ? libdw.begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	struct seen_set seen = { NULL, 0, 0 };
	size_t rows = 0;
	int rc = 0;
	if (dw) {
		Dwarf_Off off = 0, next;
		size_t hsize;
		while (rc == 0 && libdw.nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Attribute at;
			Dwarf_Word stmt;
			Dwarf_Lines *lines;
			size_t n;
			if (libdw.offdie(dw, off + hsize, &cu) && libdw.attr(&cu, DW_AT_stmt_list, &at) &&
			    libdw.formudata(&at, &stmt) == 0) {
				int seen_it = seen_before(&seen, stmt);
				if (seen_it < 0)
					rc = -1;
				else if (!seen_it && libdw.getsrclines(&cu, &lines, &n) == 0) {
					Dwarf_Attribute cd;
					const char *comp_dir = libdw.formstring && libdw.attr(&cu, DW_AT_comp_dir, &cd)
								       ? libdw.formstring(&cd)
								       : NULL;
					rc = read_cu_lines(st, lines, n, bias, comp_dir, &rows);
				}
			}
			off = next;
		}
		libdw.end(dw);
	}
	if (elf)
		libdw.elf_end(elf);
	free(seen.v);
	if (rows)
		st->have_lines = 1;
	return rc;
}
#else
static int read_lines(struct elf_in *in, uint8_t *data)
{
	(void)in;
	(void)data;
	return 0;
}
#endif

int symtab_add_elf_mem(struct symtab *st, uint8_t *data, uint64_t size, const char *name, int64_t bias, char *err,
		       size_t errlen)
{
	struct elf_in in;
	memset(&in, 0, sizeof(in));
	in.st = st;
	in.data = data;
	in.size = size;
	in.name = name;
	in.bias = bias;
	st->nwarn = st->more_warn = 0;
	if (size < sizeof(in.eh)) {
		snprintf(err, errlen, "%s: %" PRIu64 " bytes, too short for an ELF header (%zu bytes)", name, size,
			 sizeof(in.eh));
		return -1;
	}
	if (memcmp(data, ELFMAG, SELFMAG) != 0) {
		snprintf(err, errlen, "%s: not an ELF file (bytes 0-3 are not 7f 45 4c 46)", name);
		return -1;
	}
	/* (Worded as the image's check of the same file: csd_image_add_elf.) */
	if (data[EI_CLASS] != ELFCLASS32 || data[EI_DATA] != ELFDATA2LSB) {
		snprintf(err, errlen, "%s: not a 32-bit little-endian ELF (class %u at offset %d, data encoding %u at offset %d)",
			 name, data[EI_CLASS], EI_CLASS, data[EI_DATA], EI_DATA);
		return -1;
	}
	memcpy(&in.eh, data, sizeof(in.eh));
	if (in.eh.e_shnum && in.eh.e_shentsize < sizeof(Elf32_Shdr)) {
		snprintf(err, errlen, "%s: section header size %u (e_shentsize, at offset %zu) is below %zu bytes", name,
			 in.eh.e_shentsize, offsetof(Elf32_Ehdr, e_shentsize), sizeof(Elf32_Shdr));
		return -1;
	}
	/* Only the section headers inside the file. */
	in.nsec = in.eh.e_shnum;
	if (in.nsec && shdr_offset(&in, in.nsec - 1) + sizeof(Elf32_Shdr) > size) {
		uint64_t fit = in.eh.e_shoff + sizeof(Elf32_Shdr) > size
				       ? 0
				       : (size - in.eh.e_shoff - sizeof(Elf32_Shdr)) / in.eh.e_shentsize + 1;
		warn(&in, "%u section headers of %u bytes at 0x%x (e_shoff) end past the end of the file (0x%" PRIx64
			  " bytes): the first %" PRIu64 " are read", in.eh.e_shnum, in.eh.e_shentsize, in.eh.e_shoff, size, fit);
		in.nsec = (unsigned)fit;
	}
	size_t before = st->nfn;
	if (read_symbols(&in, err, errlen) < 0)
		return -1;
	if (read_lines(&in, data) < 0) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	return (int)(st->nfn - before < INT32_MAX ? st->nfn - before : INT32_MAX);
}

int symtab_add_elf(struct symtab *st, const char *path, int64_t bias, char *err, size_t errlen)
{
	/* (Opened only if regular: fopen of a FIFO would wait for a writer.) */
	const char *what = NULL;
	const int fd = csdi_open_regular(path, &what);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	struct stat sb;
	st->nwarn = st->more_warn = 0;
	if (!f && what) {
		snprintf(err, errlen, "%s: not a regular file (%s)", path, what);
		return -1;
	}
	if (!f || fstat(fileno(f), &sb) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		else if (fd >= 0)
			close(fd);
		return -1;
	}
	/* (Regular: csdi_open_regular opened no other kind.) */
	if ((uint64_t)sb.st_size > ELF_MAX) {
		snprintf(err, errlen, "%s: %" PRIu64 " bytes: larger than the %" PRIu64 " MiB csdec reads", path,
			 (uint64_t)sb.st_size, ELF_MAX >> 20);
		fclose(f);
		return -1;
	}
	uint64_t size = (uint64_t)sb.st_size;
	uint8_t *data = malloc(size ? (size_t)size : 1);
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
		snprintf(err, errlen, "%s: %s", path, data ? "read error" : "out of memory");
		free(data);
		fclose(f);
		return -1;
	}
	fclose(f);
	int rc = symtab_add_elf_mem(st, data, size, path, bias, err, errlen);
	free(data);
	return rc;
}

unsigned symtab_num_warnings(const struct symtab *st)
{
	return st ? st->nwarn : 0;
}

const char *symtab_warning(const struct symtab *st, unsigned i)
{
	return st && i < st->nwarn ? st->warn[i] : NULL;
}

unsigned symtab_more_warnings(const struct symtab *st)
{
	return st ? st->more_warn : 0;
}

/* ---- sorting and lookups ---- */

static int cmp_func(const void *a, const void *b)
{
	const struct sym_func *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Aliases: the sized one, then the first name, so the choice is stable. */
	if (x->sized != y->sized)
		return y->sized - x->sized;
	return strcmp(x->name, y->name);
}

static int cmp_map(const void *a, const void *b)
{
	const struct map_sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Rows by address; an end of sequence before a row starting at the same
 * address (that row is in effect there); otherwise the table's order. */
static int cmp_row(const void *a, const void *b)
{
	const struct sym_line *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->end_sequence != y->end_sequence)
		return y->end_sequence - x->end_sequence;
	return x->order < y->order ? -1 : x->order > y->order;
}

void symtab_finish(struct symtab *st)
{
	if (!st)
		return;
	/* qsort's pointer must not be NULL, even for no elements */
	if (st->nfn)
		qsort(st->fn, st->nfn, sizeof(*st->fn), cmp_func);
	size_t k = 0;
	for (size_t i = 0; i < st->nfn; i++) {
		if (k && st->fn[k - 1].start == st->fn[i].start)
			continue;
		st->fn[k++] = st->fn[i];
	}
	st->nfn = k;
	for (size_t i = 0; i < st->nfn; i++) {
		struct sym_func *f = &st->fn[i];
		uint64_t next = i + 1 < st->nfn ? st->fn[i + 1].start : UINT64_C(1) << 32;
		if (!f->sized)
			f->end = next - f->start < UNSIZED_MAX ? next : f->start + UNSIZED_MAX;
	}
	if (st->nmap)
		qsort(st->map, st->nmap, sizeof(*st->map), cmp_map);
	if (st->nrows)
		qsort(st->rows, st->nrows, sizeof(*st->rows), cmp_row);
}

size_t symtab_num_funcs(const struct symtab *st)
{
	return st ? st->nfn : 0;
}

const struct sym_func *symtab_func(const struct symtab *st, size_t i)
{
	return st && i < st->nfn ? &st->fn[i] : NULL;
}

size_t symtab_func_index(const struct symtab *st, const struct sym_func *f)
{
	return (size_t)(f - st->fn);
}

const struct sym_func *symtab_find(const struct symtab *st, uint64_t addr)
{
	if (!st || !st->nfn || addr < st->fn[0].start)
		return NULL;
	size_t lo = 0, hi = st->nfn; /* last start <= addr is in [lo, hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->fn[mid].start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return addr < st->fn[lo].end ? &st->fn[lo] : NULL;
}

int symtab_reads_lines(void)
{
#ifdef CSD_HAVE_LIBDW
	return !libdw.lib.tried || libdw.ok;
#else
	return 0;
#endif
}

int symtab_has_lines(const struct symtab *st)
{
	return st && st->have_lines;
}

int symtab_line(const struct symtab *st, uint64_t addr, const char **file, unsigned *line)
{
	if (!st || !st->nrows || addr < st->rows[0].addr)
		return 0;
	size_t lo = 0, hi = st->nrows;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->rows[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	const struct sym_line *r = &st->rows[lo];
	if (r->end_sequence)
		return 0;
	*file = st->files[r->file];
	*line = r->line;
	return 1;
}

size_t symtab_num_lines(const struct symtab *st)
{
	return st ? st->nrows : 0;
}

const struct sym_line *symtab_line_row(const struct symtab *st, size_t i)
{
	return st && i < st->nrows ? &st->rows[i] : NULL;
}

const char *symtab_file(const struct symtab *st, uint32_t index)
{
	return st && index < st->nfiles ? st->files[index] : "??";
}

int symtab_code_isa(const struct symtab *st, uint64_t addr)
{
	if (!st || !st->nmap || addr < st->map[0].addr)
		return -1;
	size_t lo = 0, hi = st->nmap;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->map[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return st->map[lo].isa;
}

uint64_t symtab_next_map(const struct symtab *st, uint64_t addr)
{
	if (!st || !st->nmap || st->map[st->nmap - 1].addr <= addr)
		return UINT64_MAX;
	size_t lo = 0, hi = st->nmap - 1; /* first entry > addr is in [lo, hi] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->map[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return st->map[lo].addr;
}
