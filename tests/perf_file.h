/*
 * perf_file.h - a reader of the perf.data files csdec writes, for the tests
 * (header-only), written from the format as perf defines it: file header,
 * attribute entries, the records with their sample_id_all trailers (read
 * by each event's sample_type), AUXTRACE payloads, the feature table and the
 * features' contents. parse_perf() checks what it reads (PCHECK counts
 * each failed check in p->errors) and keeps what the tests compare.
 */
#ifndef CSD_TEST_PERF_FILE_H
#define CSD_TEST_PERF_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

#define MAXREC 65536

struct aux_rec {
	uint64_t aux_offset, aux_size, flags;
	uint32_t pid, tid, cpu;
	uint64_t id;
};

struct auxtrace_rec {
	uint64_t file_off, size, offset, payload;
	uint32_t idx, tid, cpu;
};

struct parsed {
	uint64_t data_off, data_size;
	uint8_t feat[32];
	unsigned nattr;
	uint64_t attr_type[4], attr_config[4], sample_type[4], attr_flags[4], attr_id[4];
	uint32_t rec_type[MAXREC];
	size_t nrec;
	struct aux_rec aux[MAXREC];
	size_t naux;
	struct auxtrace_rec at[MAXREC];
	size_t nat;
	uint64_t info[64];
	size_t ninfo;
	uint64_t hw_id[8];
	size_t nhw;
	char comm[32];
	char mmap_path[4200];
	uint64_t mmap_start, mmap_len, mmap_pgoff;
	uint8_t mmap_bid[20];
	unsigned mmap_bid_size, nmmap;
	uint64_t index[MAXREC];
	size_t nindex;
	char arch[64], cpudesc[64], cmdline[8][4200];
	uint32_t ncmdline, nrcpus_avail, nrcpus_online;
	uint8_t bid_feature[20];
	unsigned bid_feature_size;
	char bid_path[4200];
	int errors;
};

#define PCHECK(p, e) do { if (!(e)) { (p)->errors++; fprintf(stderr, "%s:%d: perf.data check failed: %s\n", \
	__FILE__, __LINE__, #e); } } while (0)

/* The event whose ID the trailer's last u64 names; -1 if none. */
static inline int event_of(const struct parsed *p, uint64_t id)
{
	for (unsigned i = 0; i < p->nattr; i++)
		if (p->attr_id[i] == id)
			return (int)i;
	return -1;
}

/* Parse the sample_id_all trailer at the end of a record: fields by the
 * event's sample_type (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER). */
static inline int parse_trailer(struct parsed *p, const uint8_t *r, size_t size, size_t fixed, uint32_t *pid,
				uint32_t *tid, uint32_t *cpu, uint64_t *id)
{
	if (size < fixed + 8)
		return -1;
	*id = rd64(r + size - 8);
	int ev = event_of(p, *id);
	if (ev < 0)
		return -1;
	uint64_t st = p->sample_type[ev];
	size_t need = 0;
	need += st & (1u << 1) ? 8 : 0;
	need += st & (1u << 2) ? 8 : 0;
	need += st & (1u << 6) ? 8 : 0;
	need += st & (1u << 9) ? 8 : 0;
	need += st & (1u << 7) ? 8 : 0;
	need += st & (1u << 16) ? 8 : 0;
	if (!(st & (1u << 16)) || fixed + need != size)
		return -1;
	const uint8_t *t = r + fixed;
	*pid = *tid = *cpu = UINT32_MAX;
	if (st & (1u << 1)) {
		*pid = rd32(t);
		*tid = rd32(t + 4);
		t += 8;
	}
	t += st & (1u << 2) ? 8 : 0;
	t += st & (1u << 6) ? 8 : 0;
	t += st & (1u << 9) ? 8 : 0;
	if (st & (1u << 7))
		*cpu = rd32(t);
	return 0;
}

