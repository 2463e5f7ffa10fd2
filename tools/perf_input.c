/* perf_input.c - decoding a perf.data file: the library's session
 * (csd_perf_session_*) says which decoders to make, what each is fed, which
 * image it reads and when it ends; this file makes them, on the calling
 * thread or on the --jobs workers, and prints what they give with the
 * CPU, process and thread of each record. The kernel (--vmlinux) and the
 * --elf and --image files are the base of every image the session makes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunks.h"
#include "cli.h"
#include "file.h"
#include "jobs.h"
#include "merge.h"

/* Slots kept for the next decoders (each with its decoder, to be reset),
 * and with --jobs the ended slots whose capture's end is not yet handed
 * on, at most, per worker: past it the calling thread waits. (Each keeps
 * its decoder and its tables: the memory a job may take bounds these.) */
#define IDLE_MAX 16
#define ENDING_PER_WORKER 2

struct perf_run {
	struct options *o;
	struct run_ctx *ctx;
	enum slot_kind kind;
	csd_perf_session *ps;
	csd_image *base;
	/* The decoder of each of the session's keys (NULL between its
	 * decoders), those ended in the current capture (their totals are
	 * taken at its end), and the idle ones, which the next decoders
	 * reuse: one made for the same image and configuration is reset (it
	 * keeps the code it classified). */
	struct source_slot **slots;
	struct source_slot *ended[MAX_IDS];
	size_t nended;
	struct source_slot *idle[IDLE_MAX];
	size_t nidle;
	size_t ending;                /* slots in captures' ends not yet handed on */
	int io_failed;
	/* --jobs: the decoders on workers (NULL: all here), the next
	 * decoder's worker (taken in turn: a queue's decoders end with each
	 * piece of its trace, so successive pieces decode at once). */
	struct jobs *jobs;
	unsigned next_worker;
	/* --jobs: a source that is the only one decoding, given enough of
	 * one piece of trace, is cut into chunks (chunks.c) until another
	 * source or the end of its own comes. */
	size_t nlive;                 /* slots[] in use */
	struct source_slot *fed_slot; /* the source given the last bytes, */
	uint64_t fed;                 /* ... how many since it became the only one */
	int chunk_ok;                 /* 0 once chunks could not be had */
	struct chunks *chunks;
	struct source_slot *chunked;  /* the source in chunks */
};

/* A capture's ended decoders, handed on with its end (capture_done). */
struct capture_end {
	struct perf_run *pr;
	size_t n;
	struct source_slot *s[];
};

static struct perf_run *active_run;   /* for perf_context_id() */

/* With workers, wait until all trace given so far is decoded and handed
 * on, so that it meets the state the serial decode gives it. */
static void settle(struct perf_run *pr)
{
	if (pr->chunks)
		chunks_sync(pr->chunks);
	if (pr->jobs)
		jobs_sync(pr->jobs);
}

/* The chunked source, if any, back to decoding as the others do
 * (everything given to it decoded and handed on). */
