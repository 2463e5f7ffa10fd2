/*
 * ocsd_bench.c - OpenCSD's side of `make bench` (Debian's libopencsd, C
 * API), set up as fast and as fairly as its API allows:
 *
 *   - one decode tree per trace buffer holding every ETMv3 / PTM source of
 *     it, so the buffer is read and deformatted once, as csdec does;
 *   - full decoders (OCSD_CREATE_FLG_FULL_DECODER) whose code memory is the
 *     snapshot's dumps, read into memory before the clock starts and given
 *     as buffer accessors (no file reads while decoding);
 *   - a generic-element callback that only adds up num_instr_range of
 *     OCSD_GEN_TRC_ELEM_INSTR_RANGE elements.
 *
 *   ocsd_bench flow DIR      full decode
 *   ocsd_bench packets DIR   packet processors only (OCSD_CREATE_FLG_PACKET_PROC),
 *                            a packet sink that counts packets and adds up atoms
 *
 * Prints one RESULT line (bench_common.h).
 */
#include "bench_common.h" /* first: it sets _DEFAULT_SOURCE */

#include <strings.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "../tests/ocsd_feed.h"

#define MAX_DUMPS 64

static struct bench_result res;

/* Dumps loaded into memory, each given to the tree once. */
struct loaded_dump {
	const struct csd_snapshot_dump *dump;
	uint8_t *data;
	uint32_t len;
};
static struct loaded_dump dumps[MAX_DUMPS];
static size_t ndumps;

static ocsd_datapath_resp_t elem_cb(const void *ctx, const ocsd_trc_index_t index, const uint8_t chan_id,
				    const ocsd_generic_trace_elem *e)
{
	(void)ctx;
	(void)index;
	(void)chan_id;
	res.items++;
	if (e->elem_type == OCSD_GEN_TRC_ELEM_INSTR_RANGE)
		res.insns += e->num_instr_range;
	return OCSD_RESP_CONT;
}

/* The packet sink counts packets and adds up their atoms, as csdec_bench
 * does, so that both read every packet (ctx: the source's protocol). */
static const int proto_etm3 = CSD_PROTO_ETM3, proto_ptm = CSD_PROTO_PTM;

static ocsd_datapath_resp_t packet_cb(const void *ctx, const ocsd_datapath_op_t op, const ocsd_trc_index_t index,
				      const void *pkt)
{
	(void)index;
	if (op == OCSD_OP_DATA) {
		res.items++;
		res.atoms += *(const int *)ctx == CSD_PROTO_ETM3 ? ((const ocsd_etmv3_pkt *)pkt)->atom.num
								 : ((const ocsd_ptm_pkt *)pkt)->atom.num;
	}
	return OCSD_RESP_CONT;
}

static int same_dump(const struct csd_snapshot_dump *a, const struct csd_snapshot_dump *b)
{
	return a->address == b->address && a->offset == b->offset && a->length == b->length &&
	       strcmp(a->path, b->path) == 0;
}

/* Read dump d into memory and give it to the tree, unless an identical
 * dump (other cores of the same system) was given already. */
static void add_dump(dcd_tree_handle_t tree, const struct csd_snapshot_dump *d)
{
	for (size_t i = 0; i < ndumps; i++)
		if (same_dump(dumps[i].dump, d))
			return;
	if (ndumps == MAX_DUMPS) {
		fprintf(stderr, "too many memory dumps\n");
		exit(2);
	}
	FILE *f = fopen(d->path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		fprintf(stderr, "%s: cannot read\n", d->path);
		exit(2);
	}
	long size = ftell(f);
	if (size < 0 || (uint64_t)size <= d->offset) {
		fprintf(stderr, "%s: shorter than its dump offset\n", d->path);
		exit(2);
	}
	uint64_t len = d->length ? d->length : (uint64_t)size - d->offset;
	if (len > (uint64_t)size - d->offset)
		len = (uint64_t)size - d->offset;
	if (len > UINT32_MAX) {
		fprintf(stderr, "%s: dump too large\n", d->path);
		exit(2);
	}
	uint8_t *data = malloc(len);
	if (!data || fseek(f, (long)d->offset, SEEK_SET) != 0 || fread(data, 1, len, f) != len) {
		fprintf(stderr, "%s: cannot read\n", d->path);
		exit(2);
	}
	fclose(f);
	if (ocsd_dt_add_buffer_mem_acc(tree, d->address, OCSD_MEM_SPACE_ANY, data, (uint32_t)len) != OCSD_OK) {
		/* overlapping dumps of different cores: OpenCSD keeps the first */
		fprintf(stderr, "%s: OpenCSD refused the dump at 0x%" PRIx64 "\n", d->path, d->address);
		free(data);
		return;
	}
	dumps[ndumps].dump = d;
	dumps[ndumps].data = data;
	dumps[ndumps].len = (uint32_t)len;
	ndumps++;
}

