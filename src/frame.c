/* frame.c - CoreSight trace formatter demultiplexer (csd_frame_*).
 *
 * A formatter frame is 16 bytes. Bytes 0, 2, ..., 14 are either data (bit 0
 * clear; the real bit 0 is the matching bit of the auxiliary byte 15) or an
 * ID change (bit 0 set, new ID in bits 7:1). Bytes 1, 3, ..., 13 are always
 * data. The auxiliary bit of an ID byte says whether the data byte right
 * after it still belongs to the old ID (1) or already to the new one (0). An
 * ID in byte 14 takes effect with the next frame.
 *
 * Trace IDs: 0x01-0x6F are trace sources and delivered; 0x00 is null trace
 * (padding, discarded); 0x7D marks a trigger and carries no source trace
 * (discarded); every other ID from 0x70 up is reserved and reported as a
 * CSD_FRAME_ERROR, its data discarded until the next ID byte. Data seen before
 * the first ID byte of the capture (ETB wrap-around) cannot be attributed to
 * a source and is discarded too, as is data after a resynchronisation until
 * the next ID byte.
 *
 * Port format: 0xFF never appears in an ID position of a valid frame (ID
 * 0x7F is never assigned), so the byte 0xFF in an even position always means
 * a synchronisation packet or lost alignment. FSYNC (FF FF FF 7F) is searched
 * for at every byte, whatever the current alignment, so a capture that
 * dropped a byte realigns at the next FSYNC. Periodic FSYNCs between frames
 * keep the current ID; an FSYNC that cuts a frame or does not line up with
 * the frame grid drops the partial frame (error) and forgets the ID. A 0xFF
 * in an ID position that is not part of a sync is reported once; frames
 * are then looked for again. Where no FSYNC comes within a window of bytes
 * (at the start, or after alignment was lost), the frame alignment is
 * inferred from the bytes themselves (see "frame alignment by inference");
 * bytes skipped before a first FSYNC that came in time are reported as one
 * error at their first offset. A run of consecutive FSYNCs gives one
 * CSD_FRAME_SYNC, at the first.
 *
 * Aligned format: a frame consisting of four FSYNCs (ETR buffers written by
 * Linux perf separate blocks this way) is reported as CSD_FRAME_SYNC and the
 * current ID is forgotten, because the trace on either side is not
 * continuous.
 *
 * Output is staged in fixed buffers: decoded bytes with their capture
 * offsets, and a small queue of events; the port format's window holds
 * 64 KiB at most; memory does not depend on input size.
 */
#include <stdlib.h>
#include <string.h>

#include "csdec.h"
#include "zeroed.h"

#define FRAME_SIZE 16
#define OUT_CAP 8192            /* staged data bytes */
#define ITEM_CAP 64             /* staged events */
/* Events one production step can add at most: a frame's 8 ID bytes can each
 * add an error and a data run (17 with the first run), plus the events of
 * one FSYNC or alignment loss (3). */
#define ITEM_PER_FRAME 24
#define PORT_STEP 4             /* port bytes handled per room check */

/* Port format without FSYNC (see "frame alignment by inference"). */
#define HUNT_FIRST 4096         /* window size of the first evaluation */
#define HUNT_MAX 65536          /* largest window: the last evaluation */
#define HUNT_CAP (HUNT_MAX + 16) /* (+ bytes after a loss of alignment in a step) */
#define HUNT_MIN_CLEAN 1024     /* bytes an alignment must decode without fault */

#define ID_NONE 0xFF            /* current ID not known: data is discarded */
#define ID_TRIGGER 0x7D

struct frame_item {
	uint8_t event;          /* enum csd_frame_event */
	uint8_t id;
	uint32_t start, len;    /* CSD_FRAME_DATA: range of out[] */
	uint64_t offset;
	const char *reason;
};

/* CSD_FRAME_BY_ID: a trace ID's bytes of this round. A buffer at or below
 * CSD_FRAME_BATCH takes any frame (at most 15 bytes), written in 16-byte
 * copies that may start at its last byte. */
#define ID_COUNT 0x70
#define BATCH_CAP (CSD_FRAME_BATCH + 2 * FRAME_SIZE)
struct id_batch {
	uint32_t len;
	uint64_t off[BATCH_CAP];
	uint8_t data[BATCH_CAP];
};

struct csd_frame_decoder {
	uint32_t format;
	uint8_t raw_id;

	/* Current feed. */
	const uint8_t *in;
	size_t in_size, in_pos;
	uint64_t in_base;
	int finished;
	int end_reported;       /* end-of-capture checks done */

	/* Frame being assembled (split across feeds, or port format). */
	uint8_t frame[FRAME_SIZE];
	uint64_t frame_off[FRAME_SIZE];
	unsigned fill;
	uint8_t cur_id;         /* ID in effect for the next data byte */
	int in_sync_run;        /* last thing seen was an FSYNC (report runs once) */

	/* Port format. */
	int synced;             /* frame grid known */
	int ever_synced;
	unsigned ff_run;        /* consecutive 0xFF bytes just seen (max 3) */
	uint64_t ff_off[3];     /* offsets of the last three 0xFF bytes, oldest first */
	int have_even;          /* first byte of a half-word is held */
	uint8_t even;
	uint64_t even_off;
	int ffff_held;          /* a FF FF half-word: FSYNC start or garbage */
	uint64_t ffff_off;
	uint64_t skipped;       /* bytes seen before the first FSYNC */
	uint64_t skip_off;

	/* Port format, frames found without FSYNC: the window of bytes kept
	 * while not synchronised (hunt->buf[hunt_start, hunt_len), the byte
	 * at index i is at capture offset hunt_base + i), the window size of
	 * its next evaluation, whether this search reported its error; the
	 * window bytes still to be run through the state machine once the
	 * alignment is chosen (replay_pos to replay_end), and the FSYNC
	 * detector's state after the window's last byte, restored after
	 * that. */
	struct port_hunt *hunt;
	int hunt_disabled;      /* no memory for the window: skip to an FSYNC */
	size_t hunt_start, hunt_len;
	uint64_t hunt_base;
	size_t hunt_next;
	int hunt_reported;
	size_t replay_pos, replay_end;
	unsigned saved_ff_run;
	uint64_t saved_ff_off[3];

	/* CSD_FRAME_BY_ID: one buffer per trace ID (allocated when the ID
	 * first has data), the IDs with data this round in first-use order,
	 * and the next of them to deliver. */
	int by_id;
	struct id_batch *batch[ID_COUNT];
	uint8_t bids[ID_COUNT];
	/* This round's buffer of each ID byte value (f[k] >> 1), NULL until
	 * the round lists it in bids: an ID change looks only here. */
	struct id_batch *live[128];
	unsigned n_bids, bid_head;
	int batch_full;         /* a buffer cannot take another frame */

	/* Staged output. */
	uint8_t out[OUT_CAP + FRAME_SIZE];      /* spare: 16-byte copies at the end */
	uint64_t out_off[OUT_CAP + FRAME_SIZE];
	size_t out_len;
	struct frame_item items[ITEM_CAP];
	unsigned n_items, head;
};

