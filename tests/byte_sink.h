/*
 * byte_sink.h - a growing byte buffer for the encoders' and the trace
 * generator's sink callbacks in tests (header-only helper).
 */
#ifndef CSD_TEST_BYTE_SINK_H
#define CSD_TEST_BYTE_SINK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csdec.h"

struct byte_sink {
	uint8_t *data;
	size_t n, cap;
};

/* Sink callback: append the n bytes b to the struct byte_sink ctx. */
static inline int byte_sink_append(void *ctx, const uint8_t *b, size_t n)
{
	struct byte_sink *s = ctx;
	if (s->n + n > s->cap) {
		size_t ncap = (s->n + n) * 2 + 64;
		uint8_t *nd = realloc(s->data, ncap);
		if (!nd)
			return CSD_ENOMEM;
		s->data = nd;
		s->cap = ncap;
	}
	memcpy(s->data + s->n, b, n);
	s->n += n;
	return 0;
}

#endif
