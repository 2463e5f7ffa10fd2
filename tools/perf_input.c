/* perf_input.c - decoding a perf.data file (csd_perf_*): one decoder per
 * trace ID of each AUX queue (a CPU, or a thread when perf recorded per
 * thread), the program images built from the recorded mappings, and the
 * CPU, process and thread of every record.
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
 * queues whose process is not known. Each holds --vmlinux and the --elf
 * and --image files too. A mapped file is looked up as perf does: in the
 * build-ID cache when its build ID is known, then under --symfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "jobs.h"
#include "merge.h"

#define CHUNK (1u << 20)
#define MAX_QUEUES 64
#define MAX_PROCESSES 4096
#define MAX_THREADS (1u << 20)
#define MAX_FILES 4096
#define MAX_WARNINGS 8
#define PROT_EXEC_BIT 4u
#define MISC_MMAP_DATA 0x2000u

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
	struct source_slot *slot[MAX_IDS];
	uint8_t live[MAX_IDS];        /* slot has a decoder */
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

struct perf_run {
	struct options *o;
	struct run_ctx *ctx;
	enum slot_kind kind;
	const char *path;
	csd_perf *pd;
	size_t ncpus;
	const struct csd_perf_cpu *by_id[MAX_IDS];
	struct cpu_state *cpu_state;
	int warned_id[MAX_IDS];
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
	unsigned missing_warnings, missing_more;
	uint64_t lost_records;
	uint8_t *buf;
	int io_failed;
	/* --jobs: the queues' decoders on workers (NULL: all here), the
	 * next decoder's worker (taken in turn: a queue's decoders end with
	 * each piece of its trace, so this spreads the pieces). */
	struct jobs *jobs;
	unsigned next_worker;
};

static struct perf_run *active_run;   /* for perf_context_id() */

/* Before anything the decoders or the record handlers read changes (an
 * image, the thread table) or a queue's decoders end: with workers, wait
 * until all trace given so far is decoded and handed on, so that it meets
 * the state the serial decode gives it. */
static void settle(struct perf_run *pr)
{
	if (pr->jobs)
		jobs_sync(pr->jobs);
}

int cli_is_perf_data(const char *path)
{
	const char *what;
	int fd = csdi_open_regular(path, &what);
	if (fd < 0)
		return 0;
	char m[8];
	ssize_t n;
	do
		n = read(fd, m, sizeof(m));
	while (n < 0 && errno == EINTR);
	close(fd);
	/* The file-mode magic, its byte-swapped form (big-endian writer) and
	 * the old format's: the reader says which it cannot read. */
	return n == 8 && (memcmp(m, "PERFILE2", 8) == 0 || memcmp(m, "2ELIFREP", 8) == 0 ||
			  memcmp(m, "PERFFILE", 8) == 0);
}

/* ------------------------------------------------------------------------
 * Threads and processes
 * ---------------------------------------------------------------------- */

static size_t tid_slot(const struct perf_run *pr, int32_t tid)
{
	uint32_t h = (uint32_t)tid * 2654435761u;
	return h & (pr->tid_cap - 1);
}

static void tid_set(struct perf_run *pr, int32_t pid, int32_t tid)
{
	if (pid < 0 || tid < 0)
		return;
	if (pr->tid_n * 2 >= pr->tid_cap) {
		if (pr->tid_cap >= MAX_THREADS)
			return;
		size_t ncap = pr->tid_cap ? pr->tid_cap * 2 : 256;
		uint32_t *nk = calloc(ncap, sizeof(*nk));
		int32_t *np = calloc(ncap, sizeof(*np));
		if (!nk || !np) {
			free(nk);
			free(np);
			return;
		}
		uint32_t *ok = pr->tid_key;
		int32_t *op = pr->tid_pid;
		size_t ocap = pr->tid_cap;
		pr->tid_key = nk;
		pr->tid_pid = np;
		pr->tid_cap = ncap;
		pr->tid_n = 0;
		for (size_t i = 0; i < ocap; i++)
			if (ok[i])
				tid_set(pr, op[i], (int32_t)(ok[i] - 1));
		free(ok);
		free(op);
	}
	size_t i = tid_slot(pr, tid);
	while (pr->tid_key[i] && pr->tid_key[i] != (uint32_t)tid + 1)
		i = (i + 1) & (pr->tid_cap - 1);
	if (!pr->tid_key[i])
		pr->tid_n++;
	pr->tid_key[i] = (uint32_t)tid + 1;
	pr->tid_pid[i] = pid;
}

