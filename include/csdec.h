/*
 * csdec.h - the one public header of libcsdec, a decoder for ARM CoreSight
 * program-flow trace: ETMv3 (ARM IHI 0014) and PTM/PFT (ARM IHI 0035).
 *
 * Layers (each usable on its own; docs/DESIGN.md has the map):
 *   snapshot reader      CoreSight snapshot directory -> buffers, sources, dumps
 *   perf.data reader     Linux perf recording -> CPUs, AUX trace pieces, sideband
 *   frame demultiplexer  capture bytes -> per-trace-ID byte runs
 *   packet decoders      per-ID bytes -> struct csd_packet (ETMv3, PTM)
 *   packet encoders      struct csd_packet -> bytes (tests, trace generator)
 *   memory image         buffers, files, ELF sections, callback -> code bytes
 *   flow decoder         per-ID bytes + image -> struct csd_record (executed
 *                        instructions, exceptions, trace gaps ...)
 *
 * Conventions
 *   - Every function that can fail returns an int: 0 (CSD_OK) or a positive
 *     count on success, a negative enum csd_error value on failure.
 *   - Decoders are opaque and allocated by *_new(); *_free(NULL) is a no-op.
 *   - Configuration structs start with a `size` member that the caller sets to
 *     sizeof(the struct) it was compiled with; the library accepts smaller
 *     (older) structs and treats missing members as zero.
 *   - Nothing in the library prints; nothing keeps a pointer to caller
 *     memory beyond what the function documents.
 */
#ifndef CSDEC_H
#define CSDEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CSDEC_VERSION_MAJOR 0
#define CSDEC_VERSION_MINOR 1
#define CSDEC_VERSION_PATCH 0

/** Library version as "MAJOR.MINOR.PATCH". Never fails. */
const char *csd_version(void);

/* ------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------- */

enum csd_error {
	CSD_OK = 0,            /**< success */
	CSD_EINVAL = -1,       /**< invalid argument: NULL pointer, bad size, value out of range */
	CSD_ENOMEM = -2,       /**< memory allocation failed */
	CSD_EAGAIN = -3,       /**< decoder needs more input (all bytes given were consumed) */
	CSD_EEOS = -4,         /**< end of stream: finished and fully drained */
	CSD_EIO = -5,          /**< a file could not be opened or read */
	CSD_EFORMAT = -6,      /**< malformed input file (snapshot .ini, ELF, ...) */
	CSD_ENOENT = -7,       /**< the named item (file, section, key, device, trace ID) does not exist */
	CSD_EBADPKT = -8,      /**< a packet cannot be encoded as given (field out of range for the protocol) */
	CSD_ENOSPC = -9,       /**< the output buffer is too small */
	CSD_EUNSUPPORTED = -10,/**< protocol, version or feature not supported (e.g. a pipe-mode perf.data file) */
	CSD_ENOMAP = -11,      /**< memory not accessible: no image section covers the address */
};

/** Short English description of an error code; never NULL. */
const char *csd_errstr(int err);

/* ------------------------------------------------------------------------
 * Common types
 * ---------------------------------------------------------------------- */

/** Instruction set state. */
enum csd_isa {
	CSD_ISA_UNKNOWN = 0,
	CSD_ISA_ARM = 1,       /**< A32 */
	CSD_ISA_THUMB = 2,     /**< T32 (Thumb and Thumb-2) */
	CSD_ISA_THUMBEE = 3,
	CSD_ISA_JAZELLE = 4,
};

/** Short name of an instruction set: "A32", "T32", "ThumbEE", "Jazelle", "unknown". */
const char *csd_isa_name(int isa);

enum csd_protocol {
	CSD_PROTO_UNKNOWN = 0,
	CSD_PROTO_ETM3 = 1,    /**< ETMv3.0 - ETMv3.5 */
	CSD_PROTO_PTM = 2,     /**< PFT 1.0 / 1.1 (PTM) */
};

/**
 * A run of trace bytes of one source together with where each byte sits in
 * the capture file. Input of the packet decoders, output of the frame
 * demultiplexer.
 */
struct csd_bytes {
	const uint8_t *data;
	size_t size;
	/** offsets[i] is the capture offset of data[i]; NULL means base + i. */
	const uint64_t *offsets;
	uint64_t base;
	/** Trace ID the bytes belong to (0 when not known). */
	uint8_t id;
};

/* ------------------------------------------------------------------------
 * Trace source configuration
 * ---------------------------------------------------------------------- */

/** Core profile, where it changes the meaning of trace (exception numbers). */
enum csd_core_profile {
	CSD_CORE_A = 0,        /**< Cortex-A / classic ARM (default) */
	CSD_CORE_R = 1,
	CSD_CORE_M = 2,        /**< ARMv7-M: Thumb only, exception numbers up to 511 */
};

/**
 * Configuration of one trace source, as the ETM/PTM registers were programmed
 * during capture. Everything the packet parsers need is derived from these:
 *   ETMCR   cycle-accurate (bit 12), context ID size (bits 15:14), timestamps
 *           (bit 28), VMID (bit 30), return stack (PTM bit 29), branch
 *           broadcast (bit 8), data trace (bits 3:2), data-only mode (bit 20)
 *   ETMCCER timestamp size and encoding, virtualisation extensions
 *   ETMIDR  protocol version (ETMv3.x / PFT1.x), alternative branch encoding
 */
struct csd_trace_config {
	size_t size;            /**< sizeof(struct csd_trace_config) */
	uint32_t protocol;      /**< enum csd_protocol */
	uint32_t etmcr;
	uint32_t etmccer;
	uint32_t etmidr;
	uint8_t trace_id;
	uint8_t core_profile;   /**< enum csd_core_profile */
};

/* ------------------------------------------------------------------------
 * Frame demultiplexer (CoreSight trace formatter)
 * ---------------------------------------------------------------------- */

enum csd_frame_format {
	/** One unformatted source: every byte belongs to config.raw_id. */
	CSD_FRAME_RAW = 0,
	/** 16-byte formatter frames aligned to the buffer start (ETB, ETF, ETR). */
	CSD_FRAME_ALIGNED = 1,
	/**
	 * Formatter frames on a trace port (TPIU, DSTREAM): frame
	 * synchronisation packets (FSYNC 0x7FFFFFFF, bytes FF FF FF 7F) give
	 * alignment and may appear between frames; half-word syncs (HSYNC
	 * 0x7FFF, bytes FF 7F) may appear at half-word positions inside frames
	 * and are removed. Where frames must be found without an FSYNC (the
	 * capture starts without one, or alignment was lost and none
	 * follows), the demultiplexer keeps up to 64 KiB of the capture and
	 * infers the alignment from the bytes (CSD_FRAME_ALIGN_INFERRED), or
	 * reports a CSD_FRAME_ERROR when no alignment gives valid frames. An
	 * FSYNC in the meantime takes precedence.
	 */
	CSD_FRAME_PORT = 2,
};

/** csd_frame_config.flags */
enum csd_frame_flag {
	/**
	 * Deliver each trace ID's bytes in batches (up to CSD_FRAME_BATCH
	 * bytes, or what the fed bytes held) instead of one CSD_FRAME_DATA per
	 * stretch between ID changes. Each ID's bytes keep their order and
	 * their offsets; the bytes of different IDs are no longer interleaved
	 * as in the capture. A CSD_FRAME_SYNC or CSD_FRAME_ERROR comes after
	 * the data of every ID up to the end of the frame it occurs in. A
	 * decoder per source then gets long runs (fewer calls, and each
	 * source's state stays in the cache while it decodes). Memory: about
	 * 9 bytes per batch byte for each trace ID seen. CSD_FRAME_RAW
	 * ignores it (the fed bytes are delivered as they are).
	 */
	CSD_FRAME_BY_ID = 1u << 0,
};

/** Batch size of CSD_FRAME_BY_ID, in trace bytes per ID. */
#define CSD_FRAME_BATCH 4096

struct csd_frame_config {
	size_t size;            /**< sizeof(struct csd_frame_config) */
	uint32_t format;        /**< enum csd_frame_format */
	uint8_t raw_id;         /**< CSD_FRAME_RAW: trace ID reported for every byte */
	uint32_t flags;         /**< enum csd_frame_flag bits */
};

/** What csd_frame_next() delivers. */
enum csd_frame_event {
	CSD_FRAME_DATA = 1,     /**< out->bytes holds trace bytes of one ID */
	CSD_FRAME_SYNC = 2,     /**< a frame synchronisation packet at out->offset */
	CSD_FRAME_ERROR = 3,    /**< bad frame bytes at out->offset; out->reason says why */
	/**
	 * CSD_FRAME_PORT: the frame alignment was inferred without an FSYNC;
	 * frames start at out->offset (out->reason says so). The bytes before
	 * it since the search began are dropped: a partial frame, or more
	 * after a CSD_FRAME_ERROR saying that they form no valid frames. Data
	 * before the first ID byte after it is dropped too (its source is
	 * unknown). Consumers may ignore this event.
	 */
	CSD_FRAME_ALIGN_INFERRED = 4,
	/**
	 * The capture ended inside a frame that starts at out->offset
	 * (out->reason says so); its bytes are dropped. Not bad input: a
	 * capture stops wherever the trace is. Always the last event.
	 */
	CSD_FRAME_TRUNCATED = 5,
};

struct csd_frame_out {
	uint32_t event;         /**< enum csd_frame_event */
	struct csd_bytes bytes; /**< CSD_FRAME_DATA: valid until the next call on the demultiplexer, so a decoder fed them must have used them up (returned CSD_EAGAIN) before then */
	uint64_t offset;        /**< CSD_FRAME_SYNC / _ERROR / _ALIGN_INFERRED / _TRUNCATED: capture offset */
	const char *reason;     /**< CSD_FRAME_ERROR, _ALIGN_INFERRED, _TRUNCATED: static English text */
};

typedef struct csd_frame_decoder csd_frame_decoder;

/**
 * Create a frame demultiplexer.
 * Returns NULL if cfg is NULL or invalid, or memory is short.
 */
csd_frame_decoder *csd_frame_new(const struct csd_frame_config *cfg);

/** Free a frame demultiplexer; NULL is ignored. */
void csd_frame_free(csd_frame_decoder *dec);

/**
 * Give the next bytes of the capture, which start at capture offset
 * `offset`. The bytes must stay valid until csd_frame_next() returns
 * CSD_EAGAIN. Partial frames are kept internally across calls.
 * Errors: CSD_EINVAL (NULL decoder, or data NULL with size > 0, or input
 * still pending, or called after csd_frame_finish()).
 */
int csd_frame_feed(csd_frame_decoder *dec, const uint8_t *data, size_t size, uint64_t offset);

