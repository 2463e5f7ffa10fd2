/*
 * fuzz_image.c - libFuzzer harness for the memory image (csd_image_*):
 * ELF files, raw files, buffers, the read callback, and reads across them.
 *
 * Input: [0..1] length L of an ELF file (little-endian), [2] ELF bias in
 * pages (signed), then L bytes of ELF file (written into a private mkdtemp
 * directory with a copy of the whole input as raw.bin; removed before
 * returning), then operations of 8 bytes each:
 *   op % 4 == 0  add a buffer of the input bytes (copied or referenced)
 *   op % 4 == 1  read and compare with the model
 *   op % 4 == 2  set the read callback (serving input bytes) or remove it
 *   op % 4 == 3  add a range of raw.bin with csd_image_add_file()
 * Addresses are mostly below 1 MiB so sections overlap, sometimes just
 * below 2^32 so that ranges reach the end of the address space.
 *
 * The oracle is a model written from the API's documentation: a list of
 * sections where the newest covering an address wins, then the callback; a
 * read returns the bytes up to the first inaccessible one (CSD_ENOMAP if
 * that is the first); nothing is accessible from 2^32 on. An ELF file that csd_image_add_elf() accepts adds its
 * PT_LOAD segments with file bytes, as the harness reads them from the ELF
 * headers itself (ELF32 little-endian: e_phoff at 28, e_phentsize at 42,
 * e_phnum at 44; p_type, p_offset, p_vaddr, p_filesz at 0, 4, 8, 16). A
 * rejected ELF file may leave segments behind, so the image is then
 * started afresh. Argument checks: ranges past 2^32 are refused with
 * CSD_EINVAL, file ranges past the end of the file with CSD_EIO.
 */
#include <stdio.h>
#include <unistd.h>

#include "fuzz_common.h"

#define IMG_MAX_SECTIONS 64
#define IMG_OP_SIZE 8

struct img_section {
	uint64_t start, end;
	const uint8_t *data;
};

struct img_model {
	struct img_section sec[IMG_MAX_SECTIONS];
	size_t n;
	int cb_on;
	uint64_t cb_start, cb_end;
	const uint8_t *cb_data;
};

/* The harness's own callback data (set with the callback). */
static struct img_model *img_cb_model;

static size_t img_callback(void *ctx, uint64_t addr, uint8_t *buf, size_t size)
{
	const struct img_model *m = ctx;
	FUZZ_CHECK(m == img_cb_model);
	if (addr < m->cb_start || addr >= m->cb_end)
		return 0;
	size_t n = (size_t)(m->cb_end - addr) < size ? (size_t)(m->cb_end - addr) : size;
	memcpy(buf, m->cb_data + (addr - m->cb_start), n);
	return n;
}

/* The byte at addr according to the model; -1 if inaccessible. */
static int img_model_byte(const struct img_model *m, uint64_t addr)
{
	if (addr >> 32)
		return -1; /* the address space ends at 2^32, whatever the callback says */
	for (size_t i = m->n; i-- > 0;)
		if (addr >= m->sec[i].start && addr < m->sec[i].end)
			return m->sec[i].data[addr - m->sec[i].start];
	if (m->cb_on && addr >= m->cb_start && addr < m->cb_end)
		return m->cb_data[addr - m->cb_start];
	return -1;
}

static void img_model_add(struct img_model *m, uint64_t start, uint64_t size, const uint8_t *data)
{
	if (size == 0)
		return;
	FUZZ_CHECK(m->n < IMG_MAX_SECTIONS);
	m->sec[m->n].start = start;
	m->sec[m->n].end = start + size;
	m->sec[m->n].data = data;
	m->n++;
}

static uint64_t img_addr(const uint8_t *op)
{
	uint32_t v = (uint32_t)op[1] | (uint32_t)op[2] << 8 | (uint32_t)(op[3] & 0x0F) << 16;
	if (op[3] & 0x80)
		return UINT64_C(0x100000000) - 0x1000 + (v & 0xFFF);
	return v;
}

static int img_range_ok(uint64_t addr, uint64_t size)
{
	return addr < (UINT64_C(1) << 32) && size <= (UINT64_C(1) << 32) - addr;
}

static void img_check_read(csd_image *img, const struct img_model *m, uint64_t addr, size_t size)
{
	uint8_t buf[1024];
	FUZZ_CHECK(size <= sizeof(buf));
	int rc = csd_image_read(img, addr, buf, size);
	size_t want = 0;
	while (want < size && img_model_byte(m, addr + want) >= 0)
		want++;
	if (size == 0) {
		FUZZ_CHECK(rc == 0);
		return;
	}
	if (want == 0) {
		FUZZ_CHECK(rc == CSD_ENOMAP);
		return;
	}
	FUZZ_CHECK(rc == (int)want);
	for (size_t i = 0; i < want; i++)
		FUZZ_CHECK(buf[i] == img_model_byte(m, addr + i));
}

static uint32_t img_le32(const uint8_t *p)
{
	return fuzz_le32(p);
}