static int32_t tid_pid(const struct perf_run *pr, int32_t tid);

/* tid_set() from sideband: records taken from the decoders read the
 * table (perf_context_id), on the workers too, so a change waits until
 * the trace given so far is decoded and taken. */
static void tid_note(struct perf_run *pr, int32_t pid, int32_t tid)
{
	if (pid < 0 || tid < 0 || tid_pid(pr, tid) == pid)
		return;
	settle(pr);
	tid_set(pr, pid, tid);
}

static int32_t tid_pid(const struct perf_run *pr, int32_t tid)
{
	if (tid < 0 || !pr->tid_cap)
		return -1;
	size_t i = tid_slot(pr, tid);
	while (pr->tid_key[i]) {
		if (pr->tid_key[i] == (uint32_t)tid + 1)
			return pr->tid_pid[i];
		i = (i + 1) & (pr->tid_cap - 1);
	}
	return -1;
}

/* A process is known when a thread of it was seen (its main thread's
 * tid is its pid). */
static int pid_known(const struct perf_run *pr, int32_t pid)
{
	return pid > 0 && tid_pid(pr, pid) == pid;
}

static void perf_context_id(struct run_ctx *ctx, struct source_slot *s, uint32_t cid)
{
	(void)ctx;
	struct perf_run *pr = active_run;
	/* Per thread, the buffer's thread is certain. */
	if (!pr || s->perf != 2)
		return;
	/* Linux writes the pid to CONTEXTIDR (arm64), or pid << 8 | ASID
	 * (32-bit ARM with CONFIG_PID_IN_CONTEXTIDR). Only a process the
	 * file knows is taken. */
	int32_t pid = -1;
	if (cid <= INT32_MAX && pid_known(pr, (int32_t)cid))
		pid = (int32_t)cid;
	else if (pid_known(pr, (int32_t)(cid >> 8)))
		pid = (int32_t)(cid >> 8);
	if (pid < 0) {
		s->pid = s->tid = -1;
		return;
	}
	if (pid != s->pid)
		s->tid = -1;
	s->pid = pid;
}

/* ------------------------------------------------------------------------
 * Images
 * ---------------------------------------------------------------------- */

static csd_image *image_new(struct perf_run *pr)
{
	csd_image *img = csd_image_new();
	if (!img)
		die_io("out of memory");
	if (pr->o->vmlinux && csd_image_add_elf(img, pr->o->vmlinux, 0) < 0)
		die_io("--vmlinux %s", csd_image_error(img));
	cli_load_extra_images(pr->o, img);
	return img;
}

static struct process *process_find(struct perf_run *pr, int32_t pid)
{
	for (size_t i = 0; i < pr->nprocs; i++)
		if (pr->procs[i].pid == pid)
			return &pr->procs[i];
	return NULL;
}

static csd_image *process_image(struct perf_run *pr, int32_t pid, int create)
{
	struct process *p = process_find(pr, pid);
	if (p)
		return p->img;
	if (!create || pr->nprocs == MAX_PROCESSES)
		return NULL;
	if (!pr->procs) {
		pr->procs = calloc(MAX_PROCESSES, sizeof(*pr->procs));
		if (!pr->procs)
			die_io("out of memory");
	}
	p = &pr->procs[pr->nprocs++];
	p->pid = pid;
	p->img = image_new(pr);
	return p->img;
}

/* The image a queue's decoders read: its process's, else the one of every
 * mapping. */
static csd_image *image_for(struct perf_run *pr, int32_t pid)
{
	csd_image *img = pid > 0 ? process_image(pr, pid, 0) : NULL;
	return img ? img : pr->all;
}

