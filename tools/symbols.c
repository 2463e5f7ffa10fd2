/* symbols.c - function symbols, mapping symbols and line table of ELF
 * files. The ELF is untrusted input: every offset, size and string is
 * checked against the file before use. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"
#include "symbols.h"

#ifdef CSD_HAVE_LIBDW
#include <elfutils/libdw.h>
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
};

struct symtab *symtab_new(void)
{
	return calloc(1, sizeof(struct symtab));
}

void symtab_free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nfn; i++)
		free((char *)st->fn[i].name);
	for (size_t i = 0; i < st->nfiles; i++)
		free(st->files[i]);
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

struct elf_file {
	uint8_t *data;
	uint64_t size;
	Elf32_Ehdr eh;
};

static int read_file(const char *path, struct elf_file *ef, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	if (!f || fstat(fileno(f), &sb) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > ELF_MAX) {
		snprintf(err, errlen, "%s: not a regular file of a readable size", path);
		fclose(f);
		return -1;
	}
	ef->size = (uint64_t)sb.st_size;
	ef->data = malloc(ef->size ? (size_t)ef->size : 1);
	if (!ef->data || fread(ef->data, 1, (size_t)ef->size, f) != (size_t)ef->size) {
		snprintf(err, errlen, "%s: %s", path, ef->data ? "read error" : "out of memory");
		free(ef->data);
		ef->data = NULL;
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* Section header i, if it lies inside the file. */
static int section_header(const struct elf_file *ef, unsigned i, Elf32_Shdr *sh)
{
	uint64_t off = (uint64_t)ef->eh.e_shoff + (uint64_t)i * ef->eh.e_shentsize;
	if (i >= ef->eh.e_shnum || off + sizeof(*sh) > ef->size)
		return 0;
	memcpy(sh, ef->data + off, sizeof(*sh));
	return 1;
}

static int in_file(const struct elf_file *ef, const Elf32_Shdr *sh)
{
	return sh->sh_type != SHT_NOBITS && (uint64_t)sh->sh_offset + sh->sh_size <= ef->size;
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

/* A copy of a name from the file with control characters as '?', so that
 * no name can break a line of the tool's output (listing, lcov, callgrind). */
static char *printable_copy(const char *name)
{
	char *copy = strdup(name);
	if (copy)
		for (char *c = copy; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7F)
				*c = '?';
	return copy;
}

static int add_func(struct symtab *st, uint64_t addr, uint32_t size, int thumb, const char *name)
{
	if (grow((void **)&st->fn, &st->capfn, st->nfn, sizeof(*st->fn)) < 0)
		return -1;
	char *copy = printable_copy(name);
	if (!copy)
		return -1;
	struct sym_func *f = &st->fn[st->nfn++];
	f->start = addr;
	f->end = addr + size;
	f->sized = size != 0;
	f->thumb = thumb;
	f->name = copy;
	return 0;
}

static int read_symbols(struct symtab *st, const struct elf_file *ef, const Elf32_Shdr *symsh, int64_t bias)
{
	Elf32_Shdr strsh;
	size_t entsize = symsh->sh_entsize ? symsh->sh_entsize : sizeof(Elf32_Sym);
	if (entsize < sizeof(Elf32_Sym) || !in_file(ef, symsh) || !section_header(ef, symsh->sh_link, &strsh) ||
	    !in_file(ef, &strsh))
		return 0; /* a broken table is skipped, not fatal */
	const char *strtab = (const char *)ef->data + strsh.sh_offset;
	size_t nsym = symsh->sh_size / entsize;
	int added = 0;
	for (size_t i = 1; i < nsym; i++) {
		Elf32_Sym s;
		memcpy(&s, ef->data + symsh->sh_offset + i * entsize, sizeof(s));
		if (s.st_shndx == SHN_UNDEF || s.st_name >= strsh.sh_size)
			continue;
		const char *name = strtab + s.st_name;
		if (!memchr(name, 0, strsh.sh_size - s.st_name) || !*name)
			continue;
		unsigned type = ELF32_ST_TYPE(s.st_info);
		uint64_t addr;
		if (!moved(s.st_value & ~1u, bias, &addr))
			continue;
		if (type == STT_FUNC || type == STT_GNU_IFUNC) {
			if (addr + s.st_size > (UINT64_C(1) << 32))
				continue;
			if (add_func(st, addr, s.st_size, s.st_value & 1, name) < 0)
				return -1;
			added++;
		} else if (type == STT_NOTYPE && mapping_isa(name) >= 0) {
			if (grow((void **)&st->map, &st->capmap, st->nmap, sizeof(*st->map)) < 0)
				return -1;
			st->map[st->nmap].addr = addr;
			st->map[st->nmap].isa = mapping_isa(name);
			st->nmap++;
		}
	}
	return added;
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
	char *copy = printable_copy(s);
	if (!copy)
		return -1;
	st->files[st->nfiles] = copy;
	st->file_hash[k] = (uint32_t)st->nfiles + 1;
	return (long)st->nfiles++;
}

static int read_lines(struct symtab *st, const char *path, int64_t bias)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	int rows = 0;
	if (dw) {
		Dwarf_Off off = 0, next;
		size_t hsize;
		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Lines *lines;
			size_t n;
			if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0) {
				for (size_t i = 0; i < n; i++) {
					Dwarf_Line *l = dwarf_onesrcline(lines, i);
					Dwarf_Addr a;
					int lineno;
					bool end = false;
					const char *src;
					uint64_t addr;
					if (!l || dwarf_lineaddr(l, &a) != 0 || dwarf_lineno(l, &lineno) != 0 ||
					    !(src = dwarf_linesrc(l, NULL, NULL)) || !moved(a, bias, &addr))
						continue;
					dwarf_lineendsequence(l, &end);
					long fi = intern_file(st, src);
					if (fi < 0 || grow((void **)&st->rows, &st->caprows, st->nrows, sizeof(*st->rows)) < 0) {
						dwarf_end(dw);
						close(fd);
						return -1;
					}
					struct sym_line *r = &st->rows[st->nrows++];
					r->addr = addr;
					r->file = (uint32_t)fi;
					r->line = lineno > 0 ? (uint32_t)lineno : 0;
					r->end_sequence = end;
					r->order = (uint32_t)st->nrows;
					rows++;
				}
			}
			off = next;
		}
		dwarf_end(dw);
	}
	close(fd);
	if (rows)
		st->have_lines = 1;
	return 0;
}
#else
static int read_lines(struct symtab *st, const char *path, int64_t bias)
{
	(void)st;
	(void)path;
	(void)bias;
	return 0;
}
#endif

