/* perf_session.c - a perf.data recording turned into what each decoder is
 * given (csd_perf_session_*): one decoder per trace ID of each AUX queue
 * (a CPU, or a thread when perf recorded per thread), the program images
 * built from the recorded mappings, and the CPU, process and thread of
 * each decoder's records. The caller owns the decoders, so the same rules
 * serve the tool's threads and the Python package.
 *
 * Each PERF_RECORD_AUX's data is a sink session of its own (the ETM was
 * enabled for it and stopped after it), so its decoders start afresh, as
 * perf's own decoder is reset there; a piece that continues the previous
 * one of its queue (an AUX record whose data perf read in two goes) keeps
 * them. Formatted data goes through the frame demultiplexer, raw data
 * belongs to its CPU.
 *
 * Images: one per process, made of the MMAP/MMAP2 records of that pid seen
 * so far (an exec starts a new one), plus one holding every mapping for
 * queues whose process is not known; each starts with the caller's base
 * sections. A mapped file is looked up as perf does (csd_perf_find_file).
 *
 * The walk is a small state machine: each step handles one perf record,
 * one chunk of trace or one output of a frame demultiplexer, and queues
 * the actions it makes; csd_perf_session_next() hands them out one by
 * one, so that the bytes and strings they point to stay valid until the
 * caller's next call.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csdec.h"
#include "perf_files.h"
#include "perf_session.h"

#define CHUNK (1u << 20)
#define MAX_IDS 128
#define MAX_QUEUES (CSD_PERF_SESSION_KEYS / MAX_IDS)
#define MAX_PROCESSES 4096
#define MAX_THREADS (1u << 20)
#define MAX_FILES 4096
#define MAX_WARNINGS 8
#define PROT_EXEC_BIT 4u
#define ERR_LEN 1024

/* An AUX queue: a CPU (cpu >= 0) or, per-thread, a thread (cpu -1). */
struct queue {
	int used;
	uint64_t last_use;
	int32_t cpu, tid;
	int active, raw;
	uint64_t next;                /* stream position a continuation starts at */
	csd_frame_decoder *fd;
	csd_image *img;
	int32_t pid, ptid;            /* the piece's process and thread (-1: not known) */
	int raw_cpu;                  /* raw: index of its CPU */
	uint8_t live[MAX_IDS];        /* the trace ID's decoder was made */
};

struct process {
	int32_t pid;
	csd_image *img;
};

/* A mapped file name and where it was found (NULL: not found). */
struct file_entry {
	char *name;
	uint8_t id[20], id_size;
	char *path;
};

/* What a CPU runs, from switch records. */
struct cpu_state {
	int32_t pid, tid;             /* -1: not known */
	uint32_t switches, switches_at_piece;
};

/* A queued action and the text it owns. */
struct pending {
	struct csd_perf_action act;
	char *text;
};

enum walk_state {
	ST_SETUP,       /* the CPUs' warnings, one a step */
	ST_EVENTS,      /* the next perf record */
	ST_SETTLED,     /* the current record, after its SETTLE */
	ST_PIECE,       /* the current AUX_DATA's next chunk */
	ST_FRAMES,      /* the current chunk's frame demultiplexer outputs */
	ST_FINAL,       /* every queue ends */
	ST_SUMMARY,     /* the last warnings */
	ST_DONE,
};

struct csd_perf_session {
	struct csd_perf_session_config cfg;  /* (its strings the session's copies) */
	uint8_t want[MAX_IDS];
	char *path;
	csd_perf *pd;
	size_t ncpus;
	const struct csd_perf_cpu *by_id[MAX_IDS];
	size_t nsources;
	struct cpu_state *cpu_state;
	uint8_t warned_id[MAX_IDS];
	int warned_raw_cpu;
	struct queue queues[MAX_QUEUES];
	uint64_t use_clock;
	/* threads: tid -> pid, open addressing (key+1, 0 = empty) */
	uint32_t *tid_key;
	int32_t *tid_pid;
	size_t tid_cap, tid_n;
	struct process *procs;
	size_t nprocs;
	csd_image *all;               /* every mapping */
	csd_image **retired;          /* images replaced by an exec, freed at the end */
	size_t nretired, cap_retired;
	struct file_entry *files;
	size_t nfiles;
	struct file_entry spare;      /* the answer when the table is full */
	unsigned missing_warnings, missing_more;
	uint64_t lost_records;
	uint8_t *buf;

	/* The walk. */
	enum walk_state state;
	size_t setup_cpu;
	struct csd_perf_event ev;     /* the current record */
	struct queue *piece_q;
	int piece_raw_key;            /* raw: the decoder's key (-1: frames) */
	uint64_t piece_done;
	size_t final_q;
	int walk_rc;                  /* csd_perf_next's error, returned at the end */
	int rc;                       /* the session's error (0: none) */
	char err[ERR_LEN];

	/* Actions made and not yet handed out; the last one handed out
	 * (its text is freed at the next call). */
	struct pending *pend;
	size_t npend, pend_head, pend_cap;
	char *given_text;
};

/* ------------------------------------------------------------------------
 * Actions
 * ---------------------------------------------------------------------- */

static void fail(csd_perf_session *ps, int rc, const char *fmt, ...);