/**
 * Deliver the next event. Returns 0 with *out filled, CSD_EAGAIN when the
 * fed bytes are used up, CSD_EEOS after csd_frame_finish() once drained.
 * Errors: CSD_EINVAL (NULL argument).
 */
int csd_frame_next(csd_frame_decoder *dec, struct csd_frame_out *out);

/**
 * Declare the end of the capture. An incomplete last frame is reported by
 * csd_frame_next() as a CSD_FRAME_TRUNCATED. Errors: CSD_EINVAL.
 */
int csd_frame_finish(csd_frame_decoder *dec);

/* ------------------------------------------------------------------------
 * Packets (shared by both protocols)
 * ---------------------------------------------------------------------- */

enum csd_pkt_type {
	CSD_PKT_NOSYNC = 1,          /**< bytes seen before the first A-sync (size = count) */
	CSD_PKT_ASYNC,               /**< alignment synchronisation */
	CSD_PKT_ISYNC,               /**< instruction synchronisation */
	CSD_PKT_PHEADER,             /**< ETMv3 P-header: atoms */
	CSD_PKT_ATOM,                /**< PTM atom packet */
	CSD_PKT_BRANCH,              /**< branch address, with or without exception */
	CSD_PKT_WAYPOINT,            /**< PTM waypoint update */
	CSD_PKT_CYCLE_COUNT,
	CSD_PKT_CONTEXT_ID,
	CSD_PKT_VMID,
	CSD_PKT_TIMESTAMP,
	CSD_PKT_TRIGGER,
	CSD_PKT_IGNORE,
	CSD_PKT_EXCEPTION_RETURN,    /**< PTM exception return */
	CSD_PKT_EXCEPTION_ENTRY,     /**< ETMv3 exception entry (Cortex-M) */
	CSD_PKT_EXCEPTION_EXIT,      /**< ETMv3 exception exit (Cortex-M) */
	CSD_PKT_NORMAL_DATA,         /**< ETMv3 data trace */
	CSD_PKT_OOO_DATA,            /**< ETMv3 out-of-order data */
	CSD_PKT_OOO_PLACEHOLDER,     /**< ETMv3 out-of-order placeholder */
	CSD_PKT_STORE_FAILED,
	CSD_PKT_VALUE_NOT_TRACED,
	CSD_PKT_DATA_SUPPRESSED,
	CSD_PKT_ERROR,               /**< bad bytes; `error` says why; decoder resynchronises at the next A-sync */
	/** The start of a packet cut by the end of the stream (declared by
	 *  csd_*_pkt_finish()): `size` bytes, `raw` holds them, `error` a
	 *  static reason naming the packet that was cut. Not bad trace: a
	 *  capture stopped while a packet was being written. Always the last
	 *  packet of the stream; bytes that are wrong whatever follows them
	 *  are a CSD_PKT_ERROR even at the end. */
	CSD_PKT_TRUNCATED,
	CSD_PKT_TYPE_COUNT
};

/** Lower-case name of a packet type ("isync", "pheader", "nosync", ...); "unknown" if out of range. */
const char *csd_pkt_type_name(int type);

/** I-sync reason (both protocols use the same 2-bit codes). */
enum csd_sync_reason {
	CSD_REASON_PERIODIC = 0,
	CSD_REASON_TRACE_ON = 1,
	CSD_REASON_OVERFLOW = 2,
	CSD_REASON_DEBUG_EXIT = 3,
};

/** Lower-case name of an I-sync reason: "periodic", "trace_on", "overflow", "debug_exit"; "unknown" for other values. Never NULL. */
const char *csd_reason_name(int reason);

/** Flags of struct csd_packet: which optional facts the packet carries. */
enum csd_pkt_flag {
	CSD_PKTF_ISA = 1u << 0,          /**< `isa` is stated by this packet */
	CSD_PKTF_SECURITY = 1u << 1,     /**< NS and HYP are stated by this packet */
	CSD_PKTF_NS = 1u << 2,           /**< non-secure state */
	CSD_PKTF_HYP = 1u << 3,          /**< Hyp mode */
	CSD_PKTF_ALTISA = 1u << 4,       /**< AltISA bit set (ThumbEE with T) */
	CSD_PKTF_EXCEPTION = 1u << 5,    /**< branch: exception information present; `exception` valid */
	CSD_PKTF_CANCEL = 1u << 6,       /**< branch: the last traced instruction was cancelled */
	CSD_PKTF_RESUME = 1u << 7,       /**< ETMv3 branch: resume (Cortex-M exception return into a part-executed instruction) */
	CSD_PKTF_CYCLE_COUNT = 1u << 8,  /**< `cycle_count` valid */
	CSD_PKTF_CONTEXT_ID = 1u << 9,   /**< `context_id` valid */
	CSD_PKTF_LSIP = 1u << 10,        /**< ETMv3 load/store-in-progress I-sync; `data_insn_addr` valid */
	CSD_PKTF_DATA_ONLY = 1u << 11,   /**< ETMv3 data-only I-sync (no instruction address) */
	CSD_PKTF_DATA_ADDR = 1u << 12,   /**< `data_addr` valid */
	CSD_PKTF_DATA_VALUE = 1u << 13,  /**< `data_value` / `data_size` valid */
	CSD_PKTF_BIG_ENDIAN = 1u << 14,  /**< ETMv3 data: big-endian access (E bit of the data address) */
};

/** Atoms of an ETMv3 P-header or a PTM atom packet. */
struct csd_atoms {
	uint32_t en;      /**< bit i (i = 0 oldest): 1 = E (executed / passed), 0 = N (failed) */
	uint8_t num;      /**< number of instruction atoms (E or N) */
	uint8_t w;        /**< ETMv3 cycle-accurate: number of W (cycle) atoms */
	uint8_t format;   /**< ETMv3 P-header format 0..4 (see IHI 0014 tables 7.2, 7.3); PTM: 0 */
};

#define CSD_PKT_RAW_MAX 24

/**
 * One decoded packet. Addresses are fully resolved: compressed addresses
 * are expanded against the decoder's previous address.
 */
struct csd_packet {
	uint32_t type;            /**< enum csd_pkt_type */
	uint32_t flags;           /**< enum csd_pkt_flag bits */
	uint64_t offset;          /**< capture offset of the first byte */
	uint64_t size;            /**< bytes in the packet (NOSYNC, ASYNC, IGNORE: bytes in the run, which may pass 4 GiB) */
	uint8_t raw[CSD_PKT_RAW_MAX]; /**< the first min(size, CSD_PKT_RAW_MAX) bytes */

	uint32_t addr;            /**< ISYNC / BRANCH / WAYPOINT / OOO_PLACEHOLDER: instruction address */
	uint8_t addr_bytes;       /**< BRANCH / WAYPOINT / LSiP: address bytes in the packet; encoders: 0 = smallest */
	uint8_t isa;              /**< enum csd_isa, valid with CSD_PKTF_ISA */
	uint8_t reason;           /**< ISYNC: enum csd_sync_reason */
	uint8_t vmid;             /**< VMID */
	uint16_t exception;       /**< BRANCH with CSD_PKTF_EXCEPTION: exception number as encoded */
	uint8_t ts_bits;          /**< TIMESTAMP: number of low timestamp bits the packet supplied */
	uint8_t data_size;        /**< data packets: value size in bytes (0, 1, 2, 4) */
	uint32_t cycle_count;     /**< with CSD_PKTF_CYCLE_COUNT */
	uint32_t context_id;      /**< CONTEXT_ID, or ISYNC with CSD_PKTF_CONTEXT_ID */
	uint64_t timestamp;       /**< TIMESTAMP: full value (low bits merged into the previous one) */
	struct csd_atoms atoms;   /**< PHEADER / ATOM */
	uint32_t data_insn_addr;  /**< LSiP I-sync: address of the data instruction (implied executed) */
	uint32_t data_addr;       /**< data packets with CSD_PKTF_DATA_ADDR */
	uint32_t data_value;      /**< data packets with CSD_PKTF_DATA_VALUE */
	uint8_t tag;              /**< OOO_DATA / OOO_PLACEHOLDER: tag 1..3 */
	const char *error;        /**< ERROR, TRUNCATED: static English reason */
};

/* ------------------------------------------------------------------------
 * ETMv3 packet decoder and encoder
 * ---------------------------------------------------------------------- */

typedef struct csd_etm3_pkt_decoder csd_etm3_pkt_decoder;

/**
 * Create an ETMv3 packet decoder for a source configured as `cfg`.
 * Returns NULL if cfg is NULL, cfg->size does not reach ETMCR, cfg->protocol
 * is not CSD_PROTO_ETM3, ETMIDR is non-zero but not an ETMv3 ID
 * (ETMIDR[11:8] = 2), or memory is short.
 */
csd_etm3_pkt_decoder *csd_etm3_pkt_new(const struct csd_trace_config *cfg);

/** Free an ETMv3 packet decoder; NULL is ignored. */
void csd_etm3_pkt_free(csd_etm3_pkt_decoder *dec);

/**
 * Give the decoder the next bytes of its source. The bytes (and offsets)
 * must stay valid until csd_etm3_pkt_next() returns CSD_EAGAIN; a packet
 * split across two runs is reassembled internally.
 * Errors: CSD_EINVAL (NULL argument, previous input not yet consumed, or
 * called after csd_etm3_pkt_finish() without a csd_etm3_pkt_reset()).
 */
int csd_etm3_pkt_feed(csd_etm3_pkt_decoder *dec, const struct csd_bytes *in);

/**
 * Decode the next packet into *pkt. Returns 0 on a packet, CSD_EAGAIN when
 * the input is used up, CSD_EEOS after csd_etm3_pkt_finish() once drained.
 * Bad bytes come out as CSD_PKT_ERROR packets (not as a negative return).
 * Errors: CSD_EINVAL (NULL argument).
 */
int csd_etm3_pkt_next(csd_etm3_pkt_decoder *dec, struct csd_packet *pkt);

/**
 * Declare the end of the stream: a partial packet held internally is
 * delivered by csd_etm3_pkt_next() as a CSD_PKT_TRUNCATED, the last packet.
 * Errors: CSD_EINVAL.
 */
int csd_etm3_pkt_finish(csd_etm3_pkt_decoder *dec);

/** Forget all state, the end of stream included; the decoder waits for an A-sync again. Errors: CSD_EINVAL. */
int csd_etm3_pkt_reset(csd_etm3_pkt_decoder *dec);

typedef struct csd_etm3_encoder csd_etm3_encoder;

/** Create an ETMv3 packet encoder; NULL if cfg is invalid or memory is short. */
csd_etm3_encoder *csd_etm3_enc_new(const struct csd_trace_config *cfg);

