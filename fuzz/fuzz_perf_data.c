/*
 * fuzz_perf_data.c - libFuzzer harness for the perf.data reader
 * (csd_perf_*).
 *
 * Input: a perf.data file, read from memory (csdi_perf_open_mem, the same
 * code as a file but for the reads).
 *
 * Checked without an oracle: csd_perf_open() gives a reader, or an error
 * the API lists with a NULL reader and a message naming a file offset
 * (bytes past the given length untouched); the info agrees with the input
 * (file size, data section inside it); every CPU has a known unit, and an
 * ETMv3 or PTM one a configuration its packet decoder (and so the flow
 * decoder) accepts; build-ID
 * entries are well-formed; the walk ends (at most one event per byte) with
 * CSD_EEOS or a listed error that names an offset and stays; every event's
 * strings are terminated, its type known, its file offset never behind the
 * previous one's; every AUX_DATA piece lies in the data section, is not
 * empty, follows the previous piece of its buffer in the stream, says raw
 * exactly when its AUX flags do, and reads back; a second walk after
 * csd_perf_rewind() gives the same events.
 *
 * Then the session (csd_perf_session_*) over the same bytes, its flags
 * taken from the input, with images whose mapped files are never found
 * (symfs and the build-ID cache name no directory): it ends, within a
 * bound of actions per input byte, with CSD_EEOS or a listed error that
 * stays; a decoder is made before its data, gets bytes of its own trace
 * ID only, ends once and not after its capture; warnings name the file.
 */
#include <stdio.h>

#include "fuzz_common.h"
#include "perf_data.h"
#include "perf_session.h"

static int perf_open_error(int rc)
{
	return rc == CSD_EIO || rc == CSD_EFORMAT || rc == CSD_EUNSUPPORTED || rc == CSD_ENOENT || rc == CSD_ENOMEM;
}

/* A digest of the events, to compare two walks. */
static uint64_t perf_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
	return h;
}

static uint64_t perf_walk(csd_perf *pd, size_t size, int *end_rc)
{
	const struct csd_perf_info *in = csd_perf_info(pd);
	uint64_t data_end = in->data_offset + in->data_size;
	uint64_t h = 0, last_offset = 0, piece_record = UINT64_MAX, piece_end = 0;
	size_t events = 0;
	static uint8_t buf[65536];
	struct csd_perf_event ev = { .size = sizeof(ev) };
	int rc;
	while ((rc = csd_perf_next(pd, &ev)) == 0) {
		events++;
		FUZZ_CHECK(events <= size + 1);
		FUZZ_CHECK(ev.type > 0 && ev.type < CSD_PERF_EVENT_COUNT);
		FUZZ_CHECK(strcmp(csd_perf_event_name((int)ev.type), "unknown") != 0);
		FUZZ_CHECK(ev.offset >= last_offset && ev.offset >= in->data_offset && ev.offset < data_end);
		last_offset = ev.offset;
		FUZZ_CHECK(ev.filename && ev.comm && strlen(ev.filename) < 65536 && strlen(ev.comm) < 65536);
		FUZZ_CHECK(ev.build_id_size <= 20);
		if (ev.type == CSD_PERF_AUX_DATA) {
			FUZZ_CHECK(ev.data_size > 0);
			FUZZ_CHECK(ev.data_offset > ev.offset && ev.data_offset <= data_end && ev.data_offset <= size);
			FUZZ_CHECK(ev.data_size <= data_end - ev.data_offset && ev.data_size <= size - ev.data_offset);
			FUZZ_CHECK(!(ev.flags & CSD_PERF_EVF_RAW) == !(ev.aux_flags & CSD_PERF_AUX_RAW));
			FUZZ_CHECK(!(ev.flags & CSD_PERF_EVF_NO_AUX) || ev.aux_flags == 0);
			if (ev.offset == piece_record)
				FUZZ_CHECK(ev.aux_offset == piece_end);
			piece_record = ev.offset;
			piece_end = ev.aux_offset + ev.data_size;
			size_t n = ev.data_size < sizeof(buf) ? (size_t)ev.data_size : sizeof(buf);
			FUZZ_CHECK(csd_perf_read(pd, ev.data_offset, buf, n) == (int)n);
			h = perf_mix(h, buf[0]);
			h = perf_mix(h, buf[n - 1]);
		}
		h = perf_mix(h, ev.type);
		h = perf_mix(h, ev.offset);
		h = perf_mix(h, ev.data_offset ^ ev.data_size << 1 ^ ev.aux_offset << 2 ^ ev.aux_flags << 3);
		h = perf_mix(h, (uint64_t)(uint32_t)ev.cpu << 32 ^ (uint32_t)ev.pid ^ (uint64_t)(uint32_t)ev.tid << 7);
		h = perf_mix(h, ev.addr ^ ev.len << 1 ^ ev.pgoff << 2 ^ ev.time << 3 ^ ev.flags);
		h = perf_mix(h, strlen(ev.filename) ^ strlen(ev.comm) << 16);
	}
	FUZZ_CHECK(rc == CSD_EEOS || rc == CSD_EFORMAT || rc == CSD_EIO);
	if (rc != CSD_EEOS) {
		FUZZ_CHECK(strstr(csd_perf_error(pd), "offset 0x") != NULL);
		FUZZ_CHECK(csd_perf_next(pd, &ev) == rc);
	}
	*end_rc = rc;
	return perf_mix(h, (uint64_t)rc);
}

