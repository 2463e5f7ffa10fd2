/*
 * csdec_bench.c - libcsdec's side of `make bench`: decode every ETMv3 / PTM
 * source of a snapshot in one pass over each trace buffer, as an
 * application would, and count what comes out without printing it.
 *
 *   csdec_bench flow DIR        instruction-flow decode, range records
 *   csdec_bench flow-insn DIR   instruction-flow decode, one record per instruction
 *   csdec_bench packets DIR     frame demultiplexer and packet decoders only
 *   csdec_bench frames DIR      frame demultiplexer only (items: data pieces)
 *
 * An optional third argument, PASSES, decodes the snapshot that many times
 * over (new decoders each pass) and reports one pass: the bytes, counts and
 * the mean time of a pass. make bench uses it so that a csdec run lasts
 * about as long as the OpenCSD run beside it, and both average the host's
 * slow and fast spells over a like span (bench_run.c).
 *
 * Prints one RESULT line (bench_common.h).
 */
#include "bench_common.h"
#include "csdec_internal.h"

#define MAX_ID 0x70
#define BRIEF_CAP 256

enum mode { MODE_FLOW, MODE_FLOW_INSN, MODE_PACKETS, MODE_FRAMES };

struct slot {
	csd_flow_decoder *flow;
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
	csd_image *image;
};

static struct bench_result res;
static int frames_only; /* MODE_FRAMES */

static void drain(struct slot *s)
{
	if (s->flow) {
		const struct csd_record *r;
		int n;
		while ((n = csd_flow_next_batch(s->flow, &r)) > 0) {
			res.items += (uint64_t)n;
			for (int i = 0; i < n; i++) {
				if (r[i].type == CSD_REC_RANGE)
					res.insns += r[i].count;
				else if (r[i].type == CSD_REC_INSN)
					res.insns++;
				else if (r[i].type == CSD_REC_ERROR)
					res.errors++;
			}
		}
	} else {
		/* Packets in brief where they allow it, the rest one by one.
		 * The atoms are added up so that every packet's fields are
		 * read, as a consumer would. */
		struct csd_pkt_brief br[BRIEF_CAP];
		struct csd_packet p;
		uint64_t base;
		for (;;) {
			int n = s->etm3 ? csd_etm3_pkt_next_brief(s->etm3, br, BRIEF_CAP, &base)
					: csd_ptm_pkt_next_brief(s->ptm, br, BRIEF_CAP, &base);
			if (n > 0) {
				res.items += (uint64_t)n;
				/* (Four at a time: the loop's own count, compare
				 * and branch were half of its instructions.) */
				uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
				int i = 0;
				for (; i + 4 <= n; i += 4) {
					a0 += br[i].num_atoms;
					a1 += br[i + 1].num_atoms;
					a2 += br[i + 2].num_atoms;
					a3 += br[i + 3].num_atoms;
				}
				for (; i < n; i++)
					a0 += br[i].num_atoms;
				res.atoms += a0 + a1 + a2 + a3;
				/* Fewer than asked for: the run was cut by a packet
				 * of another kind (or the end of the bytes fed),
				 * which the next call would only say; straight to
				 * the one-by-one call (mixing gives the same
				 * packets either way). */
				if (n == BRIEF_CAP)
					continue;
			}
			if ((s->etm3 ? csd_etm3_pkt_next(s->etm3, &p) : csd_ptm_pkt_next(s->ptm, &p)) != 0)
				break;
			res.items++;
			res.atoms += p.atoms.num;
			res.errors += p.type == CSD_PKT_ERROR;
		}
	}
}

static int feed(struct slot *s, const struct csd_bytes *b)
{
	if (s->flow)
		return csd_flow_feed(s->flow, b);
	return s->etm3 ? csd_etm3_pkt_feed(s->etm3, b) : csd_ptm_pkt_feed(s->ptm, b);
}

static void finish(struct slot *s)
{
	if (s->flow)
		csd_flow_finish(s->flow);
	else if (s->etm3)
		csd_etm3_pkt_finish(s->etm3);
	else
		csd_ptm_pkt_finish(s->ptm);
}

static void drain_frames(csd_frame_decoder *fd, struct slot **by_id)
{
	struct csd_frame_out fo;
	while (csd_frame_next(fd, &fo) == 0) {
		if (fo.event != CSD_FRAME_DATA) {
			res.errors += fo.event == CSD_FRAME_ERROR;
			continue;
		}
		struct slot *s = fo.bytes.id < MAX_ID ? by_id[fo.bytes.id] : NULL;
		if (s && frames_only) {
			res.items++;
			continue;
		}
		if (s && feed(s, &fo.bytes) == 0)
			drain(s);
	}
}

static uint64_t image_bytes(const csd_image *img)
{
	uint64_t total = 0;
	for (size_t i = 0; i < csd_image_num_sections(img); i++) {
		uint64_t addr, size;
		const uint8_t *data;
		if (csd_image_section(img, i, &addr, &size, &data) == 0)
			total += size;
	}
	return total;
}

