/*
 * perf_enc.h - perf.data writer (internal; drives `csdec gen --perf-data`
 * and the tests that go through perf.data).
 *
 * Writes the file `perf record -e cs_etm//u --per-thread PROGRAM` would
 * have written on an ARMv7 board whose ETMs / PTMs (one per CPU) traced
 * the program into one ETB-style sink: the attributes of the cs_etm event
 * and of perf's tracking event, AUXTRACE_INFO with one ETMv3/PTM block per
 * CPU, the program's COMM, MMAP2 and ITRACE_START records, the trace as
 * AUX + AUXTRACE record pairs (formatter frames, as the sink holds them),
 * EXIT, and the feature sections (build ID, CPUs, command line, event
 * descriptions, PMU names, the AUXTRACE index). docs/DESIGN.md ("perf.data
 * writer") says why each part is there.
 *
 * Streaming: trace bytes go to the file as they come; an AUXTRACE record's
 * size and the AUXTRACE index are filled in at the end by writing at
 * earlier offsets and reading the records back, so memory does not grow
 * with the trace.
 */
#ifndef CSD_PERF_ENC_H
#define CSD_PERF_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "csdec.h"

#define CSDI_PERF_MAX_SOURCES 8
#define CSDI_PERF_MAX_MAPS 4
#define CSDI_PERF_BUILD_ID_MAX 20
/* The AUX buffer is closed at the first sync point after this many bytes
 * (when csdi_perf_enc_config.aux_size is 0). */
#define CSDI_PERF_AUX_SIZE_DEFAULT 65536u

/* Where the program's code is mapped: one executable PT_LOAD segment as the
 * kernel's ELF loader maps it (page-aligned start and length). */
struct csdi_perf_map {
	uint64_t start, len, pgoff;
	uint32_t prot;              /* PROT_READ 1, PROT_WRITE 2, PROT_EXEC 4 */
};

/* What MMAP2 and the build ID feature take from the program's ELF file. */
struct csdi_perf_elf {
	struct csdi_perf_map map[CSDI_PERF_MAX_MAPS];
	unsigned nmaps;
	uint8_t build_id[CSDI_PERF_BUILD_ID_MAX];
	uint8_t build_id_size;      /* 0: the file has no GNU build ID note */
};

/* Read the executable PT_LOAD segments and the GNU build ID (NT_GNU_BUILD_ID
 * in a PT_NOTE segment) of a 32-bit little-endian ELF file. Returns 0, or a
 * negative error with one line in err naming the file, the check and its
 * offset: CSD_EIO (cannot read), CSD_EFORMAT (not such an ELF file, or
 * headers passing its end), CSD_ENOENT (no executable segment), CSD_EINVAL
 * (more than CSDI_PERF_MAX_MAPS executable segments). */
int csdi_perf_elf_read(const char *path, struct csdi_perf_elf *elf, char *err, size_t errlen);

/* File access for the writer: write_at writes n bytes at offset off (past
 * the end extends the file; within it overwrites); read_at reads n bytes
 * written before. Both return 0 or a negative csd_error. */
struct csdi_perf_io {
	int (*write_at)(void *ctx, uint64_t off, const void *buf, size_t n);
	int (*read_at)(void *ctx, uint64_t off, void *buf, size_t n);
	void *ctx;
};

struct csdi_perf_enc_config {
	struct csdi_perf_io io;
	/* AUXTRACE_INFO header version: 2 (perf 6.3 and later write it; the
	 * trace IDs are also given by AUX_OUTPUT_HW_ID records) or 1 (what
	 * perf 6.1 writes, and the newest it reads). */
	unsigned version;
	/* The trace sources, source i on CPU i. Trace IDs distinct, 1-0x6F. */
	struct csd_trace_config sources[CSDI_PERF_MAX_SOURCES];
	unsigned nsources;
	/* The strings below must stay valid until csdi_perf_enc_finish(). */
	const char *exe_path;       /* the program's absolute path (MMAP2, build ID) */
	const struct csdi_perf_elf *elf;
	const char *comm;           /* process name; the first 15 bytes are kept */
	uint32_t pid, tid;
	const char *const *cmdline; /* the recording's command line (CMDLINE feature) */
	unsigned cmdline_n;
	const char *cpudesc;        /* CPUDESC feature, e.g. "ARMv7 Processor rev 1 (v7l)" */
	const char *arch;           /* ARCH feature (uname -m), e.g. "armv7l" */
	uint32_t pmu_type;          /* the cs_etm PMU's event type (0: 8) */
	uint64_t aux_size;          /* see CSDI_PERF_AUX_SIZE_DEFAULT */
};

struct csdi_perf_enc;

/* Start a file: writes everything that comes before the trace. NULL on a
 * bad configuration (*err CSD_EINVAL), memory shortage (CSD_ENOMEM) or a
 * write error (from io). */
struct csdi_perf_enc *csdi_perf_enc_new(const struct csdi_perf_enc_config *cfg, int *err);

/* n bytes of the source with this trace ID, in the order it produced them;
 * they go into 16-byte formatter frames as an ETB's formatter makes them.
 * Errors: CSD_EINVAL (unknown trace ID), write errors. */
int csdi_perf_enc_trace(struct csdi_perf_enc *e, uint8_t trace_id, const uint8_t *bytes, size_t n);

/* The single source's trace can be decoded from here on without what came
 * before (the generator's sync_point). With aux_size bytes or more in the
 * current AUX buffer, the buffer ends here, as when the sink is drained
 * after the core stopped tracing: its frames are completed and written as
 * one AUX record and one AUXTRACE record, and the next bytes start a new
 * buffer whose first frame restates the ID. With several sources buffers
 * never end early (one source's sync point is not the others'). */
int csdi_perf_enc_sync_point(struct csdi_perf_enc *e);

/* End the file: the last buffer, EXIT, the feature sections and the file
 * header. Returns 0 or the first error met (also one from an earlier call). */
int csdi_perf_enc_finish(struct csdi_perf_enc *e);

/* AUX buffers written so far. */
uint64_t csdi_perf_enc_buffers(const struct csdi_perf_enc *e);

void csdi_perf_enc_free(struct csdi_perf_enc *e);

#endif