static int add_source(dcd_tree_handle_t tree, const struct csd_trace_config *cfg, int full)
{
	const uint32_t flags = full ? OCSD_CREATE_FLG_FULL_DECODER : OCSD_CREATE_FLG_PACKET_PROC;
	unsigned char csid = 0;
	const ocsd_err_t err = ocsd_feed_add_decoder(tree, cfg, (int)flags, &csid);
	if (err != OCSD_OK)
		return -1;
	if (!full && ocsd_dt_attach_packet_callback(tree, csid, OCSD_C_API_CB_PKT_SINK, packet_cb,
						  cfg->protocol == CSD_PROTO_ETM3 ? &proto_etm3 : &proto_ptm) != OCSD_OK)
		return -1;
	return 0;
}

/* The timed part: a function of its own, so that `make bench-instr`
 * counts its instructions alone (valgrind --toggle-collect). Returns the
 * bytes given to OpenCSD. */
static __attribute__((noinline)) uint64_t bench_decode_loop(dcd_tree_handle_t tree, struct bench_reader *rd)
{
	const uint8_t *chunk;
	uint64_t index = 0;
	size_t got;
	int rc = OCSD_FEED_OK;
	while (rc == OCSD_FEED_OK && (got = bench_read(rd, &chunk)) > 0) {
		struct ocsd_feed_fatal fatal;
		rc = ocsd_feed(tree, index, chunk, got, &fatal);
		if (rc == OCSD_FEED_FATAL)
			fprintf(stderr, "OpenCSD: fatal at index %" PRIu64 " (ID 0x%x): %s\n", (uint64_t)fatal.index,
				fatal.chan, fatal.msg);
		if (rc != OCSD_FEED_OK)
			res.errors++;
		index += got;
	}
	ocsd_dt_process_data(tree, OCSD_OP_EOT, 0, 0, NULL, NULL);
	return index;
}

static void decode_buffer(const csd_snapshot *snap, size_t b, int full)
{
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
	dcd_tree_handle_t tree = ocsd_feed_tree(buf->frame_format);
	if (!tree) {
		fprintf(stderr, "OpenCSD: cannot create a decode tree\n");
		exit(2);
	}
	int nsrc = 0;
	uint8_t seen[0x70] = { 0 };
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
		if (!bench_source_wanted(src, b) || seen[src->config.trace_id])
			continue;
		seen[src->config.trace_id] = 1;
		if (add_source(tree, &src->config, full) < 0) {
			fprintf(stderr, "OpenCSD refused source %s\n", src->name);
			exit(2);
		}
		nsrc++;
		if (!full)
			continue;
		for (size_t k = 0; k < csd_snapshot_num_dumps(snap); k++) {
			const struct csd_snapshot_dump *d = csd_snapshot_dump(snap, k);
			if (!src->core_name || strcasecmp(d->device, src->core_name) == 0)
				add_dump(tree, d);
		}
	}
	if (nsrc == 0) {
		ocsd_destroy_dcd_tree(tree);
		return;
	}
	/* after the decoders: OpenCSD attaches the callback to those that exist */
	if (full && ocsd_dt_set_gen_elem_outfn(tree, elem_cb, NULL) != OCSD_OK) {
		fprintf(stderr, "OpenCSD: cannot set the element callback\n");
		exit(2);
	}
	uint64_t held = 0;
	for (size_t i = 0; i < ndumps; i++)
		held += dumps[i].len;
	if (held > res.image_bytes)
		res.image_bytes = held; /* buffers are decoded one after another */
	struct bench_reader rd;
	bench_open_buffer(buf, &rd);
	double t0 = bench_now();
	res.bytes += bench_decode_loop(tree, &rd);
	res.seconds += bench_now() - t0;
	bench_note_huge(&res);
	bench_close_buffer(&rd);
	ocsd_destroy_dcd_tree(tree);
	for (size_t i = 0; i < ndumps; i++)
		free(dumps[i].data);
	ndumps = 0;
}

int main(int argc, char **argv)
{
	int full;
	if (argc != 3) {
		fprintf(stderr, "usage: ocsd_bench flow|packets SNAPSHOT_DIR\n");
		return 2;
	}
	if (strcmp(argv[1], "flow") == 0)
		full = 1;
	else if (strcmp(argv[1], "packets") == 0)
		full = 0;
	else {
		fprintf(stderr, "ocsd_bench: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	csd_snapshot *snap = bench_open_snapshot(argv[2]);
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++)
		decode_buffer(snap, b, full);
	csd_snapshot_free(snap);
	bench_print_result("opencsd", argv[1], &res);
	return 0;
}