static void chunks_off(struct perf_run *pr)
{
	if (!pr->chunks)
		return;
	chunks_end(pr->chunks);
	pr->chunks = NULL;
	pr->chunked = NULL;
	pr->fed_slot = NULL;
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

static void perf_context_id(struct run_ctx *ctx, struct source_slot *s, uint32_t cid)
{
	(void)ctx;
	struct perf_run *pr = active_run;
	/* Per thread, the buffer's thread is certain. */
	if (!pr || s->perf != 2)
		return;
	int32_t pid = csd_perf_session_context_pid(pr->ps, cid);
	if (pid < 0) {
		s->pid = s->tid = -1;
		return;
	}
	if (pid != s->pid)
		s->tid = -1;
	s->pid = pid;
}

/* A slot for a decoder of cfg on img: an idle one (one that fits, when
 * there is one) or a new one. */
static struct source_slot *take_slot(struct perf_run *pr, const struct csd_trace_config *cfg, const csd_image *img,
				     int insn)
{
	/* (The ended slots come back idle as their captures' ends are
	 * handed on.) */
	/* (With workers there are ctx->jobs of them: jobs_new_sources.) */
	while (pr->jobs && pr->ending >= (size_t)pr->ctx->jobs * ENDING_PER_WORKER)
		jobs_wait(pr->jobs);
	struct source_slot *s = NULL;
	for (size_t i = pr->nidle; i-- > 0;) {
		struct source_slot *t = pr->idle[i];
		if (cli_slot_fits(t, pr->kind, cfg, img, insn)) {
			pr->idle[i] = pr->idle[--pr->nidle];
			s = t;
			break;
		}
	}
	if (!s && pr->nidle)
		s = pr->idle[--pr->nidle];
	if (!s && !(s = calloc(1, sizeof(*s))))
		die_io("out of memory");
	return s;
}

static void make_source(struct perf_run *pr, const struct csd_perf_action *a)
{
	const struct csd_perf_cpu *c = a->source;
	const int insn = cli_slot_insn(pr->o, pr->ctx, &c->config);
	struct source_slot *s = take_slot(pr, &c->config, a->image, insn);
	pr->slots[a->key] = s;
	pr->nlive++;
	if (cli_slot_renew(s, pr->kind, &c->config, a->image, insn) < 0)
		die_io("%s: cannot create a decoder for CPU %" PRId32 " (protocol and ETMIDR 0x%08" PRIx32 " disagree?)",
		       pr->o->dir, c->cpu, c->config.etmidr);
	s->perf = (a->flags & CSD_PERF_ACTF_PER_THREAD) ? 1 : 2;
	s->cpu = a->cpu;
	s->pid = a->pid;
	s->tid = a->tid;
	s->taken_pid = s->pid;
	s->taken_tid = s->tid;
	s->shown_pid = s->shown_tid = -2;
	s->worker = (int)(pr->next_worker++ % (CSD_PERF_SESSION_KEYS / MAX_IDS));
}

static void feed_slot(struct perf_run *pr, struct source_slot *s, const struct csd_bytes *b)
{
	if (pr->chunks && s == pr->chunked) {
		chunks_data(pr->chunks, b);
		return;
	}
	chunks_off(pr);
	if (s != pr->fed_slot) {
		pr->fed_slot = s;
		pr->fed = 0;
	}
	pr->fed += b->size;
	if (pr->chunk_ok && pr->nlive == 1 && pr->fed >= chunks_slot_after()) {
		/* Everything before on the workers decoded first: the
		 * source's decoder is then the chunks' serial one. */
		settle(pr);
		pr->chunks = chunks_new_slot(pr->ctx, s, b->offsets != NULL);
		if (pr->chunks) {
			pr->chunked = s;
			chunks_data(pr->chunks, b);
			return;
		}
		pr->chunk_ok = 0;
	}
	if (pr->jobs)
		jobs_data(pr->jobs, s, b);
	else if (cli_slot_feed(s, b) == 0)
		cli_drain_slot(pr->ctx, s);
}

/* A decoder ends: its last records go out (on its worker, in the
 * sequence). */
static void end_source(struct perf_run *pr, const struct csd_perf_action *a)
{
	struct source_slot *s = pr->slots[a->key];
	pr->slots[a->key] = NULL;
	pr->nlive--;
	chunks_off(pr);
	pr->fed_slot = NULL;  /* (the slot may come back for another piece) */
	if (pr->jobs) {
		jobs_source_end(pr->jobs, s);
	} else {
		cli_slot_finish(s);
		cli_drain_slot(pr->ctx, s);
	}
	if (pr->nended < MAX_IDS)
		pr->ended[pr->nended++] = s;
}

/* A slot no longer used: kept idle with its decoder, or freed. */
static void slot_idle(struct perf_run *pr, struct source_slot *s)
{
	if (pr->nidle < IDLE_MAX) {
		pr->idle[pr->nidle++] = s;
		return;
	}
	cli_slot_free(s);
	free(s);
}

/* After everything before a capture's end is handed on: the held records
 * go out, then its decoders' totals are taken and they become idle. */
static void capture_done(void *arg)
{
	struct capture_end *ce = arg;
	struct perf_run *pr = ce->pr;
	struct run_ctx *ctx = pr->ctx;
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	for (size_t i = 0; i < ce->n; i++) {
		struct source_slot *s = ce->s[i];
		if (ctx->on_source_end && pr->kind == SLOT_FLOW)
			ctx->on_source_end(ctx, s);
		cli_add_totals(ctx, s);
		slot_idle(pr, s);
	}
	pr->ending -= ce->n;
	free(ce);
}

/* A queue's capture ended. */
static void end_capture(struct perf_run *pr, const struct csd_perf_action *a)
{
	struct run_ctx *ctx = pr->ctx;
	if (!(a->flags & CSD_PERF_ACTF_DECODED)) {
		/* Only the merge's flush, which comes at every queue's end;
		 * with workers, after what they are decoding (no wait: the
		 * next piece's decoders start meanwhile). */
		if (ctx->merge && pr->jobs)
			jobs_merge_flush(pr->jobs);
		else if (ctx->merge)
			merge_flush(ctx->merge, ctx);
		return;
	}
	struct capture_end *ce = malloc(sizeof(*ce) + pr->nended * sizeof(ce->s[0]));
	if (!ce)
		die_io("out of memory");
	ce->pr = pr;
	ce->n = pr->nended;
	memcpy(ce->s, pr->ended, pr->nended * sizeof(ce->s[0]));
	pr->nended = 0;
	pr->ending += ce->n;
	if (pr->jobs)
		jobs_call(pr->jobs, capture_done, ce);
	else
		capture_done(ce);
}

static void aux_lost(struct perf_run *pr, const struct csd_perf_event *ev)
{
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

static void on_action(struct perf_run *pr, const struct csd_perf_action *a)
{
	switch (a->type) {
	case CSD_PERF_ACT_SETTLE:
		settle(pr);
		break;
	case CSD_PERF_ACT_WARNING:
		fprintf(stderr, "%s: warning: %s\n", prog, a->text);
		if (a->flags & CSD_PERF_ACTF_SKIPPED)
			pr->ctx->skipped_sources++;
		break;
	case CSD_PERF_ACT_SOURCE:
		chunks_off(pr);
		make_source(pr, a);
		break;
	case CSD_PERF_ACT_DATA:
		if (pr->slots[a->key])
			feed_slot(pr, pr->slots[a->key], &a->bytes);
		break;
	case CSD_PERF_ACT_FRAME_ERROR:
		/* (After the chunks' records, before their next.) */
		if (pr->chunks)
			chunks_sync(pr->chunks);
		if (pr->jobs) {
			jobs_frame_note(pr->jobs, &a->frame);
			if (pr->chunks)
				jobs_sync(pr->jobs);
		} else {
			cli_report_frame_error(pr->ctx, &a->frame);
		}
		break;
	case CSD_PERF_ACT_END:
		if (pr->slots[a->key])
			end_source(pr, a);
		break;
	case CSD_PERF_ACT_CAPTURE_END:
		chunks_off(pr);
		end_capture(pr, a);
		break;
	case CSD_PERF_ACT_AUX_LOST:
		aux_lost(pr, a->event);
		break;
	default:
		break;
	}
}

/* The sections every image starts with: the kernel, --image and --elf. */
static csd_image *base_image(const struct options *o)
{
	csd_image *img = csd_image_new();
	if (!img)
		die_io("out of memory");
	if (o->vmlinux && csd_image_add_elf(img, o->vmlinux, 0) < 0)
		die_io("--vmlinux %s", csd_image_error(img));
	cli_load_extra_images(o, img);
	return img;
}

int cli_run_perf(struct options *o, struct run_ctx *ctx, enum slot_kind kind)
{
	char err[600];
	struct perf_run *pr = calloc(1, sizeof(*pr));
	pr->slots = pr ? calloc(CSD_PERF_SESSION_KEYS, sizeof(*pr->slots)) : NULL;
	if (!pr || !pr->slots)
		die_io("out of memory");
	pr->o = o;
	pr->ctx = ctx;
	pr->kind = kind;
	uint8_t ids[MAX_IDS];
	size_t nids = 0;
	for (int id = 0; o->any_id && id < MAX_IDS; id++)
		if (o->want[id])
			ids[nids++] = (uint8_t)id;
	if (o->any_id && !nids)
		ids[nids++] = 0;        /* (ID 0 is no source's) */
	struct csd_perf_session_config cfg = {
		.size = sizeof(cfg),
		.symfs = o->symfs,
		.buildid_dir = o->buildid_dir,
		.ids = ids,
		.num_ids = nids,
	};
	if (kind == SLOT_FLOW) {
		cfg.flags |= CSD_PERF_SESSION_IMAGES;
		pr->base = cfg.base = base_image(o);
	}
	if (ctx->format == FMT_NONE || (ctx->on_record && !ctx->merge))
		cfg.flags |= CSD_PERF_SESSION_FRAMES_BY_ID;
	if (ctx->jobs > 1)
		cfg.flags |= CSD_PERF_SESSION_THREADS;
	int rc = csd_perf_session_new(o->dir, &cfg, &pr->ps, err, sizeof(err));
	if (rc < 0)
		die_io("%s", err);
	const size_t nsources = csd_perf_session_num_sources(pr->ps);
	if (nsources && ctx->jobs > 1) {
		/* The CPUs' queues decode on workers, a queue on one of them. */
		struct stat st;
		pr->jobs = jobs_new_sources(ctx, ctx->jobs, (int)nsources,
					    stat(o->dir, &st) == 0 ? (int64_t)st.st_size : -1,
					    kind == SLOT_FLOW && ctx->format == FMT_TEXT);
	}
	pr->chunk_ok = ctx->jobs > 1;
	active_run = pr;
	ctx->on_context_id = perf_context_id;
	struct csd_perf_action a = { .size = sizeof(a) };
	while ((rc = csd_perf_session_next(pr->ps, &a)) == 0)
		on_action(pr, &a);
	chunks_off(pr);
	if (pr->jobs) {
		jobs_end(pr->jobs);
		pr->jobs = NULL;
	}
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	cli_end_held_text(ctx);
	ctx->on_context_id = NULL;
	active_run = NULL;
	int status;
	if (rc == CSD_ENOENT && !nsources) {
		fprintf(stderr, "%s: %s\n", prog, csd_perf_session_error(pr->ps));
		status = EXIT_USAGE;
	} else {
		if (rc != CSD_EEOS) {
			fflush(ctx->out);
			fprintf(stderr, "%s: %s\n", prog, csd_perf_session_error(pr->ps));
			pr->io_failed = 1;
		}
		status = cli_finish_status(ctx, pr->io_failed, kind == SLOT_FLOW);
	}
	/* (A failed session may leave decoders unended.) */
	for (size_t k = 0; k < CSD_PERF_SESSION_KEYS; k++)
		if (pr->slots[k])
			slot_idle(pr, pr->slots[k]);
	for (size_t i = 0; i < pr->nended; i++)
		slot_idle(pr, pr->ended[i]);
	for (size_t i = 0; i < pr->nidle; i++) {
		cli_slot_free(pr->idle[i]);
		free(pr->idle[i]);
	}
	free(pr->slots);
	csd_perf_session_free(pr->ps);
	csd_image_free(pr->base);
	free(pr);
	return status;
}
