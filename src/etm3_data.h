/* etm3_data.h - ETMv3 data trace (internal): ties data packets to the load
 * or store instruction that made them and yields CSD_REC_DATA records
 * (etm3_data.c). The flow decoder (etm3_flow.c) calls these hooks only
 * when csdi_etm3_data_new() made the state, i.e. ETMCR[3:2] is not 0. */
#ifndef CSD_ETM3_DATA_H
#define CSD_ETM3_DATA_H

#include "flow.h"

/* Make dec->u.etm3.data if the configuration traces data. Returns 0, or
 * CSD_ENOMEM. */
int csdi_etm3_data_new(csd_flow_decoder *dec);
void csdi_etm3_data_free(csd_flow_decoder *dec);
/* The instruction at addr (isa) is traced with an E (executed) or N atom,
 * before the walker moves past it. */
void csdi_etm3_data_insn(csd_flow_decoder *dec, uint32_t addr, uint8_t isa, int executed);
/* A data packet: Normal data, Out-of-order placeholder / data, Value not
 * traced, Store failed, Data suppressed. */
void csdi_etm3_data_packet(csd_flow_decoder *dec, const struct csd_packet *p);
/* A packet other than a data packet came (P-headers, branches, anything
 * else but Ignore): a Store failed after it has no data packet right
 * before it (IHI 0014 7.4.7). */
void csdi_etm3_data_other_packet(csd_flow_decoder *dec);
/* The record at queue position k (from the head) was removed
 * (csdi_flow_remove): the records made here that came after it moved one
 * place toward the head. */
void csdi_etm3_data_removed(csd_flow_decoder *dec, unsigned k);
/* Records from an out-of-order placeholder's on wait for its data: keep
 * dec->qready / dec->qmark before the oldest such record. */
void csdi_etm3_data_hold(csd_flow_decoder *dec);
/* Synchronisation lost: the data instruction and the placeholders are
 * forgotten (records already made stay as they are). */
void csdi_etm3_data_reset(csd_flow_decoder *dec);
/* The data trace's part of the decoder's semantic state (struct csdi_sem). */
void csdi_etm3_data_sem(const csd_flow_decoder *dec, struct csdi_sem *s);

#endif
