/* common.c - names and strings shared by every layer. */
#include <string.h>

#include "csdec_internal.h"

#define CSD_STR2(x) #x
#define CSD_STR(x) CSD_STR2(x)

const char *csd_version(void)
{
	return CSD_STR(CSDEC_VERSION_MAJOR) "." CSD_STR(CSDEC_VERSION_MINOR) "." CSD_STR(CSDEC_VERSION_PATCH);
}

const char *csd_errstr(int err)
{
	switch (err) {
	case CSD_OK: return "success";
	case CSD_EINVAL: return "invalid argument";
	case CSD_ENOMEM: return "out of memory";
	case CSD_EAGAIN: return "more input needed";
	case CSD_EEOS: return "end of stream";
	case CSD_EIO: return "input/output error";
	case CSD_EFORMAT: return "malformed input file";
	case CSD_ENOENT: return "not found";
	case CSD_EBADPKT: return "packet cannot be encoded";
	case CSD_ENOSPC: return "output buffer too small";
	case CSD_EUNSUPPORTED: return "not supported";
	case CSD_ENOMAP: return "memory not accessible";
	}
	return "unknown error";
}

const char *csd_isa_name(int isa)
{
	switch (isa) {
	case CSD_ISA_ARM: return "A32";
	case CSD_ISA_THUMB: return "T32";
	case CSD_ISA_THUMBEE: return "ThumbEE";
	case CSD_ISA_JAZELLE: return "Jazelle";
	}
	return "unknown";
}

static const char *const pkt_type_names[CSD_PKT_TYPE_COUNT] = {
	[CSD_PKT_NOSYNC] = "nosync",
	[CSD_PKT_ASYNC] = "async",
	[CSD_PKT_ISYNC] = "isync",
	[CSD_PKT_PHEADER] = "pheader",
	[CSD_PKT_ATOM] = "atom",
	[CSD_PKT_BRANCH] = "branch",
	[CSD_PKT_WAYPOINT] = "waypoint",
	[CSD_PKT_CYCLE_COUNT] = "cycle_count",
	[CSD_PKT_CONTEXT_ID] = "context_id",
	[CSD_PKT_VMID] = "vmid",
	[CSD_PKT_TIMESTAMP] = "timestamp",
	[CSD_PKT_TRIGGER] = "trigger",
	[CSD_PKT_IGNORE] = "ignore",
	[CSD_PKT_EXCEPTION_RETURN] = "exception_return",
	[CSD_PKT_EXCEPTION_ENTRY] = "exception_entry",
	[CSD_PKT_EXCEPTION_EXIT] = "exception_exit",
	[CSD_PKT_NORMAL_DATA] = "normal_data",
	[CSD_PKT_OOO_DATA] = "ooo_data",
	[CSD_PKT_OOO_PLACEHOLDER] = "ooo_placeholder",
	[CSD_PKT_STORE_FAILED] = "store_failed",
	[CSD_PKT_VALUE_NOT_TRACED] = "value_not_traced",
	[CSD_PKT_DATA_SUPPRESSED] = "data_suppressed",
	[CSD_PKT_ERROR] = "error",
	[CSD_PKT_TRUNCATED] = "truncated",
};

const char *csd_pkt_type_name(int type)
{
	if (type <= 0 || type >= CSD_PKT_TYPE_COUNT || !pkt_type_names[type])
		return "unknown";
	return pkt_type_names[type];
}

const char *csd_reason_name(int reason)
{
	switch (reason) {
	case CSD_REASON_PERIODIC: return "periodic";
	case CSD_REASON_TRACE_ON: return "trace_on";
	case CSD_REASON_OVERFLOW: return "overflow";
	case CSD_REASON_DEBUG_EXIT: return "debug_exit";
	}
	return "unknown";
}

int csd_pkt_brief_expand(const struct csd_pkt_brief *brief, uint64_t base, struct csd_packet *pkt)
{
	if (!brief || !pkt)
		return CSD_EINVAL;
	memset(pkt, 0, sizeof(*pkt));
	pkt->type = brief->type;
	pkt->offset = base + brief->offset;
	pkt->size = brief->size;
	pkt->cycle_count = brief->cycle_count;
	if (brief->flags & CSD_BRIEF_CYCLE_COUNT)
		pkt->flags |= CSD_PKTF_CYCLE_COUNT;
	if (brief->type == CSD_PKT_BRANCH) {
		pkt->addr = brief->addr;
		pkt->isa = (uint8_t)CSD_BRIEF_ISA_OF(brief);
		pkt->addr_bytes = (uint8_t)CSD_BRIEF_ADDR_BYTES(brief);
		if (brief->flags & CSD_BRIEF_ISA)
			pkt->flags |= CSD_PKTF_ISA;
	} else if (brief->type == CSD_PKT_ISYNC) {
		pkt->addr = brief->addr;
		pkt->isa = (uint8_t)CSD_BRIEF_ISA_OF(brief);
		pkt->reason = (uint8_t)CSD_BRIEF_REASON_OF(brief);
		pkt->flags |= CSD_PKTF_ISA | CSD_PKTF_SECURITY;
		if (CSD_BRIEF_NS_OF(brief))
			pkt->flags |= CSD_PKTF_NS;
	} else if (brief->type == CSD_PKT_TIMESTAMP) {
		pkt->timestamp = CSD_BRIEF_TIMESTAMP_OF(brief);
		pkt->ts_bits = (uint8_t)CSD_BRIEF_TS_BITS_OF(brief);
		pkt->cycle_count = 0;
	} else if (brief->type == CSD_PKT_PHEADER || brief->type == CSD_PKT_ATOM) {
		pkt->atoms.en = brief->atoms.en;
		pkt->atoms.num = brief->num_atoms;
		pkt->atoms.w = brief->atoms.w;
		pkt->atoms.format = brief->atoms.format;
	}
	return CSD_OK;
}
