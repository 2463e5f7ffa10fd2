/*
 * image.c - the memory image the flow decoders read code from: sections
 * from caller buffers, raw files and ELF PT_LOAD segments, plus an optional
 * read callback for everything else.
 *
 * Files are read into memory, not mapped: a file that shrinks under a
 * mapping makes the next read of the lost pages a SIGBUS, and image files
 * are untrusted input like the trace.
 * Lookups first try the section that satisfied the previous one: code is
 * read in runs, so that hit rate is nearly 100%.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "image.h"
#include "zeroed.h"

#define ADDR_LIMIT (UINT64_C(1) << 32)
#define CB_PAGE 4096
/* File parts from this size on are read into pages of their own. */
#define COPY_PAGED_MIN ((uint64_t)64 << 10)

struct section {
	uint64_t start, end;      /* [start, end) */
	const uint8_t *data;      /* bytes of start */
	void *owned;              /* malloc'ed copy to free, or NULL */
	void *pages;              /* or a copy in pages of its own (zeroed.h), */
	size_t pages_len;         /* of this size */
};

struct piece {
	uint64_t lo, hi;
	size_t sec;
};

struct csd_image {
	struct section *sec;
	size_t nsec, cap;
	csd_read_memory_fn cb;
	void *cb_ctx;
	/* What is visible where: sorted, disjoint pieces [lo, hi) each of the
	 * newest section covering it, rebuilt after sections are added
	 * (map_valid 0), so that a lookup is a binary search however many
	 * sections overlap. */
	struct piece *map;
	size_t nmap;
	int map_valid;
	uint8_t page[CB_PAGE];    /* callback memory cache */
	uint64_t page_addr;
	size_t page_len;          /* 0: cache empty */
	uint64_t generation;
	char error[320];          /* why the last add call failed ("" if it did not) */
};

csd_image *csd_image_new(void)
{
	csd_image *img = calloc(1, sizeof(*img));
	return img;
}

void csd_image_free(csd_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nsec; i++) {
		free(img->sec[i].owned);
		csdi_zeroed_free(img->sec[i].pages, img->sec[i].pages_len);
	}
	free(img->sec);
	free(img->map);
	free(img);
}

/* The reason csd_image_error() gives for the failing call. */
static void set_error(csd_image *img, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(img->error, sizeof(img->error), fmt, ap);
	va_end(ap);
}

const char *csd_image_error(const csd_image *img)
{
	return img ? img->error : "";
}

static struct section *add_section(csd_image *img, uint64_t addr, size_t size)
{
	if (img->nsec == img->cap) {
		size_t ncap = img->cap ? img->cap * 2 : 8;
		struct section *n = realloc(img->sec, ncap * sizeof(*n));
		if (!n)
			return NULL;
		img->sec = n;
		img->cap = ncap;
	}
	struct section *s = &img->sec[img->nsec++];
	memset(s, 0, sizeof(*s));
	s->start = addr;
	s->end = addr + size;
	img->map_valid = 0;
	img->generation++;
	img->page_len = 0;
	return s;
}

static int range_ok(uint64_t addr, uint64_t size)
{
	return addr < ADDR_LIMIT && size <= ADDR_LIMIT - addr;
}

int csd_image_add_buffer(csd_image *img, uint64_t addr, const void *data, size_t size, int copy)
{
	if (!img)
		return CSD_EINVAL;
	img->error[0] = 0;
	if (!data && size) {
		set_error(img, "buffer: no data for %zu bytes", size);
		return CSD_EINVAL;
	}
	if (!range_ok(addr, size)) {
		set_error(img, "buffer: [0x%" PRIx64 ", +0x%zx) passes 2^32", addr, size);
		return CSD_EINVAL;
	}
	if (size == 0)
		return CSD_OK;
	void *owned = NULL;
	if (copy) {
		owned = malloc(size);
		if (!owned) {
			set_error(img, "buffer: out of memory for a copy of %zu bytes", size);
			return CSD_ENOMEM;
		}
		memcpy(owned, data, size);
	}
	struct section *s = add_section(img, addr, size);
	if (!s) {
		free(owned);
		set_error(img, "buffer: out of memory");
		return CSD_ENOMEM;
	}
	s->owned = owned;
	s->data = owned ? owned : data;
	return CSD_OK;
}

/* Read [off, off+len) of an open file into a section of its own; CSD_EIO
 * with errno 0 if the file is shorter. A large part goes to pages made
 * all at once (zeroed.h), as the read fills them: a fault per page costs
 * more than the read. */