/* A new action at the end of the queue; NULL (the session failed) if
 * memory is short. Actions are made only while the queue is empty at the
 * start of a step (csd_perf_session_next), so it starts at index 0. */
static struct csd_perf_action *push(csd_perf_session *ps, uint32_t type)
{
	if (ps->npend == ps->pend_cap) {
		size_t nc = ps->pend_cap ? ps->pend_cap * 2 : 64;
		struct pending *n = realloc(ps->pend, nc * sizeof(*n));
		if (!n) {
			fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
			return NULL;
		}
		ps->pend = n;
		ps->pend_cap = nc;
	}
	struct pending *p = &ps->pend[ps->npend++];
	memset(p, 0, sizeof(*p));
	p->act.type = type;
	return &p->act;
}

static void fail(csd_perf_session *ps, int rc, const char *fmt, ...)
{
	if (ps->rc)
		return;
	ps->rc = rc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err, sizeof(ps->err), fmt, ap);
	va_end(ap);
}

static void warn(csd_perf_session *ps, uint32_t flags, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!t) {
		fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
		return;
	}
	struct csd_perf_action *a = push(ps, CSD_PERF_ACT_WARNING);
	if (!a) {
		free(t);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(t, (size_t)n + 1, fmt, ap);
	va_end(ap);
	a->flags = flags;
	a->text = t;
	ps->pend[ps->npend - 1].text = t;
}

static void push_settle(csd_perf_session *ps)
{
	if (ps->cfg.flags & CSD_PERF_SESSION_THREADS)
		push(ps, CSD_PERF_ACT_SETTLE);
}

/* ------------------------------------------------------------------------
 * Threads and processes
 * ---------------------------------------------------------------------- */

static size_t tid_slot(const csd_perf_session *ps, int32_t tid)
{
	uint32_t h = (uint32_t)tid * 2654435761u;
	return h & (ps->tid_cap - 1);
}

static void tid_set(csd_perf_session *ps, int32_t pid, int32_t tid)
{
	if (pid < 0 || tid < 0)
		return;
	if (ps->tid_n * 2 >= ps->tid_cap) {
		/* At half of the largest table, no more threads are taken. */
		if (ps->tid_cap >= MAX_THREADS)
			return;
		size_t ncap = ps->tid_cap ? ps->tid_cap * 2 : 256;
		uint32_t *nk = calloc(ncap, sizeof(*nk));
		int32_t *np = calloc(ncap, sizeof(*np));
		if (!nk || !np) {
			free(nk);
			free(np);
			return;
		}
		uint32_t *ok = ps->tid_key;
		int32_t *op = ps->tid_pid;
		size_t ocap = ps->tid_cap;
		ps->tid_key = nk;
		ps->tid_pid = np;
		ps->tid_cap = ncap;
		ps->tid_n = 0;
		for (size_t i = 0; i < ocap; i++)
			if (ok[i])
				tid_set(ps, op[i], (int32_t)(ok[i] - 1));
		free(ok);
		free(op);
	}
	size_t i = tid_slot(ps, tid);
	while (ps->tid_key[i] && ps->tid_key[i] != (uint32_t)tid + 1)
		i = (i + 1) & (ps->tid_cap - 1);
	if (!ps->tid_key[i])
		ps->tid_n++;
	ps->tid_key[i] = (uint32_t)tid + 1;
	ps->tid_pid[i] = pid;
}

static int32_t tid_pid(const csd_perf_session *ps, int32_t tid)
{
	if (tid < 0 || !ps->tid_cap)
		return -1;
	size_t i = tid_slot(ps, tid);
	while (ps->tid_key[i]) {
		if (ps->tid_key[i] == (uint32_t)tid + 1)
			return ps->tid_pid[i];
		i = (i + 1) & (ps->tid_cap - 1);
	}
	return -1;
}

/* tid_set() from sideband, where it changes the table (the event was
 * settled first: see needs_settle). */
static void tid_note(csd_perf_session *ps, int32_t pid, int32_t tid)
{
	if (pid < 0 || tid < 0 || tid_pid(ps, tid) == pid)
		return;
	tid_set(ps, pid, tid);
}

/* A process is known when a thread of it was seen (its main thread's
 * tid is its pid). */
static int pid_known(const csd_perf_session *ps, int32_t pid)
{
	return pid > 0 && tid_pid(ps, pid) == pid;
}

int32_t csd_perf_session_context_pid(const csd_perf_session *ps, uint32_t cid)
{
	if (!ps)
		return -1;
	if (cid <= INT32_MAX && pid_known(ps, (int32_t)cid))
		return (int32_t)cid;
	if (pid_known(ps, (int32_t)(cid >> 8)))
		return (int32_t)(cid >> 8);
	return -1;
}

/* ------------------------------------------------------------------------
 * Images
 * ---------------------------------------------------------------------- */

