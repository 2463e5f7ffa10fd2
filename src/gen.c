/*
 * gen.c - trace generator (see gen.h): executed instructions -> the
 * ETMv3 / PTM packets hardware would emit, through the library's encoders.
 *
 * Each instruction is settled when its successor is known. What the trace
 * then says, per protocol:
 *   PTM   waypoints (branches, ISB, DMB/DSB if ETMCCER[24]) give atoms; a
 *         taken indirect branch gives a branch address packet, or only an
 *         E atom when the return stack predicted it; an SVC is upgraded to a
 *         waypoint: waypoint update, then exception branch packet.
 *   ETMv3 every instruction gives an atom; a taken indirect branch adds a
 *         branch address packet after the P-header holding its atom; an SVC
 *         is followed by an exception branch packet.
 * ETMv3 data trace (ETMCR[3:2]): the accesses the log gives an instruction
 * become data packets right after the P-header holding its atom (IHI 0014
 * 7.4), one per transfer of up to 32 bits (a doubleword is two, low word
 * first), the address in the first and wherever a transfer does not follow
 * the one before (7.4.4, e.g. SWP), compressed against the last data
 * address by the encoder (7.4.2); values with leading zero bytes dropped
 * (the SS field). A conditional load/store that made no access failed its
 * condition (N atom); a store-exclusive that made none failed: a Normal
 * data packet with value 0, then Store failed (7.4.7), which needs value
 * tracing (without it nothing is traced for it: the log does not say
 * which address it would have used). Out of order (7.4.3): a placeholder
 * with a tag 1-3 stands for the load, and its Out-of-order data packet
 * follows the next data instruction's packets (or comes before an I-sync,
 * or at the end).
 * Data-only mode (ETMCR[20], 7.4.10): no P-headers, branch or exception
 * packets; I-syncs in their data-only form (no address) where the
 * instruction trace would have one, and the data packets as above.
 * Cycle-accurate mode charges each instruction a deterministic pseudo-random
 * number of cycles (sometimes hundreds, to exercise long counts).
 */
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "gen.h"
#include "image.h"

#define RSTACK_DEPTH 4        /* a small hardware return stack: overflow happens */
#define PTM_ATOMS_MAX 5
#define ETM3_E_MAX 15
#define ETM3_CA_WE_MAX 7
#define SVC_EXCEPTION 10      /* exception number of SVC, A and R profile */
#define GAP_CYCLES 97         /* cycles spent in the kernel per system call */
#define M_VECTORS 256         /* ARMv7-M vector table entries looked at */
#define M_NEST 16             /* exception nesting tracked (ARMv7-M) */

struct csdi_gen {
	struct csdi_gen_config cfg;
	csd_image *img;
	struct csdi_image_window img_win;
	csdi_gen_sink sink;
	void *ctx;
	int ptm;                  /* else ETMv3 */
	int ca, ts_on, rstack_on, cid_bytes, fmt4_ok;
	uint32_t wp_flags;
	csd_etm3_encoder *e3;
	csd_ptm_encoder *pe;
	int err;
	struct csdi_gen_stats st;

	int have_prev;
	uint32_t prev_addr;
	uint8_t prev_isa;

	int started;              /* an A-sync was written */
	int tracing;              /* an I-sync was written and trace is on */
	uint64_t since_sync;      /* bytes since the last A-sync */
	uint64_t gap_cycles;      /* cycles while trace was off */
	unsigned wp_since_ts;
	uint64_t ts;

	/* PTM */
	uint32_t atom_en;
	unsigned atom_num;
	unsigned nonwp;           /* instructions since the last waypoint */
	uint64_t cyc_acc;         /* cycles since the last cycle count written */
	uint32_t rs_addr[RSTACK_DEPTH];
	uint8_t rs_isa[RSTACK_DEPTH];
	unsigned rs_n;

	/* ETMv3 */
	unsigned e_run;           /* E atoms (non-CA) or WE pairs (CA) pending in a format 1 header */

