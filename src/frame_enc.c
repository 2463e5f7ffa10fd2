/* frame_enc.c - CoreSight trace formatter, encoder side (see frame_enc.h). */
#include <string.h>

#include "frame_enc.h"

#define ID_NONE 0xFF
#define HSYNC_MAX 255           /* HSYNCs queued per half-word position */

static const uint8_t fsync_bytes[4] = { 0xFF, 0xFF, 0xFF, 0x7F };

int csdi_frame_enc_init(struct csdi_frame_enc *enc, const struct csdi_frame_enc_config *cfg)
{
	if (!enc || !cfg || !cfg->sink)
		return CSD_EINVAL;
	if (cfg->format != CSD_FRAME_ALIGNED && cfg->format != CSD_FRAME_PORT)
		return CSD_EINVAL;
	memset(enc, 0, sizeof(*enc));
	enc->cfg = *cfg;
	enc->cur_id = ID_NONE;
	return CSD_OK;
}

static int sink(struct csdi_frame_enc *enc, const uint8_t *p, size_t n)
{
	int rc = enc->cfg.sink(enc->cfg.ctx, p, n);
	if (rc < 0)
		return rc;
	enc->bytes_out += n;
	return CSD_OK;
}

static int write_fsyncs(struct csdi_frame_enc *enc, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		int rc = sink(enc, fsync_bytes, sizeof(fsync_bytes));
		if (rc < 0)
			return rc;
	}
	enc->started = 1;
	enc->frames_since_fsync = 0;
	return CSD_OK;
}

/* Hand the full frame (with any HSYNCs) to the sink and start a new one. */
static int write_frame(struct csdi_frame_enc *enc)
{
	uint8_t buf[16 + 8 * HSYNC_MAX * 2];
	size_t n = 0;
	int rc;

	if (enc->cfg.format == CSD_FRAME_PORT &&
	    (!enc->started || (enc->cfg.fsync_every && enc->frames_since_fsync >= enc->cfg.fsync_every))) {
		rc = write_fsyncs(enc, 1);
		if (rc < 0)
			return rc;
	}
	enc->frame[15] = enc->aux;
	for (unsigned hw = 0; hw < 8; hw++) {
		for (unsigned i = 0; i < enc->hsync_before[hw]; i++) {
			buf[n++] = 0xFF;
			buf[n++] = 0x7F;
		}
		buf[n++] = enc->frame[2 * hw];
		buf[n++] = enc->frame[2 * hw + 1];
	}
	rc = sink(enc, buf, n);
	if (rc < 0)
		return rc;
	enc->started = 1;
	enc->frames_since_fsync++;
	enc->frames_since_id = enc->frame_has_id ? 0 : enc->frames_since_id + 1;
	enc->frame_has_id = 0;
	enc->slot = 0;
	enc->aux = 0;
	memset(enc->hsync_before, 0, sizeof(enc->hsync_before));
	return CSD_OK;
}

static void set_aux(struct csdi_frame_enc *enc, unsigned slot, unsigned bit)
{
	uint8_t mask = (uint8_t)(1u << (slot / 2));
	enc->aux = bit ? (uint8_t)(enc->aux | mask) : (uint8_t)(enc->aux & ~mask);
}

/* Make `id` the ID of the next byte placed. */
static int change_id(struct csdi_frame_enc *enc, uint8_t id)
{
	unsigned s = enc->slot;

	if (s & 1) {
		/* Odd slot: the even byte before it (the old source's data)
		 * becomes an ID byte whose change waits one byte; that data
		 * byte moves to the odd slot, where all 8 bits fit. */
		uint8_t old = (uint8_t)(enc->frame[s - 1] | ((enc->aux >> ((s - 1) / 2)) & 1));
		enc->frame[s - 1] = (uint8_t)(id << 1 | 1);
		set_aux(enc, s - 1, 1);
		enc->frame[s] = old;
		enc->slot = s + 1;
	} else {
		enc->frame[s] = (uint8_t)(id << 1 | 1);
		set_aux(enc, s, 0);
		enc->slot = s + 1;
	}
	enc->cur_id = id;
	enc->frame_has_id = 1;
	if (enc->slot == 15)            /* an ID in byte 14 applies from the next frame */
		return write_frame(enc);
	return CSD_OK;
}

static int place(struct csdi_frame_enc *enc, uint8_t byte)
{
	unsigned s = enc->slot;

	if (s & 1) {
		enc->frame[s] = byte;
	} else {
		enc->frame[s] = (uint8_t)(byte & 0xFE);
		set_aux(enc, s, byte & 1);
	}
	enc->slot = s + 1;
	if (enc->slot == 15)
		return write_frame(enc);
	return CSD_OK;
}

int csdi_frame_enc_data(struct csdi_frame_enc *enc, uint8_t id, const uint8_t *data, size_t n)
{
	if (!enc || id == 0 || id >= 0x70 || (n && !data))
		return CSD_EINVAL;
	for (size_t i = 0; i < n; i++) {
		int rc;
		int restate = enc->slot == 0 && enc->cfg.id_every &&
			      enc->frames_since_id >= enc->cfg.id_every;
		if (id != enc->cur_id || restate) {
			rc = change_id(enc, id);
			if (rc < 0)
				return rc;
		}
		rc = place(enc, data[i]);
		if (rc < 0)
			return rc;
	}
	return CSD_OK;
}

int csdi_frame_enc_hsync(struct csdi_frame_enc *enc)
{
	if (!enc || enc->cfg.format != CSD_FRAME_PORT)
		return CSD_EINVAL;
	unsigned hw = (enc->slot + 1) / 2;   /* never splits a half-word */
	if (enc->hsync_before[hw] >= HSYNC_MAX)
		return CSD_EINVAL;
	enc->hsync_before[hw]++;
	return CSD_OK;
}

int csdi_frame_enc_flush(struct csdi_frame_enc *enc)
{
	if (!enc)
		return CSD_EINVAL;
	if (enc->slot == 0)
		return CSD_OK;
	if (enc->slot & 1 || enc->cur_id != 0) {
		int rc = change_id(enc, 0);
		if (rc < 0 || enc->slot == 0)
			return rc;
	}
	while (enc->slot < 15) {
		int rc = place(enc, 0);
		if (rc < 0 || enc->slot == 0)
			return rc;
	}
	return CSD_OK;
}

int csdi_frame_enc_restart(struct csdi_frame_enc *enc)
{
	int rc = csdi_frame_enc_flush(enc);
	if (rc < 0)
		return rc;
	enc->cur_id = ID_NONE;
	enc->frames_since_id = 0;
	return CSD_OK;
}

int csdi_frame_enc_fsync(struct csdi_frame_enc *enc, unsigned count)
{
	if (!enc || (enc->cfg.format == CSD_FRAME_ALIGNED && count % 4))
		return CSD_EINVAL;
	int rc = csdi_frame_enc_flush(enc);
	if (rc < 0)
		return rc;
	rc = write_fsyncs(enc, count);
	if (rc < 0)
		return rc;
	if (enc->cfg.format == CSD_FRAME_ALIGNED && count)
		enc->cur_id = ID_NONE;
	return CSD_OK;
}