csd_frame_decoder *csd_frame_new(const struct csd_frame_config *cfg)
{
	struct csd_frame_config c;

	if (!cfg || cfg->size < sizeof(cfg->size))
		return NULL;
	memset(&c, 0, sizeof(c));
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if (c.format != CSD_FRAME_RAW && c.format != CSD_FRAME_ALIGNED && c.format != CSD_FRAME_PORT)
		return NULL;
	/* Fresh zero pages (zeroed.h): the staging buffers are most of the
	 * decoder, and a capture demultiplexed by ID never touches them. */
	csd_frame_decoder *dec = csdi_zeroed_new(sizeof(*dec), 0);
	if (!dec)
		return NULL;
	dec->format = c.format;
	dec->raw_id = c.raw_id;
	dec->by_id = (c.flags & CSD_FRAME_BY_ID) && c.format != CSD_FRAME_RAW;
	dec->cur_id = ID_NONE;
	dec->hunt_next = HUNT_FIRST;
	return dec;
}

void csd_frame_free(csd_frame_decoder *dec)
{
	if (!dec)
		return;
	for (unsigned id = 0; id < ID_COUNT; id++)
		csdi_zeroed_free(dec->batch[id], sizeof(*dec->batch[id]));
	free(dec->hunt);
	csdi_zeroed_free(dec, sizeof(*dec));
}

int csd_frame_feed(csd_frame_decoder *dec, const uint8_t *data, size_t size, uint64_t offset)
{
	if (!dec || (size && !data) || dec->finished)
		return CSD_EINVAL;
	if (dec->in_pos < dec->in_size || dec->head < dec->n_items || dec->bid_head < dec->n_bids)
		return CSD_EINVAL;
	dec->in = data;
	dec->in_size = size;
	dec->in_pos = 0;
	dec->in_base = offset;
	return CSD_OK;
}

int csd_frame_finish(csd_frame_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	dec->finished = 1;
	return CSD_OK;
}

/* ---- staging ---------------------------------------------------------- */

static void push_event(csd_frame_decoder *dec, uint8_t event, uint64_t offset, const char *reason)
{
	struct frame_item *it = &dec->items[dec->n_items++];

	it->event = event;
	it->id = 0;
	it->start = it->len = 0;
	it->offset = offset;
	it->reason = reason;
}

/* The data item that bytes of source `id` starting at capture offset `off`
 * go to: the last item if it is that ID's data, else a new one. NULL when
 * the ID's data is discarded (null, trigger, reserved or unknown ID). */
static struct frame_item *data_item(csd_frame_decoder *dec, uint8_t id, uint64_t off)
{
	if (id == 0 || id >= 0x70)
		return NULL;
	struct frame_item *last = dec->n_items ? &dec->items[dec->n_items - 1] : NULL;
	if (last && last->event == CSD_FRAME_DATA && last->id == id)
		return last;
	last = &dec->items[dec->n_items++];
	last->event = CSD_FRAME_DATA;
	last->id = id;
	last->start = (uint32_t)dec->out_len;
	last->len = 0;
	last->offset = off;
	last->reason = NULL;
	return last;
}

/* The ID byte at `off` names `id`; returns the ID now in effect. */
static uint8_t switch_id(csd_frame_decoder *dec, uint8_t id, uint64_t off)
{
	if (id < 0x70 || id == ID_TRIGGER)
		return id;
	push_event(dec, CSD_FRAME_ERROR, off, "reserved trace ID in formatter frame");
	return ID_NONE;
}

/* Capture offset of frame byte k: o[k], or base + k when the frame lies
 * contiguously in the input (o == NULL). */
static inline uint64_t byte_off(const uint64_t *o, uint64_t base, unsigned k)
{
	return o ? o[k] : base + k;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FRAME_WORDS 1
/* Bits 0-3 of x moved to bits 0, 16, 32, 48: the real bit 0 of the data
 * bytes at even positions 0, 2, 4, 6 of an 8-byte half of a frame. (A
 * table: the compiler made the multiply nine shifts and adds.) */
#define SPREAD(x) ((uint64_t)((x) & 1) | (uint64_t)((x) >> 1 & 1) << 16 | (uint64_t)((x) >> 2 & 1) << 32 | \
		   (uint64_t)((x) >> 3 & 1) << 48)
static const uint64_t spread_tab[16] = {
	SPREAD(0),  SPREAD(1),  SPREAD(2),  SPREAD(3),  SPREAD(4),  SPREAD(5),  SPREAD(6),  SPREAD(7),
	SPREAD(8),  SPREAD(9),  SPREAD(10), SPREAD(11), SPREAD(12), SPREAD(13), SPREAD(14), SPREAD(15),
};
#undef SPREAD
static inline uint64_t spread_aux(unsigned x)
{
	return spread_tab[x & 0xF];
}
#endif

/* ---- CSD_FRAME_BY_ID -------------------------------------------------- */

/* The buffer that ID `id`'s bytes go to this round; NULL when its data is
 * discarded (null, trigger, reserved or unknown ID) or memory is short
 * (reported as an error). */
static struct id_batch *batch_new_round(csd_frame_decoder *dec, uint8_t id, uint64_t off)
{
	struct id_batch *b = dec->batch[id];
	if (!b) {
		b = dec->batch[id] = csdi_zeroed_new(sizeof(*b), 0);
		if (!b) {
			push_event(dec, CSD_FRAME_ERROR, off, "out of memory: trace ID's data dropped");
			return NULL;
		}
	}
	b->len = 0;
	dec->bids[dec->n_bids++] = id;
	dec->live[id] = b;
	return b;
}

static inline struct id_batch *batch_of(csd_frame_decoder *dec, uint8_t id, uint64_t off)
{
	if (id == 0 || id >= ID_COUNT)
		return NULL;
	struct id_batch *b = dec->live[id];
	return b ? b : batch_new_round(dec, id, off);
}

/* dst[j] = x + j for j < 16, in vector stores where the compiler has
 * them (a scalar loop was a third of the demultiplexer's instructions). */
static inline void store_offsets16(uint64_t *dst, uint64_t x)
{
#if defined(__GNUC__)
	typedef uint64_t v2u64 __attribute__((vector_size(16)));
	/* A chain of adds of {2, 2} held in a register: the compiler's
	 * own form loaded a constant for each pair. Written out: as a
	 * loop GCC kept it a loop (demultiplexer 21.9 -> 27.8 M Ir). */
	v2u64 v = { x, x + 1 }, two = { 2, 2 };
#if defined(__x86_64__) || defined(__i386__)
	__asm__("" : "+x"(two));        /* (no constant folding back) */
#endif
	memcpy(dst, &v, 16);
	v += two;
	memcpy(dst + 2, &v, 16);
	v += two;
	memcpy(dst + 4, &v, 16);
	v += two;
	memcpy(dst + 6, &v, 16);
	v += two;
	memcpy(dst + 8, &v, 16);
	v += two;
	memcpy(dst + 10, &v, 16);
	v += two;
	memcpy(dst + 12, &v, 16);
	v += two;
	memcpy(dst + 14, &v, 16);
#else
	for (unsigned j = 0; j < 16; j++)
		dst[j] = x + j;
#endif
}

/* The 16 bytes of a frame with every even data byte completed by its
 * auxiliary bit (ID bytes are skipped, so their bit 0 does not matter).
 * As one 128-bit value where the compiler has it: a stretch starting at
 * byte k is then a shift in registers; through memory, each 16-byte copy
 * would read back the two 8-byte stores just made, which stalls. */
