/*
 * port_edit.h - trace port captures edited the way tests need them: FSYNCs
 * stripped, the start cut, bytes replaced, with the offset each byte had in
 * the original kept, so that a decode of the edited capture can be compared
 * with the original's; and where the original's frames and ID bytes are
 * (header-only helper for test_frame and test_cli_port).
 */
#ifndef CSD_TEST_PORT_EDIT_H
#define CSD_TEST_PORT_EDIT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t port_edit_fsync[4] = { 0xFF, 0xFF, 0xFF, 0x7F };

/* An edited capture: its bytes, and for each the offset it had in the
 * capture it was made from. */
struct edit {
	uint8_t *b;
	uint64_t *from;
	size_t n;
};

static inline void edit_free(struct edit *e)
{
	free(e->b);
	free(e->from);
	memset(e, 0, sizeof(*e));
}

static inline struct edit edit_new(size_t cap)
{
	struct edit e;
	e.b = malloc(cap ? cap : 1);
	e.from = malloc((cap ? cap : 1) * sizeof(uint64_t));
	e.n = 0;
	if (!e.b || !e.from)
		abort();
	return e;
}

static inline void edit_put(struct edit *e, uint8_t c, uint64_t from)
{
	e->b[e->n] = c;
	e->from[e->n++] = from;
}

/* cap without its FSYNCs (FF FF FF 7F, searched at every byte as the
 * decoder does) before offset keep_from. */
static inline struct edit edit_strip_fsyncs(const uint8_t *cap, size_t n, size_t keep_from)
{
	struct edit e = edit_new(n);
	for (size_t i = 0; i < n;) {
		if (i < keep_from && n - i >= 4 && memcmp(cap + i, port_edit_fsync, 4) == 0) {
			i += 4;
			continue;
		}
		edit_put(&e, cap[i], i);
		i++;
	}
	return e;
}

/* s without its first k bytes, and with its bytes [at, at + del) replaced
 * by ins[0, n_ins) (at >= k; del 0: no change). */
static inline struct edit edit_cut(const struct edit *s, size_t k, size_t at, size_t del, const uint8_t *ins,
			    size_t n_ins)
{
	struct edit e = edit_new(s->n + n_ins);
	for (size_t i = k; i < s->n; i++) {
		if (del && i == at) {
			for (size_t j = 0; j < n_ins; j++)
				edit_put(&e, ins[j], s->from[i]);
			i += del - 1;
			continue;
		}
		edit_put(&e, s->b[i], s->from[i]);
	}
	return e;
}

/* Where the frames and ID bytes of a port capture made by the encoder are
 * (FSYNCs between frames, HSYNCs inside): start[off] = 1 at each frame's
 * first byte that is not an HSYNC, id_at[off] = ID + 1 at each ID byte. */
struct frame_map {
	uint8_t *start, *id_at;
	size_t n;
};

static inline struct frame_map frame_map(const uint8_t *cap, size_t n)
{
	struct frame_map m = { calloc(n ? n : 1, 1), calloc(n ? n : 1, 1), n };
	size_t i = 0;
	if (!m.start || !m.id_at)
		abort();
	while (i < n) {
		if (n - i >= 4 && memcmp(cap + i, port_edit_fsync, 4) == 0) {
			i += 4;
			continue;
		}
		unsigned got = 0;
		while (got < 16 && n - i >= 2) {
			if (cap[i] == 0xFF && cap[i + 1] == 0x7F) {
				i += 2;
				continue;
			}
			if (got == 0)
				m.start[i] = 1;
			if (cap[i] & 1)
				m.id_at[i] = (uint8_t)((cap[i] >> 1) + 1);
			got += 2;
			i += 2;
		}
		if (got < 16)
			break;
	}
	return m;
}

static inline void frame_map_free(struct frame_map *m)
{
	free(m->start);
	free(m->id_at);
}

/* For each trace ID, the original offset from which a decode that starts
 * looking for frames at original offset `cut` can know the ID's bytes:
 * its first ID byte after the first frame start at or after `cut`
 * (UINT64_MAX: none). */
static inline void id_known_from(const struct frame_map *m, uint64_t cut, uint64_t *from)
{
	size_t i = cut;
	for (unsigned id = 0; id < 128; id++)
		from[id] = UINT64_MAX;
	while (i < m->n && !m->start[i])
		i++;
	for (; i < m->n; i++)
		if (m->id_at[i] && from[m->id_at[i] - 1] == UINT64_MAX)
			from[m->id_at[i] - 1] = i;
}

#endif