/** Free an encoder; NULL is ignored. */
void csd_etm3_enc_free(csd_etm3_encoder *enc);

/**
 * Encode one packet into buf. Branch and I-sync addresses are compressed
 * against the encoder's previous address exactly as the decoder expands
 * them (pkt->addr_bytes forces a longer form; 0 = smallest). Returns the
 * number of bytes written.
 * Errors: CSD_EINVAL (NULL enc or pkt, or NULL buf with cap > 0),
 * CSD_EBADPKT (type or field cannot be encoded under this configuration,
 * or a run longer than INT32_MAX), CSD_ENOSPC (cap too small). buf is
 * written only on success.
 */
int csd_etm3_enc_packet(csd_etm3_encoder *enc, const struct csd_packet *pkt, uint8_t *buf, size_t cap);

/* ------------------------------------------------------------------------
 * PTM (PFT) packet decoder and encoder
 * ---------------------------------------------------------------------- */

typedef struct csd_ptm_pkt_decoder csd_ptm_pkt_decoder;

/**
 * Create a PTM packet decoder; NULL if cfg is NULL or does not reach
 * `protocol`, cfg->protocol is not CSD_PROTO_PTM, ETMIDR is non-zero but not
 * a PFT ID (ETMIDR[11:8] = 3, [7:4] = 0 or 1), or memory is short.
 */
csd_ptm_pkt_decoder *csd_ptm_pkt_new(const struct csd_trace_config *cfg);

/** Free a PTM packet decoder; NULL is ignored. */
void csd_ptm_pkt_free(csd_ptm_pkt_decoder *dec);

/** As csd_etm3_pkt_feed(). Errors: CSD_EINVAL. */
int csd_ptm_pkt_feed(csd_ptm_pkt_decoder *dec, const struct csd_bytes *in);

/** As csd_etm3_pkt_next(). Errors: CSD_EINVAL. */
int csd_ptm_pkt_next(csd_ptm_pkt_decoder *dec, struct csd_packet *pkt);

/** As csd_etm3_pkt_finish(). Errors: CSD_EINVAL. */
int csd_ptm_pkt_finish(csd_ptm_pkt_decoder *dec);

/** As csd_etm3_pkt_reset(). Errors: CSD_EINVAL. */
int csd_ptm_pkt_reset(csd_ptm_pkt_decoder *dec);

typedef struct csd_ptm_encoder csd_ptm_encoder;

/** Create a PTM packet encoder; NULL if cfg is invalid or memory is short. */
csd_ptm_encoder *csd_ptm_enc_new(const struct csd_trace_config *cfg);

/** Free an encoder; NULL is ignored. */
void csd_ptm_enc_free(csd_ptm_encoder *enc);

/** As csd_etm3_enc_packet(). Errors: CSD_EINVAL, CSD_EBADPKT, CSD_ENOSPC. */
int csd_ptm_enc_packet(csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *buf, size_t cap);

/* ------------------------------------------------------------------------
 * Memory image: the program code the flow decoders walk
 * ---------------------------------------------------------------------- */

typedef struct csd_image csd_image;

/**
 * Read-memory callback: copy up to `size` bytes at `addr` into buf and
 * return how many were copied (0: not accessible). Called only for
 * addresses no section covers.
 */
typedef size_t (*csd_read_memory_fn)(void *ctx, uint64_t addr, uint8_t *buf, size_t size);

/**
 * Create an empty image; NULL if memory is short.
 *
 * Threads: the decoders reading an image keep their own lookup state, so
 * one image may serve flow decoders on several threads at once, provided
 * it has no read callback (csd_image_set_callback() memory is cached in
 * the image), nothing is added to it while they decode, and the decoders
 * are made with csd_flow_new() on one thread at a time. The image's lookup
 * map is built by the first csd_flow_new(), csd_image_read() or decode
 * after sections were added: after adding to an image that decoders on
 * several threads will read, make a decoder or read a byte of it before
 * they go on.
 */
csd_image *csd_image_new(void);

/** Free an image and everything it loaded or mapped; NULL is ignored. */
void csd_image_free(csd_image *img);

/**
 * Add `size` bytes of caller memory as the contents of [addr, addr+size).
 * With copy = 0 the memory is referenced and must outlive the image.
 * Sections added later take precedence where they overlap earlier ones.
 * Errors: CSD_EINVAL (NULL image, data NULL with size > 0, range wraps
 * past 2^32), CSD_ENOMEM.
 */
int csd_image_add_buffer(csd_image *img, uint64_t addr, const void *data, size_t size, int copy);

/**
 * Add bytes of a raw binary file: `size` bytes (0 = to the end) from
 * `file_offset`, at address `addr`. Only regular files are read: a FIFO,
 * device or directory fails at once (never waits or reads without end).
 * Errors: CSD_EINVAL (NULL image, NULL or empty path, range wraps past
 * 2^32), CSD_EIO (cannot open/read, not a regular file, or range past the
 * end of the file), CSD_ENOMEM. csd_image_error() says which, and why.
 */
int csd_image_add_file(csd_image *img, const char *path, uint64_t file_offset, uint64_t size, uint64_t addr);

/**
 * Add the PT_LOAD segments of a 32-bit little-endian ELF file (their file
 * bytes; zero-fill is not code), each moved by `bias` bytes. Regular files
 * only, as csd_image_add_file(). Returns the number of segments added.
 * Errors: CSD_EINVAL (NULL image, NULL or empty path, a segment moved out
 * of the 32-bit address space), CSD_EIO (cannot open/read, not a regular
 * file), CSD_EFORMAT (not a 32-bit little-endian ELF, or headers point
 * outside the file), CSD_ENOMEM. csd_image_error() names the failing check
 * and its file offset. Segments added before a failure stay in the image.
 */
int csd_image_add_elf(csd_image *img, const char *path, int64_t bias);

/**
 * Why the last csd_image_add_buffer(), csd_image_add_file() or
 * csd_image_add_elf() call on img failed: one line naming the file, the
 * check that failed and, for a malformed ELF, the file offset of the field
 * (e.g. "prog.elf: program header 2 at offset 0x74: segment of 0x2000
 * bytes at file offset 0x1000 passes the end of the file (4608 bytes)").
 * "" when it succeeded, or for NULL. Valid until the next call on img.
 */
const char *csd_image_error(const csd_image *img);

/**
 * Use `fn` for addresses that no section covers (NULL removes it).
 * Errors: CSD_EINVAL.
 */
int csd_image_set_callback(csd_image *img, csd_read_memory_fn fn, void *ctx);

/** Number of sections (buffers, files, ELF segments) in the image; 0 for NULL. */
size_t csd_image_num_sections(const csd_image *img);

/**
 * Section i: its address, size and bytes (valid until the image is freed).
 * Errors: CSD_EINVAL (NULL argument), CSD_ENOENT (i out of range).
 */
int csd_image_section(const csd_image *img, size_t i, uint64_t *addr, uint64_t *size, const uint8_t **data);

/**
 * Copy up to `size` bytes at `addr` into buf; returns how many bytes were
 * readable contiguously from addr (stopping at the first inaccessible one;
 * at most INT32_MAX per call).
 * Errors: CSD_EINVAL, CSD_ENOMAP (the byte at addr is not accessible),
 * CSD_ENOMEM (no memory for the address map the sections need).
 */
int csd_image_read(csd_image *img, uint64_t addr, uint8_t *buf, size_t size);

/* ------------------------------------------------------------------------
 * Instruction-flow decoder: packets + memory image -> executed instructions
 * ---------------------------------------------------------------------- */

/** What a struct csd_record reports. Names: csd_rec_type_name(). */
enum csd_rec_type {
	/** Instructions executed in sequence from `addr` to `last` (`count`
	 *  of them, `end` = address after the last). `cond` is the last
	 *  instruction's result; `cycles` its cycle count sum. */
	CSD_REC_RANGE = 1,
	/** One executed instruction (with CSD_FLOW_INSN): `addr`, `size`,
	 *  `opcode`, `cond`, `cycles`. */
	CSD_REC_INSN,
	/** An exception: `exception` number (csd_exception_name()), `addr` =
	 *  preferred return address (the next instruction that had not
	 *  executed), `target` = vector; CSD_RECF_CANCELLED if the last
	 *  traced instruction was cancelled. */
	CSD_REC_EXCEPTION,
	/** An exception return instruction executed (ETMv3.5 exception exit,
	 *  PTM exception return packet). */
	CSD_REC_EXCEPTION_RETURN,
	/** Trace (re)started at `addr`: `reason` (enum csd_sync_reason). */
	CSD_REC_TRACE_ON,
	/** Context: `context_id`, `vmid`, `isa`, NS / Hyp flags (after a change or sync). */
	CSD_REC_CONTEXT,
	/** Timestamp packet: `timestamp` (and `cycles` with CSD_RECF_CYCLES). */
	CSD_REC_TIMESTAMP,
	/** Cycles not attributable to an instruction: the gap before trace
	 *  came back on (DS-5's "Cycle Count ... Tracing disabled"). */
	CSD_REC_CYCLE_COUNT,
	/** Memory not accessible at `addr`, the address execution reached
	 *  (the image has no code there): the instructions from there cannot
	 *  be known; `count` atoms / `cycles` cycles (with CSD_RECF_CYCLES)
	 *  were spent from there until the trace gave an address again, `isa`
	 *  the instruction set at `addr`. Decoding continues at the next
	 *  address the trace gives. Where the address itself is not known,
	 *  the record is CSD_REC_ADDRESS_UNKNOWN instead. */
	CSD_REC_NO_MEMORY,
	/** Trace is not synchronised: bytes before the first synchronisation,
	 *  or after an error until the next one (`size` bytes from `offset`). */
	CSD_REC_NOSYNC,
	/** The instruction set at `addr` cannot be followed (`isa`, e.g.
	 *  Jazelle): instructions are unknown until the next address packet. */
	CSD_REC_ISA_UNSUPPORTED,
	/** Bad trace or trace that contradicts the image: `error`, `offset`. */
	CSD_REC_ERROR,
	/** Trigger packet. */
	CSD_REC_TRIGGER,
	/** The stream ended inside a packet (CSD_PKT_TRUNCATED): `size` bytes
	 *  from `offset` were the start of a packet, `error` names it (static
	 *  English text). A normal end of trace, not an error: a capture
	 *  (an ETB dump, say) stops wherever the trace is. The last record of
	 *  the source; what was decoded before it is final. */
	CSD_REC_TRUNCATED,
	/** Instructions of unknown address: after an indirect branch whose
	 *  target the trace never gave (or code that could not be followed,
	 *  see CSD_REC_ISA_UNSUPPORTED), `count` atoms / `cycles` cycles (with
	 *  CSD_RECF_CYCLES) were spent before the trace gave an address
	 *  again. `isa` is the instruction set last known (the branch may have
	 *  changed it); `addr` is 0. Distinct from CSD_REC_NO_MEMORY, where
	 *  the address is known and the image has no code there. */
	CSD_REC_ADDRESS_UNKNOWN,
	/** ETMv3 data trace: one data transfer of a load or store, after the
	 *  record of its instruction (its CSD_REC_INSN, or the CSD_REC_RANGE
	 *  that ends with it), in transfer order. `last` is the instruction's
	 *  address, `isa` / `opcode` its instruction set and encoding; `size`
	 *  the bytes moved (1, 2, 4, or 8 for a VFP doubleword, which the
	 *  trace gives as two 32-bit packets); CSD_RECF_STORE for a store
	 *  (else a load; SWP gives a load then a store); `addr` the data
	 *  address with CSD_RECF_DATA_ADDR (ETMCR[3], the packet's own or
	 *  implied by the transfer before it); `target` the value, as memory
	 *  holds it (not sign-extended, zero-extended to 64 bits), with
	 *  CSD_RECF_DATA_VALUE (ETMCR[2]; out-of-order data fills it in when
	 *  its packet comes). A store-exclusive that failed (Store failed
	 *  packet) stored nothing and gives no record. In a data-only trace
	 *  (ETMCR[20]) the instruction is not known: see
	 *  CSD_RECF_DATA_NO_INSN. */
	CSD_REC_DATA,
	/** ETMv3 data trace: data transfers not traced (Data suppressed
	 *  packet: the ETM's FIFO was nearly full). `last` is the data
	 *  instruction the lost transfers began at, 0 if none was known; the
	 *  rest of its transfers are lost too. */
	CSD_REC_DATA_LOST,
	CSD_REC_TYPE_COUNT
};