static void perf_check_cpus(const csd_perf *pd)
{
	size_t n = csd_perf_num_cpus(pd);
	for (size_t i = 0; i < n; i++) {
		const struct csd_perf_cpu *c = csd_perf_cpu(pd, i);
		FUZZ_CHECK(c && c->unit >= CSD_PERF_UNIT_ETM3 && c->unit <= CSD_PERF_UNIT_OTHER);
		FUZZ_CHECK(c->id_from <= CSD_PERF_ID_HW_ID);
		for (size_t j = 0; j < i; j++)
			FUZZ_CHECK(csd_perf_cpu(pd, j)->cpu != c->cpu);
		if (c->unit != CSD_PERF_UNIT_ETM3 && c->unit != CSD_PERF_UNIT_PTM) {
			FUZZ_CHECK(c->config.protocol == 0 && c->config.size == 0);
			continue;
		}
		FUZZ_CHECK(c->config.size == sizeof(c->config));
		FUZZ_CHECK(c->config.protocol == (c->unit == CSD_PERF_UNIT_PTM ? CSD_PROTO_PTM : CSD_PROTO_ETM3));
		FUZZ_CHECK((c->id_from == CSD_PERF_ID_NONE) == (c->config.trace_id == 0 || c->config.trace_id >= 0x70));
		/* The packet decoder takes it (the flow decoder checks no
		 * more than that, and costs MiBs of zeroed tables). */
		if (c->unit == CSD_PERF_UNIT_PTM) {
			csd_ptm_pkt_decoder *d = csd_ptm_pkt_new(&c->config);
			FUZZ_CHECK(d != NULL);
			csd_ptm_pkt_free(d);
		} else {
			csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(&c->config);
			FUZZ_CHECK(d != NULL);
			csd_etm3_pkt_free(d);
		}
	}
	FUZZ_CHECK(csd_perf_cpu(pd, n) == NULL);
	for (size_t i = 0; i < csd_perf_num_build_ids(pd); i++) {
		const struct csd_perf_build_id *b = csd_perf_build_id(pd, i);
		FUZZ_CHECK(b && b->size <= 20 && b->filename && strlen(b->filename) < 4096);
	}
	FUZZ_CHECK(csd_perf_build_id(pd, csd_perf_num_build_ids(pd)) == NULL);
}