/* A perf string (u32 length, then that many bytes holding a NUL). */
static inline int parse_string(const uint8_t *d, uint64_t end, uint64_t *at, char *out, size_t cap)
{
	if (*at + 4 > end)
		return -1;
	uint32_t len = rd32(d + *at);
	if (len == 0 || len % 64 || *at + 4 + len > end || memchr(d + *at + 4, 0, len) == NULL)
		return -1;
	snprintf(out, cap, "%s", (const char *)d + *at + 4);
	*at += 4 + len;
	return 0;
}

static inline void parse_perf(const uint8_t *d, size_t n, struct parsed *p)
{
	memset(p, 0, sizeof(*p));
	PCHECK(p, n >= 104);
	if (n < 104)
		return;
	PCHECK(p, memcmp(d, "PERFILE2", 8) == 0);
	PCHECK(p, rd64(d + 8) == 104);
	uint64_t attr_size = rd64(d + 16), attrs_off = rd64(d + 24), attrs_size = rd64(d + 32);
	p->data_off = rd64(d + 40);
	p->data_size = rd64(d + 48);
	memcpy(p->feat, d + 72, 32);
	PCHECK(p, attr_size == 144);
	PCHECK(p, attrs_size % 144 == 0 && attrs_size / 144 >= 1 && attrs_size / 144 <= 4);
	PCHECK(p, attrs_off + attrs_size <= n && p->data_off + p->data_size <= n);
	PCHECK(p, p->data_off % 8 == 0);
	if (p->errors)
		return;
	p->nattr = (unsigned)(attrs_size / 144);
	for (unsigned i = 0; i < p->nattr; i++) {
		const uint8_t *a = d + attrs_off + 144 * i;
		PCHECK(p, rd32(a + 4) == 128);
		p->attr_type[i] = rd32(a);
		p->attr_config[i] = rd64(a + 8);
		p->sample_type[i] = rd64(a + 24);
		p->attr_flags[i] = rd64(a + 40);
		uint64_t ids = rd64(a + 128), ids_size = rd64(a + 136);
		PCHECK(p, ids_size == 8 && ids + 8 <= n);
		if (ids_size == 8 && ids + 8 <= n)
			p->attr_id[i] = rd64(d + ids);
		PCHECK(p, p->attr_flags[i] & (1ull << 18)); /* sample_id_all */
	}

	/* The records. */
	uint64_t end = p->data_off + p->data_size;
	uint64_t off = p->data_off;
	while (off < end && p->nrec < MAXREC) {
		PCHECK(p, off + 8 <= end);
		if (off + 8 > end)
			return;
		const uint8_t *r = d + off;
		uint32_t type = rd32(r);
		uint16_t misc = rd16(r + 4), size = rd16(r + 6);
		PCHECK(p, size >= 8 && size % 8 == 0 && off + size <= end);
		if (size < 8 || off + size > end)
			return;
		p->rec_type[p->nrec++] = type;
		uint32_t pid, tid, cpu;
		uint64_t id;
		switch (type) {
		case 71: { /* AUXTRACE */
			PCHECK(p, size == 48);
			struct auxtrace_rec *t = &p->at[p->nat++];
			t->file_off = off;
			t->size = rd64(r + 8);
			t->offset = rd64(r + 16);
			t->idx = rd32(r + 32);
			t->tid = rd32(r + 36);
			t->cpu = rd32(r + 40);
			t->payload = off + 48;
			PCHECK(p, t->size % 8 == 0 && off + 48 + t->size <= end);
			off += t->size;
			break;
		}
		case 11: { /* AUX */
			struct aux_rec *a = &p->aux[p->naux++];
			a->aux_offset = rd64(r + 8);
			a->aux_size = rd64(r + 16);
			a->flags = rd64(r + 24);
			PCHECK(p, parse_trailer(p, r, size, 32, &a->pid, &a->tid, &a->cpu, &a->id) == 0);
			PCHECK(p, event_of(p, a->id) == 0);
			break;
		}
		case 70: /* AUXTRACE_INFO */
			PCHECK(p, rd32(r + 8) == 3 && rd32(r + 12) == 0);
			p->ninfo = (size_t)(size - 16) / 8;
			PCHECK(p, p->ninfo <= 64);
			for (size_t i = 0; i < p->ninfo && i < 64; i++)
				p->info[i] = rd64(r + 16 + 8 * i);
			break;
		case 21: /* AUX_OUTPUT_HW_ID */
			PCHECK(p, parse_trailer(p, r, size, 16, &pid, &tid, &cpu, &id) == 0);
			PCHECK(p, cpu != UINT32_MAX); /* a reader needs the CPU */
			if (p->nhw < 8)
				p->hw_id[p->nhw++] = rd64(r + 8);
			break;
		case 3: /* COMM */
			PCHECK(p, misc & 0x2000);
			PCHECK(p, memchr(r + 16, 0, size - 16) != NULL);
			snprintf(p->comm, sizeof(p->comm), "%s", (const char *)r + 16);
			PCHECK(p, parse_trailer(p, r, size, 16 + (strlen(p->comm) + 8) / 8 * 8, &pid, &tid, &cpu, &id) == 0);
			PCHECK(p, event_of(p, id) == 1);
			break;
		case 10: /* MMAP2 */
			PCHECK(p, memchr(r + 72, 0, size - 72) != NULL);
			snprintf(p->mmap_path, sizeof(p->mmap_path), "%s", (const char *)r + 72);
			p->mmap_start = rd64(r + 16);
			p->mmap_len = rd64(r + 24);
			p->mmap_pgoff = rd64(r + 32);
			if (misc & 0x4000) {
				p->mmap_bid_size = r[40];
				PCHECK(p, p->mmap_bid_size <= 20);
				memcpy(p->mmap_bid, r + 44, 20);
			}
			PCHECK(p, parse_trailer(p, r, size, 72 + (strlen(p->mmap_path) + 8) / 8 * 8, &pid, &tid, &cpu, &id) ==
					  0);
			p->nmmap++;
			break;
		case 12: /* ITRACE_START */
			PCHECK(p, parse_trailer(p, r, size, 16, &pid, &tid, &cpu, &id) == 0);
			PCHECK(p, event_of(p, id) == 0);
			break;
		case 4: /* EXIT */
			PCHECK(p, parse_trailer(p, r, size, 32, &pid, &tid, &cpu, &id) == 0);
			break;
		case 69: /* ID_INDEX */
			PCHECK(p, size == 16 + 32 * rd64(r + 8));
			for (uint64_t i = 0; i < rd64(r + 8) && 16 + 32 * i < size; i++)
				PCHECK(p, event_of(p, rd64(r + 16 + 32 * i)) >= 0);
			break;
		case 68: /* FINISHED_ROUND */
		case 82: /* FINISHED_INIT */
			PCHECK(p, size == 8);
			break;
		case 73: /* THREAD_MAP */
			PCHECK(p, size == 16 + 24 * rd64(r + 8));
			break;
		default:
			PCHECK(p, !"a record type the writer does not write");
		}
		off += size;
	}
	PCHECK(p, off == end);

	/* The features: one section per bit set, in bit order. */
	uint64_t table = end;
	unsigned nfeat = 0;
	for (unsigned b = 0; b < 256; b++)
		nfeat += (p->feat[b / 8] >> (b % 8)) & 1;
	PCHECK(p, table + 16 * nfeat <= n);
	if (table + 16 * nfeat > n)
		return;
	unsigned k = 0;
	for (unsigned b = 0; b < 256; b++) {
		if (!((p->feat[b / 8] >> (b % 8)) & 1))
			continue;
		uint64_t so = rd64(d + table + 16 * k), ss = rd64(d + table + 16 * k + 8);
		k++;
		PCHECK(p, so + ss <= n && so >= table + 16 * nfeat);
		if (so + ss > n)
			continue;
		uint64_t se = so + ss, at = so;
		switch (b) {
		case 2: /* BUILD_ID: entries {header, pid, id[24], name padded to 64} */
			PCHECK(p, ss >= 36);
			if (ss < 36)
				break;
			PCHECK(p, rd16(d + so + 6) == ss); /* one entry */
			PCHECK(p, (int32_t)rd32(d + so + 8) == -1);
			PCHECK(p, rd16(d + so + 4) == (0x8000 | 2));
			p->bid_feature_size = d[so + 32];
			memcpy(p->bid_feature, d + so + 12, 20);
			PCHECK(p, (ss - 36) % 64 == 0 && memchr(d + so + 36, 0, ss - 36) != NULL);
			snprintf(p->bid_path, sizeof(p->bid_path), "%s", (const char *)d + so + 36);
			break;
		case 6:
			PCHECK(p, parse_string(d, se, &at, p->arch, sizeof(p->arch)) == 0 && at == se);
			break;
		case 7:
			PCHECK(p, ss == 8);
			p->nrcpus_avail = rd32(d + so);
			p->nrcpus_online = rd32(d + so + 4);
			break;
		case 8:
			PCHECK(p, parse_string(d, se, &at, p->cpudesc, sizeof(p->cpudesc)) == 0 && at == se);
			break;
		case 11:
			p->ncmdline = rd32(d + so);
			at += 4;
			for (uint32_t i = 0; i < p->ncmdline && i < 8; i++)
				PCHECK(p, parse_string(d, se, &at, p->cmdline[i], sizeof(p->cmdline[i])) == 0);
			PCHECK(p, at == se);
			break;
		case 12: { /* EVENT_DESC */
			uint32_t nev = rd32(d + so), asz = rd32(d + so + 4);
			PCHECK(p, nev == p->nattr && asz == 128);
			at += 8;
			for (uint32_t i = 0; i < nev && !p->errors; i++) {
				PCHECK(p, memcmp(d + at, d + attrs_off + 144 * i, 128) == 0);
				at += 128;
				uint32_t nids = rd32(d + at);
				at += 4;
				char name[64];
				PCHECK(p, parse_string(d, se, &at, name, sizeof(name)) == 0);
				PCHECK(p, nids == 1 && rd64(d + at) == p->attr_id[i]);
				at += 8 * nids;
			}
			PCHECK(p, at == se);
			break;
		}
		case 16: { /* PMU_MAPPINGS */
			uint32_t nm = rd32(d + so);
			at += 4;
			int cs_etm = 0;
			for (uint32_t i = 0; i < nm; i++) {
				uint32_t type = rd32(d + at);
				at += 4;
				char name[64];
				PCHECK(p, parse_string(d, se, &at, name, sizeof(name)) == 0);
				if (strcmp(name, "cs_etm") == 0 && type == p->attr_type[0])
					cs_etm = 1;
			}
			PCHECK(p, cs_etm && at == se);
			break;
		}
		case 18: /* AUXTRACE index */
			p->nindex = (size_t)rd64(d + so);
			PCHECK(p, ss == 8 + 16 * p->nindex && p->nindex <= MAXREC);
			for (size_t i = 0; i < p->nindex && i < MAXREC && 8 + 16 * i + 16 <= ss; i++) {
				p->index[i] = rd64(d + so + 8 + 16 * i);
				PCHECK(p, rd64(d + so + 16 + 16 * i) == 48);
			}
			break;
		default:
			PCHECK(p, !"a feature the writer does not write");
		}
	}
}

/* Every AUX record lies inside an AUXTRACE buffer of its thread; the
 * index names exactly the AUXTRACE records, in order. */
static inline void check_aux_layout(struct parsed *p, uint32_t tid)
{
	PCHECK(p, p->nindex == p->nat);
	for (size_t i = 0; i < p->nat && i < p->nindex; i++)
		PCHECK(p, p->index[i] == p->at[i].file_off);
	PCHECK(p, p->naux == p->nat);
	uint64_t pos = 0;
	for (size_t i = 0; i < p->naux && i < p->nat; i++) {
		const struct aux_rec *a = &p->aux[i];
		const struct auxtrace_rec *t = &p->at[i];
		PCHECK(p, a->aux_offset == pos && t->offset == pos);
		PCHECK(p, a->aux_size <= t->size && t->size - a->aux_size < 8);
		PCHECK(p, a->flags == 0); /* formatted, not truncated */
		PCHECK(p, a->tid == tid && t->tid == tid && t->cpu == UINT32_MAX);
		pos += a->aux_size;
	}
}

#endif
