/* pkt_input.c - byte input shared by the packet decoders (see pkt_input.h). */
#include <string.h>

#include "pkt_input.h"

static uint64_t run_offset(const struct csd_bytes *b, size_t i)
{
	return b->offsets ? b->offsets[i] : b->base + i;
}

void csdi_in_reset(struct csdi_input *in)
{
	memset(in, 0, sizeof(*in));
}

int csdi_in_feed(struct csdi_input *in, const struct csd_bytes *b)
{
	if (!b || (b->size && !b->data) || in->finished)
		return CSD_EINVAL;
	if (in->have_run && in->pos < in->run.size)
		return CSD_EINVAL;
	in->run = *b;
	in->pos = 0;
	in->have_run = b->size > 0;
	return CSD_OK;
}

size_t csdi_in_view(struct csdi_input *in, const uint8_t **p)
{
	size_t avail = in->have_run ? in->run.size - in->pos : 0;

	if (in->stage_len == 0) {
		in->view_len = avail;
		*p = avail ? in->run.data + in->pos : in->stage;
		return avail;
	}
	/* Continue the staged packet with as many run bytes as fit; they are
	 * only borrowed until csdi_in_consume() says how many were used. */
	size_t take = CSDI_STAGE_MAX - in->stage_len;
	if (take > avail)
		take = avail;
	if (take) /* an empty run may have data == NULL */
		memcpy(in->stage + in->stage_len, in->run.data + in->pos, take);
	for (size_t i = 0; i < take; i++)
		in->stage_off[in->stage_len + i] = run_offset(&in->run, in->pos + i);
	in->view_len = in->stage_len + take;
	*p = in->stage;
	return in->view_len;
}

uint64_t csdi_in_offset(const struct csdi_input *in, size_t k)
{
	if (in->stage_len)
		return in->stage_off[k < CSDI_STAGE_MAX ? k : CSDI_STAGE_MAX - 1];
	return run_offset(&in->run, in->pos + k);
}

void csdi_in_consume(struct csdi_input *in, size_t n)
{
	if (in->stage_len == 0) {
		in->pos += n;
	} else if (n >= in->stage_len) {
		in->pos += n - in->stage_len;
		in->stage_len = 0;
	} else {
		memmove(in->stage, in->stage + n, in->stage_len - n);
		memmove(in->stage_off, in->stage_off + n, (in->stage_len - n) * sizeof(in->stage_off[0]));
		in->stage_len -= n;
	}
	if (in->have_run && in->pos >= in->run.size)
		in->have_run = 0;
}

void csdi_in_stash(struct csdi_input *in)
{
	if (in->stage_len == 0) {
		size_t avail = in->have_run ? in->run.size - in->pos : 0;
		if (avail > CSDI_STAGE_MAX)
			avail = CSDI_STAGE_MAX; /* cannot happen: packets are shorter */
		memcpy(in->stage, in->run.data + in->pos, avail);
		for (size_t i = 0; i < avail; i++)
			in->stage_off[i] = run_offset(&in->run, in->pos + i);
		in->stage_len = avail;
		in->pos += avail;
	} else {
		/* The borrowed run bytes become part of the stage. */
		in->pos += in->view_len - in->stage_len;
		in->stage_len = in->view_len;
	}
	if (in->have_run && in->pos >= in->run.size)
		in->have_run = 0;
}

void csdi_in_fill(const struct csdi_input *in, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	size_t r = n < CSD_PKT_RAW_MAX ? n : CSD_PKT_RAW_MAX;
	pkt->offset = n ? csdi_in_offset(in, 0) : 0;
	pkt->size = (uint32_t)n;
	memcpy(pkt->raw, p, r);
}

static void nosync_packet(struct csdi_input *in, struct csd_packet *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->type = CSD_PKT_NOSYNC;
	pkt->offset = in->skip_off;
	pkt->size = in->skipped;
	memcpy(pkt->raw, in->skip_raw, in->skipped < CSD_PKT_RAW_MAX ? in->skipped : CSD_PKT_RAW_MAX);
	in->skipped = 0;
}