	/* ETMv3 data trace: the accesses of the instruction given last. */
	int data_addr_on, data_value_on;
	int data_only;            /* ETMCR[20]: no instruction trace */
	struct gen_beat {
		uint32_t addr, value;
		uint8_t dir, size;
	} beat[2 * CSDI_GEN_DATA_MAX];
	unsigned nbeat;
	uint32_t last_daddr;      /* the last data address traced */
	/* Out-of-order loads whose data is still to come (tags 1-3). */
	uint32_t ooo_value[3];
	uint8_t ooo_tag[3];
	unsigned nooo, next_tag;
	int ooo_toggle;

	/* ARMv7-M: exceptions are seen as jumps to vector table handlers. */
	int mprof;
	int exit_pkt;             /* ETMv3.4+: exception exit packets */
	uint32_t vec[M_VECTORS];  /* handler addresses (bit 0 cleared), 0 = none */
	unsigned nest;            /* exceptions entered and not yet returned */
	/* Calls made and not returned, per nesting level (0: thread mode):
	 * a return-like instruction at depth 0 of a handler is its
	 * exception return. */
	unsigned depth[M_NEST + 1];
};

static struct csd_packet packet(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static void emit(struct csdi_gen *g, const struct csd_packet *p)
{
	uint8_t buf[64];
	if (g->err)
		return;
	int n = g->ptm ? csd_ptm_enc_packet(g->pe, p, buf, sizeof(buf)) : csd_etm3_enc_packet(g->e3, p, buf, sizeof(buf));
	if (n < 0) {
		g->err = n;
		return;
	}
	int rc = g->sink(g->ctx, buf, (size_t)n);
	if (rc < 0) {
		g->err = rc;
		return;
	}
	g->st.bytes += (uint64_t)n;
	g->st.packets++;
	g->since_sync += (uint64_t)n;
	if ((p->flags & CSD_PKTF_CYCLE_COUNT) || p->type == CSD_PKT_CYCLE_COUNT)
		g->st.cycles += p->cycle_count;
	if (p->type == CSD_PKT_PHEADER)
		g->st.cycles += p->atoms.w;
}

/* ------------------------------------------------------------------ */
/* PTM packets */

static void ptm_flush_atoms(struct csdi_gen *g)
{
	if (!g->atom_num)
		return;
	struct csd_packet p = packet(CSD_PKT_ATOM);
	p.atoms.en = g->atom_en;
	p.atoms.num = (uint8_t)g->atom_num;
	emit(g, &p);
	g->atom_en = 0;
	g->atom_num = 0;
}

static void ptm_take_cycles(struct csdi_gen *g, struct csd_packet *p)
{
	if (!g->ca)
		return;
	p->flags |= CSD_PKTF_CYCLE_COUNT;
	p->cycle_count = (uint32_t)g->cyc_acc;
	g->cyc_acc = 0;
}

static void ptm_atom(struct csdi_gen *g, int e)
{
	if (g->ca) {
		struct csd_packet p = packet(CSD_PKT_ATOM);
		p.atoms.en = (uint32_t)e;
		p.atoms.num = 1;
		ptm_take_cycles(g, &p);
		emit(g, &p);
		return;
	}
	g->atom_en |= (uint32_t)e << g->atom_num;
	if (++g->atom_num == PTM_ATOMS_MAX)
		ptm_flush_atoms(g);
}

/* ------------------------------------------------------------------ */
/* ETMv3 P-headers */

static void etm3_flush(struct csdi_gen *g)
{
	if (!g->e_run)
		return;
	struct csd_packet p = packet(CSD_PKT_PHEADER);
	p.atoms.format = 1;
	p.atoms.num = (uint8_t)g->e_run;
	p.atoms.en = (1u << g->e_run) - 1;
	p.atoms.w = g->ca ? (uint8_t)g->e_run : 0;
	emit(g, &p);
	g->e_run = 0;
}

static void etm3_header(struct csdi_gen *g, unsigned format, unsigned w, unsigned num, uint32_t en)
{
	struct csd_packet p = packet(CSD_PKT_PHEADER);
	p.atoms.format = (uint8_t)format;
	p.atoms.w = (uint8_t)w;
	p.atoms.num = (uint8_t)num;
	p.atoms.en = en;
	emit(g, &p);
}

/* One instruction atom after `cycles` cycles (cycle-accurate mode). */
static void etm3_atom(struct csdi_gen *g, int e, uint32_t cycles)
{
	if (g->data_only)
		return;
	if (!g->ca) {
		if (e) {
			if (++g->e_run == ETM3_E_MAX)
				etm3_flush(g);
		} else {
			/* E..E N in one format 1 header. */
			etm3_header(g, 1, 0, g->e_run + 1, (1u << g->e_run) - 1);
			g->e_run = 0;
		}
		return;
	}
	if (cycles == 1) {
		if (e) {
			if (++g->e_run == ETM3_CA_WE_MAX)
				etm3_flush(g);
		} else {
			etm3_header(g, 1, g->e_run + 1, g->e_run + 1, (1u << g->e_run) - 1);
			g->e_run = 0;
		}
		return;
	}
	etm3_flush(g);
	if (cycles == 0) {
		etm3_header(g, 4, 0, 1, (uint32_t)e);
		return;
	}
	uint32_t lead = cycles - 1;
	if (lead > 16) {
		struct csd_packet p = packet(CSD_PKT_CYCLE_COUNT);
		p.cycle_count = lead;
		emit(g, &p);
		lead = 0;
	}
	while (lead) {
		unsigned w = lead > 8 ? 8 : lead;
		etm3_header(g, 3, w, 0, 0);
		lead -= w;
	}
	if (e)
		etm3_header(g, 3, 1, 1, 1);
	else
		etm3_header(g, 1, 1, 1, 0);
}


/* ------------------------------------------------------------------ */
/* ETMv3 data trace */

/* Value bytes after dropping leading zero bytes: 0, 1, 2 or 4 (SS). */
static uint8_t value_bytes(uint32_t v)
{
	return v == 0 ? 0 : v < 0x100u ? 1 : v < 0x10000u ? 2 : 4;
}

/* The Out-of-order data packets of the loads still waiting. */
static void ooo_flush(struct csdi_gen *g)
{
	for (unsigned i = 0; i < g->nooo; i++) {
		struct csd_packet p = packet(CSD_PKT_OOO_DATA);
		p.tag = g->ooo_tag[i];
		p.flags = CSD_PKTF_DATA_VALUE;
		p.data_value = g->ooo_value[i];
		p.data_size = value_bytes(p.data_value);
		emit(g, &p);
	}
	g->nooo = 0;
}

/* The atom of data instruction `in` (e as the flow says) given its
 * accesses: one that made none and has a condition failed it. */
static int data_atom(const struct csdi_gen *g, const struct csdi_insn *in, const struct csdi_mem *m, int e)
{
	if (m->count && !g->nbeat && in->cond != CSDI_COND_AL && !(m->flags & CSDI_MEMF_EXCLUSIVE))
		return 0;
	return e;
}

/* The data packets of the instruction just traced (its atom written). */
static void data_packets(struct csdi_gen *g, const struct csdi_mem *m)
{
	if (!g->nbeat && !m->count)
		return;
	etm3_flush(g);
	if (!g->nbeat) {
		if (m->dir == CSDI_MEM_STORE && (m->flags & CSDI_MEMF_EXCLUSIVE) && g->data_value_on) {
			struct csd_packet p = packet(CSD_PKT_NORMAL_DATA);
			p.flags = CSD_PKTF_DATA_VALUE;
			if (g->data_addr_on) {
				p.flags |= CSD_PKTF_DATA_ADDR;
				p.data_addr = g->last_daddr;
			}
			emit(g, &p);
			struct csd_packet f = packet(CSD_PKT_STORE_FAILED);
			emit(g, &f);
		}
		return;
	}
	int ooo = 0;
	if (g->cfg.data_out_of_order && g->data_value_on && m->dir == CSDI_MEM_LOAD && g->nbeat == 1 &&
	    !(m->flags & CSDI_MEMF_EXCLUSIVE))
		ooo = (g->ooo_toggle ^= 1);
	uint32_t next = 0;
	for (unsigned i = 0; i < g->nbeat; i++) {
		const struct gen_beat *b = &g->beat[i];
		struct csd_packet p = packet(ooo ? CSD_PKT_OOO_PLACEHOLDER : CSD_PKT_NORMAL_DATA);
		if (g->data_addr_on && (i == 0 || b->addr != next)) {
			p.flags |= CSD_PKTF_DATA_ADDR;
			p.data_addr = b->addr;
			g->last_daddr = b->addr;
		}
		/* Data-only: the decoder knows no transfer size, so only
		 * a word after the previous transfer goes without address. */
		next = b->addr + (g->data_only ? 4u : b->size);
		if (ooo) {
			if (g->nooo == 3)
				ooo_flush(g);
			g->next_tag = g->next_tag % 3 + 1;
			p.tag = (uint8_t)g->next_tag;
			g->ooo_tag[g->nooo] = p.tag;
			g->ooo_value[g->nooo++] = b->value;
		} else if (g->data_value_on) {
			p.flags |= CSD_PKTF_DATA_VALUE;
			p.data_value = b->value;
			p.data_size = value_bytes(b->value);
		}
		emit(g, &p);
	}
	if (!ooo)
		ooo_flush(g);
}

/* ------------------------------------------------------------------ */
/* Both protocols */

static void flush_atoms(struct csdi_gen *g)
{
	if (g->ptm)
		ptm_flush_atoms(g);
	else
		etm3_flush(g);
}

static void ooo_flush(struct csdi_gen *g);

static void isync(struct csdi_gen *g, uint32_t addr, uint8_t isa, unsigned reason)
{
	flush_atoms(g);
	ooo_flush(g);
	if (g->started && reason == CSD_REASON_PERIODIC && g->cfg.sync_point && !g->err) {
		int rc = g->cfg.sync_point(g->ctx);
		if (rc < 0)
			g->err = rc;
	}
	if (!g->started || reason == CSD_REASON_PERIODIC) {
		struct csd_packet a = packet(CSD_PKT_ASYNC);
		emit(g, &a);
		g->started = 1;
		g->since_sync = 0;
	}
	struct csd_packet p = packet(CSD_PKT_ISYNC);
	p.addr = addr;
	p.isa = isa;
	p.reason = (uint8_t)reason;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	if (g->cid_bytes) {
		p.flags |= CSD_PKTF_CONTEXT_ID;
		p.context_id = g->cid_bytes == 4 ? g->cfg.context_id
						 : g->cfg.context_id & ((1u << (8 * g->cid_bytes)) - 1);
	}
	if (g->ca && reason != CSD_REASON_PERIODIC) {
		/* Non-periodic I-syncs carry the cycles of the gap before them. */
		p.flags |= CSD_PKTF_CYCLE_COUNT;
		uint64_t c = g->gap_cycles + (g->ptm ? g->cyc_acc : 0);
		p.cycle_count = (uint32_t)(c ? c : 1);
		g->cyc_acc = 0;
		g->gap_cycles = 0;
	}
	emit(g, &p);
	g->tracing = 1;
	g->nonwp = 0;
	/* Start the return stack afresh, so a decoder that begins at this
	 * I-sync never needs an entry pushed before it. */
	g->rs_n = 0;
}

static void branch_packet(struct csdi_gen *g, uint32_t addr, uint8_t isa, unsigned exception)
{
	if (g->data_only)
		return;
	flush_atoms(g);
	struct csd_packet p = packet(CSD_PKT_BRANCH);
	p.addr = addr;
	p.isa = isa;
	p.flags = CSD_PKTF_ISA;
	if (exception) {
		p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
		p.exception = (uint16_t)exception;
		g->st.exceptions++;
	}
	if (g->ptm)
		ptm_take_cycles(g, &p);
	emit(g, &p);
}

static void waypoint_update(struct csdi_gen *g, uint32_t addr, uint8_t isa)
{
	ptm_flush_atoms(g);
	struct csd_packet p = packet(CSD_PKT_WAYPOINT);
	p.addr = addr;
	p.isa = isa;
	/* The encoder follows the instruction set only through address
	 * packets; atoms of a BLX or of an ISA change since the last one
	 * left it behind, so the waypoint states it. */
	p.flags = CSD_PKTF_ISA;
	emit(g, &p);
	g->nonwp = 0;
}

static void timestamp(struct csdi_gen *g)
{
	flush_atoms(g);
	struct csd_packet p = packet(CSD_PKT_TIMESTAMP);
	/* From the run's instruction count, which every source of the run
	 * shares: their timestamps are then one clock (a merge by time sees
	 * the run's order), whatever packets each emits. */
	g->ts = 1000 + 8 * g->st.insns;
	p.timestamp = g->ts;
	if (g->ptm)
		ptm_take_cycles(g, &p);
	emit(g, &p);
	g->wp_since_ts = 0;
}

static uint32_t insn_cycles(const struct csdi_gen *g, uint32_t addr)
{
	uint32_t h = (addr * 2654435761u) >> 24;
	if ((h % 101) == 7)
		return 20 + (h & 0x3FF);  /* now and then a stall */
	if ((h & 15) == 15 && (g->ptm || g->fmt4_ok))
		return 0;
	return 1 + (h & 3);
}

static int is_svc(const struct csdi_insn *in)
{
	if (!(in->flags & CSDI_INSNF_EXCEPTION))
		return 0;
	if (in->isa == CSD_ISA_ARM)
		return (in->opcode & 0x0F000000u) == 0x0F000000u;
	return in->size == 2 && (in->opcode & 0xFF00u) == 0xDF00u;
}

static int decode_at(struct csdi_gen *g, uint32_t addr, uint8_t isa, struct csdi_insn *in)
{
	const uint8_t *p;
	size_t n = csdi_image_fetch(g->img, &g->img_win, addr, &p);
	if (n == 0)
		return CSD_ENOMAP;
	if (n < 4) {
		uint8_t b[4];
		int got = csd_image_read(g->img, addr, b, sizeof(b));
		return got > 0 ? csdi_isa_decode(addr, b, (size_t)got, isa, in) : CSD_ENOMAP;
	}
	return csdi_isa_decode(addr, p, n, isa, in);
}

static void rstack_push(struct csdi_gen *g, uint32_t addr, uint8_t isa)
{
	if (g->rs_n == RSTACK_DEPTH) {
		/* Full: the oldest entry is discarded. */
		memmove(g->rs_addr, g->rs_addr + 1, (RSTACK_DEPTH - 1) * sizeof(g->rs_addr[0]));
		memmove(g->rs_isa, g->rs_isa + 1, RSTACK_DEPTH - 1);
		g->rs_n--;
	}
	g->rs_addr[g->rs_n] = addr;
	g->rs_isa[g->rs_n] = isa;
	g->rs_n++;
}

/* The value ETMv3 traces for ARMv7-M exception number n (IHI 0014 /
 * Cortex-M3 TRM "exception tracing mapping"): IRQ0 is 8, IRQ1-7 are 1-7,
 * IRQ8 and up are 24 and up; the system exceptions have fixed values. */
static unsigned m_traced_exception(unsigned n)
{
	static const uint8_t sys[16] = { 0, 17, 10, 19, 13, 21, 9, 0, 0, 0, 0, 11, 12, 0, 14, 15 };
	if (n < 16)
		return sys[n];
	unsigned irq = n - 16;
	return irq == 0 ? 8 : irq < 8 ? irq : irq + 16;
}

/* The exception number whose handler starts at addr, or 0. */
static unsigned m_handler(const struct csdi_gen *g, uint32_t addr)
{
	for (unsigned i = 2; i < M_VECTORS; i++)
		if (g->vec[i] && g->vec[i] == addr)
			return i;
	return 0;
}

/* A function return on ARMv7-M (Thumb): BX LR, POP {..., pc}, LDMIA sp!
 * with the PC, LDR pc, [sp], #4. Switch tables (TBB/TBH, LDR pc from a
 * table) are indirect branches too, but not returns. */
static int m_return_like(const struct csdi_insn *in)
{
	uint32_t op = in->opcode;
	if (in->cls != CSDI_INSN_INDIRECT || in->isa == CSD_ISA_ARM)
		return 0;
	if (in->size == 2)
		return op == 0x4770u || (op & 0xFF00u) == 0xBD00u;
	return (op & 0xFFFF8000u) == 0xE8BD8000u || op == 0xF85DFB04u;
}

/* Calls and returns move the call depth of the current exception level. */
static void m_track_depth(struct csdi_gen *g, const struct csdi_insn *in, int taken)
{
	unsigned *d = &g->depth[g->nest];
	if (!taken)
		return;
	if ((in->flags & CSDI_INSNF_LINK) && in->cls != CSDI_INSN_NORMAL)
		(*d)++;
	else if (m_return_like(in) && *d)
		(*d)--;
}

/* Settle instruction (a, isa) now that its successor is known (has_next). */
static void step(struct csdi_gen *g, uint32_t a, uint8_t isa, int has_next, uint32_t na, uint8_t nisa)
{
	struct csdi_insn in;
	g->st.insns++;
	if (decode_at(g, a, isa, &in) < 0) {
		/* Not in the image: untraced, like code outside the trace filter. */
		g->gap_cycles += 1;
		return;
	}
	struct csdi_insn next_in;
	int next_traced = has_next && decode_at(g, na, nisa, &next_in) >= 0;
	uint32_t cycles = g->ca ? insn_cycles(g, a) : 0;
	uint32_t seq = a + in.size;

	if (!g->tracing) {
		isync(g, a, isa, CSD_REASON_TRACE_ON);
	} else if (g->since_sync >= g->cfg.sync_period && (!g->ptm || g->nonwp == 0)) {
		isync(g, a, isa, CSD_REASON_PERIODIC);
	}
	g->st.traced++;

	/* ARMv7-M: the successor is a handler the instruction did not branch
	 * to: an exception was taken after it (or, from an exception return,
	 * tail-chained). Trace goes on in the handler. */
	if (g->mprof && has_next && next_traced && !g->ptm) {
		unsigned n = m_handler(g, na);
		int exc_return = g->nest && g->depth[g->nest] == 0 && m_return_like(&in);
		if (n && !(in.cls == CSDI_INSN_DIRECT && in.target == na)) {
			etm3_atom(g, 1, cycles);
			if (exc_return) {
				/* Tail chaining: the handler's return goes straight
				 * into the next handler, at the same level. */
				if (g->exit_pkt) {
					etm3_flush(g);
					struct csd_packet x = packet(CSD_PKT_EXCEPTION_EXIT);
					emit(g, &x);
				}
			} else {
				/* The instruction completed before the exception. */
				m_track_depth(g, &in, 1);
				if (g->nest < M_NEST)
					g->nest++;
				g->depth[g->nest] = 0;
			}
			branch_packet(g, na, CSD_ISA_THUMB, m_traced_exception(n));
			return;
		}
		if (exc_return && na != seq) {
			/* Back from the handler: exception exit, then the branch
			 * packet for the return address (IHI 0014 7.6). */
			g->nest--;
			etm3_atom(g, 1, cycles);
			if (g->exit_pkt) {
				etm3_flush(g);
				struct csd_packet x = packet(CSD_PKT_EXCEPTION_EXIT);
				emit(g, &x);
			}
			branch_packet(g, na, nisa, 0);
			return;
		}
	}

	/* A system call: SVC exception to the vector, kernel not traced,
	 * trace back on at the return address. */
	if (!g->mprof && is_svc(&in) && (!has_next || na == seq)) {
		if (g->ptm) {
			g->cyc_acc += cycles;
			waypoint_update(g, a, isa);
		} else {
			etm3_atom(g, 1, cycles);
		}
		branch_packet(g, g->cfg.svc_vector, CSD_ISA_ARM, SVC_EXCEPTION);
		g->tracing = 0;
		g->gap_cycles += GAP_CYCLES;
		g->st.gaps++;
		return;
	}

	int wp = g->ptm ? (in.cls != CSDI_INSN_NORMAL || (in.flags & g->wp_flags)) : 1;
	int explained = 1, taken = 0;
	if (!has_next) {
		explained = 0;
	} else if (in.cls == CSDI_INSN_DIRECT) {
		if (na == in.target && nisa == in.target_isa)
			taken = 1;
		else if (!(na == seq && nisa == isa))
			explained = 0;
	} else if (in.cls == CSDI_INSN_INDIRECT) {
		/* Back to the next instruction with a condition: not executed. */
		taken = !(na == seq && nisa == isa && in.cond != CSDI_COND_AL);
	} else if (!(na == seq && nisa == isa)) {
		explained = 0;
	}
	if (explained && !next_traced)
		explained = 0; /* going into code outside the image: trace off */

	if (g->ptm) {
		g->cyc_acc += cycles;
		if (!wp) {
			g->nonwp++;
			if (!explained) {
				waypoint_update(g, a, isa);
				g->tracing = 0;
				g->st.gaps++;
			}
			return;
		}
		g->nonwp = 0;
		if (in.cls == CSDI_INSN_INDIRECT && taken && explained) {
			if (g->rstack_on && g->rs_n && g->rs_addr[g->rs_n - 1] == na && g->rs_isa[g->rs_n - 1] == nisa) {
				g->rs_n--;
				ptm_atom(g, 1);
			} else {
				branch_packet(g, na, nisa, 0);
			}
		} else {
			ptm_atom(g, taken || !explained || in.cls == CSDI_INSN_NORMAL);
		}
		if ((taken || !explained) && (in.flags & CSDI_INSNF_LINK) && g->rstack_on)
			rstack_push(g, seq, isa);
	} else {
		int e = taken || !explained || in.cls == CSDI_INSN_NORMAL;
		struct csdi_mem mem = { 0 };
		if (g->data_addr_on || g->data_value_on) {
			csdi_isa_mem(&in, &mem);
			e = data_atom(g, &in, &mem, e);
		}
		etm3_atom(g, e, cycles);
		if ((g->data_addr_on || g->data_value_on) && e)
			data_packets(g, &mem);
		if (in.cls == CSDI_INSN_INDIRECT && taken && explained)
			branch_packet(g, na, nisa, 0);
		if (g->mprof)
			m_track_depth(g, &in, taken && explained);
	}
	if (!explained) {
		flush_atoms(g);
		g->tracing = 0;
		g->st.gaps++;
		return;
	}
	if (wp && g->ts_on && ++g->wp_since_ts >= g->cfg.timestamp_every)
		timestamp(g);
}

struct csdi_gen *csdi_gen_new(const struct csdi_gen_config *cfg, csd_image *img, csdi_gen_sink sink, void *ctx)
{
	if (!cfg || !img || !sink)
		return NULL;
	if (cfg->trace.protocol != CSD_PROTO_ETM3 && cfg->trace.protocol != CSD_PROTO_PTM)
		return NULL;
	struct csdi_gen *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = *cfg;
	g->cfg.trace.size = sizeof(g->cfg.trace);
	if (!g->cfg.sync_period)
		g->cfg.sync_period = 1024;
	if (!g->cfg.timestamp_every)
		g->cfg.timestamp_every = 256;
	if (!g->cfg.svc_vector)
		g->cfg.svc_vector = 0xFFFF0008u;
	g->img = img;
	g->sink = sink;
	g->ctx = ctx;
	g->ptm = cfg->trace.protocol == CSD_PROTO_PTM;
	uint32_t cr = cfg->trace.etmcr;
	g->ca = (cr >> 12) & 1;
	g->ts_on = (cr >> 28) & 1;
	g->rstack_on = g->ptm && ((cr >> 29) & 1);
	static const int cid[4] = { 0, 1, 2, 4 };
	g->cid_bytes = cid[(cr >> 14) & 3];
	/* ETMv3.3 and later have the format 4 P-header; ETMIDR 0 means 3.5. */
	uint32_t idr = cfg->trace.etmidr;
	if (!g->ptm && g->ts_on && idr != 0 && ((idr >> 4) & 0xF) < 5) {
		/* Timestamp packets came with ETMv3.5. */
		free(g);
		return NULL;
	}
	g->fmt4_ok = idr == 0 || ((idr >> 4) & 0xF) >= 3;
	g->wp_flags = CSDI_INSNF_ISB | ((cfg->trace.etmccer >> 24) & 1 ? CSDI_INSNF_DMB_DSB : 0);
	g->mprof = cfg->trace.core_profile == CSD_CORE_M;
	g->data_value_on = !g->ptm && ((cr >> 2) & 1);
	g->data_addr_on = !g->ptm && ((cr >> 3) & 1);
	g->data_only = !g->ptm && ((cr >> 20) & 1);
	if (g->data_only && (g->ca || g->ts_on)) {
		/* Neither has instructions to go with in data-only mode. */
		free(g);
		return NULL;
	}
	g->exit_pkt = idr == 0 || ((idr >> 4) & 0xF) >= 4;
	if (g->mprof) {
		/* The vector table at address 0 (VTOR's reset value). */
		for (unsigned i = 0; i < M_VECTORS; i++) {
			uint8_t w[4];
			if (csd_image_read(img, 4u * i, w, 4) != 4)
				break;
			uint32_t v = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
			g->vec[i] = i >= 2 && (v & 1) ? v & ~1u : 0;
		}
	}
	if (g->ptm)
		g->pe = csd_ptm_enc_new(&g->cfg.trace);
	else
		g->e3 = csd_etm3_enc_new(&g->cfg.trace);
	if (!g->pe && !g->e3) {
		free(g);
		return NULL;
	}
	return g;
}

void csdi_gen_free(struct csdi_gen *g)
{
	if (!g)
		return;
	csd_ptm_enc_free(g->pe);
	csd_etm3_enc_free(g->e3);
	free(g);
}

int csdi_gen_insn(struct csdi_gen *g, uint32_t addr, uint8_t isa)
{
	if (!g)
		return CSD_EINVAL;
	if (g->have_prev)
		step(g, g->prev_addr, g->prev_isa, 1, addr, isa);
	g->nbeat = 0;
	g->have_prev = 1;
	g->prev_addr = addr;
	g->prev_isa = isa;
	return g->err;
}

int csdi_gen_finish(struct csdi_gen *g)
{
	if (!g)
		return CSD_EINVAL;
	if (g->have_prev)
		step(g, g->prev_addr, g->prev_isa, 0, 0, 0);
	g->have_prev = 0;
	g->nbeat = 0;
	flush_atoms(g);
	if (!g->ptm)
		ooo_flush(g);
	return g->err;
}

int csdi_gen_data(struct csdi_gen *g, unsigned dir, uint32_t addr, unsigned size, uint64_t value)
{
	if (!g || (dir != CSDI_MEM_LOAD && dir != CSDI_MEM_STORE) ||
	    (size != 1 && size != 2 && size != 4 && size != 8) || (size < 8 && value >> (8 * size)))
		return CSD_EINVAL;
	if (!g->have_prev || (!g->data_addr_on && !g->data_value_on))
		return 0;
	unsigned n = size == 8 ? 2 : 1;
	if (g->nbeat + n > 2 * CSDI_GEN_DATA_MAX)
		return CSD_EINVAL;
	for (unsigned k = 0; k < n; k++) {
		struct gen_beat *b = &g->beat[g->nbeat++];
		b->addr = addr + 4 * k;
		b->value = (uint32_t)(value >> (32 * k));
		b->dir = (uint8_t)dir;
		b->size = (uint8_t)(size == 8 ? 4 : size);
	}
	return 0;
}

const struct csdi_gen_stats *csdi_gen_stats(const struct csdi_gen *g)
{
	return &g->st;
}