int symtab_add_elf(struct symtab *st, const char *path, int64_t bias, char *err, size_t errlen)
{
	struct elf_file ef;
	memset(&ef, 0, sizeof(ef));
	if (read_file(path, &ef, err, errlen) < 0)
		return -1;
	int rc = -1;
	if (ef.size < sizeof(ef.eh) || memcmp(ef.data, ELFMAG, SELFMAG) != 0 || ef.data[EI_CLASS] != ELFCLASS32 ||
	    ef.data[EI_DATA] != ELFDATA2LSB) {
		snprintf(err, errlen, "%s: not a 32-bit little-endian ELF file", path);
		goto out;
	}
	memcpy(&ef.eh, ef.data, sizeof(ef.eh));
	if (ef.eh.e_shnum && ef.eh.e_shentsize < sizeof(Elf32_Shdr)) {
		snprintf(err, errlen, "%s: bad section header size", path);
		goto out;
	}
	/* .symtab has everything .dynsym has; read .dynsym only without it. */
	int have_symtab = 0;
	Elf32_Shdr sh;
	for (unsigned i = 0; i < ef.eh.e_shnum; i++)
		if (section_header(&ef, i, &sh) && sh.sh_type == SHT_SYMTAB)
			have_symtab = 1;
	int added = 0;
	for (unsigned i = 0; i < ef.eh.e_shnum; i++) {
		if (!section_header(&ef, i, &sh))
			break;
		if (sh.sh_type == (have_symtab ? SHT_SYMTAB : SHT_DYNSYM)) {
			int n = read_symbols(st, &ef, &sh, bias);
			if (n < 0) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			added += n;
		}
	}
	if (read_lines(st, path, bias) < 0) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	rc = added;
out:
	free(ef.data);
	return rc;
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
		if (k && st->fn[k - 1].start == st->fn[i].start) {
			free((char *)st->fn[i].name);
			continue;
		}
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
	return 1;
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