/* A new image holding the base's sections (referenced). */
static csd_image *image_new(csd_perf_session *ps)
{
	csd_image *img = csd_image_new();
	if (!img) {
		fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
		return NULL;
	}
	const csd_image *base = ps->cfg.base;
	for (size_t i = 0; i < csd_image_num_sections(base); i++) {
		uint64_t addr, size;
		const uint8_t *data;
		int rc = csd_image_section(base, i, &addr, &size, &data);
		if (rc == CSD_OK)
			rc = csd_image_add_buffer(img, addr, data, (size_t)size, 0);
		if (rc < 0) {
			fail(ps, rc, "%s: the base image's section %zu: %s", ps->path, i,
			     rc == CSD_ENOMEM ? "out of memory" : csd_errstr(rc));
			csd_image_free(img);
			return NULL;
		}
	}
	return img;
}

static struct process *process_find(csd_perf_session *ps, int32_t pid)
{
	for (size_t i = 0; i < ps->nprocs; i++)
		if (ps->procs[i].pid == pid)
			return &ps->procs[i];
	return NULL;
}

static csd_image *process_image(csd_perf_session *ps, int32_t pid, int create)
{
	struct process *p = process_find(ps, pid);
	if (p)
		return p->img;
	if (!create || ps->nprocs == MAX_PROCESSES)
		return NULL;
	if (!ps->procs) {
		ps->procs = calloc(MAX_PROCESSES, sizeof(*ps->procs));
		if (!ps->procs) {
			fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
			return NULL;
		}
	}
	csd_image *img = image_new(ps);
	if (!img)
		return NULL;
	p = &ps->procs[ps->nprocs++];
	p->pid = pid;
	p->img = img;
	return img;
}

/* The image a queue's decoders read: its process's, else the one of every
 * mapping. */
static csd_image *image_for(csd_perf_session *ps, int32_t pid)
{
	csd_image *img = pid > 0 ? process_image(ps, pid, 0) : NULL;
	return img ? img : ps->all;
}

/* An exec: the process's address space starts anew. Its old image may
 * still be read by a decoder, so it lives on until the end. */
static void process_exec(csd_perf_session *ps, int32_t pid)
{
	struct process *p = process_find(ps, pid);
	if (!p)
		return;
	if (ps->nretired == ps->cap_retired) {
		size_t nc = ps->cap_retired ? ps->cap_retired * 2 : 16;
		csd_image **n = realloc(ps->retired, nc * sizeof(*n));
		if (!n) {
			fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
			return;
		}
		ps->retired = n;
		ps->cap_retired = nc;
	}
	csd_image *img = image_new(ps);
	if (!img)
		return;
	ps->retired[ps->nretired++] = p->img;
	p->img = img;
}

/* Where the code of `name` is (csd_perf_find_file: the build-ID cache,
 * then symfs), warned about when the file there has another build ID.
 * Returns a copy of the path, or NULL. */
static char *find_file(csd_perf_session *ps, const char *name, const uint8_t *id, unsigned id_size)
{
	char path[8192];
	uint8_t other[20];
	size_t other_size;
	int rc = csd_perf_find_file(name, id, id_size, ps->cfg.symfs, ps->cfg.buildid_dir, path, sizeof(path), other,
				    &other_size);
	if (rc == CSD_ENOENT && other_size) {
		char hex[41], fhex[41];
		csdi_build_id_hex(hex, id, id_size);
		csdi_build_id_hex(fhex, other, other_size);
		warn(ps, 0, "%s: build ID %s, the recording's %s is %s: not used", path, fhex, name, hex);
	}
	return rc == CSD_OK ? strdup(path) : NULL;
}

static const struct file_entry *file_lookup(csd_perf_session *ps, const char *name, const uint8_t *id,
					    unsigned id_size)
{
	for (size_t i = 0; i < ps->nfiles; i++) {
		struct file_entry *f = &ps->files[i];
		if (f->id_size == id_size && memcmp(f->id, id, id_size) == 0 && strcmp(f->name, name) == 0)
			return f;
	}
	char *path = find_file(ps, name, id, id_size);
	if (!ps->files && ps->nfiles < MAX_FILES)
		ps->files = calloc(MAX_FILES, sizeof(*ps->files));
	char *copy = ps->files && ps->nfiles < MAX_FILES ? strdup(name) : NULL;
	if (!copy) {
		/* A full table (or no memory for it): found again next time
		 * (slower, the same answer), not warned about. */
		free(ps->spare.path);
		ps->spare.path = path;
		return &ps->spare;
	}
	struct file_entry *f = &ps->files[ps->nfiles++];
	f->name = copy;
	memcpy(f->id, id, id_size);
	f->id_size = (uint8_t)id_size;
	f->path = path;
	if (!path) {
		if (ps->missing_warnings < MAX_WARNINGS) {
			char hex[41] = "";
			csdi_build_id_hex(hex, id, id_size);
			warn(ps, 0, "%s: mapped file %s not found (%s%s%s%s); its code is not in the image", ps->path,
			     name, id_size ? "build ID " : "", hex, id_size ? ", " : "",
			     ps->cfg.symfs ? "--symfs" : "no --symfs");
			ps->missing_warnings++;
		} else {
			ps->missing_more++;
		}
	}
	return f;
}

