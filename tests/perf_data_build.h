/* perf_data_build.h - a small perf.data writer for the tests of the
 * reader: the layout of a file-mode perf.data file as perf 6.1 writes it
 * (header, attribute entries, records, feature table), with cs_etm
 * AUXTRACE_INFO of header version 0, 1 or 2. Every record and field is put
 * by hand so that tests can also write what perf never would.
 *
 *   struct pdb b; pdb_init(&b, sample_type, sample_id_all);
 *   pdb_auxtrace_info(&b, version, cpus, n); pdb_mmap2(&b, ...); ...
 *   pdb_finish(&b); write b.buf[0..b.n) ...; pdb_free(&b);
 */
#ifndef CSD_TEST_PERF_DATA_BUILD_H
#define CSD_TEST_PERF_DATA_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PDB_SAMPLE_TID (1u << 1)
#define PDB_SAMPLE_TIME (1u << 2)
#define PDB_SAMPLE_ID (1u << 6)
#define PDB_SAMPLE_CPU (1u << 7)
#define PDB_SAMPLE_IDENTIFIER (1u << 16)

#define PDB_PMU_TYPE 8u
#define PDB_ATTR_SIZE 128u              /* perf 6.1's perf_event_attr */
#define PDB_MAGIC_ETM3 UINT64_C(0x3030303030303030)
#define PDB_MAGIC_ETM4 UINT64_C(0x4040404040404040)
#define PDB_MAGIC_ETE UINT64_C(0x5050505050505050)

/* A metadata block: ETMv3/PTM registers, or (magic ETM4/ETE) a unit this
 * reader skips. nparams 0: as perf writes it (4 for ETMv3, 7 ETMv4, 8
 * ETE), < 0: none, else that many; version 0 has no count. */
struct pdb_cpu {
	uint64_t magic;
	int cpu;
	uint64_t etmcr, traceidr, etmccer, etmidr;
	int nparams;
};

/* The sample_id trailer of a kernel record (fields per sample_type);
 * ident 0 is the cs_etm event's ID, PDB_ID_DUMMY the tracking event's. */
struct pdb_sid {
	int32_t pid, tid, cpu;
	uint64_t time;
	uint64_t ident;
};

#define PDB_ID_ETM 100u
#define PDB_ID_DUMMY 101u

struct pdb_build_id {
	int32_t pid;
	uint16_t cpumode;
	uint8_t id[20], size;
	const char *name;
};

struct pdb {
	uint8_t *buf;
	size_t n, cap;
	uint64_t sample_type;
	int sample_id_all;
	uint64_t attr_config;
	size_t data_start;
	/* features written by pdb_finish (NULL / 0: absent) */
	const char *hostname, *cpudesc, *arch;
	uint32_t nr_cpus;
	const char *cmdline[4];
	const struct pdb_build_id *bids;
	size_t nbids;
	int index;                      /* write the AUXTRACE index (feature 18) */
	size_t auxtrace_at[64];
	size_t nauxtrace;
	int no_features;
	uint64_t data_size_override;    /* != 0: written as data.size */
};

static inline void pdb_put(struct pdb *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 65536;
		while (nc < b->n + n)
			nc *= 2;
		b->buf = realloc(b->buf, nc);
		if (!b->buf)
			abort();
		b->cap = nc;
	}
	if (p)
		memcpy(b->buf + b->n, p, n);
	else
		memset(b->buf + b->n, 0, n);
	b->n += n;
}

static inline void pdb_u8(struct pdb *b, uint8_t v) { pdb_put(b, &v, 1); }

static inline void pdb_u16(struct pdb *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	pdb_put(b, x, 2);
}

static inline void pdb_u32(struct pdb *b, uint32_t v)
{
	pdb_u16(b, (uint16_t)v);
	pdb_u16(b, (uint16_t)(v >> 16));
}

static inline void pdb_u64(struct pdb *b, uint64_t v)
{
	pdb_u32(b, (uint32_t)v);
	pdb_u32(b, (uint32_t)(v >> 32));
}

