/*
 * ocsd_decode.h - full instruction-flow decode of one snapshot source by
 * OpenCSD (Debian's libopencsd), the independent second opinion of the
 * differential test. Header-only; link -lopencsd_c_api -lopencsd.
 *
 * The source's trace buffer is fed unchanged to an OpenCSD decode tree with
 * one full decoder (packet processor + packet decoder) configured from the
 * snapshot's registers; the code memory is the snapshot's dumps of the
 * traced core, given to OpenCSD as file regions (OpenCSD reads the files
 * itself, so csdec's image code is not involved). Every generic element is
 * kept, in order, in a compact form.
 */
#ifndef CSD_TEST_OCSD_DECODE_H
#define CSD_TEST_OCSD_DECODE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "csdec.h"
#include "ocsd_feed.h"

/*
 * OpenCSD 1.3.3's C API allocates a callback object in
 * ocsd_dt_set_gen_elem_outfn() that ocsd_destroy_dcd_tree() never frees
 * (32 bytes per tree). LeakSanitizer reads suppressions from the first
 * hook; the one entry names exactly that allocation. The allocation is
 * made by libstdc++'s operator new, which has no frame pointers, so the
 * second hook asks for full unwinding at malloc, else the stack would stop
 * before the OpenCSD function. Both are unused without sanitizers.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:ocsd_dt_set_gen_elem_outfn\n";
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

/* One OpenCSD generic element (the fields the differential test uses). */
struct ocsd_elem {
	uint32_t type;          /* ocsd_gen_trc_elem_t */
	uint64_t index;         /* capture offset OpenCSD reports for the packet */
	uint64_t st_addr;       /* INSTR_RANGE: first instruction; ADDR_NACC: address */
	uint64_t en_addr;       /* INSTR_RANGE: address after the last instruction */
	uint32_t num_instr;     /* INSTR_RANGE */
	uint32_t payload;       /* EXCEPTION: number; TRACE_ON: reason; NO_SYNC: unsync reason */
	uint32_t cycle_count;   /* with has_cc, or CYCLE_COUNT */
	uint32_t context_id;    /* PE_CONTEXT with ctxt_id_valid */
	uint64_t timestamp;     /* TIMESTAMP */
	uint8_t isa;            /* enum csd_isa */
	uint8_t last_exec;      /* INSTR_RANGE: last instruction executed (condition passed) */
	uint8_t last_i_type;    /* INSTR_RANGE: ocsd_instr_type of the last instruction */
	uint8_t last_sz;        /* INSTR_RANGE: bytes of the last instruction */
	uint8_t has_cc;
	uint8_t excep_ret_addr; /* EXCEPTION: en_addr is the preferred return address */
};

struct ocsd_decode {
	struct ocsd_elem *el;
	size_t n, cap;
	int oom;                /* an element could not be stored */
	int mem_errors;         /* dumps OpenCSD refused (overlap, unreadable file) */
	/* OpenCSD gave up on the rest of the buffer (fatal response): its last
	 * error code and the capture offset it names. */
	int fatal;
	int fatal_err;          /* ocsd_err_t */
	uint64_t fatal_index;
};

static inline void ocsd_decode_free(struct ocsd_decode *d)
{
	free(d->el);
	memset(d, 0, sizeof(*d));
}

static inline uint8_t ocsd_decode_isa(ocsd_isa isa)
{
	switch (isa) {
	case ocsd_isa_arm: return CSD_ISA_ARM;
	case ocsd_isa_thumb2: return CSD_ISA_THUMB;
	case ocsd_isa_tee: return CSD_ISA_THUMBEE;
	case ocsd_isa_jazelle: return CSD_ISA_JAZELLE;
	default: return CSD_ISA_UNKNOWN;
	}
}

static ocsd_datapath_resp_t ocsd_decode_elem_cb(const void *ctx, const ocsd_trc_index_t index,
						const uint8_t chan_id, const ocsd_generic_trace_elem *e)
{
	struct ocsd_decode *d = (struct ocsd_decode *)ctx;
	(void)chan_id;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 4096;
		struct ocsd_elem *ne = realloc(d->el, ncap * sizeof(*ne));
		if (!ne) {
			d->oom = 1;
			return OCSD_RESP_CONT;
		}
		d->el = ne;
		d->cap = ncap;
	}
	struct ocsd_elem *o = &d->el[d->n++];
	memset(o, 0, sizeof(*o));
	o->type = (uint32_t)e->elem_type;
	o->index = index;
	o->st_addr = e->st_addr;
	o->en_addr = e->en_addr;
	o->isa = ocsd_decode_isa(e->isa);
	o->has_cc = (uint8_t)e->has_cc;
	o->cycle_count = e->cycle_count;
	o->timestamp = e->timestamp;
	o->context_id = e->context.ctxt_id_valid ? e->context.context_id : 0;
	switch (e->elem_type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		o->num_instr = e->num_instr_range;
		o->last_exec = (uint8_t)e->last_instr_exec;
		o->last_i_type = (uint8_t)e->last_i_type;
		o->last_sz = (uint8_t)e->last_instr_sz;
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		o->payload = e->exception_number;
		o->excep_ret_addr = (uint8_t)e->excep_ret_addr;
		break;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		o->payload = (uint32_t)e->trace_on_reason;
		break;
	case OCSD_GEN_TRC_ELEM_NO_SYNC:
	case OCSD_GEN_TRC_ELEM_EO_TRACE:
		o->payload = (uint32_t)e->unsync_eot_info;
		break;
	default:
		break;
	}
	return OCSD_RESP_CONT;
}