static void add_mapping(csd_perf_session *ps, csd_image *img, const char *path, const struct csd_perf_event *ev)
{
	struct stat st;
	if (stat(path, &st) != 0 || (uint64_t)st.st_size <= ev->pgoff)
		return;
	uint64_t len = (uint64_t)st.st_size - ev->pgoff;
	if (ev->len < len)
		len = ev->len;
	if (!len)
		return;
	if (csd_image_add_file(img, path, ev->pgoff, len, ev->addr) < 0) {
		if (ps->missing_warnings < MAX_WARNINGS) {
			warn(ps, 0, "%s: mapping of %s at 0x%" PRIx64 " not used: %s", ps->path, path, ev->addr,
			     csd_image_error(img));
			ps->missing_warnings++;
		}
		return;
	}
	/* Decoders on other threads read the image next: its lookup map is
	 * made here, by a read, and not by one of them while another reads
	 * (csd_image_new). */
	uint8_t byte;
	if (ps->cfg.flags & CSD_PERF_SESSION_THREADS)
		(void)csd_image_read(img, ev->addr, &byte, 1);
}

/* Does the MMAP record ev map code from a file that goes into the
 * images? Code mappings of files only: [vdso], //anon,
 * [kernel.kallsyms]... have no file here (the kernel is the caller's
 * base). */
static int maps_code(const csd_perf_session *ps, const struct csd_perf_event *ev)
{
	return (ps->cfg.flags & CSD_PERF_SESSION_IMAGES) && ev->filename[0] == '/' && ev->len &&
	       !(ev->record == 10 && ev->prot && !(ev->prot & PROT_EXEC_BIT));
}

static void on_mmap(csd_perf_session *ps, const struct csd_perf_event *ev)
{
	if (!maps_code(ps, ev))
		return;
	uint8_t id[20];
	unsigned id_size = 0;
	if (ev->flags & CSD_PERF_EVF_BUILD_ID) {
		id_size = ev->build_id_size <= 20 ? ev->build_id_size : 20;
		memcpy(id, ev->build_id, id_size);
	} else {
		int n = csd_perf_file_build_id(ps->pd, ev->filename, ev->pid, id);
		id_size = n > 0 ? (unsigned)n : 0;
	}
	const struct file_entry *f = file_lookup(ps, ev->filename, id, id_size);
	if (!f->path)
		return;
	csd_image *own = ev->pid > 0 ? process_image(ps, ev->pid, 1) : NULL;
	if (own)
		add_mapping(ps, own, f->path, ev);
	add_mapping(ps, ps->all, f->path, ev);
}

/* ------------------------------------------------------------------------
 * Queues and their decoders
 * ---------------------------------------------------------------------- */

static uint32_t queue_key(const csd_perf_session *ps, const struct queue *q, unsigned id)
{
	return (uint32_t)(q - ps->queues) * MAX_IDS + id;
}

/* End the queue's capture: its decoders end, then the capture. */
static void queue_end(csd_perf_session *ps, struct queue *q)
{
	if (!q->active) {
		push(ps, CSD_PERF_ACT_CAPTURE_END);
		return;
	}
	/* (No SETTLE: the decoders' ends are in order with their data, and
	 * nothing they read changes.) */
	if (q->fd) {
		csd_frame_finish(q->fd);
		struct csd_frame_out fo;
		while (csd_frame_next(q->fd, &fo) == 0) {
			if (fo.event != CSD_FRAME_ERROR && fo.event != CSD_FRAME_TRUNCATED)
				continue;
			struct csd_perf_action *a = push(ps, CSD_PERF_ACT_FRAME_ERROR);
			if (!a)
				break;
			a->frame = fo;
		}
		csd_frame_free(q->fd);
		q->fd = NULL;
	}
	for (unsigned id = 0; id < MAX_IDS; id++) {
		if (!q->live[id])
			continue;
		struct csd_perf_action *a = push(ps, CSD_PERF_ACT_END);
		if (a)
			a->key = queue_key(ps, q, id);
		q->live[id] = 0;
	}
	struct csd_perf_action *a = push(ps, CSD_PERF_ACT_CAPTURE_END);
	if (a)
		a->flags = CSD_PERF_ACTF_DECODED;
	q->active = 0;
}

static struct queue *queue_get(csd_perf_session *ps, int32_t cpu, int32_t tid)
{
	struct queue *free_q = NULL, *old = NULL;
	for (size_t i = 0; i < MAX_QUEUES; i++) {
		struct queue *q = &ps->queues[i];
		if (q->used && q->cpu == cpu && q->tid == tid) {
			q->last_use = ++ps->use_clock;
			return q;
		}
		if (!q->used && !free_q)
			free_q = q;
		if (q->used && (!old || q->last_use < old->last_use))
			old = q;
	}
	struct queue *q = free_q ? free_q : old;
	if (!free_q)
		queue_end(ps, q); /* evicted: its next piece starts afresh */
	q->used = 1;
	q->cpu = cpu;
	q->tid = tid;
	q->last_use = ++ps->use_clock;
	return q;
}

/* The key of trace ID `id`'s decoder in q, made (a SOURCE action) at its
 * first bytes; -1 when its bytes are dropped. */
static int queue_source(csd_perf_session *ps, struct queue *q, unsigned id, const struct csd_perf_cpu *c)
{
	const uint32_t key = queue_key(ps, q, id);
	if (q->live[id])
		return (int)key;
	if (!c || !ps->want[id])
		return -1;
	struct csd_perf_action *a = push(ps, CSD_PERF_ACT_SOURCE);
	if (!a)
		return -1;
	a->key = key;
	a->flags = q->cpu == -1 ? CSD_PERF_ACTF_PER_THREAD : 0;
	a->source = c;
	a->image = (ps->cfg.flags & CSD_PERF_SESSION_IMAGES) ? q->img : NULL;
	a->cpu = c->cpu;
	a->pid = q->pid;
	a->tid = q->ptid;
	q->live[id] = 1;
	return (int)key;
}

