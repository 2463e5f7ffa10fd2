/* frame_enc.h - CoreSight trace formatter: packs the bytes of several trace
 * sources into 16-byte formatter frames, as an ETB/ETF/ETR or TPIU formatter
 * does (internal; used by tests and the trace generator).
 *
 * Frames are built as data arrives and handed to the sink when complete. An
 * ID change lands in the next even byte of the frame; when the next free
 * byte is odd, the even byte before it is turned into the ID byte with its
 * auxiliary bit set ("new ID after the next byte") and the old source's byte
 * moves into the odd slot, so no byte is wasted. */
#ifndef CSD_FRAME_ENC_H
#define CSD_FRAME_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "csdec.h"

/* Receives finished output bytes; a negative return aborts the encoder call
 * and is passed back to the caller. */
typedef int (*csdi_frame_sink)(void *ctx, const uint8_t *bytes, size_t n);

struct csdi_frame_enc_config {
	uint32_t format;        /* CSD_FRAME_ALIGNED or CSD_FRAME_PORT */
	/* CSD_FRAME_PORT: an FSYNC precedes the first frame and then every
	 * fsync_every frames (0: only the first). */
	unsigned fsync_every;
	/* Restate the current ID at the start of a frame once this many frames
	 * passed without an ID byte, as ETB formatters do every 8 frames
	 * (0: never). */
	unsigned id_every;
	csdi_frame_sink sink;
	void *ctx;
};

struct csdi_frame_enc {
	struct csdi_frame_enc_config cfg;
	uint8_t frame[16];
	unsigned slot;          /* next free byte of frame[0..14] */
	uint8_t aux;            /* byte 15 being built */
	uint8_t cur_id;         /* ID the decoder will apply to the next byte; 0xFF none */
	int frame_has_id;
	unsigned frames_since_id;
	unsigned frames_since_fsync;
	int started;            /* a frame or FSYNC was written */
	uint8_t hsync_before[8]; /* HSYNCs to insert before half-word i of the frame */
	uint64_t bytes_out;     /* bytes handed to the sink */
};

/* Set up an encoder. Returns CSD_EINVAL for a NULL argument, a missing sink
 * or a format other than ALIGNED/PORT. */
int csdi_frame_enc_init(struct csdi_frame_enc *enc, const struct csdi_frame_enc_config *cfg);

/* Add n bytes of source `id` (0x01-0x6F). Errors: CSD_EINVAL, sink errors. */
int csdi_frame_enc_data(struct csdi_frame_enc *enc, uint8_t id, const uint8_t *data, size_t n);

/* CSD_FRAME_PORT: insert a half-word sync at the next half-word boundary
 * of the output. Errors: CSD_EINVAL (other formats). */
int csdi_frame_enc_hsync(struct csdi_frame_enc *enc);

/* Complete the current frame (null-ID padding), then write `count` FSYNC
 * words. CSD_FRAME_ALIGNED needs count to be a multiple of 4 so frames stay
 * aligned; the decoder forgets the current ID there, so does the encoder.
 * Errors: CSD_EINVAL, sink errors. */
int csdi_frame_enc_fsync(struct csdi_frame_enc *enc, unsigned count);

/* Complete a partial frame by switching to the null ID 0x00 and padding with
 * zeros, as a formatter does on a flush. Errors: sink errors. */
int csdi_frame_enc_flush(struct csdi_frame_enc *enc);

/* Flush (as csdi_frame_enc_flush) and forget the current ID, so that the
 * next byte's frame states its ID: what follows can be deformatted on its
 * own, as the next contents of a drained ETB are. Errors: sink errors. */
int csdi_frame_enc_restart(struct csdi_frame_enc *enc);

#endif
