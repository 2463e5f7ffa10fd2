/* image.h - fast internal access to the memory image (see csd_image_* in csdec.h). */
#ifndef CSD_IMAGE_H
#define CSD_IMAGE_H

#include "csdec.h"

/*
 * A reader's place in the image: the piece of one section its last lookup
 * found, valid for one image generation. Each reader (a decoder) keeps its
 * own, so that the image itself is not written by lookups and readers on
 * several threads can share it (csdec.h, csd_image_new). Zero: no place.
 */
struct csdi_image_window {
	uint64_t lo, hi;          /* the piece: addresses [lo, hi) */
	uint64_t start;           /* its section's first address ... */
	const uint8_t *data;      /* ... and bytes */
	uint64_t gen;             /* image generation + 1 it was found in */
};

/*
 * Point *p at the image bytes starting at addr without copying. Returns how
 * many bytes are readable contiguously there (at least 1), or 0 when addr is
 * not accessible. The pointer stays valid until sections are added or, for
 * callback memory (a one-page cache in the image), until the next call.
 */
size_t csdi_image_fetch(csd_image *img, struct csdi_image_window *w, uint64_t addr, const uint8_t **p);

/* Build the lookup map now if sections were added since it was built, so
 * that later lookups only read the image (0, or CSD_ENOMEM). */
int csdi_image_prepare(csd_image *img);

/* Bumped whenever the image's contents can have changed; caches of decoded
 * code compare it to know when to flush. */
uint64_t csdi_image_generation(const csd_image *img);

#endif