static void push_data(csd_perf_session *ps, int key, const struct csd_bytes *b)
{
	struct csd_perf_action *a = push(ps, CSD_PERF_ACT_DATA);
	if (!a)
		return;
	a->key = (uint32_t)key;
	a->bytes = *b;
}

/* One output of the current piece's frame demultiplexer; 0 when it needs
 * more input. */
static int frame_step(csd_perf_session *ps)
{
	struct queue *q = ps->piece_q;
	struct csd_frame_out fo;
	if (csd_frame_next(q->fd, &fo) != 0)
		return 0;
	if (fo.event == CSD_FRAME_ERROR || fo.event == CSD_FRAME_TRUNCATED) {
		struct csd_perf_action *a = push(ps, CSD_PERF_ACT_FRAME_ERROR);
		if (a)
			a->frame = fo;
		return 1;
	}
	if (fo.event != CSD_FRAME_DATA || fo.bytes.id >= MAX_IDS)
		return 1;
	unsigned id = fo.bytes.id;
	const struct csd_perf_cpu *c = ps->by_id[id];
	if (!c && !ps->warned_id[id]) {
		ps->warned_id[id] = 1;
		warn(ps, 0, "%s: trace ID 0x%02x is no decodable CPU's; its trace is skipped", ps->path, id);
	}
	int key = queue_source(ps, q, id, c);
	if (key >= 0)
		push_data(ps, key, &fo.bytes);
	return 1;
}

static int cpu_index(const csd_perf_session *ps, int32_t cpu)
{
	for (size_t i = 0; i < ps->ncpus; i++)
		if (csd_perf_cpu(ps->pd, i)->cpu == cpu)
			return (int)i;
	return -1;
}

static int decodable(const struct csd_perf_cpu *c)
{
	return (c->unit == CSD_PERF_UNIT_ETM3 || c->unit == CSD_PERF_UNIT_PTM) && c->id_from != CSD_PERF_ID_NONE;
}

/* Raw data's CPU: the buffer's; per-thread, the only decodable CPU, or the
 * first as perf takes it. */
static int raw_cpu(csd_perf_session *ps, const struct csd_perf_event *ev)
{
	int ci = ev->cpu >= 0 ? cpu_index(ps, ev->cpu) : -1;
	if (ci >= 0)
		return ci;
	int only = -1, count = 0;
	for (size_t i = 0; i < ps->ncpus; i++)
		if (decodable(csd_perf_cpu(ps->pd, i)) && count++ == 0)
			only = (int)i;
	if (count > 1 && !ps->warned_raw_cpu) {
		ps->warned_raw_cpu = 1;
		warn(ps, 0, "%s: unformatted trace of a thread traced on %d CPUs: taken as CPU %" PRId32 "'s", ps->path,
		     count, csd_perf_cpu(ps->pd, (size_t)only)->cpu);
	}
	return only;
}

/* The process and thread of a piece: per thread, the buffer's thread; per
 * CPU, the task the CPU ran since its previous piece if it never switched
 * in between (else the trace's context IDs may tell). */
static void piece_context(csd_perf_session *ps, const struct csd_perf_event *ev, int32_t *pid, int32_t *tid)
{
	*pid = *tid = -1;
	if (ev->cpu == -1) {
		*tid = ev->tid;
		*pid = ev->pid >= 0 ? ev->pid : tid_pid(ps, ev->tid);
		return;
	}
	int ci = cpu_index(ps, ev->cpu);
	if (ci < 0)
		return;
	struct cpu_state *st = &ps->cpu_state[ci];
	if (st->switches == st->switches_at_piece) {
		*pid = st->pid;
		*tid = st->tid;
	}
	st->switches_at_piece = st->switches;
}

/* The start of an AUX_DATA piece: its queue (ended first unless the piece
 * continues it) and, for raw data, its decoder. */
static void piece_start(csd_perf_session *ps)
{
	const struct csd_perf_event *ev = &ps->ev;
	int raw = (ev->flags & CSD_PERF_EVF_RAW) != 0;
	struct queue *q = queue_get(ps, ev->cpu, ev->cpu == -1 ? ev->tid : -1);
	int cont = (ev->flags & CSD_PERF_EVF_CONTINUES) && q->active && q->raw == raw && q->next == ev->aux_offset;
	if (!cont) {
		queue_end(ps, q);
		q->raw = raw;
		piece_context(ps, ev, &q->pid, &q->ptid);
		q->img = image_for(ps, q->pid);
		if (raw) {
			q->raw_cpu = raw_cpu(ps, ev);
		} else {
			struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
			if (ps->cfg.flags & CSD_PERF_SESSION_FRAMES_BY_ID)
				fc.flags |= CSD_FRAME_BY_ID;
			q->fd = csd_frame_new(&fc);
			if (!q->fd) {
				fail(ps, CSD_ENOMEM, "%s: out of memory", ps->path);
				return;
			}
		}
		q->active = 1;
	}
	q->next = ev->aux_offset + ev->data_size;
	ps->piece_q = q;
	ps->piece_done = 0;
	ps->piece_raw_key = -1;
	if (raw) {
		if (q->raw_cpu < 0)
			return;
		const struct csd_perf_cpu *c = csd_perf_cpu(ps->pd, (size_t)q->raw_cpu);
		if (!decodable(c))
			return;
		ps->piece_raw_key = queue_source(ps, q, c->config.trace_id, c);
		if (ps->piece_raw_key < 0)
			return;
	}
	ps->state = ST_PIECE;
}