/* An exec: the process's address space starts anew. Its old image may
 * still be read by a decoder, so it lives on until the end. */
static void process_exec(struct perf_run *pr, int32_t pid)
{
	struct process *p = process_find(pr, pid);
	if (!p)
		return;
	if (pr->nretired == pr->cap_retired) {
		size_t nc = pr->cap_retired ? pr->cap_retired * 2 : 16;
		csd_image **n = realloc(pr->retired, nc * sizeof(*n));
		if (!n)
			die_io("out of memory");
		pr->retired = n;
		pr->cap_retired = nc;
	}
	pr->retired[pr->nretired++] = p->img;
	p->img = image_new(pr);
}

static void hex_id(char *out, const uint8_t *id, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = 0;
}

/* Where the code of `name` is (csd_perf_find_file: the build-ID cache,
 * then --symfs), warned about when the file there has another build ID. */
static char *find_file(struct perf_run *pr, const char *name, const uint8_t *id, unsigned id_size)
{
	char path[8192];
	uint8_t other[20];
	size_t other_size;
	int rc = csd_perf_find_file(name, id, id_size, pr->o->symfs, pr->o->buildid_dir, path, sizeof(path), other,
				    &other_size);
	if (rc == CSD_ENOENT && other_size) {
		char hex[41], fhex[41];
		hex_id(hex, id, id_size);
		hex_id(fhex, other, (unsigned)other_size);
		fprintf(stderr, "%s: warning: %s: build ID %s, the recording's %s is %s: not used\n", prog, path, fhex,
			name, hex);
	}
	return rc == CSD_OK ? strdup(path) : NULL;
}

static const struct file_entry *file_lookup(struct perf_run *pr, const char *name, const uint8_t *id,
					    unsigned id_size)
{
	for (size_t i = 0; i < pr->nfiles; i++) {
		struct file_entry *f = &pr->files[i];
		if (f->id_size == id_size && memcmp(f->id, id, id_size) == 0 && strcmp(f->name, name) == 0)
			return f;
	}
	char *path = find_file(pr, name, id, id_size);
	if (pr->nfiles == MAX_FILES) {
		/* A full table: found again next time (slower, same answer). */
		static struct file_entry spare;
		free(spare.path);
		spare.name = NULL;
		spare.path = path;
		return &spare;
	}
	if (!pr->files) {
		pr->files = calloc(MAX_FILES, sizeof(*pr->files));
		if (!pr->files)
			die_io("out of memory");
	}
	struct file_entry *f = &pr->files[pr->nfiles];
	f->name = strdup(name);
	if (!f->name)
		die_io("out of memory");
	memcpy(f->id, id, id_size);
	f->id_size = (uint8_t)id_size;
	f->path = path;
	pr->nfiles++;
	if (!path) {
		if (pr->missing_warnings < MAX_WARNINGS) {
			char hex[41] = "";
			hex_id(hex, id, id_size);
			fprintf(stderr, "%s: warning: %s: mapped file %s not found (%s%s%s%s); its code is not in the image\n",
				prog, pr->path, name, id_size ? "build ID " : "", hex, id_size ? ", " : "",
				pr->o->symfs ? "--symfs" : "no --symfs");
			pr->missing_warnings++;
		} else {
			pr->missing_more++;
		}
	}
	return f;
}

static void add_mapping(struct perf_run *pr, csd_image *img, const char *path, const struct csd_perf_event *ev)
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
		if (pr->missing_warnings < MAX_WARNINGS) {
			fprintf(stderr, "%s: warning: %s: mapping of %s at 0x%" PRIx64 " not used: %s\n", prog, pr->path,
				path, ev->addr, csd_image_error(img));
			pr->missing_warnings++;
		}
		return;
	}
	/* Workers' decoders read the image next: its lookup map is made
	 * here, by a read, and not by one of them while another reads
	 * (csd_image_new). */
	uint8_t byte;
	if (pr->jobs)
		(void)csd_image_read(img, ev->addr, &byte, 1);
}