static void skip_byte(struct csdi_input *in, uint8_t b, uint64_t off)
{
	if (in->skipped == 0)
		in->skip_off = off;
	if (in->skipped < CSD_PKT_RAW_MAX)
		in->skip_raw[in->skipped] = b;
	in->skipped++;
}

int csdi_in_seek_async(struct csdi_input *in, struct csd_packet *pkt)
{
	if (in->async_ready) {
		/* The zero run and the 0x80 were consumed when found; the
		 * packet's raw bytes are reconstructed (they are all known). */
		memset(pkt, 0, sizeof(*pkt));
		pkt->type = CSD_PKT_ASYNC;
		pkt->offset = in->zero_off;
		pkt->size = in->async_len;
		size_t r = in->async_len < CSD_PKT_RAW_MAX ? in->async_len : CSD_PKT_RAW_MAX;
		memset(pkt->raw, 0, r);
		if (in->async_len <= CSD_PKT_RAW_MAX)
			pkt->raw[in->async_len - 1] = 0x80;
		in->async_ready = 0;
		in->zeros = 0;
		return 1;
	}
	for (;;) {
		const uint8_t *p;
		size_t n = csdi_in_view(in, &p);
		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++) {
			uint8_t b = p[i];
			if (b != 0x00 && in->zeros == 0 && in->skipped >= CSD_PKT_RAW_MAX) {
				/* Junk without zeros cannot hold an A-sync: count the
				 * run up to the next zero at once. */
				const uint8_t *z = memchr(p + i, 0, n - i);
				size_t run = z ? (size_t)(z - (p + i)) : n - i;
				in->skipped += run;
				i += run - 1;
				continue;
			}
			if (b == 0x00) {
				if (in->zeros == 0)
					in->zero_off = csdi_in_offset(in, i);
				in->zeros++;
				continue;
			}
			if (b == 0x80 && in->zeros >= 5) {
				in->async_len = in->zeros + 1;
				in->async_ready = 1;
				csdi_in_consume(in, i + 1);
				if (in->skipped) {
					nosync_packet(in, pkt);
					return 1;
				}
				return csdi_in_seek_async(in, pkt);
			}
			/* Not an A-sync: the zeros and this byte are passed over. */
			for (size_t z = 0; z < in->zeros && z < CSD_PKT_RAW_MAX; z++)
				skip_byte(in, 0, in->zero_off + z);
			if (in->zeros > CSD_PKT_RAW_MAX)
				in->skipped += in->zeros - CSD_PKT_RAW_MAX;
			in->zeros = 0;
			skip_byte(in, b, csdi_in_offset(in, i));
		}
		csdi_in_consume(in, n);
	}
	if (in->finished && (in->skipped || in->zeros)) {
		/* Trailing zeros are passed over too: they may be the whole
		 * stretch, so they can set its offset. */
		for (size_t z = 0; z < in->zeros && z < CSD_PKT_RAW_MAX; z++)
			skip_byte(in, 0, in->zero_off + z);
		if (in->zeros > CSD_PKT_RAW_MAX)
			in->skipped += in->zeros - CSD_PKT_RAW_MAX;
		in->zeros = 0;
		nosync_packet(in, pkt);
		return 1;
	}
	return 0;
}

void csdi_in_sem(const struct csdi_input *in, struct csdi_sem *s)
{
	/* Bytes given but not yet read, or the start of a packet kept from
	 * an earlier run: the state is mid-packet, where no two decoders
	 * are compared. */
	if ((in->have_run && in->pos < in->run.size) || in->stage_len)
		s->bad = 1;
	csdi_sem_put(s, (uint64_t)in->finished);
	/* The A-sync search: an unsynchronised decoder's progress through
	 * bytes it is passing over (zero in a synchronised one). */
	csdi_sem_put(s, in->skipped);
	csdi_sem_put(s, in->zeros);
	csdi_sem_put(s, (uint64_t)in->async_ready);
	/* Left out: the run's pointers and offsets (where the caller's bytes
	 * are, not what they mean) and view_len (scratch of the last view). */
}