#if defined(FRAME_WORDS) && defined(__SIZEOF_INT128__)
typedef unsigned __int128 frame_bytes;
static inline void frame_bytes_copy(uint8_t *dst, const frame_bytes *v, unsigned k)
{
	/* Two 8-byte stores from registers (a 16-byte one would go
	 * through the stack and read back two 8-byte halves: a stall). */
	const frame_bytes x = *v >> (8 * k);
	const uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
	memcpy(dst, &lo, 8);
	memcpy(dst + 8, &hi, 8);
}
#else
typedef struct {
	uint8_t b[32];  /* 16 bytes, zero after them: 16-byte copies from any k */
} frame_bytes;
static inline void frame_bytes_copy(uint8_t *dst, const frame_bytes *v, unsigned k)
{
	memcpy(dst, v->b + k, 16);
}
#endif

/* Frame bytes [k, k + n) (n <= 15) and their offsets to dst / dst_off,
 * in 16-byte copies (both have room for them). */
static inline void stretch_copy(uint8_t *dst, uint64_t *dst_off, const frame_bytes *v, unsigned k, unsigned n,
				const uint64_t *o, uint64_t base)
{
	frame_bytes_copy(dst, v, k);
	if (o)
		memcpy(dst_off, o + k, n * sizeof(*o));
	else
		store_offsets16(dst_off, base + k);
}

/* Frame f's ID bytes (bit i: byte 2i holds an ID) and, in *v, its 16
 * bytes with every even data byte completed by its auxiliary bit (ID
 * bytes are skipped, so their bit 0 does not matter). */
static inline __attribute__((always_inline)) unsigned frame_prepare(const uint8_t *f, frame_bytes *v)
{
	const unsigned aux = f[15];
	unsigned idmask = 0;
#ifdef FRAME_WORDS
	uint64_t lo, hi;
	memcpy(&lo, f, 8);
	memcpy(&hi, f + 8, 8);
	/* Bit 0 of bytes 0, 2, 4, 6 (bits 0, 16, 32, 48) to bits 48-51. */
	const uint64_t gather = 0x0001000200040008ull;
	idmask = (unsigned)(((lo & 0x0001000100010001ull) * gather) >> 48 & 0xF) |
		 (unsigned)(((hi & 0x0001000100010001ull) * gather) >> 48 & 0xF) << 4;
	lo |= spread_aux(aux);
	hi |= spread_aux(aux >> 4);
#ifdef __SIZEOF_INT128__
	*v = (frame_bytes)hi << 64 | lo;
#else
	memcpy(v->b, &lo, 8);
	memcpy(v->b + 8, &hi, 8);
	memset(v->b + 16, 0, 16);
#endif
#else
	memcpy(v->b, f, 16);
	memset(v->b + 16, 0, 16);
	for (unsigned i = 0; i < 8; i++) {
		idmask |= (unsigned)(f[2 * i] & 1) << i;
		v->b[2 * i] = (uint8_t)(f[2 * i] | ((aux >> i) & 1));
	}
#endif
	return idmask;
}

/* By ID: frame f (o == NULL: contiguous input at capture offset base;
 * prepared by frame_prepare: v, idmask) split into its IDs' buffers. *id
 * is the ID in effect and *cb its buffer (NULL: the data is discarded),
 * both updated; *full is set once a buffer is past CSD_FRAME_BATCH. In
 * pointers so that a loop over frames keeps them in registers (the stores
 * of bytes may alias any field of dec). */
static inline __attribute__((always_inline)) void split_by_id(csd_frame_decoder *dec, const uint8_t *f,
							       const frame_bytes *v, unsigned idmask, const uint64_t *o,
							       uint64_t base, uint8_t *id, struct id_batch **cb, int *full)
{
	const unsigned aux = f[15];
	struct id_batch *b = *cb;
	uint8_t cur = *id;
	unsigned start = 0;     /* first frame byte of the current stretch */
	while (idmask) {
		const unsigned i = (unsigned)__builtin_ctz(idmask);
		const unsigned k = 2 * i;
		idmask &= idmask - 1;
		if (k > start && b) {
			stretch_copy(b->data + b->len, b->off + b->len, v, start, k - start, o, base);
			b->len += k - start;
		}
		const uint8_t nid = f[k] >> 1;
		start = k + 1;
		if (nid == cur)
			continue;       /* (a delayed byte stays with the same ID) */
		/* An ID in byte 14 applies from the next frame. A delayed
		 * change leaves the next byte (odd: data as it is) to the old
		 * ID, stored alone, where a 16-byte copy would cost a frame's
		 * worth. */
		if (k < 14 && ((aux >> i) & 1)) {
			if (b) {
				const uint32_t len = b->len;
				b->data[len] = f[k + 1];
				b->off[len] = byte_off(o, base, k + 1);
				b->len = len + 1;
			}
			start = k + 2;
		}
		if (b)
			*full |= b->len > CSD_FRAME_BATCH;
		b = dec->live[nid];
		if (b) {
			cur = nid;
		} else {
			cur = switch_id(dec, nid, byte_off(o, base, k));
			b = batch_of(dec, cur, byte_off(o, base, k));
		}
	}
	/* Frames without ID bytes: all of their 15 bytes. */
	if (start < 15 && b) {
		stretch_copy(b->data + b->len, b->off + b->len, v, start, 15 - start, o, base);
		b->len += 15 - start;
	}
	if (b)
		*full |= b->len > CSD_FRAME_BATCH;
	*id = cur;
	*cb = b;
}

/* In capture order: frame bytes [k, k + n) of source `id` to the staged
 * output under item *it, made at the stretch's first byte (so that an ID
 * without data in this frame leaves no empty item; NULL until then, or
 * when the data is discarded). */
static inline __attribute__((always_inline)) void stage_stretch(csd_frame_decoder *dec, struct frame_item **it,
								 uint8_t id, const frame_bytes *v, unsigned k, unsigned n,
								 const uint64_t *o, uint64_t base)
{
	if (!*it)
		*it = data_item(dec, id, byte_off(o, base, k));
	if (!*it)
		return;
	stretch_copy(dec->out + dec->out_len, dec->out_off + dec->out_len, v, k, n, o, base);
	dec->out_len += n;
	(*it)->len += n;
}

/* The same for one byte c at frame byte k (a delayed ID change's): stored
 * alone, where a 16-byte copy would cost a frame's worth. */
static inline __attribute__((always_inline)) void stage_byte(csd_frame_decoder *dec, struct frame_item **it,
							      uint8_t id, uint8_t c, unsigned k, const uint64_t *o,
							      uint64_t base)
{
	if (!*it)
		*it = data_item(dec, id, byte_off(o, base, k));
	if (!*it)
		return;
	dec->out[dec->out_len] = c;
	dec->out_off[dec->out_len] = byte_off(o, base, k);
	dec->out_len++;
	(*it)->len++;
}

/* In capture order: one complete frame (o == NULL: contiguous input at
 * capture offset base) into the staged output, an item per stretch of one
 * ID. */