static void on_mmap(struct perf_run *pr, const struct csd_perf_event *ev)
{
	tid_note(pr, ev->pid, ev->tid);
	/* Code mappings of files only: [vdso], //anon, [kernel.kallsyms]...
	 * have no file here (the kernel comes from --vmlinux). */
	if (ev->filename[0] != '/' || ev->len == 0)
		return;
	if (ev->record == 10 ? (ev->prot && !(ev->prot & PROT_EXEC_BIT)) : 0)
		return;
	uint8_t id[20];
	unsigned id_size = 0;
	if (ev->flags & CSD_PERF_EVF_BUILD_ID) {
		id_size = ev->build_id_size;
		memcpy(id, ev->build_id, id_size);
	} else {
		int n = csd_perf_file_build_id(pr->pd, ev->filename, ev->pid, id);
		id_size = n > 0 ? (unsigned)n : 0;
	}
	const struct file_entry *f = file_lookup(pr, ev->filename, id, id_size);
	if (!f->path)
		return;
	settle(pr);
	csd_image *own = ev->pid > 0 ? process_image(pr, ev->pid, 1) : NULL;
	if (own)
		add_mapping(pr, own, f->path, ev);
	add_mapping(pr, pr->all, f->path, ev);
}

/* ------------------------------------------------------------------------
 * Queues and their decoders
 * ---------------------------------------------------------------------- */

static void queue_end(struct perf_run *pr, struct queue *q);

static struct queue *queue_get(struct perf_run *pr, int32_t cpu, int32_t tid)
{
	struct queue *free_q = NULL, *old = NULL;
	for (int i = 0; i < MAX_QUEUES; i++) {
		struct queue *q = &pr->queues[i];
		if (q->used && q->cpu == cpu && q->tid == tid) {
			q->last_use = ++pr->use_clock;
			return q;
		}
		if (!q->used && !free_q)
			free_q = q;
		if (q->used && (!old || q->last_use < old->last_use))
			old = q;
	}
	struct queue *q = free_q ? free_q : old;
	if (!free_q)
		queue_end(pr, q); /* evicted: its next piece starts afresh */
	q->used = 1;
	q->cpu = cpu;
	q->tid = tid;
	q->last_use = ++pr->use_clock;
	return q;
}

/* End the queue's capture: its decoders finish, their records go out. */
static void queue_end(struct perf_run *pr, struct queue *q)
{
	struct run_ctx *ctx = pr->ctx;
	if (!q->active) {
		/* Nothing to end but the merge's flush, which comes at every
		 * queue's end; with workers, after what they are decoding
		 * (no wait: the next piece's decoders start meanwhile). */
		if (ctx->merge && pr->jobs)
			jobs_merge_flush(pr->jobs);
		else if (ctx->merge)
			merge_flush(ctx->merge, ctx);
		return;
	}
	/* The workers are done with the queue's decoders, which end here. */
	settle(pr);
	if (q->fd) {
		csd_frame_finish(q->fd);
		struct csd_frame_out fo;
		while (csd_frame_next(q->fd, &fo) == 0)
			if (fo.event == CSD_FRAME_ERROR || fo.event == CSD_FRAME_TRUNCATED)
				cli_report_frame_error(ctx, &fo);
		csd_frame_free(q->fd);
		q->fd = NULL;
	}
	for (int id = 0; id < MAX_IDS; id++) {
		struct source_slot *s = q->slot[id];
		if (!s || !q->live[id])
			continue;
		cli_slot_finish(s);
		cli_drain_slot(ctx, s);
	}
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	for (int id = 0; id < MAX_IDS; id++) {
		struct source_slot *s = q->slot[id];
		if (!s || !q->live[id])
			continue;
		if (ctx->on_source_end && pr->kind == SLOT_FLOW)
			ctx->on_source_end(ctx, s);
		cli_add_totals(ctx, s);
		cli_slot_free(s);
		q->live[id] = 0;
	}
	q->active = 0;
}

