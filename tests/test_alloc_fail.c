/*
 * A flow decoder whose csd_flow_reset() ran out of memory can only be
 * freed: every other call on it, the chunk functions' included, says
 * CSD_ENOMEM (none may reach the packet decoder the reset could not
 * make), and csd_flow_free() releases all of it (the sanitizer build's
 * leak check). An image whose address map cannot be made says
 * CSD_ENOMEM on csd_image_read(), not that the address is unmapped. The
 * allocations are made to fail by wrapping the library's allocator of
 * zeroed tables and malloc at link time (test_alloc_fail.mk).
 */
#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "csdec.h"

void *__real_csdi_zeroed_new(size_t size, unsigned flags);
void *__wrap_csdi_zeroed_new(size_t size, unsigned flags);

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

static int fail_tables, fail_malloc;

void *__wrap_csdi_zeroed_new(size_t size, unsigned flags)
{
	return fail_tables ? NULL : __real_csdi_zeroed_new(size, flags);
}

void *__wrap_malloc(size_t size)
{
	return fail_malloc ? NULL : __real_malloc(size);
}

static void image_map_fails(void)
{
	static const uint8_t code[16] = { 1, 2, 3 };
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	if (!img)
		return;
	CHECK(csd_image_add_buffer(img, 0x1000, code, sizeof(code), 0) >= 0);
	uint8_t buf[4];
	fail_malloc = 1;
	CHECK_EQ(csd_image_read(img, 0x1000, buf, sizeof(buf)), CSD_ENOMEM);
	fail_malloc = 0;
	CHECK_EQ(csd_image_read(img, 0x1000, buf, sizeof(buf)), 4);
	CHECK_EQ(buf[2], 3);
	CHECK_EQ(csd_image_read(img, 0x2000, buf, sizeof(buf)), CSD_ENOMAP);
	csd_image_free(img);
}

static void dead_decoder(uint32_t protocol)
{
	static const uint8_t code[64];
	csd_image *img = csd_image_new();
	CHECK(img != NULL);
	CHECK(csd_image_add_buffer(img, 0x1000, code, sizeof(code), 0) >= 0);
	struct csd_trace_config tc = { .size = sizeof(tc), .protocol = protocol, .trace_id = 0x10 };
	struct csd_flow_config fc = { .size = sizeof(fc), .trace = &tc, .image = img };
	csd_flow_decoder *dec = csd_flow_new(&fc);
	CHECK(dec != NULL);
	if (!dec) {
		csd_image_free(img);
		return;
	}
	/* A state saved before, as a chunk's would be. */
	csd_flow_state *st = NULL;
	CHECK_EQ(csd_flow_state_save(dec, &st), CSD_OK);

	fail_tables = 1;
	CHECK_EQ(csd_flow_reset(dec), CSD_ENOMEM);
	fail_tables = 0;

	static const uint8_t bytes[] = { 0, 0, 0, 0, 0, 0x80 };
	struct csd_bytes b = { .data = bytes, .size = sizeof(bytes) };
	struct csd_record rec;
	const struct csd_record *recs = NULL;
	struct csd_packet pkt;
	csd_flow_state *st2 = NULL;
	CHECK_EQ(csd_flow_feed(dec, &b), CSD_ENOMEM);
	CHECK_EQ(csd_flow_next(dec, &rec), CSD_ENOMEM);
	CHECK_EQ(csd_flow_next_batch(dec, &recs), CSD_ENOMEM);
	CHECK_EQ(csd_flow_finish(dec), CSD_ENOMEM);
	CHECK_EQ(csd_flow_last_packet(dec, &pkt), CSD_ENOMEM);
	CHECK_EQ(csd_flow_state_save(dec, &st2), CSD_ENOMEM);
	CHECK(st2 == NULL);
	CHECK_EQ(csd_flow_state_match(dec, st), CSD_ENOMEM);
	CHECK_EQ(csd_flow_state_join(st, dec), CSD_ENOMEM);
	CHECK_EQ(csd_flow_state_complete(st, dec), CSD_ENOMEM);
	/* Once more: still nothing to reset from. */
	CHECK_EQ(csd_flow_reset(dec), CSD_ENOMEM);
	csd_flow_state_free(st);
	csd_flow_free(dec);
	csd_image_free(img);
}

int main(void)
{
	dead_decoder(CSD_PROTO_ETM3);
	dead_decoder(CSD_PROTO_PTM);
	image_map_fails();
	return check_done("test_alloc_fail");
}