/** Lower-case name of a record type ("range", "insn", "exception", ...); "unknown" if out of range. Never NULL. */
const char *csd_rec_type_name(int type);

/** Condition result of an instruction. */
enum csd_cond {
	CSD_COND_UNKNOWN = 0,   /**< PTM: conditional non-waypoint instruction */
	CSD_COND_PASS = 1,
	CSD_COND_FAIL = 2,
};

/** Lower-case name: "unknown", "pass", "fail". */
const char *csd_cond_name(int cond);

/** Flags of struct csd_record. */
enum csd_rec_flag {
	CSD_RECF_CYCLES = 1u << 0,     /**< `cycles` is known */
	CSD_RECF_NS = 1u << 1,         /**< non-secure state */
	CSD_RECF_HYP = 1u << 2,        /**< Hyp mode */
	CSD_RECF_CANCELLED = 1u << 3,  /**< EXCEPTION: the last traced instruction did not complete */
	CSD_RECF_BRANCH = 1u << 4,     /**< RANGE / INSN: the (last) instruction is a branch */
	CSD_RECF_TAKEN = 1u << 5,      /**< ... and it was taken */
	CSD_RECF_LINK = 1u << 6,       /**< ... and it links (BL, BLX) */
	CSD_RECF_CONTEXT_ID = 1u << 7, /**< CONTEXT: `context_id` valid */
	CSD_RECF_VMID = 1u << 8,       /**< CONTEXT: `vmid` valid */
	CSD_RECF_RETURN_STACK = 1u << 9, /**< RANGE / INSN: the branch target came from the return stack */
	CSD_RECF_DATA_ADDR = 1u << 10, /**< DATA: `addr` is the data address */
	CSD_RECF_DATA_VALUE = 1u << 11, /**< DATA: `target` is the value */
	CSD_RECF_STORE = 1u << 12,     /**< DATA: a store (else a load) */
	/** DATA: no instruction is known: a data-only trace (ETMCR[20]) traces
	 *  no instructions, so `last`, `opcode`, `isa` and `size` are 0 and the
	 *  direction is not known (CSD_RECF_STORE is never set); the record is
	 *  one 32-bit transfer (a doubleword is two records, low word first),
	 *  `addr` / `target` as for other DATA records. */
	CSD_RECF_DATA_NO_INSN = 1u << 13,
};

/**
 * One output item of the flow decoder. Output structs have no `size`
 * member: their layout is a frozen ABI of this major version (members are
 * never moved; new facts go into flags or new record types), which also
 * lets the flow decoder write a range record in a few wide stores.
 */
struct csd_record {
	uint32_t type;          /**< enum csd_rec_type */
	uint32_t flags;         /**< enum csd_rec_flag bits */
	uint64_t offset;        /**< capture offset of the packet that produced it */
	uint64_t addr;          /**< see enum csd_rec_type */
	uint64_t end;           /**< RANGE: address after the last instruction */
	uint64_t last;          /**< RANGE: address of the last instruction; DATA / DATA_LOST: address of the data instruction */
	uint64_t target;        /**< EXCEPTION: vector / handler address; DATA: the value (CSD_RECF_DATA_VALUE) */
	uint64_t cycles;        /**< with CSD_RECF_CYCLES */
	uint64_t timestamp;     /**< TIMESTAMP */
	uint32_t count;         /**< RANGE / NO_MEMORY / ADDRESS_UNKNOWN: instructions (atoms) */
	uint32_t opcode;        /**< INSN, DATA (its instruction): A32 word, T32 hw1 or hw1<<16|hw2 */
	uint64_t size;          /**< INSN: bytes; DATA: bytes transferred; NOSYNC: bytes skipped (may pass 4 GiB); ERROR of bad bytes, TRUNCATED: bytes of the packet; TIMESTAMP: how many low bits of the timestamp as traced (of its Gray code if Gray-coded) the decoder's timestamp packets have given so far, the bits above being taken as 0 (see "Chunked decoding of one source") */
	uint8_t isa;            /**< enum csd_isa of the instructions / context */
	uint8_t cond;           /**< RANGE (last insn) / INSN: enum csd_cond */
	uint8_t reason;         /**< TRACE_ON: enum csd_sync_reason */
	uint8_t vmid;           /**< CONTEXT */
	uint8_t id;             /**< trace ID of the source */
	uint16_t exception;     /**< EXCEPTION: number as traced */
	uint32_t context_id;    /**< CONTEXT */
	const char *error;      /**< ERROR, TRUNCATED: static English reason */
};

/** Flags of struct csd_flow_config. */
enum csd_flow_flag {
	/** One CSD_REC_INSN per executed instruction instead of ranges. */
	CSD_FLOW_INSN = 1u << 0,
};

/**
 * The trace config is held by pointer, so that either struct can grow
 * at its end without moving the other's members: each has its own size.
 */
struct csd_flow_config {
	size_t size;                    /**< sizeof(struct csd_flow_config) */
	const struct csd_trace_config *trace; /**< protocol and registers of the source (copied by csd_flow_new) */
	csd_image *image;               /**< program image (not owned; must outlive the decoder) */
	uint32_t flags;                 /**< enum csd_flow_flag bits */
};

typedef struct csd_flow_decoder csd_flow_decoder;

/**
 * Create an instruction-flow decoder for one ETMv3 or PTM source. It owns
 * a packet decoder of the protocol in *cfg->trace, which it copies: the
 * trace config need not outlive the call. Its `size` is its own, as when
 * it is passed alone: members past it read as zero.
 * Returns NULL if cfg is NULL or invalid (cfg->size too small, no trace
 * config, trace->size not reaching `protocol` or larger than struct
 * csd_trace_config, no image,
 * unknown protocol, ETMIDR not of that protocol), or memory is short.
 */
csd_flow_decoder *csd_flow_new(const struct csd_flow_config *cfg);

/** Free a flow decoder (not its image); NULL is ignored. */
void csd_flow_free(csd_flow_decoder *dec);

/**
 * Make dec as csd_flow_new() made it, for a new stretch of the same
 * source (another chunk, a capture buffer that does not continue the last
 * one): not synchronised, no address, context or timestamp known, nothing
 * queued, no records delivered, not finished. What only saves work is
 * kept: the code already classified in the image (valid while the image
 * gains no sections), so a reset decoder starts warm.
 * Errors: CSD_EINVAL (NULL), CSD_ENOMEM (then dec can only be freed:
 * every other call on it, but csd_flow_free(), fails with CSD_ENOMEM,
 * the chunk functions' included).
 */
int csd_flow_reset(csd_flow_decoder *dec);

/**
 * Give the next bytes of the source (as csd_etm3_pkt_feed()).
 * Errors: CSD_EINVAL (NULL argument, previous input not used up, or called
 * after csd_flow_finish()), CSD_ENOMEM (after a failed csd_flow_reset()).
 */
int csd_flow_feed(csd_flow_decoder *dec, const struct csd_bytes *in);

/**
 * Deliver the next record. Returns 0 with *rec filled, CSD_EAGAIN when the
 * input is used up, CSD_EEOS after csd_flow_finish() once drained.
 * Errors: CSD_EINVAL, CSD_ENOMEM (after a failed csd_flow_reset()).
 */
int csd_flow_next(csd_flow_decoder *dec, struct csd_record *rec);

/**
 * Deliver the next records without copying them: returns how many (> 0)
 * and points *recs at them, in the decoder's own memory; they stay valid
 * until the next call of any function on this decoder. The records and
 * their order are exactly those that as many csd_flow_next() calls would
 * return (the two may be mixed); this form saves a call and a copy per
 * record. Returns CSD_EAGAIN when the input is used up, CSD_EEOS after
 * csd_flow_finish() once drained.
 * Errors: CSD_EINVAL (NULL argument), CSD_ENOMEM (after a failed
 * csd_flow_reset()).
 */
int csd_flow_next_batch(csd_flow_decoder *dec, const struct csd_record **recs);

/** Declare the end of the source's trace. Errors: CSD_EINVAL, CSD_ENOMEM
 *  (after a failed csd_flow_reset()). */
int csd_flow_finish(csd_flow_decoder *dec);

/**
 * The packet that the flow decoder last consumed (for listings that show
 * packets and records together). Errors: CSD_EINVAL, CSD_ENOENT (none yet),
 * CSD_ENOMEM (after a failed csd_flow_reset()).
 */
int csd_flow_last_packet(const csd_flow_decoder *dec, struct csd_packet *pkt);