/* The decoder of trace ID `id` in q, made at its first bytes. */
static struct source_slot *queue_slot(struct perf_run *pr, struct queue *q, unsigned id,
				      const struct csd_perf_cpu *c)
{
	if (q->live[id])
		return q->slot[id];
	if (!c || (pr->o->any_id && !pr->o->want[id]))
		return NULL;
	if (!q->slot[id]) {
		q->slot[id] = calloc(1, sizeof(struct source_slot));
		if (!q->slot[id])
			die_io("out of memory");
	}
	struct source_slot *s = q->slot[id];
	if (cli_slot_init(s, pr->kind, &c->config, pr->kind == SLOT_FLOW ? q->img : NULL,
			  cli_slot_insn(pr->o, pr->ctx, &c->config)) < 0)
		die_io("%s: cannot create a decoder for CPU %" PRId32 " (protocol and ETMIDR 0x%08" PRIx32 " disagree?)",
		       pr->path, c->cpu, c->config.etmidr);
	s->perf = q->cpu == -1 ? 1 : 2;
	s->cpu = c->cpu;
	s->pid = q->pid;
	s->tid = q->ptid;
	s->taken_pid = s->pid;
	s->taken_tid = s->tid;
	s->shown_pid = s->shown_tid = -2;
	s->worker = (int)(pr->next_worker++ % MAX_QUEUES);
	q->live[id] = 1;
	return s;
}

static void feed_slot(struct perf_run *pr, struct source_slot *s, const struct csd_bytes *b)
{
	if (pr->jobs)
		jobs_data(pr->jobs, s, b);
	else if (cli_slot_feed(s, b) == 0)
		cli_drain_slot(pr->ctx, s);
}

static void drain_frames(struct perf_run *pr, struct queue *q)
{
	struct csd_frame_out fo;
	while (csd_frame_next(q->fd, &fo) == 0) {
		if (fo.event == CSD_FRAME_ERROR || fo.event == CSD_FRAME_TRUNCATED) {
			if (pr->jobs)
				jobs_frame_note(pr->jobs, &fo);
			else
				cli_report_frame_error(pr->ctx, &fo);
			continue;
		}
		if (fo.event != CSD_FRAME_DATA || fo.bytes.id >= MAX_IDS)
			continue;
		unsigned id = fo.bytes.id;
		const struct csd_perf_cpu *c = pr->by_id[id];
		if (!c && !pr->warned_id[id]) {
			pr->warned_id[id] = 1;
			fprintf(stderr, "%s: warning: %s: trace ID 0x%02x is no decodable CPU's; its trace is skipped\n", prog,
				pr->path, id);
		}
		struct source_slot *s = queue_slot(pr, q, id, c);
		if (s)
			feed_slot(pr, s, &fo.bytes);
	}
}

static int cpu_index(const struct perf_run *pr, int32_t cpu)
{
	for (size_t i = 0; i < pr->ncpus; i++)
		if (csd_perf_cpu(pr->pd, i)->cpu == cpu)
			return (int)i;
	return -1;
}

static int decodable(const struct csd_perf_cpu *c)
{
	return (c->unit == CSD_PERF_UNIT_ETM3 || c->unit == CSD_PERF_UNIT_PTM) && c->id_from != CSD_PERF_ID_NONE;
}

/* Raw data's CPU: the buffer's; per-thread, the only decodable CPU, or the
 * first as perf takes it. */
static int raw_cpu(struct perf_run *pr, const struct csd_perf_event *ev)
{
	int ci = ev->cpu >= 0 ? cpu_index(pr, ev->cpu) : -1;
	if (ci >= 0)
		return ci;
	int only = -1, count = 0;
	for (size_t i = 0; i < pr->ncpus; i++)
		if (decodable(csd_perf_cpu(pr->pd, i)) && count++ == 0)
			only = (int)i;
	if (count > 1 && !pr->warned_raw_cpu) {
		pr->warned_raw_cpu = 1;
		fprintf(stderr, "%s: warning: %s: unformatted trace of a thread traced on %d CPUs: taken as CPU %" PRId32 "'s\n",
			prog, pr->path, count, csd_perf_cpu(pr->pd, (size_t)only)->cpu);
	}
	return only;
}