/* The piece's next chunk: read, and fed to its decoder or demultiplexer. */
static void piece_chunk(csd_perf_session *ps)
{
	const struct csd_perf_event *ev = &ps->ev;
	if (ps->piece_done >= ev->data_size) {
		ps->state = ST_EVENTS;
		return;
	}
	size_t n = ev->data_size - ps->piece_done < CHUNK ? (size_t)(ev->data_size - ps->piece_done) : CHUNK;
	uint64_t off = ev->data_offset + ps->piece_done;
	int rc = csd_perf_read(ps->pd, off, ps->buf, n);
	if (rc < 0) {
		fail(ps, rc, "%s", csd_perf_error(ps->pd));
		return;
	}
	ps->piece_done += n;
	if (ps->piece_raw_key >= 0) {
		const unsigned id = (unsigned)ps->piece_raw_key % MAX_IDS;
		struct csd_bytes b = { .data = ps->buf, .size = n, .base = off, .id = (uint8_t)id };
		push_data(ps, ps->piece_raw_key, &b);
	} else {
		csd_frame_feed(ps->piece_q->fd, ps->buf, n, off);
		ps->state = ST_FRAMES;
	}
}

/* ------------------------------------------------------------------------
 * Sideband
 * ---------------------------------------------------------------------- */

static void set_cpu_task(csd_perf_session *ps, int32_t cpu, int32_t pid, int32_t tid, int switched)
{
	int ci = cpu >= 0 ? cpu_index(ps, cpu) : -1;
	if (ci < 0)
		return;
	ps->cpu_state[ci].pid = pid;
	ps->cpu_state[ci].tid = tid;
	ps->cpu_state[ci].switches += (uint32_t)switched;
}

static void on_aux(csd_perf_session *ps, const struct csd_perf_event *ev)
{
	const uint64_t lost = CSD_PERF_AUX_TRUNCATED | CSD_PERF_AUX_PARTIAL | CSD_PERF_AUX_COLLISION;
	if (!(ev->aux_flags & lost))
		return;
	struct csd_perf_action *a = push(ps, CSD_PERF_ACT_AUX_LOST);
	if (a)
		a->event = ev;
}

/* The thread (and its process) the record ev names, for the thread table:
 * 0 if it names none. A CPU-wide switch out names the next task, in this
 * one; a per-thread switch out none. */
static int noted_thread(const struct csd_perf_event *ev, int32_t *pid, int32_t *tid)
{
	*pid = ev->pid;
	*tid = ev->tid;
	switch (ev->type) {
	case CSD_PERF_MMAP:
	case CSD_PERF_COMM:
	case CSD_PERF_FORK:
	case CSD_PERF_ITRACE_START:
		return 1;
	case CSD_PERF_SWITCH:
		if (!(ev->flags & CSD_PERF_EVF_OUT))
			return 1;
		*pid = ev->next_prev_pid;
		*tid = ev->next_prev_tid;
		return ev->record == 15;
	default:
		return 0;
	}
}

/* Would the event change what decoders on other threads read: the thread
 * table (csd_perf_session_context_pid) or an image? Then it waits for a
 * SETTLE to be handed out first. (A mapping not found after all settles
 * for nothing, which costs a wait and changes no output.) */
static int needs_settle(const csd_perf_session *ps, const struct csd_perf_event *ev)
{
	if (ev->type == CSD_PERF_MMAP && maps_code(ps, ev))
		return 1;
	int32_t pid, tid;
	return noted_thread(ev, &pid, &tid) && pid >= 0 && tid >= 0 && tid_pid(ps, tid) != pid;
}