static inline long ocsd_decode_file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n = -1;
	if (f && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (f)
		fclose(f);
	return n;
}

/*
 * Give OpenCSD the dumps of the source's core (all dumps when the snapshot
 * does not say which core the source traces), as csd_snapshot_load_image()
 * gives them to csdec.
 */
static inline void ocsd_decode_add_memory(dcd_tree_handle_t tree, const csd_snapshot *snap,
					  const struct csd_snapshot_source *src, struct ocsd_decode *out)
{
	for (size_t i = 0; i < csd_snapshot_num_dumps(snap); i++) {
		const struct csd_snapshot_dump *dump = csd_snapshot_dump(snap, i);
		if (src->core_name && strcasecmp(dump->device, src->core_name) != 0)
			continue;
		long fsize = ocsd_decode_file_size(dump->path);
		/* OpenCSD 1.3.3 takes a file's size rounded down to even and
		 * refuses a region reaching past that (OCSD_ERR_NOT_INIT), so an
		 * odd-sized dump would be lost whole. Its last odd byte is half
		 * a halfword, never a whole instruction: leave it out. */
		if (fsize > 0)
			fsize &= ~1L;
		if (fsize <= 0 || dump->offset >= (uint64_t)fsize) {
			out->mem_errors++;
			continue;
		}
		uint64_t len = dump->length ? dump->length : (uint64_t)fsize - dump->offset;
		if (len > (uint64_t)fsize - dump->offset)
			len = (uint64_t)fsize - dump->offset;
		ocsd_file_mem_region_t region;
		region.file_offset = (size_t)dump->offset;
		region.start_address = dump->address;
		region.region_size = (size_t)len;
		if (ocsd_dt_add_binfile_region_mem_acc(tree, &region, 1, OCSD_MEM_SPACE_ANY, dump->path) != OCSD_OK)
			out->mem_errors++;
	}
}

/*
 * Decode source `src` of `snap` with OpenCSD; the elements land in *out
 * (which the caller zeroes first). Returns 0, or -1 if OpenCSD refused the
 * configuration or the trace buffer cannot be read.
 */
static inline int ocsd_decode_source(const csd_snapshot *snap, const struct csd_snapshot_source *src,
				     struct ocsd_decode *out)
{
	if (src->buffer < 0 || (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM))
		return -1;
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, (size_t)src->buffer);
	if (!buf)
		return -1;
	dcd_tree_handle_t tree = ocsd_feed_tree(buf->frame_format);
	if (!tree)
		return -1;
	unsigned char csid = 0;
	const ocsd_err_t err = ocsd_feed_add_decoder(tree, &src->config, OCSD_CREATE_FLG_FULL_DECODER, &csid);
	if (err != OCSD_OK || ocsd_dt_set_gen_elem_outfn(tree, ocsd_decode_elem_cb, out) != OCSD_OK) {
		ocsd_destroy_dcd_tree(tree);
		return -1;
	}
	ocsd_decode_add_memory(tree, snap, src, out);

	FILE *f = fopen(buf->path, "rb");
	if (!f) {
		ocsd_destroy_dcd_tree(tree);
		return -1;
	}
	static uint8_t chunk[1 << 16];
	uint64_t index = 0;
	size_t got;
	int rc = OCSD_FEED_OK;
	while (rc == OCSD_FEED_OK && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		struct ocsd_feed_fatal fatal;
		rc = ocsd_feed(tree, index, chunk, got, &fatal);
		if (rc == OCSD_FEED_FATAL) {
			/* OpenCSD gives up on this buffer; elements so far stand. */
			out->fatal = 1;
			out->fatal_err = fatal.err;
			out->fatal_index = fatal.index;
		}
		index += got;
	}
	fclose(f);
	ocsd_dt_process_data(tree, OCSD_OP_EOT, 0, 0, NULL, NULL);
	ocsd_destroy_dcd_tree(tree);
	return 0;
}

#endif
