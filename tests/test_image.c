/* Unit tests of the memory image: buffers, overrides, files, ELF PT_LOAD
 * segments, the read callback, and inaccessible memory. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "image.h"

static void test_buffers(void)
{
	csd_image *img = csd_image_new();
	uint8_t a[16], b[4] = { 0xb0, 0xb1, 0xb2, 0xb3 }, out[32];
	for (int i = 0; i < 16; i++)
		a[i] = (uint8_t)i;
	CHECK_EQ(csd_image_add_buffer(img, 0x1000, a, sizeof(a), 1), 0);
	a[0] = 0xff; /* copied: the image must not see this */
	CHECK_EQ(csd_image_add_buffer(img, 0x1004, b, sizeof(b), 0), 0);
	CHECK_EQ(csd_image_read(img, 0x1000, out, 4), 4);
	CHECK_EQ(out[0], 0);
	/* The later buffer overrides 0x1004..0x1007, and reading continues
	 * into the older section behind it. */
	CHECK_EQ(csd_image_read(img, 0x1002, out, 32), 14);
	CHECK_EQ(out[1], 3);
	CHECK_EQ(out[2], 0xb0);
	CHECK_EQ(out[5], 0xb3);
	CHECK_EQ(out[6], 8);
	CHECK_EQ(csd_image_read(img, 0x0fff, out, 1), CSD_ENOMAP);
	CHECK_EQ(csd_image_read(img, 0x1010, out, 1), CSD_ENOMAP);
	CHECK_EQ(csd_image_add_buffer(img, 0xfffffffe, b, 4, 0), CSD_EINVAL);
	CHECK_EQ(csd_image_add_buffer(NULL, 0, b, 4, 0), CSD_EINVAL);
	const uint8_t *p;
	struct csdi_image_window w;
	memset(&w, 0, sizeof(w));
	CHECK_EQ(csdi_image_fetch(img, &w, 0x100f, &p), 1);
	CHECK_EQ(p[0], 15);
	/* The window then serves later lookups in its piece ... */
	CHECK_EQ(csdi_image_fetch(img, &w, 0x1009, &p), 7);
	CHECK_EQ(p[0], 9);
	/* ... but not once a newer section covers part of it. */
	static const uint8_t over[2] = { 0xee, 0xef };
	CHECK_EQ(csd_image_add_buffer(img, 0x100a, over, 2, 1), 0);
	CHECK_EQ(csdi_image_fetch(img, &w, 0x1009, &p), 1);
	CHECK_EQ(p[0], 9);
	CHECK_EQ(csdi_image_fetch(img, &w, 0x100a, &p), 2);
	CHECK_EQ(p[0], 0xee);
	/* Another reader's window is its own. */
	struct csdi_image_window w2;
	memset(&w2, 0, sizeof(w2));
	CHECK_EQ(csdi_image_fetch(img, &w2, 0x100c, &p), 4);
	CHECK_EQ(p[0], 12);
	CHECK_EQ(csdi_image_fetch(img, &w, 0x100b, &p), 1);
	CHECK_EQ(p[0], 0xef);
	csd_image_free(img);
}

static size_t cb_calls;
static size_t read_cb(void *ctx, uint64_t addr, uint8_t *buf, size_t size)
{
	(void)ctx;
	cb_calls++;
	/* Memory exists only at [0x2100, 0x2300): fill with the low byte. */
	if (addr < 0x2100 || addr >= 0x2300)
		return 0;
	size_t n = 0;
	while (n < size && addr + n < 0x2300) {
		buf[n] = (uint8_t)(addr + n);
		n++;
	}
	return n;
}

static void test_callback(void)
{
	csd_image *img = csd_image_new();
	uint8_t out[8];
	CHECK_EQ(csd_image_set_callback(img, read_cb, NULL), 0);
	CHECK_EQ(csd_image_read(img, 0x2104, out, 4), 4);
	CHECK_EQ(out[0], 0x04);
	size_t calls = cb_calls;
	CHECK_EQ(csd_image_read(img, 0x2108, out, 4), 4); /* served from the page cache */
	CHECK_EQ(cb_calls, calls);
	CHECK_EQ(out[3], 0x0b);
	CHECK_EQ(csd_image_read(img, 0x22fe, out, 8), 2);
	CHECK_EQ(csd_image_read(img, 0x2300, out, 4), CSD_ENOMAP);
	CHECK_EQ(csd_image_read(img, 0x20ff, out, 4), CSD_ENOMAP);
	csd_image_free(img);
}