/* ------------------------------------------------------------------------
 * Chunked decoding of one source
 *
 * One source's bytes can be cut at synchronisation points into chunks that
 * decode in parallel, each by a flow decoder of its own made with
 * csd_flow_new() and fed from its cut (with the capture offsets of the
 * whole input, so that records carry them). A chunk's decoder does not know
 * what came before its cut (return stack, compressed addresses and
 * timestamps, context), so its records are right only from where its
 * state has become that of a decoder that saw everything. To find that
 * point: chunk k's decoder is fed up to each of the first few sync points
 * inside its chunk in turn, drained (csd_flow_next() until CSD_EAGAIN)
 * and its state saved there (csd_flow_state_save()). Chunk k-1's decoder,
 * after its own bytes, goes on with chunk k's, fed and drained up to the
 * same points, and at each asks csd_flow_state_join() (or
 * csd_flow_state_match(), which is the same but for timestamps): at the
 * first match it stops; its records so far, then chunk k's records from
 * csd_flow_state_records() on, completed as below, are those of a serial
 * decode, and chunk k's decoder goes on as the serial one. If none
 * matches, chunk k-1's decoder decodes all of chunk k and the search goes
 * on with chunk k+1's saved states. Only equal states match, so the
 * result is always that of a serial decode; a point where the state cannot
 * be compared (a packet spanning it) just matches nothing. States converge
 * once the trace has restated everything.
 *
 * Timestamps: a timestamp packet restates only the low bits that changed
 * since the previous one, so a chunk's decoder never learns the high bits
 * of the timestamp that the trace gave before its cut (it takes them as 0).
 * States are therefore compared in the timestamp bits the chunk's decoder
 * was given (every one of them must be known to the other decoder and
 * equal), and the join completes the rest: csd_flow_state_join() in place
 * of csd_flow_state_match() keeps the serial decoder's timestamp in the
 * matching state; csd_flow_state_complete() gives the chunk's decoder, which
 * goes on as the serial one, the bits it lacks (its later timestamps are
 * then right) and completes its undelivered records; and
 * csd_flow_state_complete_records() completes the chunk's records already
 * delivered from csd_flow_state_records() on. A CSD_REC_TIMESTAMP record
 * (the only kind that carries `timestamp`) says in `size` how many low bits
 * its decoder knew. Without timestamps these calls change nothing; with
 * them the joined records equal a serial decode's in every member, and a
 * join by csd_flow_state_match() alone leaves the chunk's timestamps
 * without the high bits its decoder was not given.
 *
 * Return stack (PTM, ETMCR bit 29): a chunk's decoder knows the entries
 * it pushed itself, above as many entries from before its cut as the
 * stack's depth leaves room for (a push past the depth drops the oldest,
 * known or not, as in the serial decoder); losing sync leaves nothing
 * unknown below. States match when its known entries are the top ones of
 * the other decoder's stack and no more lie below them than there is room
 * for; the join takes the entries below, and csd_flow_state_complete()
 * gives them to the chunk's decoder (those its pushes have not dropped
 * since). A chunk's decoder that has popped past its known entries after
 * the point, where the serial decoder had entries below them, made records
 * that are not the serial decode's: the match is then refused, and
 * csd_flow_state_complete() fails. So call csd_flow_state_match() or _join()
 * once the chunk's decoder has made the records the join is to keep (all
 * it will make before csd_flow_state_complete()); a saved state shares a
 * count of such pops with its decoder (it stays valid after the decoder is
 * freed). A join by csd_flow_state_match() alone leaves the chunk's
 * decoder without those entries (a later return to them is not known).
 *
 * In steps, for chunk A = data[a, c) and the next, B = data[c, e), with
 * p1 < p2 < ... B's first few sync points after c (csd_sync_scan(data +
 * c, e - c, ...) plus c; the cut itself is no point: a decoder fed
 * nothing there has no state to match):
 *  1. B's decoder: feed data[c, p1), drain, csd_flow_state_save() into
 *     st1; the same up to p2 (st2), ...; then the rest of B, drained,
 *     keeping B's records in order. (If B is the last chunk,
 *     csd_flow_finish() and drain.)
 *  2. A's decoder (the serial one, or one joined before): after A's own
 *     bytes, feed data[c, p1), drain, csd_flow_state_join(st1, A); on 0,
 *     feed up to p2, drain, join st2, ... .
 *  3. On 1 at point k: the serial records are A's so far, then B's from
 *     csd_flow_state_records(stk) on, through
 *     csd_flow_state_complete_records(stk, ...); csd_flow_state_complete(stk,
 *     B) before B's decoder decodes anything more (B is now the serial
 *     decoder). A's decoder is done.
 *  4. No match: A's decoder decodes all of B (B's records are dropped)
 *     and goes on to the next chunk's points.
 * Free each state with csd_flow_state_free() once its chunk's records are
 * completed (one that matched nothing: once the search has passed it).
 * ---------------------------------------------------------------------- */

/**
 * Find the cut points of one source's bytes data[0 .. size): the positions
 * (indices into data) where an A-sync sequence begins, at least five 0x00
 * bytes then 0x80 (the same in ETMv3 and PTM; a longer run of zeros is
 * cut at its first zero). Each is at least min_gap bytes after the
 * previous one, the first at least min_gap bytes after position 0 (chunk
 * 0 begins there, so an A-sync at 0 is never given); min_gap 0 gives
 * every A-sync after position 0. A chunk's sync points (below) are those
 * of a scan of its own bytes, data + cut. Stores up to cap
 * positions in ascending order into cuts and their number into *count;
 * with cap reached it stops there (scan again from after the last).
 * Errors: CSD_EINVAL (NULL count, NULL data with size > 0, NULL cuts with
 * cap > 0).
 */
int csd_sync_scan(const uint8_t *data, size_t size, size_t min_gap, size_t *cuts, size_t cap, size_t *count);

/** The semantic state of a flow decoder at one point (opaque). */
typedef struct csd_flow_state csd_flow_state;

/**
 * Save the state of dec that decides what its later input decodes to
 * (not its caches or counts), with the number of records it has delivered
 * so far, into a new *out (free it with csd_flow_state_free()). Call it
 * when the bytes fed end at a cut point and the decoder is drained
 * (csd_flow_next() returned CSD_EAGAIN).
 * Errors: CSD_EINVAL (NULL argument, records still to deliver, or after
 * csd_flow_finish()), CSD_ENOMEM (also after a failed csd_flow_reset()).
 */
int csd_flow_state_save(const csd_flow_decoder *dec, csd_flow_state **out);

/**
 * Whether dec, at the point in the same source where st was saved (fed
 * up to the same byte and drained), is in the same state: 1 if so (the
 * same bytes then decode to the same records, once the timestamps of st's
 * decoder are completed as the section says), 0 if not (or if either is
 * at a point where states cannot be compared). The timestamp is compared
 * in the low bits st's decoder had been given only, the return stack in
 * the entries st's decoder knew (see the section: also 0 if st's decoder
 * has since popped past them where dec has entries below them).
 * Errors: CSD_EINVAL (NULL argument, records still to deliver, or a
 * decoder of another protocol or mode than st's), CSD_ENOMEM (dec's
 * csd_flow_reset() failed).
 */
int csd_flow_state_match(const csd_flow_decoder *dec, const csd_flow_state *st);

/**
 * As csd_flow_state_match(serial, st), and on a match (1) keep in st the
 * timestamp and the return stack of `serial`, the decoder that saw everything before the point
 * (or was itself completed), for csd_flow_state_complete() and
 * csd_flow_state_complete_records(). Returns 1, 0 or an error as
 * csd_flow_state_match() does; st changes only on 1.
 * Errors: CSD_EINVAL, CSD_ENOMEM (as csd_flow_state_match()).
 */
int csd_flow_state_join(csd_flow_state *st, const csd_flow_decoder *serial);

/**
 * After csd_flow_state_join() returned 1: give dec, the decoder st was
 * saved from, at that point or any later one, the timestamp bits it was
 * never given (so that the timestamps it makes from now on are the serial
 * decode's), and complete the CSD_REC_TIMESTAMP records it has made but
 * not yet delivered. Its records delivered from csd_flow_state_records(st)
 * on are completed with csd_flow_state_complete_records(). Calling it
 * again is harmless.
 * With the return stack, it also gives dec the serial decoder's entries
 * below its known ones (see the section).
 * Errors: CSD_EINVAL (NULL argument, st not joined, dec of another
 * protocol or mode, or dec knowing fewer timestamp bits than when st was
 * saved or reset since: not st's decoder; or dec having popped past its
 * known return-stack entries since st's point where the serial decoder
 * had entries below them: its records since are not the serial decode's,
 * and nothing is changed), CSD_ENOMEM (dec's csd_flow_reset() failed).
 */
int csd_flow_state_complete(const csd_flow_state *st, csd_flow_decoder *dec);

/**
 * After csd_flow_state_join() returned 1: complete the n records of recs
 * that st's decoder delivered from csd_flow_state_records(st) on (those
 * the join keeps), in place: a CSD_REC_TIMESTAMP record gets the high
 * timestamp bits its decoder lacked, and `size` as the serial decode's;
 * other records are left as they are, and so is a record already complete
 * (it may be passed again, e.g. every record after csd_flow_state_complete()
 * too). A few operations per timestamp record, none for others.
 * Errors: CSD_EINVAL (NULL st, NULL recs with n > 0, st not joined).
 */
int csd_flow_state_complete_records(const csd_flow_state *st, struct csd_record *recs, size_t n);

/** Records the decoder had delivered when st was saved (0 for NULL). */
uint64_t csd_flow_state_records(const csd_flow_state *st);

/** Free a saved state; NULL is ignored. */
void csd_flow_state_free(csd_flow_state *st);

/*
 * Packet decoders in chunks: the same scheme for a packet listing. A
 * chunk's packet decoder, fed from its cut, does not know the addresses
 * that compressed branch and data addresses are deltas against, nor the
 * high timestamp bits, from before its cut. Save its
 * state at the first few sync points inside its chunk
 * (csd_etm3_pkt_state_save() or csd_ptm_pkt_state_save(), with every byte
 * fed so far used up: csd_*_pkt_next() returned CSD_EAGAIN); the decoder
 * that has seen everything before the chunk (the serial one), fed the
 * same bytes up to each point in turn and drained, asks
 * csd_*_pkt_state_join(): at the first match its packets so far, then the
 * chunk's packets from that point on, are those of a serial decode, once
 * csd_pkt_state_complete_packets() has given the chunk's timestamp
 * packets the high bits they lack; csd_*_pkt_state_complete() gives them
 * to the chunk's decoder, which goes on as the serial one.
 */

/** The semantic state of a packet decoder at one point (opaque). */
typedef struct csd_pkt_state csd_pkt_state;

/**
 * Save the state of dec that decides what its later bytes decode to (its
 * addresses, timestamp, synchronisation, a packet begun) into a new *out
 * (free it with csd_pkt_state_free()). Call it when every byte fed has
 * been used (csd_etm3_pkt_next() returned CSD_EAGAIN).
 * Errors: CSD_EINVAL (NULL argument, bytes fed not yet used up, or after
 * csd_etm3_pkt_finish()), CSD_ENOMEM.
 */