static void on_event(csd_perf_session *ps, const struct csd_perf_event *ev)
{
	int32_t pid, tid;
	const int noted = noted_thread(ev, &pid, &tid);
	if (noted)
		tid_note(ps, pid, tid);
	switch (ev->type) {
	case CSD_PERF_AUX_DATA:
		piece_start(ps);
		break;
	case CSD_PERF_AUX:
		on_aux(ps, ev);
		break;
	case CSD_PERF_MMAP:
		on_mmap(ps, ev);
		break;
	case CSD_PERF_COMM:
		if ((ev->flags & CSD_PERF_EVF_EXEC) && ev->pid > 0 && (ps->cfg.flags & CSD_PERF_SESSION_IMAGES))
			process_exec(ps, ev->pid);
		break;
	case CSD_PERF_ITRACE_START:
		set_cpu_task(ps, ev->cpu, ev->pid, ev->tid, 0);
		break;
	case CSD_PERF_SWITCH:
		/* The CPU runs the task the record names; after a per-thread
		 * switch out, none it knows. */
		if (noted)
			set_cpu_task(ps, ev->cpu, pid, tid, 1);
		else
			set_cpu_task(ps, ev->cpu, -1, -1, 1);
		break;
	case CSD_PERF_LOST:
		ps->lost_records += ev->lost;
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------
 * The session
 * ---------------------------------------------------------------------- */

static const char *const unit_names[] = { "?", "an ETMv3", "a PTM", "an ETMv4", "an ETE", "an unknown ETMv3-format unit" };

/* CPU i's warning, where it is not decoded (by_id: which CPU has each
 * trace ID, made with the session). */
static void setup_cpu(csd_perf_session *ps, size_t i)
{
	const struct csd_perf_cpu *c = csd_perf_cpu(ps->pd, i);
	if (c->unit != CSD_PERF_UNIT_ETM3 && c->unit != CSD_PERF_UNIT_PTM) {
		/* Its trace ID, where formatted data carries it, is skipped
		 * without another word. */
		ps->warned_id[c->traceidr & 0x7F] = 1;
		warn(ps, 0, "%s: CPU %" PRId32 " is traced by %s, which csdec does not decode; its trace is skipped",
		     ps->path, c->cpu, c->unit < 6 ? unit_names[c->unit] : "an unknown unit");
		return;
	}
	unsigned id = c->config.trace_id;
	if (c->id_from == CSD_PERF_ID_NONE) {
		warn(ps, CSD_PERF_ACTF_SKIPPED, "%s: CPU %" PRId32 " has trace ID 0x%02x (IDs are 0x01-0x6f); its trace is skipped",
		     ps->path, c->cpu, id);
		return;
	}
	if (ps->by_id[id] != c)
		warn(ps, CSD_PERF_ACTF_SKIPPED, "%s: CPU %" PRId32 " has the trace ID 0x%02x of CPU %" PRId32 "; its trace is skipped",
		     ps->path, c->cpu, id, ps->by_id[id]->cpu);
}

int csdi_perf_session_from_reader(csd_perf *pd, const char *name, const struct csd_perf_session_config *cfg,
				  csd_perf_session **out)
{
	*out = NULL;
	csd_perf_session *ps = calloc(1, sizeof(*ps));
	if (ps) {
		ps->path = strdup(name);
		ps->cfg = *cfg;
		ps->cfg.size = sizeof(ps->cfg);
		ps->cfg.ids = NULL;
		ps->cfg.symfs = cfg->symfs ? strdup(cfg->symfs) : NULL;
		ps->cfg.buildid_dir = cfg->buildid_dir ? strdup(cfg->buildid_dir) : NULL;
		ps->buf = malloc(CHUNK);
		ps->ncpus = csd_perf_num_cpus(pd);
		ps->cpu_state = calloc(ps->ncpus ? ps->ncpus : 1, sizeof(*ps->cpu_state));
	}
	if (!ps || !ps->path || !ps->buf || !ps->cpu_state || (cfg->symfs && !ps->cfg.symfs) ||
	    (cfg->buildid_dir && !ps->cfg.buildid_dir)) {
		if (ps) {
			free((char *)ps->cfg.symfs);
			free((char *)ps->cfg.buildid_dir);
			free(ps->path);
			free(ps->buf);
			free(ps->cpu_state);
			free(ps);
		}
		csd_perf_free(pd);
		return CSD_ENOMEM;
	}
	ps->pd = pd;
	for (size_t i = 0; i < cfg->num_ids; i++)
		if (cfg->ids[i] < MAX_IDS)
			ps->want[cfg->ids[i]] = 1;
	if (!cfg->num_ids)
		memset(ps->want, 1, sizeof(ps->want));
	for (size_t i = 0; i < ps->ncpus; i++)
		ps->cpu_state[i].pid = ps->cpu_state[i].tid = -1;
	/* Which CPUs are decoded is known now: each decodable one by its
	 * trace ID, the first to have it (the others' warnings come from the
	 * first calls of csd_perf_session_next). */
	for (size_t i = 0; i < ps->ncpus; i++) {
		const struct csd_perf_cpu *c = csd_perf_cpu(pd, i);
		unsigned id = c->config.trace_id;
		if (decodable(c) && id < MAX_IDS && !ps->by_id[id]) {
			ps->by_id[id] = c;
			ps->nsources += ps->want[id];
		}
	}
	ps->walk_rc = CSD_EEOS;
	*out = ps;
	return CSD_OK;
}

static int valid_config(const struct csd_perf_session_config *cfg)
{
	return cfg && cfg->size >= sizeof(*cfg) && (!cfg->num_ids || cfg->ids);
}

int csd_perf_session_new(const char *path, const struct csd_perf_session_config *cfg, csd_perf_session **out,
			 char *errbuf, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!path || !out || !valid_config(cfg)) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "invalid argument");
		return CSD_EINVAL;
	}
	csd_perf *pd;
	int rc = csd_perf_open(path, &pd, errbuf, errlen);
	if (rc < 0)
		return rc;
	rc = csdi_perf_session_from_reader(pd, path, cfg, out);
	if (rc < 0 && errbuf && errlen)
		snprintf(errbuf, errlen, "%s: out of memory", path);
	return rc;
}