static int add_copied(csd_image *img, int fd, uint64_t off, uint64_t len, uint64_t addr)
{
	if (len > SIZE_MAX)
		return CSD_ENOMEM;
	const int paged = len >= COPY_PAGED_MIN;
	uint8_t *buf = paged ? csdi_zeroed_new((size_t)len, CSDI_ZEROED_POPULATE) : malloc((size_t)len);
	if (!buf)
		return CSD_ENOMEM;
	uint64_t done = 0;
	while (done < len) {
		errno = 0;
		ssize_t got = pread(fd, buf + done, (size_t)(len - done), (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		done += (uint64_t)got;
	}
	struct section *s = done == len ? add_section(img, addr, (size_t)len) : NULL;
	if (!s) {
		const int e = errno;
		if (paged)
			csdi_zeroed_free(buf, (size_t)len);
		else
			free(buf);
		errno = e;
		return done == len ? CSD_ENOMEM : CSD_EIO;
	}
	if (paged) {
		s->pages = buf;
		s->pages_len = (size_t)len;
	} else {
		s->owned = buf;
	}
	s->data = buf;
	return CSD_OK;
}

/* A regular file, open, and its size; -1 with the reason set otherwise
 * (errno keeps the OS reason where there is one). */
static int open_sized(csd_image *img, const char *path, uint64_t *fsize)
{
	const char *what;
	int fd = csdi_open_regular(path, &what);
	if (fd < 0) {
		int e = errno;
		if (what)
			set_error(img, "%s: not a regular file (%s)", path, what);
		else
			set_error(img, "%s: cannot open: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		set_error(img, "%s: cannot open: %s", path, strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	*fsize = (uint64_t)st.st_size;
	return fd;
}

/* add_copied() with its failure described. */
static int add_file_part(csd_image *img, const char *path, int fd, uint64_t off, uint64_t len, uint64_t addr)
{
	int rc = add_copied(img, fd, off, len, addr);
	if (rc == CSD_ENOMEM)
		set_error(img, "%s: out of memory", path);
	else if (rc < 0)
		set_error(img, "%s: cannot read %" PRIu64 " bytes at offset %" PRIu64 ": %s", path, len, off,
			  errno ? strerror(errno) : "file shorter than expected");
	return rc;
}

int csd_image_add_file(csd_image *img, const char *path, uint64_t file_offset, uint64_t size, uint64_t addr)
{
	if (!img)
		return CSD_EINVAL;
	img->error[0] = 0;
	if (!path || !*path) {
		set_error(img, "no file name");
		return CSD_EINVAL;
	}
	uint64_t fsize;
	int fd = open_sized(img, path, &fsize);
	if (fd < 0)
		return CSD_EIO;
	int rc;
	if (file_offset > fsize || (size && size > fsize - file_offset)) {
		set_error(img, "%s: offset %" PRIu64 " and length %" PRIu64 " pass the end of the file (%" PRIu64
			  " bytes)", path, file_offset, size, fsize);
		rc = CSD_EIO;
	} else {
		if (!size)
			size = fsize - file_offset;
		if (!range_ok(addr, size)) {
			set_error(img, "%s: [0x%" PRIx64 ", +0x%" PRIx64 ") passes 2^32", path, addr, size);
			rc = CSD_EINVAL;
		} else {
			rc = size ? add_file_part(img, path, fd, file_offset, size, addr) : CSD_OK;
		}
	}
	close(fd);
	return rc;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int csd_image_add_elf(csd_image *img, const char *path, int64_t bias)
{
	if (!img)
		return CSD_EINVAL;
	img->error[0] = 0;
	if (!path || !*path) {
		set_error(img, "no file name");
		return CSD_EINVAL;
	}
	uint64_t fsize;
	int fd = open_sized(img, path, &fsize);
	if (fd < 0)
		return CSD_EIO;
	uint8_t eh[52];
	int rc = CSD_EFORMAT;
	int added = 0;
	if (fsize < sizeof(eh)) {
		set_error(img, "%s: not an ELF file: %" PRIu64 " bytes, shorter than a 32-bit ELF header (52)", path,
			  fsize);
		goto out;
	}
	if (pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh)) {
		set_error(img, "%s: cannot read the ELF header: %s", path, errno ? strerror(errno) : "short read");
		rc = CSD_EIO;
		goto out;
	}
	/* ELFCLASS32, ELFDATA2LSB; any machine (the caller knows it is ARM). */
	if (memcmp(eh, "\177ELF", 4) != 0) {
		set_error(img, "%s: not an ELF file (no ELF magic at offset 0)", path);
		goto out;
	}
	if (eh[4] != 1 || eh[5] != 1) {
		set_error(img, "%s: not a 32-bit little-endian ELF (class %u at offset 4, data encoding %u at offset 5)",
			  path, eh[4], eh[5]);
		goto out;
	}
	uint32_t phoff = le32(eh + 28);
	uint16_t phentsize = le16(eh + 42), phnum = le16(eh + 44);
	if (phnum && phentsize < 32) {
		set_error(img, "%s: program header size %u (offset 42) is below 32", path, phentsize);
		goto out;
	}
	if (phnum && (phoff > fsize || (uint64_t)phentsize * phnum > fsize - phoff)) {
		set_error(img, "%s: %u program headers of %u bytes at offset 0x%" PRIx32 " (offsets 28, 42, 44) pass the "
			  "end of the file (%" PRIu64 " bytes)", path, phnum, phentsize, phoff, fsize);
		goto out;
	}
	for (unsigned i = 0; i < phnum; i++) {
		uint8_t ph[32];
		uint64_t at = phoff + (uint64_t)i * phentsize;
		if (pread(fd, ph, sizeof(ph), (off_t)at) != (ssize_t)sizeof(ph)) {
			set_error(img, "%s: cannot read program header %u at offset 0x%" PRIx64 ": %s", path, i, at,
				  errno ? strerror(errno) : "short read");
			rc = CSD_EIO;
			goto out;
		}
		uint32_t type = le32(ph), off = le32(ph + 4), vaddr = le32(ph + 8), filesz = le32(ph + 16);
		if (type != 1 /* PT_LOAD */ || filesz == 0)
			continue;
		if ((uint64_t)off + filesz > fsize) {
			set_error(img, "%s: program header %u at offset 0x%" PRIx64 ": segment of 0x%" PRIx32 " bytes at file "
				  "offset 0x%" PRIx32 " passes the end of the file (%" PRIu64 " bytes)", path, i, at, filesz,
				  off, fsize);
			goto out;
		}
		int64_t a = (int64_t)vaddr + bias;
		if (a < 0 || !range_ok((uint64_t)a, filesz)) {
			set_error(img, "%s: program header %u at offset 0x%" PRIx64 ": segment at 0x%" PRIx32 " moved by "
				  "%" PRId64 " leaves the 32-bit address space", path, i, at, vaddr, bias);
			rc = CSD_EINVAL;
			goto out;
		}
		int r = add_file_part(img, path, fd, off, filesz, (uint64_t)a);
		if (r < 0) {
			rc = r;
			goto out;
		}
		added++;
	}
	rc = added;
out:
	close(fd);
	return rc;
}

int csd_image_set_callback(csd_image *img, csd_read_memory_fn fn, void *ctx)
{
	if (!img)
		return CSD_EINVAL;
	img->cb = fn;
	img->cb_ctx = ctx;
	img->page_len = 0;
	img->generation++;
	return CSD_OK;
}

/* Section boundaries, for the sweep that builds the map. */
struct edge {
	uint64_t at;
	size_t sec;
	int opens;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Max-heap of section indices (the newest on top). */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;
	while (i && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--*n], i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/* Sweep the sections' edges in address order with a heap of the open
 * ones (closed ones leave lazily): each stretch between two edges shows
 * the newest open section. n log n for any overlap. 0 or -1 (no memory:
 * csdi_image_prepare() says so, and lookups find nothing until a later
 * call builds it). */
static int build_map(csd_image *img)
{
	size_t n = img->nsec;
	struct edge *e = malloc((2 * n + 1) * sizeof(*e));
	size_t *heap = malloc((n + 1) * sizeof(*heap));
	unsigned char *open = calloc(n + 1, 1);
	struct piece *map = malloc((2 * n + 1) * sizeof(*map));
	if (!e || !heap || !open || !map) {
		free(e);
		free(heap);
		free(open);
		free(map);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		e[2 * i] = (struct edge){ img->sec[i].start, i, 1 };
		e[2 * i + 1] = (struct edge){ img->sec[i].end, i, 0 };
	}
	qsort(e, 2 * n, sizeof(*e), cmp_edge);
	size_t nh = 0, nmap = 0;
	for (size_t k = 0; k < 2 * n;) {
		uint64_t at = e[k].at;
		for (; k < 2 * n && e[k].at == at; k++) {
			open[e[k].sec] = (unsigned char)e[k].opens;
			if (e[k].opens)
				heap_push(heap, &nh, e[k].sec);
		}
		while (nh && !open[heap[0]])
			heap_pop(heap, &nh);
		if (!nh || k == 2 * n)
			continue;
		uint64_t hi = e[k].at;
		if (nmap && map[nmap - 1].sec == heap[0] && map[nmap - 1].hi == at)
			map[nmap - 1].hi = hi;
		else
			map[nmap++] = (struct piece){ at, hi, heap[0] };
	}
	free(e);
	free(heap);
	free(open);
	free(img->map);
	img->map = map;
	img->nmap = nmap;
	img->map_valid = 1;
	return 0;
}

/* Index of the first piece ending above addr (nmap if none). */
static size_t piece_after(const csd_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nmap;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (img->map[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int csdi_image_prepare(csd_image *img)
{
	if (!img->map_valid && img->nsec && build_map(img) < 0)
		return CSD_ENOMEM;
	return CSD_OK;
}

size_t csdi_image_fetch(csd_image *img, struct csdi_image_window *w, uint64_t addr, const uint8_t **p)
{
	if (addr >= w->lo && addr < w->hi && w->gen == img->generation + 1) {
		*p = w->data + (addr - w->start);
		return (size_t)(w->hi - addr);
	}
	if (csdi_image_prepare(img) < 0)
		return 0;
	size_t k = piece_after(img, addr);
	if (k < img->nmap && addr >= img->map[k].lo) {
		const struct piece *pc = &img->map[k];
		const struct section *s = &img->sec[pc->sec];
		w->lo = pc->lo;
		w->hi = pc->hi;
		w->start = s->start;
		w->data = s->data;
		w->gen = img->generation + 1;
		*p = s->data + (addr - s->start);
		return (size_t)(pc->hi - addr);
	}
	if (!img->cb || addr >= ADDR_LIMIT)
		return 0;
	if (!(img->page_len && addr >= img->page_addr && addr < img->page_addr + img->page_len)) {
		uint64_t base = addr - addr % CB_PAGE;
		size_t got = img->cb(img->cb_ctx, base, img->page, CB_PAGE);
		if (got > CB_PAGE)
			got = CB_PAGE;
		if (got <= addr - base) {
			/* The page start may be inaccessible while addr is not. */
			got = img->cb(img->cb_ctx, addr, img->page, CB_PAGE - (size_t)(addr - base));
			if (got == 0) {
				img->page_len = 0;
				return 0;
			}
			if (got > CB_PAGE - (addr - base))
				got = CB_PAGE - (size_t)(addr - base);
			base = addr;
		}
		img->page_addr = base;
		img->page_len = got;
	}
	*p = img->page + (addr - img->page_addr);
	/* Callback bytes only up to the next section: sections take
	 * precedence over the callback wherever they are. */
	uint64_t n = img->page_addr + img->page_len - addr;
	if (k < img->nmap && img->map[k].lo - addr < n)
		n = img->map[k].lo - addr;
	return (size_t)n;
}

uint64_t csdi_image_generation(const csd_image *img)
{
	return img->generation;
}

int csd_image_read(csd_image *img, uint64_t addr, uint8_t *buf, size_t size)
{
	if (!img || (!buf && size))
		return CSD_EINVAL;
	size_t done = 0;
	if (size > INT32_MAX)
		size = INT32_MAX;
	/* (Short of memory for the map, say so rather than "not mapped".) */
	if (csdi_image_prepare(img) < 0)
		return CSD_ENOMEM;
	struct csdi_image_window w;
	memset(&w, 0, sizeof(w));
	while (done < size) {
		const uint8_t *p;
		size_t n = csdi_image_fetch(img, &w, addr + done, &p);
		if (n == 0)
			break;
		if (n > size - done)
			n = size - done;
		memcpy(buf + done, p, n);
		done += n;
	}
	if (done == 0 && size)
		return CSD_ENOMAP;
	return (int)done;
}

size_t csd_image_num_sections(const csd_image *img)
{
	return img ? img->nsec : 0;
}

int csd_image_section(const csd_image *img, size_t i, uint64_t *addr, uint64_t *size, const uint8_t **data)
{
	if (!img || !addr || !size || !data)
		return CSD_EINVAL;
	if (i >= img->nsec)
		return CSD_ENOENT;
	*addr = img->sec[i].start;
	*size = img->sec[i].end - img->sec[i].start;
	*data = img->sec[i].data;
	return CSD_OK;
}