static void session_walk(const uint8_t *data, size_t size)
{
	csd_perf *pd;
	if (csdi_perf_open_mem(data, size, &pd, NULL, 0) != CSD_OK)
		return;
	static csd_image *base;
	if (!base) {
		static const uint8_t code[64];
		base = csd_image_new();
		FUZZ_CHECK(base && csd_image_add_buffer(base, 0x8000, code, sizeof(code), 0) == 0);
	}
	const uint8_t ids[2] = { data[size / 2] & 0x7F, 0x10 };
	struct csd_perf_session_config cfg = {
		.size = sizeof(cfg),
		.flags = (uint32_t)(size % 8),
		.base = base,
		.symfs = "/nonexistent-csdec-fuzz",
		.buildid_dir = "/nonexistent-csdec-fuzz",
		.ids = ids,
		.num_ids = size % 5 == 1 ? 2 : 0,
	};
	csd_perf_session *ps;
	FUZZ_CHECK(csdi_perf_session_from_reader(pd, "<memory>", &cfg, &ps) == CSD_OK);
	static uint8_t live[CSD_PERF_SESSION_KEYS];
	memset(live, 0, sizeof(live));
	int ended_queue = -1;
	struct csd_perf_action a = { .size = sizeof(a) };
	uint64_t actions = 0;
	int rc;
	while ((rc = csd_perf_session_next(ps, &a)) == 0) {
		FUZZ_CHECK(++actions <= 64 * (uint64_t)size + 4096);
		switch (a.type) {
		case CSD_PERF_ACT_SOURCE:
			FUZZ_CHECK(a.key < CSD_PERF_SESSION_KEYS && !live[a.key]);
			FUZZ_CHECK(a.source && a.source->config.trace_id == a.key % 128);
			FUZZ_CHECK(!(cfg.flags & CSD_PERF_SESSION_IMAGES) == !a.image);
			live[a.key] = 1;
			break;
		case CSD_PERF_ACT_DATA:
			FUZZ_CHECK(a.key < CSD_PERF_SESSION_KEYS && live[a.key]);
			FUZZ_CHECK(a.bytes.id == a.key % 128 && a.bytes.size > 0 && a.bytes.data);
			{
				/* (Both ends readable: the sanitizer checks.) */
				volatile uint8_t ends = a.bytes.data[0] ^ a.bytes.data[a.bytes.size - 1];
				(void)ends;
			}
			break;
		case CSD_PERF_ACT_END:
			FUZZ_CHECK(a.key < CSD_PERF_SESSION_KEYS && live[a.key]);
			live[a.key] = 0;
			ended_queue = (int)(a.key / 128);
			break;
		case CSD_PERF_ACT_CAPTURE_END:
			for (unsigned k = 0; ended_queue >= 0 && k < 128; k++)
				FUZZ_CHECK(!live[(unsigned)ended_queue * 128 + k]);
			ended_queue = -1;
			break;
		case CSD_PERF_ACT_WARNING:
			FUZZ_CHECK(a.text && strncmp(a.text, "<memory>: ", 10) == 0);
			break;
		case CSD_PERF_ACT_FRAME_ERROR:
			FUZZ_CHECK(a.frame.reason != NULL);
			break;
		case CSD_PERF_ACT_AUX_LOST:
			FUZZ_CHECK(a.event != NULL);
			break;
		case CSD_PERF_ACT_SETTLE:
			FUZZ_CHECK(cfg.flags & CSD_PERF_SESSION_THREADS);
			break;
		default:
			FUZZ_CHECK(0);
		}
	}
	FUZZ_CHECK(rc == CSD_EEOS || rc == CSD_ENOENT || rc == CSD_EFORMAT || rc == CSD_EIO || rc == CSD_ENOMEM);
	if (rc == CSD_EEOS) {
		for (unsigned k = 0; k < CSD_PERF_SESSION_KEYS; k++)
			FUZZ_CHECK(!live[k]);
	} else {
		FUZZ_CHECK(strncmp(csd_perf_session_error(ps), "<memory>: ", 10) == 0);
	}
	FUZZ_CHECK(csd_perf_session_next(ps, &a) == rc);
	csd_perf_session_free(ps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A short error buffer now and then, with a canary behind it. */
	char err[600];
	size_t errlen = size % 7 == 3 ? 1 + size % 40 : 512;
	memset(err, 0x5A, sizeof(err));
	static char not_set;
	csd_perf *pd = (csd_perf *)(void *)&not_set; /* open must overwrite it */
	int rc = csdi_perf_open_mem(data, size, &pd, err, errlen);
	for (size_t i = errlen; i < sizeof(err); i++)
		FUZZ_CHECK(err[i] == 0x5A);
	FUZZ_CHECK(memchr(err, 0, errlen) != NULL);
	if (rc != CSD_OK) {
		FUZZ_CHECK(pd == NULL && perf_open_error(rc));
		FUZZ_CHECK(errlen < 64 || rc == CSD_ENOMEM || strstr(err, "offset 0x") != NULL);
		return 0;
	}
	FUZZ_CHECK(pd != NULL && err[0] == 0);
	const struct csd_perf_info *in = csd_perf_info(pd);
	FUZZ_CHECK(in && in->file_size == size && in->data_offset <= size);
	FUZZ_CHECK(in->etm_version <= 2);
	FUZZ_CHECK(in->hostname && in->os_release && in->perf_version && in->arch && in->cpu_desc && in->cpuid &&
		   in->cmdline);
	FUZZ_CHECK(strlen(in->cmdline) < 4096 && strlen(in->hostname) < 4096);
	perf_check_cpus(pd);
	int rc1, rc2;
	uint64_t h1 = perf_walk(pd, size, &rc1);
	FUZZ_CHECK(csd_perf_rewind(pd) == CSD_OK);
	uint64_t h2 = perf_walk(pd, size, &rc2);
	FUZZ_CHECK(h1 == h2 && rc1 == rc2);
	FUZZ_CHECK(csd_perf_read(pd, size, err, 1) == CSD_EINVAL);
	csd_perf_free(pd);
	session_walk(data, size);
	return 0;
}