static inline void pdb_set64(struct pdb *b, size_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->buf[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static inline void pdb_set16(struct pdb *b, size_t at, uint16_t v)
{
	b->buf[at] = (uint8_t)v;
	b->buf[at + 1] = (uint8_t)(v >> 8);
}

/* One perf_file_attr: the attribute and its IDs section. */
static inline void pdb_attr(struct pdb *b, uint32_t type, uint64_t config, uint64_t flags, size_t ids_at)
{
	pdb_u32(b, type);
	pdb_u32(b, PDB_ATTR_SIZE);
	pdb_u64(b, config);
	pdb_u64(b, 1);                  /* sample_period */
	pdb_u64(b, b->sample_type);
	pdb_u64(b, 0);                  /* read_format */
	pdb_u64(b, flags | (uint64_t)(b->sample_id_all ? 1 : 0) << 18);
	pdb_put(b, NULL, PDB_ATTR_SIZE - 48);
	pdb_u64(b, ids_at);
	pdb_u64(b, 8);
}

/* Header (fixed up by pdb_finish); the cs_etm event and perf's tracking
 * event dummy:u (mmap, comm, task, mmap2, comm_exec), each with one ID,
 * as perf record writes them; then the data section starts. */
static inline void pdb_init(struct pdb *b, uint64_t sample_type, int sample_id_all, uint64_t config)
{
	memset(b, 0, sizeof(*b));
	b->sample_type = sample_type;
	b->sample_id_all = sample_id_all;
	b->attr_config = config;
	pdb_put(b, "PERFILE2", 8);
	pdb_u64(b, 104);
	pdb_u64(b, PDB_ATTR_SIZE + 16);
	pdb_put(b, NULL, 104 - 24);
	size_t ids = b->n;
	pdb_u64(b, PDB_ID_ETM);
	pdb_u64(b, PDB_ID_DUMMY);
	size_t attrs = b->n;
	const uint64_t common = 1u << 0 | 1u << 5 | 1u << 12; /* disabled, exclude_kernel, enable_on_exec */
	pdb_attr(b, PDB_PMU_TYPE, config, common, ids);
	pdb_attr(b, 1, 9, common | 1u << 8 | 1u << 9 | 1u << 13 | 1u << 23 | 1u << 24, ids + 8);
	pdb_set64(b, 24, attrs);
	pdb_set64(b, 32, b->n - attrs);
	b->data_start = b->n;
	pdb_set64(b, 40, b->data_start);
}

/* Record header; returns its offset (for pdb_end). */
static inline size_t pdb_begin(struct pdb *b, uint32_t type, uint16_t misc)
{
	size_t at = b->n;
	pdb_u32(b, type);
	pdb_u16(b, misc);
	pdb_u16(b, 0);
	return at;
}

static inline void pdb_trailer(struct pdb *b, const struct pdb_sid *s)
{
	if (!b->sample_id_all)
		return;
	uint64_t st = b->sample_type;
	if (st & PDB_SAMPLE_TID) {
		pdb_u32(b, (uint32_t)s->pid);
		pdb_u32(b, (uint32_t)s->tid);
	}
	if (st & PDB_SAMPLE_TIME)
		pdb_u64(b, s->time);
	if (st & PDB_SAMPLE_ID)
		pdb_u64(b, s->ident ? s->ident : PDB_ID_ETM);
	if (st & PDB_SAMPLE_CPU) {
		pdb_u32(b, (uint32_t)s->cpu);
		pdb_u32(b, 0);
	}
	if (st & PDB_SAMPLE_IDENTIFIER)
		pdb_u64(b, s->ident ? s->ident : PDB_ID_ETM);
}

static inline void pdb_end(struct pdb *b, size_t at)
{
	pdb_set16(b, at + 6, (uint16_t)(b->n - at));
}

/* A NUL-terminated string padded to a multiple of 8. */
static inline void pdb_str8(struct pdb *b, const char *s)
{
	size_t n = strlen(s) + 1;
	pdb_put(b, s, n - 1);
	pdb_put(b, NULL, 1 + ((8 - n % 8) % 8));
}

static inline void pdb_auxtrace_info(struct pdb *b, int version, int snapshot, const struct pdb_cpu *cpus, int n)
{
	size_t at = pdb_begin(b, 70, 0);
	pdb_u32(b, 3);                  /* CS_ETM */
	pdb_u32(b, 0);
	pdb_u64(b, (uint64_t)version);
	pdb_u64(b, (uint64_t)PDB_PMU_TYPE << 32 | (uint32_t)n);
	pdb_u64(b, (uint64_t)snapshot);
	for (int i = 0; i < n; i++) {
		const struct pdb_cpu *c = &cpus[i];
		int v3 = c->magic == PDB_MAGIC_ETM3;
		pdb_u64(b, c->magic);
		pdb_u64(b, (uint64_t)c->cpu);
		int np = v3 ? 4 : c->magic == PDB_MAGIC_ETM4 ? 7 : 8;
		if (version > 0) {
			if (c->nparams)
				np = c->nparams < 0 ? 0 : c->nparams;
			pdb_u64(b, (uint64_t)np);
		}
		uint64_t v3p[4] = { c->etmcr, c->traceidr, c->etmccer, c->etmidr };
		for (int k = 0; k < np; k++)
			pdb_u64(b, v3 && k < 4 ? v3p[k] : k == 0 ? c->etmcr : k == 1 ? c->traceidr : 0x100 + (uint64_t)k);
	}
	pdb_end(b, at);
}

/* AUXTRACE: the record, then `n` trace bytes padded to 8 (the size field
 * counts the padding, as perf writes it). Returns the payload's offset. */
static inline size_t pdb_auxtrace(struct pdb *b, uint64_t aux_offset, uint32_t idx, int32_t tid, int32_t cpu,
				  const uint8_t *data, size_t n)
{
	size_t padded = (n + 7) & ~(size_t)7;
	size_t at = pdb_begin(b, 71, 0);
	if (b->nauxtrace < sizeof(b->auxtrace_at) / sizeof(b->auxtrace_at[0]))
		b->auxtrace_at[b->nauxtrace++] = at;
	pdb_u64(b, padded);
	pdb_u64(b, aux_offset);
	pdb_u64(b, 0x1234567890abcdefu); /* reference */
	pdb_u32(b, idx);
	pdb_u32(b, (uint32_t)tid);
	pdb_u32(b, (uint32_t)cpu);
	pdb_u32(b, 0);
	pdb_end(b, at);
	size_t payload = b->n;
	pdb_put(b, data, n);
	pdb_put(b, NULL, padded - n);
	return payload;
}

static inline void pdb_aux(struct pdb *b, uint64_t aux_offset, uint64_t size, uint64_t flags, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 11, 0);
	pdb_u64(b, aux_offset);
	pdb_u64(b, size);
	pdb_u64(b, flags);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

/* MMAP2, with a build ID (misc 0x4000) when id is not NULL. */
static inline void pdb_mmap2(struct pdb *b, int32_t pid, int32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
			     const char *name, const uint8_t *id, uint8_t id_size, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 10, (uint16_t)(2 | (id ? 0x4000 : 0)));
	pdb_u32(b, (uint32_t)pid);
	pdb_u32(b, (uint32_t)tid);
	pdb_u64(b, addr);
	pdb_u64(b, len);
	pdb_u64(b, pgoff);
	if (id) {
		pdb_u8(b, id_size);
		pdb_put(b, NULL, 3);
		pdb_put(b, id, 20);
	} else {
		pdb_u32(b, 8);          /* maj */
		pdb_u32(b, 1);          /* min */
		pdb_u64(b, 1234);       /* ino */
		pdb_u64(b, 0);
	}
	pdb_u32(b, 5);                  /* PROT_READ | PROT_EXEC */
	pdb_u32(b, 2);                  /* MAP_PRIVATE */
	pdb_str8(b, name);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

static inline void pdb_mmap(struct pdb *b, int32_t pid, int32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
			    const char *name, uint16_t misc, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 1, misc);
	pdb_u32(b, (uint32_t)pid);
	pdb_u32(b, (uint32_t)tid);
	pdb_u64(b, addr);
	pdb_u64(b, len);
	pdb_u64(b, pgoff);
	pdb_str8(b, name);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

static inline void pdb_comm(struct pdb *b, int32_t pid, int32_t tid, const char *comm, int exec, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 3, (uint16_t)(exec ? 0x2000 : 0));
	pdb_u32(b, (uint32_t)pid);
	pdb_u32(b, (uint32_t)tid);
	pdb_str8(b, comm);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

static inline void pdb_itrace_start(struct pdb *b, int32_t pid, int32_t tid, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 12, 0);
	pdb_u32(b, (uint32_t)pid);
	pdb_u32(b, (uint32_t)tid);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

/* SWITCH (cpu_wide 0) or SWITCH_CPU_WIDE with next_prev pid/tid. */
static inline void pdb_switch(struct pdb *b, int cpu_wide, int out, int32_t np_pid, int32_t np_tid,
			      const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, cpu_wide ? 15 : 14, (uint16_t)(out ? 0x2000 : 0));
	if (cpu_wide) {
		pdb_u32(b, (uint32_t)np_pid);
		pdb_u32(b, (uint32_t)np_tid);
	}
	pdb_trailer(b, s);
	pdb_end(b, at);
}

static inline void pdb_hw_id(struct pdb *b, uint64_t hw_id, const struct pdb_sid *s)
{
	size_t at = pdb_begin(b, 21, 0);
	pdb_u64(b, hw_id);
	pdb_trailer(b, s);
	pdb_end(b, at);
}

/* A record of perf's own kind (FINISHED_ROUND 68 and the like). */
static inline void pdb_user(struct pdb *b, uint32_t type, const void *body, size_t n)
{
	size_t at = pdb_begin(b, type, 0);
	pdb_put(b, body, n);
	pdb_end(b, at);
}

/* perf's header string: u32 length (NUL included, rounded up to 64). */
static inline void pdb_hstring(struct pdb *b, const char *s)
{
	uint32_t len = (uint32_t)((strlen(s) + 1 + 63) & ~(size_t)63);
	pdb_u32(b, len);
	size_t at = b->n;
	pdb_put(b, NULL, len);
	memcpy(b->buf + at, s, strlen(s));
}

/* Data size, then the feature table and sections (build IDs 2, hostname 3,
 * arch 6, nrcpus 7, cpudesc 8, cmdline 11, AUXTRACE index 18). */
static inline void pdb_finish(struct pdb *b)
{
	size_t data_end = b->n;
	pdb_set64(b, 48, b->data_size_override ? b->data_size_override : data_end - b->data_start);
	if (b->no_features)
		return;
	int bits[8], nb = 0;
	if (b->nbids)
		bits[nb++] = 2;
	if (b->hostname)
		bits[nb++] = 3;
	if (b->arch)
		bits[nb++] = 6;
	if (b->nr_cpus)
		bits[nb++] = 7;
	if (b->cpudesc)
		bits[nb++] = 8;
	if (b->cmdline[0])
		bits[nb++] = 11;
	if (b->index)
		bits[nb++] = 18;
	uint64_t mask = 0;
	for (int i = 0; i < nb; i++)
		mask |= UINT64_C(1) << bits[i];
	pdb_set64(b, 72, mask);
	size_t table = b->n;
	pdb_put(b, NULL, 16 * (size_t)nb);
	for (int i = 0; i < nb; i++) {
		size_t start = b->n;
		switch (bits[i]) {
		case 2:
			for (size_t k = 0; k < b->nbids; k++) {
				const struct pdb_build_id *e = &b->bids[k];
				size_t nl = (strlen(e->name) + 1 + 63) & ~(size_t)63;
				pdb_u32(b, 0);
				pdb_u16(b, (uint16_t)(e->cpumode | 0x8000));
				pdb_u16(b, (uint16_t)(36 + nl));
				pdb_u32(b, (uint32_t)e->pid);
				pdb_put(b, e->id, 20);
				pdb_u8(b, e->size);
				pdb_put(b, NULL, 3);
				size_t at = b->n;
				pdb_put(b, NULL, nl);
				memcpy(b->buf + at, e->name, strlen(e->name));
			}
			break;
		case 3:
			pdb_hstring(b, b->hostname);
			break;
		case 6:
			pdb_hstring(b, b->arch);
			break;
		case 7:
			pdb_u32(b, b->nr_cpus);
			pdb_u32(b, b->nr_cpus);
			break;
		case 8:
			pdb_hstring(b, b->cpudesc);
			break;
		case 18:
			pdb_u64(b, b->nauxtrace);
			for (size_t k = 0; k < b->nauxtrace; k++) {
				pdb_u64(b, b->auxtrace_at[k]);
				pdb_u64(b, 48);
			}
			break;
		case 11: {
			uint32_t nw = 0;
			while (nw < 4 && b->cmdline[nw])
				nw++;
			pdb_u32(b, nw);
			for (uint32_t k = 0; k < nw; k++)
				pdb_hstring(b, b->cmdline[k]);
			break;
		}
		}
		pdb_set64(b, table + 16 * (size_t)i, start);
		pdb_set64(b, table + 16 * (size_t)i + 8, b->n - start);
	}
}

static inline int pdb_write(const struct pdb *b, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(b->buf, 1, b->n, f) == b->n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static inline void pdb_free(struct pdb *b)
{
	free(b->buf);
	b->buf = NULL;
}

#endif
