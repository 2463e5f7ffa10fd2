/*
 * a32_call.h - a small A32 program with a call and its return, for the
 * flow decoder tests made over hand-written traces (test_flow_cases.c,
 * test_chunks.c), and the image of A32 words such tests decode against
 * (header-only helper). Needs check.h first.
 */
#ifndef CSD_TEST_A32_CALL_H
#define CSD_TEST_A32_CALL_H

#include <stdint.h>
#include <stdlib.h>

#include "csdec.h"

/* Where a32_call_code is placed. */
#define A32_CALL_BASE 0x1000

/* A32 at 0x1000: a call and its return. */
static const uint32_t a32_call_code[] = {
	0xe3a00001, /* 0x1000 mov r0, #1 */
	0xe2800001, /* 0x1004 add r0, r0, #1 */
	0xe5901000, /* 0x1008 ldr r1, [r0] */
	0xeb000003, /* 0x100c bl 0x1020 */
	0xe1a00000, /* 0x1010 nop */
	0xeafffff9, /* 0x1014 b 0x1000 */
	0xe1a00000, /* 0x1018 nop */
	0xe1a00000, /* 0x101c nop */
	0xe2811001, /* 0x1020 add r1, r1, #1 */
	0xe12fff1e, /* 0x1024 bx lr */
};

/* An image holding the n A32 words of code at addr, little-endian (the
 * image keeps its own copy). */
static inline csd_image *a32_image(uint64_t addr, const uint32_t *code, size_t n)
{
	uint8_t *mem = malloc(4 * n);
	if (!mem)
		abort();
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 4; k++)
			mem[4 * i + (size_t)k] = (uint8_t)(code[i] >> (8 * k));
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_buffer(img, addr, mem, 4 * n, 1), 0);
	free(mem);
	return img;
}

/* An image holding a32_call_code at A32_CALL_BASE. */
static inline csd_image *a32_call_image(void)
{
	return a32_image(A32_CALL_BASE, a32_call_code, sizeof(a32_call_code) / sizeof(a32_call_code[0]));
}

#endif