int csd_etm3_pkt_state_save(const csd_etm3_pkt_decoder *dec, csd_pkt_state **out);
/** As csd_etm3_pkt_state_save(), for a PTM packet decoder. Errors: CSD_EINVAL, CSD_ENOMEM, as there. */
int csd_ptm_pkt_state_save(const csd_ptm_pkt_decoder *dec, csd_pkt_state **out);

/**
 * Whether serial, drained at the point where st was saved, is in st's
 * state: 1 if so (every timestamp bit st's decoder knew must be known to
 * serial and equal; serial's timestamp is kept in st for the completions
 * below), 0 if not (also when serial has bytes fed not yet used, or st was
 * saved where a packet spanned the point: such a state matches nothing).
 * Errors: CSD_EINVAL (NULL argument, st saved from a decoder of the other
 * protocol).
 */
int csd_etm3_pkt_state_join(csd_pkt_state *st, const csd_etm3_pkt_decoder *serial);
/** As csd_etm3_pkt_state_join(), for PTM. Errors: CSD_EINVAL, as there. */
int csd_ptm_pkt_state_join(csd_pkt_state *st, const csd_ptm_pkt_decoder *serial);

/**
 * After a join, give st's decoder (at or after st's point) the timestamp
 * bits the serial decoder had and it lacked, so that its later timestamp
 * packets are a serial decode's.
 * Errors: CSD_EINVAL (NULL argument, st not joined, of the other protocol,
 * or dec knowing fewer timestamp bits than st's decoder did: not st's
 * decoder, or reset since).
 */
int csd_etm3_pkt_state_complete(const csd_pkt_state *st, csd_etm3_pkt_decoder *dec);
/** As csd_etm3_pkt_state_complete(), for PTM. Errors: CSD_EINVAL, as there. */
int csd_ptm_pkt_state_complete(const csd_pkt_state *st, csd_ptm_pkt_decoder *dec);

/**
 * After a join, complete the timestamps of packets that st's decoder gave
 * after st's point: call it on them in their order, each once (in one
 * call or several), as st follows the timestamp bits they give. Other
 * packets are left as they are.
 * Errors: CSD_EINVAL (NULL st, NULL pkts with n > 0, st not joined).
 */
int csd_pkt_state_complete_packets(csd_pkt_state *st, struct csd_packet *pkts, size_t n);

/** Free a saved packet state; NULL is ignored. */
void csd_pkt_state_free(csd_pkt_state *st);

/**
 * Name of an exception number as traced by the protocol of `cfg`, e.g.
 * "IRQ", "Data Abort", "SVC". For Cortex-M (cfg->core_profile CSD_CORE_M)
 * the ETMv3 traced values: 1-7 "IRQ1".."IRQ7", 8 "IRQ0", the system
 * exceptions by name ("SysTick", "HardFault", ...), and 24-511 "IRQ" (the
 * interrupt is IRQ(number - 16); callers print the number). Never NULL:
 * unknown numbers give "reserved".
 */
const char *csd_exception_name(const struct csd_trace_config *cfg, unsigned number);

/* ------------------------------------------------------------------------
 * Snapshot reader (CoreSight snapshot directories as written by DS-5)
 * ---------------------------------------------------------------------- */

typedef struct csd_snapshot csd_snapshot;

/** A trace buffer of the snapshot (trace.ini [bufferN]). */
struct csd_snapshot_buffer {
	const char *name;         /**< e.g. "ETB_0" */
	const char *path;         /**< file path, joined with the snapshot directory */
	const char *format;       /**< as written: "coresight", "source_data", "dstream_coresight", ... */
	uint32_t frame_format;    /**< enum csd_frame_format implied by `format` */
};

/** A trace source of the snapshot (device with class=trace_source). */
struct csd_snapshot_source {
	const char *name;         /**< device name, e.g. "ETM_0" */
	const char *type;         /**< device type, e.g. "ETM3.5", "PTM1.1", "ITM" */
	const char *core_name;    /**< core it traces (core_trace_sources), or NULL */
	const char *core_type;    /**< that core's type, e.g. "Cortex-A7", or NULL */
	int buffer;               /**< index of its buffer (source_buffers), or -1 */
	struct csd_trace_config config; /**< protocol, registers, trace ID, core profile */
};

/** A memory dump of a core device ([dump*] section). */
struct csd_snapshot_dump {
	const char *device;       /**< device name the dump belongs to */
	const char *path;         /**< file path, joined with the snapshot directory */
	const char *space;        /**< memory space as written ("S", "N", ...), or NULL */
	uint64_t address;         /**< load address */
	uint64_t offset;          /**< offset into the file (0 if not given) */
	uint64_t length;          /**< bytes; 0 = to the end of the file */
};

/**
 * Read the snapshot in directory `dir` (snapshot.ini, the device files and
 * trace metadata it names). On failure *out is NULL and, if errbuf is not
 * NULL, errbuf receives "FILE:LINE: reason" (or "FILE: reason").
 * Errors: CSD_EINVAL, CSD_EIO (missing/unreadable file), CSD_EFORMAT
 * (malformed file), CSD_ENOMEM.
 */
int csd_snapshot_open(const char *dir, csd_snapshot **out, char *errbuf, size_t errlen);

/** Free a snapshot; NULL is ignored. */
void csd_snapshot_free(csd_snapshot *snap);

/** Number of trace buffers; 0 for NULL. */
size_t csd_snapshot_num_buffers(const csd_snapshot *snap);
/** Buffer i; NULL if out of range. Valid until csd_snapshot_free(). */
const struct csd_snapshot_buffer *csd_snapshot_buffer(const csd_snapshot *snap, size_t i);

/** Number of trace sources (all, including protocols csdec does not decode); 0 for NULL. */
size_t csd_snapshot_num_sources(const csd_snapshot *snap);
/** Source i; NULL if out of range. Valid until csd_snapshot_free(). */
const struct csd_snapshot_source *csd_snapshot_source(const csd_snapshot *snap, size_t i);

/** Number of memory dumps; 0 for NULL. */
size_t csd_snapshot_num_dumps(const csd_snapshot *snap);
/** Dump i; NULL if out of range. Valid until csd_snapshot_free(). */
const struct csd_snapshot_dump *csd_snapshot_dump(const csd_snapshot *snap, size_t i);

/**
 * Look up register `reg` of device `device` (names case-insensitive; the
 * register may be written "ETMCR", "ETMCR(0x000)" or "ETMCR(id:0x0)").
 * Errors: CSD_EINVAL, CSD_ENOENT (no such device or register),
 * CSD_EFORMAT (value is not a number).
 */
int csd_snapshot_reg(const csd_snapshot *snap, const char *device, const char *reg, uint64_t *value);

/**
 * Add the memory dumps of core device `device` (NULL: of every device) to
 * an image. Returns the number of dumps added (0 for a device with none, or
 * no such device). Dumps added before a failing one stay in the image.
 * Errors: CSD_EINVAL, CSD_EIO (a dump file cannot be read or is shorter
 * than its stated length), CSD_ENOMEM.
 */
int csd_snapshot_load_image(const csd_snapshot *snap, const char *device, csd_image *img);

/* ------------------------------------------------------------------------
 * perf.data reader (Linux `perf record -e cs_etm//` files)
 *
 * A perf.data file holds the trace of every traced CPU as AUX data, the
 * cs_etm metadata (ETMCR, ETMTRACEIDR, ETMCCER, ETMIDR per CPU) and
 * sideband records: program mappings, process names, context switches.
 * The reader keeps no more than a few hundred KiB whatever the file's size:
 * records are read in a window as they are walked, and trace bytes are
 * read by the caller with csd_perf_read() when it wants them.
 * ---------------------------------------------------------------------- */

typedef struct csd_perf csd_perf;

/** Kind of trace unit of a traced CPU (the magic of its metadata block). */
enum csd_perf_unit {
	CSD_PERF_UNIT_ETM3 = 1,    /**< ETMv3: decoded */
	CSD_PERF_UNIT_PTM = 2,     /**< PTM (PFT): decoded */
	CSD_PERF_UNIT_ETM4 = 3,    /**< ETMv4: not supported, its trace is skipped */
	CSD_PERF_UNIT_ETE = 4,     /**< ETE: not supported, its trace is skipped */
	CSD_PERF_UNIT_OTHER = 5,   /**< an ETMv3-format block whose ETMIDR names neither ETMv3 nor PFT 1.0/1.1 */
};

/** Where a CPU's trace ID comes from (struct csd_perf_cpu `id_from`). */
enum csd_perf_id_source {
	CSD_PERF_ID_NONE = 0,      /**< no usable ID (0, or 0x70 and above): the CPU's trace cannot be told apart */
	CSD_PERF_ID_METADATA = 1,  /**< ETMTRACEIDR bits 6:0 of the metadata */
	CSD_PERF_ID_HW_ID = 2,     /**< a PERF_RECORD_AUX_OUTPUT_HW_ID record of that CPU */
};

/** A traced CPU: one metadata block of the cs_etm AUXTRACE_INFO record. */
struct csd_perf_cpu {
	int32_t cpu;              /**< CPU number */
	uint32_t unit;            /**< enum csd_perf_unit */
	uint32_t id_from;         /**< enum csd_perf_id_source */
	/** ETM3 / PTM: protocol, ETMCR, ETMCCER, ETMIDR (low 32 bits of the
	 *  metadata), trace ID; all zero for other units. */
	struct csd_trace_config config;
	uint64_t traceidr;        /**< the metadata's ETMTRACEIDR (or TRCTRACEIDR) as written */
	uint64_t offset;          /**< file offset of the metadata block */
};

/** The file and its recording (struct returned by csd_perf_info()). */
struct csd_perf_info {
	uint64_t file_size;
	uint64_t data_offset;     /**< the records: [data_offset, data_offset + data_size) */
	uint64_t data_size;       /**< the header's, or to the end of the file when the header says 0 */
	uint32_t etm_version;     /**< cs_etm header version: 0, 1 or 2 */
	uint32_t pmu_type;        /**< perf_event_attr.type of the cs_etm PMU */
	uint64_t config;          /**< perf_event_attr.config of the cs_etm event (0 when no attr has its type) */
	uint64_t sample_type;     /**< PERF_SAMPLE_* bits of the attributes */
	int sample_id_all;        /**< records end with the sample_id fields */
	int snapshot;             /**< recorded in snapshot mode (perf record -S) */
	uint32_t nr_attrs;
	uint32_t nr_cpus_avail;   /**< NRCPUS feature (0 when absent) */
	uint32_t nr_cpus_online;
	/** Feature strings; "" when the file does not have them. */
	const char *hostname, *os_release, *perf_version, *arch, *cpu_desc, *cpuid;
	const char *cmdline;      /**< the perf command line, words joined by spaces */
	/** NULL, or why not all feature sections were read: the file ends
	 *  inside them (copied or written short after its records). The
	 *  records are read all the same; features from the first one cut on
	 *  are absent (the build-ID table among them, if so: lookups then go
	 *  by path). "offset N: ..." as csd_perf_error() words it. */
	const char *features_cut;
};

