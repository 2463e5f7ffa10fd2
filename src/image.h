/* image.h - fast internal access to the memory image (see csd_image_* in csdec.h). */
#ifndef CSD_IMAGE_H
#define CSD_IMAGE_H

#include "csdec.h"

/*
 * Point *p at the image bytes starting at addr without copying. Returns how
 * many bytes are readable contiguously there (at least 1), or 0 when addr is
 * not accessible. The pointer stays valid until the next call on the image
 * (callback memory lives in a one-page cache).
 */
size_t csdi_image_fetch(csd_image *img, uint64_t addr, const uint8_t **p);

/* Bumped whenever the image's contents can have changed; caches of decoded
 * code compare it to know when to flush. */
uint64_t csdi_image_generation(const csd_image *img);

#endif