static void unpack(csd_frame_decoder *dec, const uint8_t *f, const uint64_t *o, uint64_t base)
{
	const unsigned aux = f[15];
	uint8_t id = dec->cur_id;
	frame_bytes v;
	unsigned idmask = frame_prepare(f, &v);
	struct frame_item *it = NULL;

	dec->in_sync_run = 0;
	unsigned start = 0;     /* first frame byte of the current stretch */
	while (idmask) {
		const unsigned i = (unsigned)__builtin_ctz(idmask);
		const unsigned k = 2 * i;
		idmask &= idmask - 1;
		if (k > start)
			stage_stretch(dec, &it, id, &v, start, k - start, o, base);
		const uint8_t nid = f[k] >> 1;
		/* An ID in byte 14 applies from the next frame. A delayed
		 * change leaves the next byte to the old ID. */
		const int delayed = k < 14 && nid != id && ((aux >> i) & 1);
		if (delayed)  /* (byte k + 1 is odd: data as it is) */
			stage_byte(dec, &it, id, f[k + 1], k + 1, o, base);
		id = switch_id(dec, nid, byte_off(o, base, k));
		it = NULL;
		start = delayed ? k + 2 : k + 1;
	}
	/* Most frames hold no ID byte: this is all of their 15 bytes. */
	if (start < 15)
		stage_stretch(dec, &it, id, &v, start, 15 - start, o, base);
	dec->cur_id = id;
}

/* By ID: one complete frame, the state in dec. */
static void unpack_by_id(csd_frame_decoder *dec, const uint8_t *f, const uint64_t *o, uint64_t base)
{
	frame_bytes v;
	const unsigned idmask = frame_prepare(f, &v);
	uint8_t id = dec->cur_id;
	struct id_batch *cb = batch_of(dec, id, byte_off(o, base, 0));
	int full = dec->batch_full;
	dec->in_sync_run = 0;
	split_by_id(dec, f, &v, idmask, o, base, &id, &cb, &full);
	dec->cur_id = id;
	dec->batch_full = full;
}

static inline void unpack_frame(csd_frame_decoder *dec, const uint8_t *f, const uint64_t *o, uint64_t base)
{
	if (dec->by_id)
		unpack_by_id(dec, f, o, base);
	else
		unpack(dec, f, o, base);
}

static int room(const csd_frame_decoder *dec)
{
	/* By ID: a round ends at a full buffer or at an event, so that the
	 * event follows the data before it. */
	if (dec->by_id)
		return !dec->batch_full && dec->n_items == 0;
	return dec->out_len + FRAME_SIZE <= OUT_CAP && dec->n_items + ITEM_PER_FRAME <= ITEM_CAP;
}

/* ---- aligned format --------------------------------------------------- */

static const uint8_t fsync_frame[FRAME_SIZE] = {
	0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F,
	0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F,
};

static void aligned_frame(csd_frame_decoder *dec, const uint8_t *f, const uint64_t *o, uint64_t base)
{
	if (f[0] == 0xFF && memcmp(f, fsync_frame, FRAME_SIZE) == 0) {
		if (!dec->in_sync_run)
			push_event(dec, CSD_FRAME_SYNC, byte_off(o, base, 0), NULL);
		dec->in_sync_run = 1;
		dec->cur_id = ID_NONE;
		return;
	}
	unpack_frame(dec, f, o, base);
}

/* By ID, whole frames in the input: one loop with the frame code inlined,
 * the ID, its buffer and the flags in locals (the stores of bytes may
 * alias any field of dec, so the compiler would reload fields after each
 * of them). */
static void produce_aligned_by_id(csd_frame_decoder *dec)
{
	const uint8_t *const in = dec->in;
	size_t pos = dec->in_pos;
	const size_t end = dec->in_size;
	uint8_t id = dec->cur_id;
	int sync_run = dec->in_sync_run;
	int full = dec->batch_full;
	/* The buffer of the current ID, looked up again only where the ID
	 * changed (cb_known 0). */
	struct id_batch *cb = NULL;
	int cb_known = 0;
	int go = !full && dec->n_items == 0;
	while (go && end - pos >= FRAME_SIZE) {
		const uint8_t *f = in + pos;
		const uint64_t base = dec->in_base + pos;
		pos += FRAME_SIZE;
		if (f[0] == 0xFF && memcmp(f, fsync_frame, FRAME_SIZE) == 0) {
			if (!sync_run)
				push_event(dec, CSD_FRAME_SYNC, base, NULL);
			sync_run = 1;
			id = ID_NONE;
			cb = NULL;
			cb_known = 1;
			go = dec->n_items == 0;
			continue;
		}
		sync_run = 0;
		if (!cb_known) {
			cb = batch_of(dec, id, base);
			cb_known = 1;
			go = dec->n_items == 0;  /* (0: out of memory, reported) */
		}
#ifdef FRAME_WORDS
		/* Half of TC2's frames hold no ID byte (bit 0 of every even
		 * byte clear): all 15 bytes go to the current ID, without the
		 * stretch bookkeeping. */
		uint64_t lo, hi;
		memcpy(&lo, f, 8);
		memcpy(&hi, f + 8, 8);
		if (!((lo | hi) & 0x0001000100010001ull)) {
			if (cb) {
				const unsigned aux = f[15];
				const uint32_t len = cb->len;
				lo |= spread_aux(aux);
				hi |= spread_aux(aux >> 4);
				memcpy(cb->data + len, &lo, 8);
				memcpy(cb->data + len + 8, &hi, 8);
				store_offsets16(cb->off + len, base);
				cb->len = len + 15;
				if (len + 15 > CSD_FRAME_BATCH) {
					full = 1;
					go = 0;
				}
			}
			continue;
		}
#endif
		frame_bytes v;
		const unsigned idmask = frame_prepare(f, &v);
		split_by_id(dec, f, &v, idmask, NULL, base, &id, &cb, &full);
		go = !full && dec->n_items == 0;
	}
	dec->in_pos = pos;
	dec->cur_id = id;
	dec->in_sync_run = sync_run;
	dec->batch_full = full;
}

static void produce_aligned(csd_frame_decoder *dec)
{
	if (dec->by_id && dec->fill == 0)
		produce_aligned_by_id(dec);
	while (dec->in_pos < dec->in_size && room(dec)) {
		size_t avail = dec->in_size - dec->in_pos;
		uint64_t base = dec->in_base + dec->in_pos;
		if (dec->fill == 0 && avail >= FRAME_SIZE) {
			aligned_frame(dec, dec->in + dec->in_pos, NULL, base);
			dec->in_pos += FRAME_SIZE;
			continue;
		}
		size_t take = FRAME_SIZE - dec->fill;
		if (take > avail)
			take = avail;
		memcpy(dec->frame + dec->fill, dec->in + dec->in_pos, take);
		for (size_t k = 0; k < take; k++)
			dec->frame_off[dec->fill + k] = base + k;
		dec->fill += (unsigned)take;
		dec->in_pos += take;
		if (dec->fill == FRAME_SIZE) {
			aligned_frame(dec, dec->frame, dec->frame_off, 0);
			dec->fill = 0;
		}
	}
}

/* ---- port format ------------------------------------------------------ */

/* The window of bytes kept while no frame alignment is known (see "frame
 * alignment by inference" below). */
struct port_hunt {
	uint8_t buf[HUNT_CAP];
	uint32_t hist[2][256];  /* a candidate's source bytes at even / odd frame positions */
};