/** An entry of the build-ID table (HEADER_BUILD_ID feature). */
struct csd_perf_build_id {
	int32_t pid;              /**< -1 for the host */
	uint16_t cpumode;         /**< 1 kernel, 2 user (PERF_RECORD_MISC_*) */
	uint8_t size;             /**< bytes of `id` used (at most 20) */
	uint8_t id[20];
	const char *filename;
};

/** What csd_perf_next() delivers. Names: csd_perf_event_name(). */
enum csd_perf_event_type {
	/** Trace bytes of one traced queue (a CPU, or a thread in per-thread
	 *  recording): `data_offset`, `data_size` in the file, `aux_offset`
	 *  in the AUX stream, `cpu` (-1 per-thread), `tid`, `idx`,
	 *  `aux_flags` of the PERF_RECORD_AUX that covers them. Each AUX
	 *  record's bytes (or a whole AUXTRACE buffer that no AUX record
	 *  covers) are a capture of their own: decoding starts afresh, as perf
	 *  does, unless CSD_PERF_EVF_CONTINUES is set. Delivered where the
	 *  AUXTRACE record is in the file, in stream order. */
	CSD_PERF_AUX_DATA = 1,
	/** PERF_RECORD_AUX: `aux_offset`, `aux_size`, `aux_flags`. */
	CSD_PERF_AUX,
	/** PERF_RECORD_MMAP or MMAP2: `addr`, `len`, `pgoff`, `filename`,
	 *  MMAP2 `prot`, `mmap_flags`, and `build_id` with CSD_PERF_EVF_BUILD_ID. */
	CSD_PERF_MMAP,
	/** PERF_RECORD_COMM: `comm`; CSD_PERF_EVF_EXEC when an exec gave it. */
	CSD_PERF_COMM,
	/** PERF_RECORD_ITRACE_START: `pid`, `tid` start to be traced. */
	CSD_PERF_ITRACE_START,
	/** PERF_RECORD_SWITCH (`pid`/`tid` from sample_id) or SWITCH_CPU_WIDE
	 *  (also `next_prev_pid`/`next_prev_tid`: the next task when switching
	 *  out, the previous one when in); CSD_PERF_EVF_OUT, CSD_PERF_EVF_PREEMPT. */
	CSD_PERF_SWITCH,
	/** PERF_RECORD_AUX_OUTPUT_HW_ID: `hw_id` (trace ID in bits 7:0) of `cpu`. */
	CSD_PERF_HW_ID,
	/** PERF_RECORD_FORK / EXIT: `pid`, `tid`, `ppid`, `ptid`. */
	CSD_PERF_FORK,
	CSD_PERF_EXIT,
	/** PERF_RECORD_LOST / LOST_SAMPLES: `lost` records or samples. */
	CSD_PERF_LOST,
	CSD_PERF_EVENT_COUNT
};

/** Lower-case name of an event type ("aux_data", "aux", "mmap", "comm",
 *  "itrace_start", "switch", "hw_id", "fork", "exit", "lost"); "unknown"
 *  if out of range. Never NULL. */
const char *csd_perf_event_name(int type);

/** PERF_RECORD_AUX flags (struct csd_perf_event `aux_flags`). */
#define CSD_PERF_AUX_TRUNCATED 0x01u  /**< the sink ran out of room: trace was lost */
#define CSD_PERF_AUX_OVERWRITE 0x02u  /**< snapshot mode: `aux_offset` is the end of the data */
#define CSD_PERF_AUX_PARTIAL 0x04u    /**< the data has gaps */
#define CSD_PERF_AUX_COLLISION 0x08u  /**< sample collided with another */
#define CSD_PERF_AUX_RAW 0x0100u      /**< CoreSight: unformatted (one source), else formatter frames */

/** Flags of struct csd_perf_event. */
enum csd_perf_event_flag {
	CSD_PERF_EVF_TIME = 1u << 0,      /**< `time` is known (sample_id) */
	CSD_PERF_EVF_CONTINUES = 1u << 1, /**< AUX_DATA: continues the previous piece of its queue */
	CSD_PERF_EVF_NO_AUX = 1u << 2,    /**< AUX_DATA: no AUX record covers these bytes (taken as formatted) */
	CSD_PERF_EVF_RAW = 1u << 3,       /**< AUX_DATA: unformatted bytes of one CPU (CSD_PERF_AUX_RAW) */
	CSD_PERF_EVF_OUT = 1u << 4,       /**< SWITCH: switching out */
	CSD_PERF_EVF_PREEMPT = 1u << 5,   /**< SWITCH: out because preempted */
	CSD_PERF_EVF_EXEC = 1u << 6,      /**< COMM: the name after an exec */
	CSD_PERF_EVF_BUILD_ID = 1u << 7,  /**< MMAP2: `build_id` is given */
};

/**
 * One record of the file. `cpu`, `pid`, `tid` are -1 where the record does
 * not say (from its fields or its sample_id). Strings are NUL-terminated
 * and valid until the next csd_perf_next() or csd_perf_rewind(). The
 * caller sets `size`; the library fills the rest.
 */
struct csd_perf_event {
	size_t size;              /**< sizeof(struct csd_perf_event), set by the caller */
	uint32_t type;            /**< enum csd_perf_event_type */
	uint32_t record;          /**< PERF_RECORD_* number of the record */
	uint64_t offset;          /**< file offset of the record */
	uint32_t flags;           /**< enum csd_perf_event_flag bits */
	uint16_t cpumode;         /**< misc bits 2:0: 1 kernel, 2 user, ... */
	int32_t cpu, pid, tid;
	uint64_t time;            /**< with CSD_PERF_EVF_TIME */
	/* AUX_DATA / AUX */
	uint64_t data_offset;     /**< AUX_DATA: file offset of the bytes */
	uint64_t data_size;       /**< AUX_DATA: number of bytes */
	uint64_t aux_offset;      /**< position of the first byte in the AUX stream (AUX: as recorded) */
	uint64_t aux_size;        /**< AUX: bytes the record announces */
	uint64_t aux_flags;       /**< CSD_PERF_AUX_* bits */
	uint32_t idx;             /**< AUX_DATA: perf's mmap index of the buffer */
	/* MMAP */
	uint64_t addr, len, pgoff;
	uint32_t prot, mmap_flags;
	uint8_t build_id_size;
	uint8_t build_id[20];
	const char *filename;     /**< MMAP; "" otherwise */
	const char *comm;         /**< COMM; "" otherwise */
	/* SWITCH / FORK / EXIT / HW_ID / LOST */
	int32_t next_prev_pid, next_prev_tid;
	int32_t ppid, ptid;
	uint64_t hw_id;
	uint64_t lost;
};

/**
 * Open the perf.data file at `path` (a regular file only: a FIFO or device
 * fails at once) and read its header, attributes, feature sections and
 * the cs_etm metadata, and the AUX_OUTPUT_HW_ID records. On failure *out is
 * NULL and errbuf (if not NULL) receives "PATH: offset N: reason" naming the
 * file offset of the first bad structure ("PATH: reason" when the file
 * cannot be opened or read).
 * Errors: CSD_EINVAL (NULL path or out), CSD_EIO (cannot open or read, not
 * a regular file), CSD_EFORMAT (not a perf.data file, or a malformed one),
 * CSD_EUNSUPPORTED (pipe-mode, big-endian or version 1 files; AUX trace
 * that is not cs_etm; a cs_etm header version above 2), CSD_ENOENT (no
 * AUXTRACE_INFO record: nothing was traced), CSD_ENOMEM.
 */
int csd_perf_open(const char *path, csd_perf **out, char *errbuf, size_t errlen);

/** Close the file and free everything; NULL is ignored. */
void csd_perf_free(csd_perf *pd);

/** The file's header facts and feature strings; NULL for NULL. Valid until csd_perf_free(). */
const struct csd_perf_info *csd_perf_info(const csd_perf *pd);

/** Number of traced CPUs (metadata blocks, every unit); 0 for NULL. */
size_t csd_perf_num_cpus(const csd_perf *pd);
/** Traced CPU i, in metadata order; NULL if out of range. Valid until csd_perf_free(). */
const struct csd_perf_cpu *csd_perf_cpu(const csd_perf *pd, size_t i);

/** Number of build-ID table entries; 0 for NULL. */
size_t csd_perf_num_build_ids(const csd_perf *pd);
/** Build-ID entry i; NULL if out of range. Valid until csd_perf_free(). */
const struct csd_perf_build_id *csd_perf_build_id(const csd_perf *pd, size_t i);

/**
 * The next event, in file order (the pieces of one AUXTRACE buffer in
 * stream order, at its place). Records of other kinds are passed over.
 * Returns 0 with *ev filled (ev->size must be set: a struct older than
 * this library's is filled as far as it goes), CSD_EEOS after the last
 * record. A record that cannot be read ends the walk: the same error is
 * returned until csd_perf_rewind(), and csd_perf_error() says where and why.
 * Errors: CSD_EINVAL (NULL argument, ev->size smaller than the first
 * version of the struct), CSD_EFORMAT (malformed record), CSD_EIO (read
 * error, or the file ends inside a record).
 */
int csd_perf_next(csd_perf *pd, struct csd_perf_event *ev);

/** Walk the events again from the first. Errors: CSD_EINVAL. */
int csd_perf_rewind(csd_perf *pd);

/**
 * Copy `size` bytes at file offset `offset` into buf (e.g. the bytes of an
 * AUX_DATA event). Returns `size`.
 * Errors: CSD_EINVAL (NULL argument, size above INT32_MAX, range outside
 * the file), CSD_EIO (read error).
 */
int csd_perf_read(csd_perf *pd, uint64_t offset, void *buf, size_t size);

/** Why the last failing call on pd failed ("PATH: offset N: reason"); "" if none. Never NULL. */
const char *csd_perf_error(const csd_perf *pd);

/*
 * The files a recording mapped, found on this machine as perf finds them.
 */

/**
 * The build ID the file records for the mapped file `name` in its build-ID
 * table (HEADER_BUILD_ID feature): the entry of process `pid` if there is
 * one, else the first entry of that name (an MMAP2 record may carry the
 * build ID itself: struct csd_perf_event, CSD_PERF_EVF_BUILD_ID). Returns its
 * size in bytes (1-20), copied to id; 0 when the table has none.
 * Errors: CSD_EINVAL (NULL argument).
 */