/* The PT_LOAD segments of an ELF file the library accepted, into the model. */
static void img_model_elf(struct img_model *m, const uint8_t *elf, size_t n, int64_t bias, int added)
{
	int count = 0;
	FUZZ_CHECK(n >= 52);
	uint32_t phoff = img_le32(elf + 28);
	unsigned phentsize = (unsigned)(elf[42] | elf[43] << 8), phnum = (unsigned)(elf[44] | elf[45] << 8);
	for (unsigned i = 0; i < phnum; i++) {
		uint64_t at = phoff + (uint64_t)i * phentsize;
		FUZZ_CHECK(at + 32 <= n);
		const uint8_t *ph = elf + at;
		uint32_t type = img_le32(ph), off = img_le32(ph + 4), vaddr = img_le32(ph + 8), filesz = img_le32(ph + 16);
		if (type != 1 || filesz == 0)
			continue;
		FUZZ_CHECK((uint64_t)off + filesz <= n);
		img_model_add(m, (uint64_t)((int64_t)vaddr + bias), filesz, elf + off);
		count++;
	}
	FUZZ_CHECK(count == added);
}

static char img_dir[256], img_elf_path[300], img_raw_path[300];

static void img_cleanup(void)
{
	unlink(img_elf_path);
	unlink(img_raw_path);
	rmdir(img_dir);
}

static void img_write(const char *path, const uint8_t *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(data, 1, n, f) == n);
	FUZZ_CHECK(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	size_t elf_len = (size_t)(data[0] | data[1] << 8);
	int64_t bias = (int64_t)(int8_t)data[2] * 0x1000;
	if (elf_len > size - 3)
		elf_len = size - 3;
	const uint8_t *elf = data + 3, *ops = elf + elf_len;
	size_t n_ops = (size - 3 - elf_len) / IMG_OP_SIZE;

	const char *tmp = getenv("TMPDIR");
	char *dir = img_dir, *elf_path = img_elf_path, *raw_path = img_raw_path;
	snprintf(dir, sizeof(img_dir), "%s/csdec-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 200 ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	snprintf(elf_path, sizeof(img_elf_path), "%s/image.elf", dir);
	snprintf(raw_path, sizeof(img_raw_path), "%s/raw.bin", dir);
	fuzz_on_failure = img_cleanup;
	img_write(elf_path, elf, elf_len);
	img_write(raw_path, data, size);

	static struct img_model model;
	memset(&model, 0, sizeof(model));
	img_cb_model = &model;
	csd_image *img = csd_image_new();
	FUZZ_CHECK(img != NULL);
	int added = csd_image_add_elf(img, elf_path, bias);
	FUZZ_CHECK(added >= 0 || added == CSD_EIO || added == CSD_EFORMAT || added == CSD_EINVAL);
	if (added >= 0) {
		img_model_elf(&model, elf, elf_len, bias, added);
	} else {
		csd_image_free(img);
		img = csd_image_new();
		FUZZ_CHECK(img != NULL);
	}
	FUZZ_CHECK(csd_image_add_elf(img, dir, 0) == CSD_EIO); /* a directory is not a file */

	for (size_t i = 0; i < n_ops && model.n < IMG_MAX_SECTIONS; i++) {
		const uint8_t *op = ops + i * IMG_OP_SIZE;
		uint64_t addr = img_addr(op);
		size_t len = (size_t)(op[4] | (op[5] & 3) << 8);
		size_t from = (size_t)(op[6] | op[7] << 8) % size;
		int rc;
		switch (op[0] % 4) {
		case 0: {
			if (len > size - from)
				len = size - from;
			rc = csd_image_add_buffer(img, addr, data + from, len, op[0] & 4);
			if (!img_range_ok(addr, len)) {
				FUZZ_CHECK(rc == CSD_EINVAL);
				break;
			}
			FUZZ_CHECK(rc == CSD_OK);
			img_model_add(&model, addr, len, data + from);
			break;
		}
		case 1:
			img_check_read(img, &model, addr, len);
			break;
		case 2:
			if (op[0] & 4) {
				FUZZ_CHECK(csd_image_set_callback(img, NULL, NULL) == CSD_OK);
				model.cb_on = 0;
				break;
			}
			if (len > size - from)
				len = size - from;
			model.cb_on = 1;
			model.cb_start = addr;
			model.cb_end = addr + len;
			model.cb_data = data + from;
			FUZZ_CHECK(csd_image_set_callback(img, img_callback, &model) == CSD_OK);
			break;
		default: {
			/* A range of raw.bin; len 0 means to the end of the file. */
			uint64_t file_off = from;
			if (op[0] & 4)
				file_off += size; /* past the end now and then */
			rc = csd_image_add_file(img, raw_path, file_off, len, addr);
			uint64_t want_len = len ? len : (file_off <= size ? size - file_off : 0);
			if (file_off > size || (len && len > size - file_off)) {
				FUZZ_CHECK(rc == CSD_EIO);
				break;
			}
			if (!img_range_ok(addr, want_len)) {
				FUZZ_CHECK(rc == CSD_EINVAL);
				break;
			}
			FUZZ_CHECK(rc == CSD_OK);
			img_model_add(&model, addr, want_len, data + file_off);
			break;
		}
		}
	}
	/* Everything the operations touched, once more at the end. */
	for (size_t i = 0; i < n_ops; i++) {
		const uint8_t *op = ops + i * IMG_OP_SIZE;
		img_check_read(img, &model, img_addr(op), (size_t)(op[4] | (op[5] & 3) << 8));
	}
	csd_image_free(img);
	fuzz_on_failure = NULL;
	FUZZ_CHECK(unlink(elf_path) == 0 && unlink(raw_path) == 0 && rmdir(dir) == 0);
	return 0;
}