/* A new search: an empty window, evaluated first at HUNT_FIRST bytes. */
static void port_hunt_reset(csd_frame_decoder *dec)
{
	dec->hunt_start = dec->hunt_len = 0;
	dec->hunt_next = HUNT_FIRST;
	dec->hunt_reported = 0;
}

/* The window, made at first use, ready for bytes from capture offset off
 * on; NULL without memory (reported once: then frames are found at FSYNCs
 * only, as before). */
static struct port_hunt *port_hunt_window(csd_frame_decoder *dec, uint64_t off)
{
	if (!dec->hunt) {
		if (dec->hunt_disabled)
			return NULL;
		dec->hunt = malloc(sizeof(*dec->hunt));
		if (!dec->hunt) {
			dec->hunt_disabled = 1;
			push_event(dec, CSD_FRAME_ERROR, off,
				   "out of memory: frames are found only at frame synchronisations");
			return NULL;
		}
	}
	if (dec->hunt_start == dec->hunt_len) {
		dec->hunt_start = dec->hunt_len = 0;
		dec->hunt_base = off;
	}
	return dec->hunt;
}

/* A byte seen while not synchronised: kept in the window. */
static __attribute__((noinline)) void port_hunt_byte(csd_frame_decoder *dec, uint8_t c, uint64_t off)
{
	if (!dec->ever_synced && dec->skipped++ == 0)
		dec->skip_off = off;
	if (port_hunt_window(dec, off))
		dec->hunt->buf[dec->hunt_len++] = c;
}

static void port_drop_partial(csd_frame_decoder *dec)
{
	dec->fill = 0;
	dec->have_even = 0;
	dec->ffff_held = 0;
}

/* Offset of the first byte of the partial frame, if any. */
static int port_partial_offset(const csd_frame_decoder *dec, uint64_t *off)
{
	if (dec->fill)
		*off = dec->frame_off[0];
	else if (dec->ffff_held)
		*off = dec->ffff_off;
	else if (dec->have_even)
		*off = dec->even_off;
	else
		return 0;
	return 1;
}

static void port_lose_sync(csd_frame_decoder *dec, uint64_t off, const char *reason)
{
	push_event(dec, CSD_FRAME_ERROR, off, reason);
	port_drop_partial(dec);
	dec->synced = 0;
	dec->cur_id = ID_NONE;
	dec->in_sync_run = 0;
	/* A new search for frames (the window is empty, or holds the rest
	 * of a replay). */
	dec->hunt_next = HUNT_FIRST;
	dec->hunt_reported = 0;
}

/* An FSYNC starting at `start` has just ended. */
static void port_fsync(csd_frame_decoder *dec, uint64_t start)
{
	if (!dec->synced) {
		/* (Unless the search for frames already said so.) */
		if (!dec->ever_synced && dec->skipped > 3 && !dec->hunt_reported)
			push_event(dec, CSD_FRAME_ERROR, dec->skip_off,
				   "bytes before the first frame synchronisation skipped");
		port_hunt_reset(dec);
		dec->synced = dec->ever_synced = 1;
		port_drop_partial(dec);
		push_event(dec, CSD_FRAME_SYNC, start, NULL);
		dec->in_sync_run = 1;
		return;
	}
	/* In step with the frame grid: FF FF held, then FF 7F. */
	int on_grid = dec->ffff_held && dec->have_even && dec->even == 0xFF;
	uint64_t off;
	if (on_grid && dec->fill == 0) {
		if (!dec->in_sync_run)
			push_event(dec, CSD_FRAME_SYNC, start, NULL);
	} else {
		if (!port_partial_offset(dec, &off) || !on_grid)
			off = start;
		push_event(dec, CSD_FRAME_ERROR, off, on_grid ?
			   "frame cut short by frame synchronisation" :
			   "frame synchronisation off the frame grid; realigned");
		push_event(dec, CSD_FRAME_SYNC, start, NULL);
		dec->cur_id = ID_NONE;
	}
	port_drop_partial(dec);
	dec->in_sync_run = 1;
}

static void port_byte(csd_frame_decoder *dec, uint8_t c, uint64_t off)
{
	/* FSYNC is recognised at any byte position, aligned or not. */
	if (c == 0x7F && dec->ff_run == 3) {
		dec->ff_run = 0;
		port_fsync(dec, dec->ff_off[0]);
		return;
	}
	if (c == 0xFF) {
		dec->ff_off[0] = dec->ff_off[1];
		dec->ff_off[1] = dec->ff_off[2];
		dec->ff_off[2] = off;
		if (dec->ff_run < 3)
			dec->ff_run++;
	} else {
		dec->ff_run = 0;
	}
	if (!dec->synced) {
		port_hunt_byte(dec, c, off);
		return;
	}
	if (!dec->have_even) {
		dec->even = c;
		dec->even_off = off;
		dec->have_even = 1;
		return;
	}
	dec->have_even = 0;
	uint8_t b0 = dec->even;
	if (b0 == 0xFF) {
		if (c == 0x7F && !dec->ffff_held)
			return;                 /* HSYNC: idle filler */
		if (c == 0xFF && !dec->ffff_held) {
			dec->ffff_held = 1;     /* maybe the first half of an FSYNC */
			dec->ffff_off = dec->even_off;
			return;
		}
		port_lose_sync(dec, dec->ffff_held ? dec->ffff_off : dec->even_off,
			       "0xFF in an ID position: frame alignment lost");
		return;
	}
	if (dec->ffff_held) {
		port_lose_sync(dec, dec->ffff_off, "0xFF in an ID position: frame alignment lost");
		return;
	}
	dec->frame[dec->fill] = b0;
	dec->frame_off[dec->fill] = dec->even_off;
	dec->frame[dec->fill + 1] = c;
	dec->frame_off[dec->fill + 1] = off;
	dec->fill += 2;
	if (dec->fill == FRAME_SIZE) {
		unpack_frame(dec, dec->frame, dec->frame_off, 0);
		dec->fill = 0;
	}
}

/* A whole frame at a frame boundary with no 0xFF in an even position holds
 * no sync packet and cannot complete one (a run of 0xFF stays one byte
 * long), so it skips the byte-wise state machine. */
static int port_fast_frame(csd_frame_decoder *dec)
{
	const uint8_t *f = dec->in + dec->in_pos;

	if (!dec->synced || dec->fill || dec->have_even || dec->ffff_held ||
	    dec->in_size - dec->in_pos < FRAME_SIZE || (dec->ff_run == 3 && f[0] == 0x7F))
		return 0;
	for (unsigned k = 0; k < FRAME_SIZE; k += 2)
		if (f[k] == 0xFF)
			return 0;
	uint64_t base = dec->in_base + dec->in_pos;
	unpack_frame(dec, f, NULL, base);
	if (f[FRAME_SIZE - 1] == 0xFF) {
		dec->ff_run = 1;
		dec->ff_off[2] = base + FRAME_SIZE - 1;
	} else {
		dec->ff_run = 0;
	}
	dec->in_pos += FRAME_SIZE;
	return 1;
}