/* The process and thread of a piece: per thread, the buffer's thread; per
 * CPU, the task the CPU ran since its previous piece if it never switched
 * in between (else the trace's context IDs may tell). */
static void piece_context(struct perf_run *pr, const struct csd_perf_event *ev, int32_t *pid, int32_t *tid)
{
	*pid = *tid = -1;
	if (ev->cpu == -1) {
		*tid = ev->tid;
		*pid = ev->pid >= 0 ? ev->pid : tid_pid(pr, ev->tid);
		return;
	}
	int ci = cpu_index(pr, ev->cpu);
	if (ci < 0)
		return;
	struct cpu_state *st = &pr->cpu_state[ci];
	if (st->switches == st->switches_at_piece) {
		*pid = st->pid;
		*tid = st->tid;
	}
	st->switches_at_piece = st->switches;
}

static void run_piece(struct perf_run *pr, const struct csd_perf_event *ev)
{
	int raw = (ev->flags & CSD_PERF_EVF_RAW) != 0;
	struct queue *q = queue_get(pr, ev->cpu, ev->cpu == -1 ? ev->tid : -1);
	int cont = (ev->flags & CSD_PERF_EVF_CONTINUES) && q->active && q->raw == raw && q->next == ev->aux_offset;
	if (!cont) {
		queue_end(pr, q);
		q->raw = raw;
		piece_context(pr, ev, &q->pid, &q->ptid);
		q->img = image_for(pr, q->pid);
		if (raw) {
			q->raw_cpu = raw_cpu(pr, ev);
		} else {
			struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
			if (pr->ctx->format == FMT_NONE || (pr->ctx->on_record && !pr->ctx->merge))
				fc.flags |= CSD_FRAME_BY_ID;
			q->fd = csd_frame_new(&fc);
			if (!q->fd)
				die_io("out of memory");
		}
		q->active = 1;
	}
	q->next = ev->aux_offset + ev->data_size;
	struct source_slot *rs = NULL;
	if (raw && q->raw_cpu >= 0) {
		const struct csd_perf_cpu *c = csd_perf_cpu(pr->pd, (size_t)q->raw_cpu);
		if (decodable(c))
			rs = queue_slot(pr, q, c->config.trace_id, c);
	}
	if (raw && !rs)
		return;
	for (uint64_t done = 0; done < ev->data_size;) {
		size_t n = ev->data_size - done < CHUNK ? (size_t)(ev->data_size - done) : CHUNK;
		uint64_t off = ev->data_offset + done;
		if (csd_perf_read(pr->pd, off, pr->buf, n) < 0) {
			fprintf(stderr, "%s: %s\n", prog, csd_perf_error(pr->pd));
			pr->io_failed = 1;
			return;
		}
		if (rs) {
			struct csd_bytes b = { .data = pr->buf, .size = n, .base = off, .id = rs->id };
			feed_slot(pr, rs, &b);
		} else {
			csd_frame_feed(q->fd, pr->buf, n, off);
			drain_frames(pr, q);
		}
		done += n;
	}
}

/* ------------------------------------------------------------------------
 * Sideband
 * ---------------------------------------------------------------------- */

static void set_cpu_task(struct perf_run *pr, int32_t cpu, int32_t pid, int32_t tid, int switched)
{
	int ci = cpu >= 0 ? cpu_index(pr, cpu) : -1;
	if (ci < 0)
		return;
	pr->cpu_state[ci].pid = pid;
	pr->cpu_state[ci].tid = tid;
	pr->cpu_state[ci].switches += (uint32_t)switched;
}

static void on_aux(struct perf_run *pr, const struct csd_perf_event *ev)
{
	const uint64_t lost = CSD_PERF_AUX_TRUNCATED | CSD_PERF_AUX_PARTIAL | CSD_PERF_AUX_COLLISION;
	if (!(ev->aux_flags & lost))
		return;
	struct run_ctx *ctx = pr->ctx;
	ctx->frame_errors++;
	if (ctx->on_record || ctx->format == FMT_NONE)
		return;
	/* After everything decoded so far. */
	settle(pr);
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	if (ctx->format == FMT_JSONL)
		print_aux_lost_json(ctx->out, ev);
	else
		print_aux_lost_text(ctx->out, ev);
}