static void write_file(const char *path, const uint8_t *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(fwrite(d, 1, n, f), n);
	fclose(f);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void test_files(void)
{
	char raw[] = "/tmp/csd_test_image_rawXXXXXX", elf[] = "/tmp/csd_test_image_elfXXXXXX";
	int fd1 = mkstemp(raw), fd2 = mkstemp(elf);
	CHECK(fd1 >= 0 && fd2 >= 0);
	close(fd1);
	close(fd2);
	uint8_t data[64];
	for (int i = 0; i < 64; i++)
		data[i] = (uint8_t)(0x40 + i);
	write_file(raw, data, sizeof(data));

	csd_image *img = csd_image_new();
	uint8_t out[4];
	CHECK_EQ(csd_image_add_file(img, raw, 8, 16, 0x8000), 0);
	CHECK_EQ(csd_image_read(img, 0x8000, out, 4), 4);
	CHECK_EQ(out[0], 0x48);
	CHECK_EQ(csd_image_read(img, 0x800f, out, 4), 1);
	CHECK_EQ(csd_image_add_file(img, raw, 60, 8, 0x9000), CSD_EIO);
	CHECK_EQ(csd_image_add_file(img, "/nonexistent/csd", 0, 0, 0), CSD_EIO);

	/* A minimal ELF32 LE: two PT_LOAD segments (one with no file bytes)
	 * and one PT_NOTE. */
	uint8_t e[52 + 3 * 32 + 16];
	memset(e, 0, sizeof(e));
	memcpy(e, "\177ELF", 4);
	e[4] = 1;
	e[5] = 1;
	e[6] = 1;
	put32(e + 28, 52);          /* e_phoff */
	e[42] = 32;                 /* e_phentsize */
	e[44] = 3;                  /* e_phnum */
	uint8_t *ph = e + 52;
	put32(ph + 0, 1);           /* PT_LOAD */
	put32(ph + 4, 52 + 96);     /* p_offset */
	put32(ph + 8, 0x10000);     /* p_vaddr */
	put32(ph + 16, 16);         /* p_filesz */
	ph += 32;
	put32(ph + 0, 1);           /* PT_LOAD, bss only */
	put32(ph + 8, 0x20000);
	ph += 32;
	put32(ph + 0, 4);           /* PT_NOTE */
	for (int i = 0; i < 16; i++)
		e[52 + 96 + i] = (uint8_t)(0xa0 + i);
	write_file(elf, e, sizeof(e));
	CHECK_EQ(csd_image_add_elf(img, elf, 0x100), 1);
	CHECK_EQ(csd_image_read(img, 0x10100, out, 4), 4);
	CHECK_EQ(out[0], 0xa0);
	CHECK_EQ(csd_image_read(img, 0x20000, out, 4), CSD_ENOMAP);
	/* Corrupt: program headers past the end of the file. */
	put32(e + 28, 4000);
	write_file(elf, e, sizeof(e));
	CHECK_EQ(csd_image_add_elf(img, elf, 0), CSD_EFORMAT);
	/* Not an ELF at all. */
	CHECK_EQ(csd_image_add_elf(img, raw, 0), CSD_EFORMAT);
	csd_image_free(img);
	unlink(raw);
	unlink(elf);
}

/* Many overlapping sections: every byte reads from the newest section that
 * covers it, and a lookup costs a binary search (50,000 sections and
 * 200,000 reads would take minutes with a scan per miss). */
static void test_many_sections(void)
{
	enum { NSEC = 50000, SPAN = 1 << 20 };
	static uint8_t bytes[NSEC][64];
	static int32_t owner[SPAN];
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	for (size_t a = 0; a < SPAN; a++)
		owner[a] = -1;
	uint32_t x = 2463534242u;
	for (int i = 0; i < NSEC; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		uint32_t at = x % (SPAN - 64), len = 1 + (x >> 20) % 64;
		memset(bytes[i], (uint8_t)(i * 7 + 1), sizeof(bytes[i]));
		CHECK_EQ(csd_image_add_buffer(img, 0x40000000u + at, bytes[i], len, 0), 0);
		for (uint32_t k = 0; k < len; k++)
			owner[at + k] = i;
	}
	CHECK_EQ(csd_image_num_sections(img), NSEC);
	unsigned wrong = 0;
	for (int r = 0; r < 200000; r++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		uint32_t at = x % SPAN;
		uint8_t b[80];
		int got = csd_image_read(img, 0x40000000u + at, b, sizeof(b));
		/* Model: bytes up to the first uncovered one. */
		int want = 0;
		while (want < (int)sizeof(b) && at + (uint32_t)want < SPAN && owner[at + want] >= 0)
			want++;
		if (want == 0) {
			wrong += got != CSD_ENOMAP;
			continue;
		}
		wrong += got != want;
		for (int k = 0; k < want && k < got; k++)
			wrong += b[k] != (uint8_t)(owner[at + k] * 7 + 1);
	}
	CHECK_EQ(wrong, 0);
	csd_image_free(img);
}

/* A file that shrinks after it was added (another process truncating it:
 * the image is untrusted input) leaves the image as it was read: no
 * SIGBUS, as a mapping of the file would give on the lost pages. */
static void test_file_shrinks(void)
{
	char path[] = "/tmp/csd_test_image_shrinkXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	static uint8_t data[65536];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + (i >> 8));
	write_file(path, data, sizeof(data));
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_file(img, path, 0, 0, 0x10000), CSD_OK);
	CHECK_EQ(truncate(path, 0), 0);
	size_t wrong = 0;
	for (size_t at = 0; at < sizeof(data); at += 4093) {
		uint8_t b[16];
		const size_t want = sizeof(data) - at < sizeof(b) ? sizeof(data) - at : sizeof(b);
		wrong += csd_image_read(img, 0x10000 + (uint32_t)at, b, sizeof(b)) != (int)want;
		wrong += memcmp(b, data + at, want) != 0;
	}
	CHECK_EQ(wrong, 0);
	csd_image_free(img);
	unlink(path);
}

int main(void)
{
	test_buffers();
	test_callback();
	test_files();
	test_many_sections();
	test_file_shrinks();
	return check_done("test_image");
}