/* ---- port format: frame alignment by inference ------------------------ *
 *
 * Without an FSYNC the frame grid is unknown. The bytes are kept in a window
 * (an FSYNC arriving meanwhile ends the search as before), and at 4, 16 and
 * 64 KiB, at the end of the capture, or at a gap in the fed offsets, the
 * window is decoded from each candidate frame start: the first eight
 * half-words of each byte parity, HSYNCs not counted (16 grids; two starts
 * a skipped HSYNC apart would be the same grid). A candidate's decode stops
 * at its first fault: 0xFF in an ID position that is no sync, or a reserved
 * ID. Faults are properties of half-words, so the grids of one byte parity
 * fail at the same place. A grid of the wrong parity, whose ID positions
 * hold arbitrary data bytes, usually meets one within a few frames; where it
 * does not (long runs of even bytes) it meets no ID byte either, so it has
 * no data and scores zero.
 *
 * The grids of one parity agree on every ID byte, so faults and ID
 * statistics cannot tell them apart; what differs is which byte is taken as
 * the auxiliary byte, and so bit 0 of every even data byte. Bit 0 of trace
 * bytes depends strongly on their other bits (P-headers and atoms are even,
 * branch packets start odd, A-syncs are zeros), and data bytes at odd
 * positions carry it unaltered. So each candidate's odd data bytes give
 * P(bit 0 | bits 7:1), and its score is the log-likelihood of the bit 0s it
 * reconstructs for its even data bytes under that model, in bits against a
 * fair coin. The right grid scores about n (1 - H) for n even bytes; a wrong
 * one gives those bits from an unrelated byte and scores below zero.
 * (A-sync patterns per ID were weaker: a wrong grid often keeps them.)
 *
 * An alignment is chosen when a candidate that decoded at least
 * HUNT_MIN_CLEAN bytes without fault (or to the end of the capture) scores
 * above every other such candidate and above zero by 16 + 2 sqrt(n) bits
 * (several times what random payloads, where no grid can be right, reach);
 * ties and near-ties choose nothing. Then the window is replayed through
 * the state machine from that frame start, so offsets stay capture offsets
 * and a later fault is handled as with an FSYNC. If no candidate decodes
 * cleanly, the bytes up to where the last candidate failed are dropped and
 * the search goes on (reported once per search); if candidates decode but
 * none stands out at 64 KiB or at the end, the window is dropped (reported
 * when any of them had source data). A byte is decoded by 16 grids at a
 * few evaluations at most, and an evaluation that finds nothing decodes
 * little beyond what it then drops, so the work stays linear. */

/* 256 log2(x), x >= 1, to within one unit (integer: the choice must not
 * depend on the floating-point unit). */
static int32_t log2_q8(uint32_t x)
{
	const int e = 31 - __builtin_clz(x);
	uint64_t m = (uint64_t)x << 16 >> e;    /* x / 2^e in [1, 2), 16 fraction bits */
	int32_t r = e * 256;
	for (int32_t bit = 128; bit; bit >>= 1) {
		m = m * m >> 16;
		if (m >= 2u << 16) {
			m >>= 1;
			r += bit;
		}
	}
	return r;
}

static uint32_t isqrt(uint64_t n)
{
	uint64_t r = 0;
	while ((r + 1) * (r + 1) <= n)
		r++;
	return (uint32_t)r;
}

struct hunt_cand {
	size_t start;           /* window index of the first frame byte */
	size_t end;             /* where its decode failed, or the window's end */
	int failed;
	uint64_t n_even, n_src; /* source data bytes at even / all positions */
	int64_t score;          /* 1/256 bits */
};

/* One frame of a candidate: counts its source bytes. */
static void hunt_frame(struct port_hunt *h, const uint8_t *f, uint8_t *idp)
{
	const unsigned aux = f[15];
	uint8_t id = *idp;

	if (!((f[0] | f[2] | f[4] | f[6] | f[8] | f[10] | f[12] | f[14]) & 1)) {
		/* No ID byte (most frames): all 15 bytes are the current ID's. */
		if (!id || id >= 0x70)
			return;
		for (unsigned k = 0; k < 14; k += 2) {
			h->hist[0][f[k] | (aux >> (k / 2) & 1)]++;
			h->hist[1][f[k + 1]]++;
		}
		h->hist[0][f[14] | aux >> 7]++;
		return;
	}
	for (unsigned k = 0; k < 15; k++) {
		uint8_t c = f[k];
		const unsigned odd = k & 1;
		if (!odd) {
			if (c & 1) {
				const uint8_t nid = c >> 1;
				if (k < 14 && nid != id && (aux >> (k / 2) & 1)) {
					if (id && id < 0x70)    /* the old ID's last byte */
						h->hist[1][f[k + 1]]++;
					k++;
				}
				id = nid;
				continue;
			}
			c |= aux >> (k / 2) & 1;
		}
		if (id && id < 0x70)
			h->hist[odd][c]++;
	}
	*idp = id;
}

/* How far w[0, len) decodes from candidate c->start as the state machine
 * would: up to 0xFF in an ID position that is no sync, or a reserved ID
 * (ID positions are the first bytes of half-words, HSYNCs aside). */
static void hunt_check(const uint8_t *w, size_t len, struct hunt_cand *c)
{
	int ffff = 0;
	size_t i = c->start;

	c->failed = 0;
	for (; i + 2 <= len; i += 2) {
		const uint8_t a = w[i], b = w[i + 1];
		if (a == 0xFF) {
			if (!ffff && b == 0x7F)
				continue;       /* HSYNC */
			if (!ffff && b == 0xFF) {
				ffff = 1;       /* an FSYNC's start, or a fault */
				continue;
			}
			break;
		}
		if (ffff || ((a & 1) && a >> 1 >= 0x70 && a >> 1 != ID_TRIGGER))
			break;
	}
	c->failed = i + 2 <= len;
	c->end = c->failed ? i : len;
}

/* hunt_check() for candidates c[0, n) of one byte parity, by rising start.
 * Faults are properties of half-words, not of frame positions, so a later
 * start reached by an earlier one's scan fails where that one fails, unless
 * the scan reached it holding FF FF (a half-word that may begin an FSYNC). */
static void hunt_check_parity(const uint8_t *w, size_t len, struct hunt_cand *c, unsigned n)
{
	for (unsigned j = 0; j < n; j++) {
		const size_t s = c[j].start;
		if (j && c[j - 1].end >= s && !(s >= 2 && w[s - 2] == 0xFF && w[s - 1] == 0xFF)) {
			c[j].end = c[j - 1].end;
			c[j].failed = c[j - 1].failed;
		} else {
			hunt_check(w, len, &c[j]);
		}
	}
}