static void on_event(struct perf_run *pr, const struct csd_perf_event *ev)
{
	switch (ev->type) {
	case CSD_PERF_AUX_DATA:
		run_piece(pr, ev);
		break;
	case CSD_PERF_AUX:
		on_aux(pr, ev);
		break;
	case CSD_PERF_MMAP:
		on_mmap(pr, ev);
		break;
	case CSD_PERF_COMM:
		tid_note(pr, ev->pid, ev->tid);
		if ((ev->flags & CSD_PERF_EVF_EXEC) && ev->pid > 0)
			process_exec(pr, ev->pid);
		break;
	case CSD_PERF_FORK:
		tid_note(pr, ev->pid, ev->tid);
		break;
	case CSD_PERF_ITRACE_START:
		tid_note(pr, ev->pid, ev->tid);
		set_cpu_task(pr, ev->cpu, ev->pid, ev->tid, 0);
		break;
	case CSD_PERF_SWITCH:
		if (ev->record == 15) {
			/* CPU-wide: out names the next task, in this one. */
			if (ev->flags & CSD_PERF_EVF_OUT) {
				tid_note(pr, ev->next_prev_pid, ev->next_prev_tid);
				set_cpu_task(pr, ev->cpu, ev->next_prev_pid, ev->next_prev_tid, 1);
			} else {
				tid_note(pr, ev->pid, ev->tid);
				set_cpu_task(pr, ev->cpu, ev->pid, ev->tid, 1);
			}
		} else if (ev->flags & CSD_PERF_EVF_OUT) {
			set_cpu_task(pr, ev->cpu, -1, -1, 1);
		} else {
			tid_note(pr, ev->pid, ev->tid);
			set_cpu_task(pr, ev->cpu, ev->pid, ev->tid, 1);
		}
		break;
	case CSD_PERF_LOST:
		pr->lost_records += ev->lost;
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------
 * The run
 * ---------------------------------------------------------------------- */

static const char *const unit_names[] = { "?", "an ETMv3", "a PTM", "an ETMv4", "an ETE", "an unknown ETMv3-format unit" };

/* The CPUs: each decodable one by its trace ID; the others are named once
 * and their trace is skipped. */
static void setup_cpus(struct perf_run *pr)
{
	pr->ncpus = csd_perf_num_cpus(pr->pd);
	pr->cpu_state = calloc(pr->ncpus ? pr->ncpus : 1, sizeof(*pr->cpu_state));
	if (!pr->cpu_state)
		die_io("out of memory");
	for (size_t i = 0; i < pr->ncpus; i++) {
		const struct csd_perf_cpu *c = csd_perf_cpu(pr->pd, i);
		pr->cpu_state[i].pid = pr->cpu_state[i].tid = -1;
		if (c->unit != CSD_PERF_UNIT_ETM3 && c->unit != CSD_PERF_UNIT_PTM) {
			/* Its trace ID, where formatted data carries it, is
			 * skipped without another word. */
			pr->warned_id[c->traceidr & 0x7F] = 1;
			fprintf(stderr, "%s: warning: %s: CPU %" PRId32 " is traced by %s, which csdec does not decode; its trace is skipped\n",
				prog, pr->path, c->cpu, c->unit < 6 ? unit_names[c->unit] : "an unknown unit");
			continue;
		}
		unsigned id = c->config.trace_id;
		if (c->id_from == CSD_PERF_ID_NONE) {
			fprintf(stderr, "%s: warning: %s: CPU %" PRId32 " has trace ID 0x%02x (IDs are 0x01-0x6f); its trace is skipped\n",
				prog, pr->path, c->cpu, id);
			pr->ctx->skipped_sources++;
			continue;
		}
		if (pr->by_id[id]) {
			fprintf(stderr, "%s: warning: %s: CPU %" PRId32 " has the trace ID 0x%02x of CPU %" PRId32 "; its trace is skipped\n",
				prog, pr->path, c->cpu, id, pr->by_id[id]->cpu);
			pr->ctx->skipped_sources++;
			continue;
		}
		pr->by_id[id] = c;
	}
}

int cli_run_perf(struct options *o, struct run_ctx *ctx, enum slot_kind kind)
{
	char err[600];
	struct perf_run *pr = calloc(1, sizeof(*pr));
	if (!pr)
		die_io("out of memory");
	pr->o = o;
	pr->ctx = ctx;
	pr->kind = kind;
	pr->path = o->dir;
	int rc = csd_perf_open(o->dir, &pr->pd, err, sizeof(err));
	if (rc < 0)
		die_io("%s", err);
	pr->buf = malloc(CHUNK);
	if (!pr->buf)
		die_io("out of memory");
	setup_cpus(pr);
	int any = 0;
	for (int id = 0; id < MAX_IDS; id++)
		any |= pr->by_id[id] && (!o->any_id || o->want[id]);
	if (!any) {
		fprintf(stderr, "%s: %s: no ETMv3 or PTM trace source%s\n", prog, o->dir,
			o->any_id ? " with the requested ID" : " that could be decoded");
		free(pr->cpu_state);
		free(pr->buf);
		csd_perf_free(pr->pd);
		free(pr);
		return EXIT_USAGE;
	}
	if (kind == SLOT_FLOW)
		pr->all = image_new(pr);
	if (ctx->jobs > 1) {
		/* The CPUs' queues decode on workers, a queue on one of them. */
		int nsources = 0;
		for (int id = 0; id < MAX_IDS; id++)
			nsources += pr->by_id[id] && (!o->any_id || o->want[id]);
		struct stat st;
		pr->jobs = jobs_new_sources(ctx, ctx->jobs, nsources,
					    stat(o->dir, &st) == 0 ? (int64_t)st.st_size : -1,
					    kind == SLOT_FLOW && ctx->format == FMT_TEXT);
	}
	active_run = pr;
	ctx->on_context_id = perf_context_id;
	struct csd_perf_event ev = { .size = sizeof(ev) };
	int walk;
	while ((walk = csd_perf_next(pr->pd, &ev)) == 0 && !pr->io_failed)
		on_event(pr, &ev);
	for (int i = 0; i < MAX_QUEUES; i++)
		if (pr->queues[i].used)
			queue_end(pr, &pr->queues[i]);
	if (pr->jobs) {
		jobs_end(pr->jobs);
		pr->jobs = NULL;
	}
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	cli_end_held_text(ctx);
	ctx->on_context_id = NULL;
	active_run = NULL;
	if (walk < 0 && walk != CSD_EEOS) {
		fflush(ctx->out);
		fprintf(stderr, "%s: %s\n", prog, csd_perf_error(pr->pd));
		pr->io_failed = 1;
	}
	if (pr->missing_more)
		fprintf(stderr, "%s: warning: %s: %u more mapped files not found\n", prog, pr->path, pr->missing_more);
	if (pr->lost_records)
		fprintf(stderr, "%s: warning: %s: perf lost %" PRIu64 " records while recording (mappings may be missing)\n",
			prog, pr->path, pr->lost_records);
	int status = cli_finish_status(ctx, pr->io_failed, kind == SLOT_FLOW);
	for (int i = 0; i < MAX_QUEUES; i++)
		for (int id = 0; id < MAX_IDS; id++)
			free(pr->queues[i].slot[id]);
	for (size_t i = 0; i < pr->nprocs; i++)
		csd_image_free(pr->procs[i].img);
	for (size_t i = 0; i < pr->nretired; i++)
		csd_image_free(pr->retired[i]);
	for (size_t i = 0; i < pr->nfiles; i++) {
		free(pr->files[i].name);
		free(pr->files[i].path);
	}
	free(pr->files);
	free(pr->retired);
	free(pr->procs);
	csd_image_free(pr->all);
	free(pr->tid_key);
	free(pr->tid_pid);
	free(pr->cpu_state);
	free(pr->buf);
	csd_perf_free(pr->pd);
	free(pr);
	return status;
}