void csd_perf_session_free(csd_perf_session *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < MAX_QUEUES; i++)
		csd_frame_free(ps->queues[i].fd);
	for (size_t i = 0; i < ps->nprocs; i++)
		csd_image_free(ps->procs[i].img);
	for (size_t i = 0; i < ps->nretired; i++)
		csd_image_free(ps->retired[i]);
	for (size_t i = 0; i < ps->nfiles; i++) {
		free(ps->files[i].name);
		free(ps->files[i].path);
	}
	for (size_t i = ps->pend_head; i < ps->npend; i++)
		free(ps->pend[i].text);
	free(ps->pend);
	free(ps->given_text);
	free(ps->spare.path);
	free(ps->files);
	free(ps->retired);
	free(ps->procs);
	csd_image_free(ps->all);
	free(ps->tid_key);
	free(ps->tid_pid);
	free(ps->cpu_state);
	free(ps->buf);
	free(ps->path);
	free((char *)ps->cfg.symfs);
	free((char *)ps->cfg.buildid_dir);
	csd_perf_free(ps->pd);
	free(ps);
}

csd_perf *csd_perf_session_reader(const csd_perf_session *ps)
{
	return ps ? ps->pd : NULL;
}

size_t csd_perf_session_num_sources(const csd_perf_session *ps)
{
	return ps ? ps->nsources : 0;
}

const char *csd_perf_session_error(const csd_perf_session *ps)
{
	return ps ? ps->err : "";
}

/* One step of the walk: queues zero or more actions. */
static void step(csd_perf_session *ps)
{
	/* An error ends the walk: every queue ends, then the error. */
	if (ps->rc && ps->state < ST_FINAL) {
		ps->state = ST_FINAL;
		ps->final_q = 0;
	}
	switch (ps->state) {
	case ST_SETUP:
		if (ps->setup_cpu < ps->ncpus) {
			setup_cpu(ps, ps->setup_cpu++);
			return;
		}
		if (!ps->nsources) {
			fail(ps, CSD_ENOENT, "%s: no ETMv3 or PTM trace source%s", ps->path,
			     ps->cfg.num_ids ? " with the requested ID" : " that could be decoded");
			ps->state = ST_DONE;
			return;
		}
		if (ps->cfg.flags & CSD_PERF_SESSION_IMAGES) {
			ps->all = image_new(ps);
			if (!ps->all)
				return;
		}
		ps->ev.size = sizeof(ps->ev);
		ps->state = ST_EVENTS;
		return;
	case ST_EVENTS: {
		int rc = csd_perf_next(ps->pd, &ps->ev);
		if (rc < 0) {
			ps->walk_rc = rc;
			ps->state = ST_FINAL;
			ps->final_q = 0;
			return;
		}
		if ((ps->cfg.flags & CSD_PERF_SESSION_THREADS) && needs_settle(ps, &ps->ev)) {
			push_settle(ps);
			ps->state = ST_SETTLED;
			return;
		}
		on_event(ps, &ps->ev);
		return;
	}
	case ST_SETTLED:
		ps->state = ST_EVENTS;
		on_event(ps, &ps->ev);
		return;
	case ST_PIECE:
		piece_chunk(ps);
		return;
	case ST_FRAMES:
		if (!frame_step(ps))
			ps->state = ST_PIECE;
		return;
	case ST_FINAL:
		while (ps->final_q < MAX_QUEUES && !ps->queues[ps->final_q].used)
			ps->final_q++;
		if (ps->final_q < MAX_QUEUES) {
			queue_end(ps, &ps->queues[ps->final_q++]);
			return;
		}
		ps->state = ST_SUMMARY;
		if (ps->missing_more)
			warn(ps, 0, "%s: %u more mapped files not found", ps->path, ps->missing_more);
		if (ps->lost_records)
			warn(ps, 0, "%s: perf lost %" PRIu64 " records while recording (mappings may be missing)",
			     ps->path, ps->lost_records);
		return;
	case ST_SUMMARY:
		if (!ps->rc && ps->walk_rc != CSD_EEOS)
			fail(ps, ps->walk_rc, "%s", csd_perf_error(ps->pd));
		/* A file that ends inside its feature sections, after its
		 * records: every record was given, and then the error, as for a
		 * file that ends in its records. */
		else if (!ps->rc && csd_perf_info(ps->pd)->features_cut)
			fail(ps, CSD_EFORMAT, "%s: %s", ps->path, csd_perf_info(ps->pd)->features_cut);
		ps->state = ST_DONE;
		return;
	case ST_DONE:
		return;
	}
}

int csd_perf_session_next(csd_perf_session *ps, struct csd_perf_action *act)
{
	if (!ps || !act || act->size < sizeof(*act))
		return CSD_EINVAL;
	free(ps->given_text);
	ps->given_text = NULL;
	while (ps->pend_head == ps->npend) {
		ps->pend_head = ps->npend = 0;
		if (ps->state == ST_DONE)
			return ps->rc ? ps->rc : CSD_EEOS;
		step(ps);
	}
	struct pending *p = &ps->pend[ps->pend_head++];
	const size_t size = act->size;
	*act = p->act;
	act->size = size;
	ps->given_text = p->text;
	return CSD_OK;
}