/* Score candidate c over w[c->start, c->end) (hunt_check()ed). */
static void hunt_score(struct port_hunt *h, const uint8_t *w, struct hunt_cand *c)
{
	uint8_t f[FRAME_SIZE];
	unsigned fill = 0;
	uint8_t id = ID_NONE;

	memset(h->hist, 0, sizeof(h->hist));
	for (size_t i = c->start; i + 2 <= c->end; i += 2) {
		if (fill == 0 && c->end - i >= FRAME_SIZE) {
			/* A whole frame without HSYNC: read in place. */
			const uint8_t *g = w + i;
			if (g[0] != 0xFF && g[2] != 0xFF && g[4] != 0xFF && g[6] != 0xFF && g[8] != 0xFF &&
			    g[10] != 0xFF && g[12] != 0xFF && g[14] != 0xFF) {
				hunt_frame(h, g, &id);
				i += FRAME_SIZE - 2;
				continue;
			}
		}
		if (w[i] == 0xFF)
			continue;       /* HSYNC, or the FF FF of an FSYNC cut off by the end */
		f[fill] = w[i];
		f[fill + 1] = w[i + 1];
		fill += 2;
		if (fill < FRAME_SIZE)
			continue;
		fill = 0;
		hunt_frame(h, f, &id);
	}

	int64_t score = 0;
	uint64_t n_even = 0, n_odd = 0;
	for (unsigned u = 0; u < 256; u += 2) {
		const uint32_t o0 = h->hist[1][u], o1 = h->hist[1][u + 1];
		const uint32_t e0 = h->hist[0][u], e1 = h->hist[0][u + 1];
		n_odd += o0 + o1;
		if (!(e0 | e1))
			continue;
		n_even += e0 + e1;
		/* log2(2 p(b)), p(b) = (o_b + 1/2) / (o0 + o1 + 1) */
		const int32_t whole = log2_q8(2 * (o0 + o1) + 2) - 256;
		score += (int64_t)e0 * (log2_q8(2 * o0 + 1) - whole) + (int64_t)e1 * (log2_q8(2 * o1 + 1) - whole);
	}
	c->score = score;
	c->n_even = n_even;
	c->n_src = n_even + n_odd;
}

/* Candidate frame starts: the first eight half-words of each byte parity
 * that are not HSYNCs; each checked (hunt_check). */
static unsigned hunt_candidates(const uint8_t *w, size_t len, struct hunt_cand *c)
{
	unsigned n = 0;
	for (size_t p = 0; p < 2; p++) {
		unsigned got = 0;
		for (size_t i = p; got < 8 && i + 2 <= len; i += 2) {
			if (w[i] == 0xFF && w[i + 1] == 0x7F)
				continue;
			c[n++].start = i;
			got++;
		}
		hunt_check_parity(w, len, c + n - got, got);
	}
	return n;
}

static void hunt_report(csd_frame_decoder *dec, const char *reason)
{
	if (!dec->hunt_reported)
		push_event(dec, CSD_FRAME_ERROR, dec->hunt_base + dec->hunt_start, reason);
	dec->hunt_reported = 1;
}

/* Evaluate the window (final: no more bytes will join it): choose a frame
 * start and set up the replay, drop what gives no frames, or wait for more. */
static void hunt_evaluate(csd_frame_decoder *dec, int final)
{
	struct port_hunt *h = dec->hunt;

	for (;;) {
		const uint8_t *w = h->buf + dec->hunt_start;
		const size_t len = dec->hunt_len - dec->hunt_start;
		struct hunt_cand c[16];
		const unsigned n = hunt_candidates(w, len, c);
		int best = -1, any_data = 0;
		int64_t second = 0;     /* a grid without data scores 0 */
		size_t drop = 0;
		if (!len)
			return;
		for (unsigned j = 0; j < n; j++) {
			if (c[j].failed && c[j].end + 2 > drop)
				drop = c[j].end + 2;
			if (!(c[j].end - c[j].start >= HUNT_MIN_CLEAN || (final && !c[j].failed)))
				continue;
			hunt_score(h, w, &c[j]);
			any_data |= c[j].n_src > 0;
			if (best < 0 || c[j].score > c[best].score) {
				if (best >= 0 && c[best].score > second)
					second = c[best].score;
				best = (int)j;
			} else if (c[j].score > second) {
				second = c[j].score;
			}
		}
		if (best < 0) {
			/* Every grid fails early: these bytes are not frames. */
			hunt_report(dec, "no frame alignment gives valid frames: is the capture formatted?");
			dec->hunt_start += drop && drop < len ? drop : len;
			if (final || dec->hunt_len - dec->hunt_start >= dec->hunt_next)
				continue;
			return;
		}
		const int64_t need = (int64_t)(16 + 2 * isqrt(c[best].n_even)) * 256;
		if (c[best].score - second >= need) {
			const size_t s = dec->hunt_start + c[best].start;
			push_event(dec, CSD_FRAME_ALIGN_INFERRED, dec->hunt_base + s,
				   "frame alignment inferred (no FSYNC): frames start here");
			dec->synced = dec->ever_synced = 1;
			port_drop_partial(dec);
			dec->cur_id = ID_NONE;
			dec->in_sync_run = 0;
			/* The FSYNC detector sees the window again from s. */
			dec->saved_ff_run = dec->ff_run;
			memcpy(dec->saved_ff_off, dec->ff_off, sizeof(dec->ff_off));
			dec->ff_run = 0;
			dec->replay_pos = s;
			dec->replay_end = dec->hunt_len;
			dec->hunt_next = HUNT_FIRST;
			dec->hunt_reported = 0;
			return;
		}
		if (!final && dec->hunt_next < HUNT_MAX) {
			dec->hunt_next *= 4;
			return;
		}
		/* Grids decode, but none stands out: the bytes cannot be told. */
		if (any_data)
			hunt_report(dec, "frame alignment not found: no FSYNC, and no alignment stands out");
		dec->hunt_start = dec->hunt_len;
		dec->hunt_next = HUNT_FIRST;
		return;
	}
}

/* Run the window through the state machine from the chosen frame start. */
static void port_replay(csd_frame_decoder *dec)
{
	const uint8_t *w = dec->hunt->buf;

	while (dec->replay_pos < dec->replay_end && room(dec)) {
		size_t n = dec->replay_end - dec->replay_pos;
		if (n > PORT_STEP)
			n = PORT_STEP;
		for (size_t k = 0; k < n; k++) {
			const size_t i = dec->replay_pos++;
			port_byte(dec, w[i], dec->hunt_base + i);
			if (!dec->synced) {
				/* Alignment lost again: the rest is the next
				 * search's window. */
				dec->hunt_start = dec->replay_pos;
				dec->replay_pos = dec->replay_end = 0;
				dec->ff_run = dec->saved_ff_run;
				memcpy(dec->ff_off, dec->saved_ff_off, sizeof(dec->ff_off));
				return;
			}
		}
	}
	if (dec->replay_pos == dec->replay_end) {
		dec->hunt_start = dec->hunt_len = 0;
		dec->replay_pos = dec->replay_end = 0;
		dec->ff_run = dec->saved_ff_run;
		memcpy(dec->ff_off, dec->saved_ff_off, sizeof(dec->ff_off));
	}
}

/* Not synchronised: input bytes go to the window (FSYNCs are still
 * recognised), which is evaluated at its size steps, at the end of the
 * capture and at a gap in the offsets. Returns 0 when more input is needed. */