/* The timed part: a function of its own, so that `make bench-instr`
 * counts its instructions alone (valgrind --toggle-collect). Returns the
 * bytes decoded. */
static __attribute__((noinline)) uint64_t bench_decode_loop(csd_frame_decoder *fd, struct bench_reader *rd,
							    struct slot **by_id, struct slot *slots, size_t nslots)
{
	const uint8_t *chunk;
	uint64_t off = 0;
	size_t got;
	while ((got = bench_read(rd, &chunk)) > 0) {
		csd_frame_feed(fd, chunk, got, off);
		drain_frames(fd, by_id);
		off += got;
	}
	csd_frame_finish(fd);
	drain_frames(fd, by_id);
	for (size_t i = 0; i < nslots; i++) {
		finish(&slots[i]);
		drain(&slots[i]);
	}
	return off;
}

static void decode_buffer(const csd_snapshot *snap, size_t b, enum mode mode)
{
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
	struct slot slots[MAX_ID];
	struct slot *by_id[MAX_ID];
	size_t nslots = 0;
	uint8_t raw_id = 0;
	uint64_t held = 0;

	memset(by_id, 0, sizeof(by_id));
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
		if (!bench_source_wanted(src, b) || by_id[src->config.trace_id])
			continue;
		struct slot *s = &slots[nslots++];
		memset(s, 0, sizeof(*s));
		if (mode == MODE_PACKETS || mode == MODE_FRAMES) {
			if (src->config.protocol == CSD_PROTO_ETM3)
				s->etm3 = csd_etm3_pkt_new(&src->config);
			else
				s->ptm = csd_ptm_pkt_new(&src->config);
		} else {
			/* One image per source, as the csdec tool does. */
			s->image = csd_image_new();
			if (!s->image || csd_snapshot_load_image(snap, src->core_name, s->image) < 0) {
				fprintf(stderr, "%s: cannot load the memory image\n", src->name);
				exit(2);
			}
			held += image_bytes(s->image);
			struct csd_flow_config fc;
			memset(&fc, 0, sizeof(fc));
			fc.size = sizeof(fc);
			fc.trace = &src->config;
			fc.image = s->image;
			fc.flags = mode == MODE_FLOW_INSN ? CSD_FLOW_INSN : 0;
			s->flow = csd_flow_new(&fc);
		}
		if (!s->flow && !s->etm3 && !s->ptm) {
			fprintf(stderr, "%s: cannot create a decoder\n", src->name);
			exit(2);
		}
		by_id[src->config.trace_id] = s;
		raw_id = src->config.trace_id;
	}
	if (nslots == 0)
		return;
	if (held > res.image_bytes)
		res.image_bytes = held; /* buffers are decoded one after another */

	struct csd_frame_config frc = { .size = sizeof(frc), .format = buf->frame_format, .raw_id = raw_id,
					 .flags = CSD_FRAME_BY_ID };
	csd_frame_decoder *fd = csd_frame_new(&frc);
	if (!fd) {
		fprintf(stderr, "cannot create the frame decoder\n");
		exit(2);
	}
	struct bench_reader rd;
	bench_open_buffer(buf, &rd);
	double t0 = bench_now();
	res.bytes += bench_decode_loop(fd, &rd, by_id, slots, nslots);
	res.seconds += bench_now() - t0;
	bench_note_huge(&res);
	bench_close_buffer(&rd);
	csd_frame_free(fd);
	for (size_t i = 0; i < nslots; i++) {
		csd_flow_free(slots[i].flow);
		csd_etm3_pkt_free(slots[i].etm3);
		csd_ptm_pkt_free(slots[i].ptm);
		csd_image_free(slots[i].image);
	}
}

int main(int argc, char **argv)
{
	enum mode mode;
	const int passes = argc == 4 ? atoi(argv[3]) : 1;
	if ((argc != 3 && argc != 4) || passes < 1 || passes > 1000) {
		fprintf(stderr, "usage: csdec_bench flow|flow-insn|packets|frames SNAPSHOT_DIR [PASSES]\n");
		return 2;
	}
	if (strcmp(argv[1], "flow") == 0)
		mode = MODE_FLOW;
	else if (strcmp(argv[1], "flow-insn") == 0)
		mode = MODE_FLOW_INSN;
	else if (strcmp(argv[1], "packets") == 0)
		mode = MODE_PACKETS;
	else if (strcmp(argv[1], "frames") == 0)
		mode = MODE_FRAMES;
	else {
		fprintf(stderr, "csdec_bench: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	frames_only = mode == MODE_FRAMES;
	csd_snapshot *snap = bench_open_snapshot(argv[2]);
	for (int k = 0; k < passes; k++)
		for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++)
			decode_buffer(snap, b, mode);
	csd_snapshot_free(snap);
	/* One pass (image_bytes is already the largest a pass held). */
	res.bytes /= (uint64_t)passes;
	res.insns /= (uint64_t)passes;
	res.items /= (uint64_t)passes;
	res.errors /= (uint64_t)passes;
	res.atoms /= (uint64_t)passes;
	res.seconds /= passes;
	bench_print_result("csdec", argv[1], &res);
	return 0;
}
