/*
 * perf_files.c - the files a perf.data recording mapped, found on this
 * machine as perf finds them: by build ID (the MMAP2 record's or the
 * build-ID table's) in the build-ID cache, then under a sysroot (--symfs),
 * where a file whose own build ID is another is refused. The tool and the
 * Python package both decode perf.data through these, so the rules live in
 * one place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"
#include "file.h"
#include "perf_files.h"

#define BUILD_ID_MAX 20
#define PHDR_MAX 256            /* program headers looked at */
#define NOTES_MAX 4096          /* bytes of a PT_NOTE segment looked at */

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return le16(p) | le16(p + 2) << 16;
}

void csdi_build_id_hex(char *out, const uint8_t *id, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = 0;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The GNU build-ID note among n bytes of notes: its size, 0 if none. */
static int note_build_id(const uint8_t *notes, size_t n, uint8_t id[BUILD_ID_MAX])
{
	for (size_t k = 0; k + 12 <= n;) {
		uint32_t namesz = le32(notes + k), descsz = le32(notes + k + 4), type = le32(notes + k + 8);
		if (namesz > n || descsz > n)
			return 0;
		size_t name_end = k + 12 + ((namesz + 3u) & ~3u);
		size_t desc_end = name_end + ((descsz + 3u) & ~3u);
		if (desc_end > n)
			return 0;
		if (type == 3 && namesz == 4 && memcmp(notes + k + 12, "GNU", 4) == 0 && descsz && descsz <= BUILD_ID_MAX) {
			memcpy(id, notes + name_end, descsz);
			return (int)descsz;
		}
		k = desc_end;
	}
	return 0;
}

int csd_elf_build_id(const char *path, uint8_t id[20])
{
	if (!path || !id)
		return CSD_EINVAL;
	const char *what;
	int fd = csdi_open_regular(path, &what);
	if (fd < 0)
		return CSD_EIO;
	int got = 0;
	uint8_t eh[64];
	if (csdi_pread_exact(fd, eh, 52, 0) == 0 && memcmp(eh, "\177ELF", 4) == 0 && eh[5] == 1 && (eh[4] == 1 || eh[4] == 2)) {
		const int is64 = eh[4] == 2;
		if (!is64 || csdi_pread_exact(fd, eh + 52, 12, 52) == 0) {
			const uint64_t phoff = is64 ? le64(eh + 32) : le32(eh + 28);
			const unsigned phentsize = is64 ? le16(eh + 54) : le16(eh + 42);
			const unsigned phnum = is64 ? le16(eh + 56) : le16(eh + 44);
			const unsigned want = is64 ? 56u : 32u;
			for (unsigned i = 0; i < phnum && i < PHDR_MAX && !got; i++) {
				uint8_t ph[56];
				if (phentsize < want || csdi_pread_exact(fd, ph, want, phoff + (uint64_t)i * phentsize))
					break;
				if (le32(ph) != 4) /* PT_NOTE */
					continue;
				const uint64_t off = is64 ? le64(ph + 8) : le32(ph + 4);
				const uint64_t size = is64 ? le64(ph + 32) : le32(ph + 16);
				uint8_t notes[NOTES_MAX];
				const size_t n = size < sizeof(notes) ? (size_t)size : sizeof(notes);
				if (csdi_pread_exact(fd, notes, n, off) == 0)
					got = note_build_id(notes, n, id);
			}
		}
	}
	close(fd);
	return got;
}

int csd_perf_file_build_id(const csd_perf *pd, const char *name, int32_t pid, uint8_t id[20])
{
	if (!pd || !name || !id)
		return CSD_EINVAL;
	const struct csd_perf_build_id *any = NULL;
	for (size_t i = 0; i < csd_perf_num_build_ids(pd); i++) {
		const struct csd_perf_build_id *b = csd_perf_build_id(pd, i);
		if (strcmp(b->filename, name) != 0)
			continue;
		if (b->pid == pid) {
			any = b;
			break;
		}
		if (!any)
			any = b;
	}
	if (!any || !any->size || any->size > BUILD_ID_MAX)
		return 0;
	memcpy(id, any->id, any->size);
	return (int)any->size;
}

static int is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* path = the formatted string, if it fits and names a regular file: 1;
 * 0 if not such a file; CSD_ENOSPC if it does not fit. */
static int take_path(char *path, size_t size, int len)
{
	if (len < 0 || (size_t)len >= size)
		return CSD_ENOSPC;
	return is_regular(path);
}

int csd_perf_find_file(const char *name, const uint8_t *build_id, size_t build_id_size, const char *symfs,
		       const char *buildid_dir, char *path, size_t path_size, uint8_t other[20], size_t *other_size)
{
	if (!name || (build_id_size && !build_id) || build_id_size > BUILD_ID_MAX || !path || !path_size || !other ||
	    !other_size)
		return CSD_EINVAL;
	*other_size = 0;
	path[0] = 0;
	int r;
	if (build_id_size) {
		char home_root[4096];
		const char *root = buildid_dir;
		if (!root) {
			const char *home = getenv("HOME");
			if (home && *home && strlen(home) < sizeof(home_root) - 8) {
				snprintf(home_root, sizeof(home_root), "%s/.debug", home);
				root = home_root;
			}
		}
		if (root) {
			char hex[2 * BUILD_ID_MAX + 1];
			csdi_build_id_hex(hex, build_id, build_id_size);
			/* .build-id/xx/rest: a directory holding elf (a link to
			 * NAME/HEX), or an older cache's plain file. */
			int len = snprintf(path, path_size, "%s/.build-id/%.2s/%s", root, hex, hex + 2);
			if (len >= 0 && (size_t)len < path_size && is_dir(path))
				len = snprintf(path, path_size, "%s/.build-id/%.2s/%s/elf", root, hex, hex + 2);
			if ((r = take_path(path, path_size, len)) != 0)
				return r < 0 ? r : CSD_OK;
			len = snprintf(path, path_size, "%s%s/%s/elf", root, name, hex);
			if ((r = take_path(path, path_size, len)) != 0)
				return r < 0 ? r : CSD_OK;
		}
	}
	int len = snprintf(path, path_size, "%s%s", symfs ? symfs : "", name);
	if ((r = take_path(path, path_size, len)) <= 0) {
		if (r == 0)
			path[0] = 0;
		return r < 0 ? r : CSD_ENOENT;
	}
	if (build_id_size) {
		uint8_t found[BUILD_ID_MAX];
		int n = csd_elf_build_id(path, found);
		if (n > 0 && ((size_t)n != build_id_size || memcmp(found, build_id, build_id_size) != 0)) {
			memcpy(other, found, (size_t)n);
			*other_size = (size_t)n;
			return CSD_ENOENT;
		}
	}
	return CSD_OK;
}