static int port_hunt_step(csd_frame_decoder *dec)
{
	const size_t live = dec->hunt_len - dec->hunt_start;

	if (live >= dec->hunt_next) {
		hunt_evaluate(dec, live >= HUNT_MAX);
		return 1;
	}
	if (dec->in_pos == dec->in_size) {
		if (dec->finished && live) {
			hunt_evaluate(dec, 1);
			return 1;
		}
		return 0;
	}
	const uint64_t off = dec->in_base + dec->in_pos;
	if (live && off != dec->hunt_base + dec->hunt_len) {
		hunt_evaluate(dec, 1);
		return 1;
	}
	size_t n = dec->in_size - dec->in_pos;
	if (n > dec->hunt_next - live)
		n = dec->hunt_next - live;
	if (dec->hunt && dec->hunt_len + n > HUNT_MAX) {
		memmove(dec->hunt->buf, dec->hunt->buf + dec->hunt_start, live);
		dec->hunt_base += dec->hunt_start;
		dec->hunt_start = 0;
		dec->hunt_len = live;
	}
	/* The bytes up to the one that completes an FSYNC, if any, go to
	 * the window as they are (the FSYNC detector of port_byte() inline). */
	const uint8_t *p = dec->in + dec->in_pos;
	unsigned ff_run = dec->ff_run;
	size_t k = 0;
	for (; k < n; k++) {
		const uint8_t c = p[k];
		if (c == 0x7F && ff_run == 3)
			break;
		if (c != 0xFF) {
			ff_run = 0;
			continue;
		}
		dec->ff_off[0] = dec->ff_off[1];
		dec->ff_off[1] = dec->ff_off[2];
		dec->ff_off[2] = off + k;
		ff_run += ff_run < 3;
	}
	dec->ff_run = ff_run;
	if (k) {
		if (!dec->ever_synced && dec->skipped == 0)
			dec->skip_off = off;
		dec->skipped += k;
		if (port_hunt_window(dec, off)) {
			memcpy(dec->hunt->buf + dec->hunt_len, p, k);
			dec->hunt_len += k;
		}
	}
	if (k < n) {
		port_byte(dec, p[k], off + k);          /* the end of an FSYNC: synchronised */
		k++;
	}
	dec->in_pos += k;
	return 1;
}

/* Synchronised: input through the state machine until it is used up,
 * there is no room, or alignment is lost (only the byte-wise path can lose
 * it, so the whole-frame path checks nothing more than it did before
 * frames could be found without FSYNC). */
static void produce_port_synced(csd_frame_decoder *dec)
{
	while (dec->in_pos < dec->in_size && room(dec)) {
		if (port_fast_frame(dec))
			continue;
		/* PORT_STEP bytes complete at most one frame and one FSYNC. */
		size_t n = dec->in_size - dec->in_pos;
		if (n > PORT_STEP)
			n = PORT_STEP;
		const uint8_t *p = dec->in + dec->in_pos;
		uint64_t base = dec->in_base + dec->in_pos;
		for (size_t k = 0; k < n; k++)
			port_byte(dec, p[k], base + k);
		dec->in_pos += n;
		if (!dec->synced)
			return;
	}
}

static void produce_port(csd_frame_decoder *dec)
{
	while (room(dec)) {
		if (dec->replay_pos < dec->replay_end)
			port_replay(dec);
		else if (!dec->synced) {
			if (!port_hunt_step(dec))
				return;
		} else if (dec->in_pos < dec->in_size)
			produce_port_synced(dec);
		else
			return;
	}
}

/* ---- end of capture --------------------------------------------------- */

static void report_end(csd_frame_decoder *dec)
{
	uint64_t off;

	dec->end_reported = 1;
	if (dec->format == CSD_FRAME_ALIGNED) {
		if (dec->fill)
			push_event(dec, CSD_FRAME_TRUNCATED, dec->frame_off[0], "incomplete frame at end of capture");
		dec->fill = 0;
	} else if (dec->format == CSD_FRAME_PORT) {
		if (!dec->ever_synced && dec->skipped && !dec->hunt_reported)
			push_event(dec, CSD_FRAME_ERROR, dec->skip_off, "no frame synchronisation (FSYNC) found");
		else if (dec->synced && port_partial_offset(dec, &off))
			push_event(dec, CSD_FRAME_TRUNCATED, off, "incomplete frame at end of capture");
		port_drop_partial(dec);
	}
}

/* ---- delivery --------------------------------------------------------- */

static void deliver_event(csd_frame_decoder *dec, struct csd_frame_out *out)
{
	const struct frame_item *it = &dec->items[dec->head++];
	memset(out, 0, sizeof(*out));
	out->event = it->event;
	out->offset = it->offset;
	out->reason = it->reason;
}

/* csd_frame_next() with CSD_FRAME_BY_ID: a round fills the ID buffers
 * until one is full, an event happens or the input is used up; then each
 * ID's bytes are delivered, then the events. */
static int next_by_id(csd_frame_decoder *dec, struct csd_frame_out *out)
{
	for (;;) {
		while (dec->bid_head < dec->n_bids) {
			const uint8_t id = dec->bids[dec->bid_head++];
			const struct id_batch *b = dec->batch[id];
			if (!b->len)
				continue;
			memset(out, 0, sizeof(*out));
			out->event = CSD_FRAME_DATA;
			out->bytes.data = b->data;
			out->bytes.size = b->len;
			out->bytes.offsets = b->off;
			out->bytes.base = b->off[0];
			out->bytes.id = id;
			out->offset = b->off[0];
			return CSD_OK;
		}
		if (dec->head < dec->n_items) {
			deliver_event(dec, out);
			return CSD_OK;
		}
		/* A new round; the last one's bytes are no longer needed. */
		dec->head = dec->n_items = 0;
		for (unsigned i = 0; i < dec->n_bids; i++)
			dec->live[dec->bids[i]] = NULL;
		dec->n_bids = dec->bid_head = 0;
		dec->batch_full = 0;
		if (dec->format == CSD_FRAME_ALIGNED)
			produce_aligned(dec);
		else
			produce_port(dec);
		if (dec->n_items == 0 && dec->n_bids == 0 && dec->in_pos == dec->in_size) {
			if (!dec->finished)
				return CSD_EAGAIN;
			if (dec->end_reported)
				return CSD_EEOS;
			report_end(dec);
		}
	}
}

int csd_frame_next(csd_frame_decoder *dec, struct csd_frame_out *out)
{
	if (!dec || !out)
		return CSD_EINVAL;
	if (dec->by_id)
		return next_by_id(dec, out);
	if (dec->head == dec->n_items) {
		dec->head = dec->n_items = 0;
		dec->out_len = 0;
		if (dec->format == CSD_FRAME_RAW) {
			if (dec->in_pos < dec->in_size) {
				memset(out, 0, sizeof(*out));
				out->event = CSD_FRAME_DATA;
				out->bytes.data = dec->in + dec->in_pos;
				out->bytes.size = dec->in_size - dec->in_pos;
				out->bytes.base = dec->in_base + dec->in_pos;
				out->bytes.id = dec->raw_id;
				out->offset = out->bytes.base;
				dec->in_pos = dec->in_size;
				return CSD_OK;
			}
		} else if (dec->format == CSD_FRAME_ALIGNED) {
			produce_aligned(dec);
		} else {
			produce_port(dec);
		}
		if (dec->n_items == 0 && dec->in_pos == dec->in_size) {
			if (!dec->finished)
				return CSD_EAGAIN;
			if (!dec->end_reported)
				report_end(dec);
			if (dec->n_items == 0)
				return CSD_EEOS;
		}
		if (dec->n_items == 0)
			return CSD_EAGAIN;      /* cannot happen: room() holds after a reset */
	}
	const struct frame_item *it = &dec->items[dec->head];
	deliver_event(dec, out);
	if (it->event == CSD_FRAME_DATA) {
		out->bytes.data = dec->out + it->start;
		out->bytes.size = it->len;
		out->bytes.offsets = dec->out_off + it->start;
		out->bytes.base = dec->out_off[it->start];
		out->bytes.id = it->id;
	}
	return CSD_OK;
}