int csd_perf_file_build_id(const csd_perf *pd, const char *name, int32_t pid, uint8_t id[20]);

/**
 * The GNU build ID of an ELF file (the NT_GNU_BUILD_ID note of a PT_NOTE
 * segment; 32- or 64-bit little-endian; the first 256 program headers and
 * 4 KiB of each note segment are looked at). Returns its size in bytes
 * (1-20), copied to id; 0 when the file has none or is no such ELF file.
 * Errors: CSD_EINVAL (NULL argument), CSD_EIO (cannot open it as a regular
 * file).
 */
int csd_elf_build_id(const char *path, uint8_t id[20]);

/**
 * Where the code of the mapped file `name` (the path the recording gives)
 * is on this machine, looked up as perf does. With a build ID
 * (build_id_size > 0): in the build-ID cache under `buildid_dir` (NULL:
 * $HOME/.debug), first DIR/.build-id/XX/REST (XX the first two hex digits;
 * a directory holding `elf`, or a plain file), then DIR/NAME/HEX/elf. Then
 * `symfs` followed by `name` (`name` itself when symfs is NULL); a file
 * found there whose own build ID is another than a given one is refused.
 * Returns 0 with the file's path in path (NUL-terminated).
 * Errors: CSD_ENOENT (not found; or refused: then *other_size is the size
 * of the file's own build ID, copied to other, and path names the file;
 * else *other_size is 0), CSD_ENOSPC (a path does not fit in path_size
 * bytes), CSD_EINVAL (NULL argument, build_id_size above 20).
 */
int csd_perf_find_file(const char *name, const uint8_t *build_id, size_t build_id_size, const char *symfs,
		       const char *buildid_dir, char *path, size_t path_size, uint8_t other[20], size_t *other_size);

/* ------------------------------------------------------------------------
 * perf.data session: what each decoder of a recording is given
 *
 * A session walks a perf.data file and says, step by step, which decoders
 * to make, which trace bytes each is fed, when each ends and which program
 * image it reads. The caller owns the decoders (flow or packet, on its own
 * threads or not) and takes their records. The session applies perf's
 * rules: each PERF_RECORD_AUX's data is a capture of its own, so a queue's
 * decoders end with it unless the next piece continues it; formatted data
 * goes through the frame demultiplexer, unformatted data belongs to its
 * CPU; each process has an image made of its MMAP/MMAP2 records so far (an
 * exec starts a new one), and one more holds every mapping for queues whose
 * process is not known; a mapped file is looked up as csd_perf_find_file()
 * does.
 * ---------------------------------------------------------------------- */

typedef struct csd_perf_session csd_perf_session;

/** Flags of struct csd_perf_session_config. */
enum csd_perf_session_flag {
	/** Build images from the mappings (for flow decoders). Without it
	 *  mappings are not looked up and SOURCE actions carry no image. */
	CSD_PERF_SESSION_IMAGES = 1u << 0,
	/** Demultiplex frames with CSD_FRAME_BY_ID (larger DATA actions, a
	 *  trace ID's bytes together; the bytes' order across IDs is lost). */
	CSD_PERF_SESSION_FRAMES_BY_ID = 1u << 1,
	/** Images are read by decoders on other threads: after each change
	 *  the session prepares an image for concurrent reading (see
	 *  csd_image_new()), and it gives CSD_PERF_ACT_SETTLE before changing
	 *  an image or the thread table that csd_perf_session_context_pid()
	 *  reads. */
	CSD_PERF_SESSION_THREADS = 1u << 2,
};

struct csd_perf_session_config {
	size_t size;              /**< sizeof(struct csd_perf_session_config) */
	uint32_t flags;           /**< enum csd_perf_session_flag bits */
	/** Sections every image starts with (the kernel, the caller's own
	 *  files), referenced: it must outlive the session and not change
	 *  while it runs. NULL: none. */
	csd_image *base;
	const char *symfs;        /**< as csd_perf_find_file(); NULL: none (copied) */
	const char *buildid_dir;  /**< as csd_perf_find_file(); NULL: $HOME/.debug (copied) */
	/** The trace IDs to decode (num_ids 0: all); the others' bytes are
	 *  dropped without a word. Read by csd_perf_session_new() only. */
	const uint8_t *ids;
	size_t num_ids;
};

/** What a struct csd_perf_action asks of the caller. */
enum csd_perf_action_type {
	/** Before the next call, everything given to the decoders so far must
	 *  be decoded and their records taken (only with
	 *  CSD_PERF_SESSION_THREADS; a caller decoding in the calling thread
	 *  has nothing to do). */
	CSD_PERF_ACT_SETTLE = 1,
	/** `text`: a warning (trace skipped, file not found, ...), starting
	 *  with the name of the file it is about. */
	CSD_PERF_ACT_WARNING,
	/** Make decoder `key` for `source` (its CPU and trace configuration)
	 *  reading `image`; its records belong to `cpu`, `pid`, `tid` (-1:
	 *  not known; a context ID may tell: csd_perf_session_context_pid()). */
	CSD_PERF_ACT_SOURCE,
	/** Feed `bytes` to decoder `key` (valid until the next call). */
	CSD_PERF_ACT_DATA,
	/** `frame`: a CSD_FRAME_ERROR or CSD_FRAME_TRUNCATED of a queue's
	 *  formatter frames, in order with the DATA actions. */
	CSD_PERF_ACT_FRAME_ERROR,
	/** Decoder `key` ends: finish it and take its last records. Its key
	 *  may be given to a new decoder after the CAPTURE_END that follows.
	 *  No SETTLE comes first: a caller decoding on other threads may
	 *  finish it there, in order with its data, while the next decoders
	 *  start (they share nothing with it). */
	CSD_PERF_ACT_END,
	/** A queue's capture ended (its decoders' END actions came before it,
	 *  if it made any). CSD_PERF_ACTF_DECODED is set when the queue had
	 *  a capture; without it the queue had none (a new queue taking the
	 *  place of an unused one), and only held records may go. Records held to
	 *  be merged by time may go out: the next capture's timestamps start
	 *  afresh. */
	CSD_PERF_ACT_CAPTURE_END,
	/** `event`: a PERF_RECORD_AUX that says trace was lost (truncated,
	 *  partial or collision), after the trace decoded before it. */
	CSD_PERF_ACT_AUX_LOST,
};

/** Flags of struct csd_perf_action. */
enum csd_perf_action_flag {
	CSD_PERF_ACTF_SKIPPED = 1u << 0,    /**< WARNING: a traced CPU's trace is skipped */
	CSD_PERF_ACTF_PER_THREAD = 1u << 1, /**< SOURCE: a thread's buffer (per-thread recording) */
	CSD_PERF_ACTF_DECODED = 1u << 2,    /**< CAPTURE_END: the queue had a capture (its pieces were read), now ended */
};

/** One step of a session; fields other than `size` are set by
 *  csd_perf_session_next() and valid until the next call. */
struct csd_perf_action {
	size_t size;              /**< sizeof(struct csd_perf_action), set by the caller */
	uint32_t type;            /**< enum csd_perf_action_type */
	uint32_t flags;           /**< enum csd_perf_action_flag bits */
	/** SOURCE, DATA, END: the decoder, below CSD_PERF_SESSION_KEYS;
	 *  unique among the decoders not yet ended. */
	uint32_t key;
	int32_t cpu, pid, tid;    /**< SOURCE */
	const struct csd_perf_cpu *source; /**< SOURCE */
	csd_image *image;         /**< SOURCE: NULL without CSD_PERF_SESSION_IMAGES */
	struct csd_bytes bytes;   /**< DATA */
	struct csd_frame_out frame; /**< FRAME_ERROR */
	const struct csd_perf_event *event; /**< AUX_LOST */
	const char *text;         /**< WARNING */
};

/** Keys are below this: 64 queues of 128 trace IDs. */
#define CSD_PERF_SESSION_KEYS (64u * 128u)

/**
 * Open the perf.data file at `path` (csd_perf_open()) for a session. On
 * failure *out is NULL and errbuf receives the reason.
 * Errors: those of csd_perf_open(), CSD_EINVAL (NULL or invalid config; its
 * size must be at least this header's sizeof(struct
 * csd_perf_session_config)), CSD_ENOMEM.
 */
int csd_perf_session_new(const char *path, const struct csd_perf_session_config *cfg, csd_perf_session **out,
			 char *errbuf, size_t errlen);

/** Free the session, its images and frame demultiplexers; NULL is ignored.
 *  The caller's decoders are its own. */
void csd_perf_session_free(csd_perf_session *ps);

/** The file's reader, for its header facts (csd_perf_info(), ...). Do not
 *  walk it (csd_perf_next(), csd_perf_rewind()) while the session runs.
 *  NULL for NULL. */
csd_perf *csd_perf_session_reader(const csd_perf_session *ps);

/** Traced CPUs whose trace this session decodes (ETMv3 or PTM, a usable
 *  trace ID of their own, wanted by the config): when 0,
 *  csd_perf_session_next() gives the warnings saying why and then fails.
 *  0 for NULL. */
size_t csd_perf_session_num_sources(const csd_perf_session *ps);

/**
 * The next action into *act. At the end of the file every queue's
 * decoders end (END, CAPTURE_END), then the summary warnings come, then
 * CSD_EEOS. On an error the queues end the same way before the error is
 * returned, and csd_perf_session_error() says why; it is returned again
 * from then on.
 * Errors: CSD_EINVAL (NULL argument or act->size too small), CSD_EEOS (end), CSD_ENOENT (no
 * source to decode: csd_perf_session_num_sources()), the errors of
 * csd_perf_next() and csd_perf_read() (a malformed record, the file cannot
 * be read), CSD_ENOMEM.
 */
int csd_perf_session_next(csd_perf_session *ps, struct csd_perf_action *act);

/** Why the session failed: one line starting with the file's name; "" when
 *  it has not. Never NULL for a session. */
const char *csd_perf_session_error(const csd_perf_session *ps);

/**
 * The process a CPU queue's context ID names: Linux writes the pid to
 * CONTEXTIDR (arm64), or pid << 8 | ASID (32-bit ARM with
 * CONFIG_PID_IN_CONTEXTIDR); only a process the file's sideband made known
 * so far counts. Returns the pid, or -1 (none, or NULL session). May be
 * called from decoding threads between SETTLE actions.
 */
int32_t csd_perf_session_context_pid(const csd_perf_session *ps, uint32_t context_id);

#ifdef __cplusplus
}
#endif

#endif /* CSDEC_H */
