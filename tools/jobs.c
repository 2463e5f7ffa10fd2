/*
 * jobs.c - the sources of a capture decoded on worker threads.
 *
 * The serial pipeline hands each run of a source's bytes to its decoder
 * and passes on what the decoder then gives, before the next run. What a
 * decoder gives depends on its own bytes only, so a worker can decode a
 * source's runs anywhere, as long as the calling thread hands the results
 * on in the serial order: after each run, exactly what that run made. The
 * calling thread demultiplexes and keeps a sequence of events (a run of
 * source S, a frame note); each worker appends, after the output of each
 * run, an end mark; and the calling thread walks the sequence, taking each
 * run's output up to its mark from that run's worker. So the merge, the
 * handlers and the printers see the same calls in the same order as with
 * one thread, from the same thread.
 *
 * Printing is most of the work of a listing, so where nothing but printing
 * is wanted of the records and packets, the worker prints each to text as
 * the calling thread would (the text listing with a disassembler of its
 * own) and passes the text on with it: the calling thread only merges and
 * writes. perf.data's sources too: a record's process (its context ID,
 * read against the thread table, which changes only while the workers
 * are idle: jobs_sync) is settled as the record is taken from the
 * decoder, on whichever thread, in its source's order.
 *
 * Memory is bounded: the runs waiting for a worker, the output waiting for
 * the calling thread and the sequence each have a fixed number of blocks
 * or entries, and whoever finds one full waits (the calling thread handing
 * on what it can meanwhile). No cycle of waits: the oldest event of the
 * sequence has its bytes with its worker (pending runs are given to the
 * workers before the calling thread waits), and that worker's output
 * queue holds nothing older than it, so the calling thread can always take
 * from it.
 *
 * A source belongs to one worker (its `worker` field), which alone calls
 * its decoder; the decoders of several workers may read one image
 * (csd_image_new says when). A capture of one source gets one worker when
 * the calling thread has printing or counting to do meanwhile (only when
 * --jobs asks: jobs_new() says where the default takes one thread).
 *
 * Sources may also come and go while the workers run (perf.data's queues,
 * jobs_new_sources): a source's end is an event of the sequence like its
 * runs (jobs_source_end), and what must follow everything before it on
 * the calling thread a call in the sequence (jobs_call); the caller waits
 * with jobs_sync() until everything given is handed on before it changes
 * what the decoders or the handlers read.
 */
/* fopencookie(): the workers' print streams */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "merge.h"

#define IN_RING 4              /* runs' blocks given to a worker, not yet decoded */
/* Output blocks a worker has made, not yet taken: OUT_MIN; for sources
 * that come and go (jobs_new_sources) more, up to OUT_RING, while they
 * hold under OUT_BYTES: there a worker is often ahead of the one the
 * calling thread takes from (on a later piece of trace, whose records may
 * be hundreds of times its bytes), and works on meanwhile. (Not always:
 * each block's pages, touched first, cost more than a short run gains.) */
#define OUT_MIN 4
#define OUT_RING 64
#define OUT_BYTES (12u << 20)
#define IN_BYTES (64 * 1024)   /* trace bytes per input block (a longer run gets a block its size) */
#define IN_EVENTS 1024
#define OUT_ITEMS 4096
#define SEQ_MAX (1u << 16)
#define TEXT_MIN 65536         /* an output block's first text buffer */
#define TEXT_SOFT (256 * 1024) /* text that ends an output block (one record may pass it) */

enum { EV_DATA, EV_FINISH };

/* A note of the sequence that is no frame event (those count from 1). */
#define NOTE_MERGE_FLUSH 0

/* A run's capture offsets travel as steps: copying one 8-byte offset per
 * byte cost the calling thread more than the bytes themselves. A byte's
 * step is how far its offset is past the one before, 1..255 (within a
 * formatted frame and to the next frame); 0 means "the next of the
 * block's jumps" (a gap where other sources' frames were, or offsets not
 * increasing). The worker adds them up again for the decoder. */
struct in_event {
	uint8_t kind;
	uint8_t has_offsets;
	struct source_slot *slot;
	size_t pos, size;
	size_t jump_pos;        /* the run's first jump in the block's */
	uint64_t base;
	uint64_t first;         /* has_offsets: the first byte's offset */
};

struct in_block {
	struct in_block *next;  /* in the free list */
	size_t nev, used, cap;
	uint8_t *data;          /* cap bytes */
	uint8_t *step;          /* cap, once a run had offsets: each byte's step, at pos */
	uint64_t *jump;         /* njump of jump_cap (at most a byte each) */
	size_t njump, jump_cap;
	struct in_event ev[IN_EVENTS];
};

/* (_TEXT: printed by the worker, the next text_len bytes of the block's
 * text.) */
enum { IT_RECORD, IT_PACKET, IT_END, IT_RECORD_TEXT, IT_PACKET_TEXT };

struct item {
	uint32_t kind;
	uint32_t text_len;
	int32_t pid, tid;       /* IT_RECORD_TEXT of a perf.data source: its process then */
	union {
		struct csd_record r;
		struct csd_packet p;
	} u;
};

struct out_block {
	struct out_block *next;
	size_t n;
	char *text;             /* the items' texts, in order */
	size_t text_len, text_cap;
	struct item it[OUT_ITEMS];
};

struct worker {
	struct jobs *j;
	pthread_t th;
	pthread_cond_t cv;        /* this worker waits here */
	/* Shared, under j->mu. */
	int waiting;              /* in pthread_cond_wait(&cv): signal only then */
	struct in_block *in[IN_RING];
	unsigned in_head, in_len;
	struct out_block *out[OUT_RING];
	unsigned out_head, out_len;
	size_t out_bytes;         /* what the blocks in out[] hold */
	struct in_block *in_free;
	struct out_block *out_free;
	/* The calling thread's: the block being filled, the block being read. */
	struct in_block *cur_in;
	struct out_block *rd;
	size_t rd_pos, rd_text;
	/* The worker's: the block being filled, a run's offsets spelt out;
	 * the stream that prints into the block's text (NULL: the calling
	 * thread prints), and whether text was lost to short memory. */
	struct out_block *cur_out;
	uint64_t *offs;
	size_t offs_cap;
	FILE *fmt;
	int fmt_lost;
	size_t lost_from;       /* the block's text kept when text was first lost */
	size_t written;         /* text the stream wrote for the block, kept or lost */
	int block_perf;         /* the block holds a perf.data record */
	unsigned fail_every, writes;    /* test-only: every fail_every-th write of text fails */
	uint64_t printed;       /* items printed here */
};

/* An event of the sequence: a run or the end of source `slot` on worker
 * `worker`, or (worker -1) a frame note, a flush of the merge or a call
 * of fn. */
struct seq_entry {
	int worker;
	struct source_slot *slot;
	uint32_t event;
	uint64_t offset;
	const char *reason;
	void (*fn)(void *arg);
	void *arg;
};

struct jobs {
	struct run_ctx *ctx;
	pthread_mutex_t mu;
	pthread_cond_t cv_main;   /* the calling thread waits here */
	int main_waiting;         /* it does: a worker signals only then */
	int stop;
	/* Nothing but the counts is wanted of the records (decode --format
	 * none): the workers count them and pass none on. */
	int count_only;
	/* Nothing but printing is wanted: the workers print (listing: the
	 * text listing of records, which takes a disassembler). */
	int format_text;
	int listing;
	unsigned out_max;         /* output blocks a worker may queue (OUT_MIN .. OUT_RING) */
	int nw;
	struct worker *w;
	struct seq_entry *seq;
	size_t seq_head, seq_len;
};

int jobs_default(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* ---- worker side ---- */

/* Each side signals the other only when it waits: a wake-up is a system
 * call and a context switch, which cost more than a small run decodes. */
static void wait_worker_locked(struct jobs *j, struct worker *w)
{
	w->waiting = 1;
	pthread_cond_wait(&w->cv, &j->mu);
	w->waiting = 0;
}

static void wake_worker_locked(struct worker *w)
{
	if (w->waiting)
		pthread_cond_signal(&w->cv);
}

static void wake_main_locked(struct jobs *j)
{
	if (j->main_waiting)
		pthread_cond_signal(&j->cv_main);
}

static size_t out_block_bytes(const struct out_block *b)
{
	return b->n * sizeof(b->it[0]) + b->text_len;
}

/* Give the block being filled to the calling thread (waits for room). */
static void publish_out_locked(struct jobs *j, struct worker *w)
{
	while (w->out_len == j->out_max || (w->out_len >= OUT_MIN && w->out_bytes >= OUT_BYTES))
		wait_worker_locked(j, w);
	w->out[(w->out_head + w->out_len) % OUT_RING] = w->cur_out;
	w->out_len++;
	w->out_bytes += out_block_bytes(w->cur_out);
	w->cur_out = NULL;
	wake_main_locked(j);
}

static struct out_block *out_block_new(void)
{
	struct out_block *b = malloc(sizeof(*b));
	if (b) {
		b->text = NULL;
		b->text_len = b->text_cap = 0;
	}
	return b;
}

static size_t fmt_pos(const struct worker *w);
static void fmt_settle(struct worker *w);

static struct item *emit(struct jobs *j, struct worker *w)
{
	if (w->cur_out && (w->cur_out->n == OUT_ITEMS || (w->fmt && fmt_pos(w) >= TEXT_SOFT))) {
		fmt_settle(w);
		pthread_mutex_lock(&j->mu);
		publish_out_locked(j, w);
		pthread_mutex_unlock(&j->mu);
	}
	if (!w->cur_out) {
		/* At most out_max + 2 blocks: out_max queued, one being
		 * read, this one. */
		pthread_mutex_lock(&j->mu);
		w->cur_out = w->out_free;
		if (w->cur_out)
			w->out_free = w->cur_out->next;
		pthread_mutex_unlock(&j->mu);
		if (!w->cur_out && !(w->cur_out = out_block_new()))
			die_io("out of memory");
		w->cur_out->n = 0;
		w->cur_out->text_len = 0;
		w->block_perf = 0;
		w->written = 0;
	}
	return &w->cur_out->it[w->cur_out->n++];
}

/* The worker's print stream writes here: to the end of the text of the
 * block being filled. It never fails (a failed write would stay in the
 * stream's buffer): text that finds no memory is dropped, and so is all
 * that follows it in the block (fmt_settle). */
static ssize_t fmt_write(void *cookie, const char *buf, size_t n)
{
	struct worker *w = cookie;
	struct out_block *b = w->cur_out;
	w->written += n;
	if (w->fmt_lost)
		return (ssize_t)n;
	const int fail = w->fail_every && ++w->writes % w->fail_every == 0;
	if (!b || fail || cli_text_append(&b->text, &b->text_len, &b->text_cap, TEXT_MIN, buf, n) < 0) {
		w->fmt_lost = 1;
		w->lost_from = b ? b->text_len : 0;
	}
	return (ssize_t)n;
}

/* The end of the block's text as printed so far: what the stream has
 * written into it and what it still holds (fully buffered: it writes
 * when its buffer is full and at fmt_settle, not once an item). */
static size_t fmt_pos(const struct worker *w)
{
	return w->written + __fpending(w->fmt);
}

/* The stream's text into the block being filled, before the block is
 * published. Items whose text was lost to short memory go without it
 * (the calling thread prints them), but for a perf.data record's, which
 * could not be printed again (its process may have moved on). */
static void fmt_settle(struct worker *w)
{
	struct out_block *b = w->cur_out;
	if (!w->fmt || !b)
		return;
	fflush(w->fmt);
	if (!w->fmt_lost)
		return;
	if (w->block_perf)
		die_io("out of memory");
	/* The items whose text lies whole before the loss keep it; from the
	 * first that does not on, none has its text. */
	size_t at = 0;
	int lost = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct item *it = &b->it[i];
		if (it->kind != IT_RECORD_TEXT && it->kind != IT_PACKET_TEXT)
			continue;
		lost |= at + it->text_len > w->lost_from;
		if (!lost) {
			at += it->text_len;
			continue;
		}
		it->kind = it->kind == IT_RECORD_TEXT ? IT_RECORD : IT_PACKET;
		w->printed--;
	}
	b->text_len = at;
	w->fmt_lost = 0;
}

/* Item it, the last emitted, printed by `print` into the block's text:
 * then of kind `kind`. */
#define PRINT_ITEM(w, it, kind_, print)                                         \
	do {                                                                    \
		const size_t at_ = fmt_pos(w);                                  \
		print;                                                          \
		const size_t len_ = fmt_pos(w) - at_;                           \
		if (len_ > UINT32_MAX)                                          \
			die_io("a record's text of more than 4 GiB");          \
		(it)->kind = (kind_);                                           \
		(it)->text_len = (uint32_t)len_;                                \
		(w)->printed++;                                                 \
	} while (0)

static void emit_record(struct jobs *j, struct worker *w, struct source_slot *s, const struct csd_record *r)
{
	struct item *it = emit(j, w);
	it->kind = IT_RECORD;
	it->u.r = *r;
	if (!w->fmt)
		return;
	PRINT_ITEM(w, it, IT_RECORD_TEXT, cli_take_print(j->ctx, w->fmt, s, r));
	/* A perf.data source's record was taken here (its process may have
	 * changed): the calling thread cannot print it again. */
	w->block_perf |= s->perf != 0;
	it->pid = s->pid;
	it->tid = s->tid;
}

static void emit_packet(struct jobs *j, struct worker *w, struct source_slot *s, const struct csd_packet *p)
{
	struct item *it = emit(j, w);
	it->kind = IT_PACKET;
	it->u.p = *p;
	if (w->fmt)
		PRINT_ITEM(w, it, IT_PACKET_TEXT, cli_print_packet(j->ctx, w->fmt, s, p));
}

static void drain_to(struct jobs *j, struct worker *w, struct source_slot *s)
{
	if (s->flow) {
		const struct csd_record *batch;
		int n;
		while ((n = csd_flow_next_batch(s->flow, &batch)) > 0) {
			if (j->count_only) {
				/* s's counts are read by the calling thread
				 * only after the workers are joined. */
				cli_count_records(s, batch, n);
				continue;
			}
			for (int i = 0; i < n; i++)
				emit_record(j, w, s, &batch[i]);
		}
		return;
	}
	struct csd_packet p;
	while ((s->etm3 ? csd_etm3_pkt_next(s->etm3, &p) : csd_ptm_pkt_next(s->ptm, &p)) == 0)
		emit_packet(j, w, s, &p);
}

/* The text gathered to go straight out, written. */
static void write_text(struct run_ctx *ctx, const struct out_block *b, size_t *from, size_t *len)
{
	if (*len)
		fwrite(b->text + *from, 1, *len, ctx->out);
	*len = 0;
}

/* The capture offsets of run e, one per byte. */
static const uint64_t *run_offsets(struct worker *w, const struct in_block *b, const struct in_event *e)
{
	if (!e->has_offsets || !e->size)
		return NULL;
	if (w->offs_cap < e->size) {
		uint64_t *p = realloc(w->offs, e->size * sizeof(*p));
		if (!p)
			die_io("out of memory");
		w->offs = p;
		w->offs_cap = e->size;
	}
	const uint8_t *d = b->step + e->pos;
	const uint64_t *jump = b->jump ? b->jump + e->jump_pos : NULL;
	uint64_t o = e->first;
	w->offs[0] = o;
	for (size_t i = 1; i < e->size; i++)
		w->offs[i] = o = d[i] ? o + d[i] : *jump++;
	return w->offs;
}

static void run_block(struct jobs *j, struct worker *w, const struct in_block *b)
{
	for (size_t i = 0; i < b->nev; i++) {
		const struct in_event *e = &b->ev[i];
		struct source_slot *s = e->slot;
		if (e->kind == EV_DATA) {
			struct csd_bytes by = {
				.data = b->data + e->pos,
				.size = e->size,
				.offsets = run_offsets(w, b, e),
				.base = e->base,
				.id = s->id,
			};
			if (cli_slot_feed(s, &by) == 0)
				drain_to(j, w, s);
		} else {
			cli_slot_finish(s);
			drain_to(j, w, s);
		}
		emit(j, w)->kind = IT_END;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct jobs *j = w->j;
	pthread_mutex_lock(&j->mu);
	if (j->format_text) {
		/* (Under mu: capstone's loading is not for two threads at
		 * once.) Without a stream the calling thread prints. */
		cookie_io_functions_t io = { .write = fmt_write };
		w->fmt = fopencookie(w, "w", io);
		/* Fully buffered: the lines reach the block a buffer at a
		 * time (fmt_pos tells where each item's text ends). */
		if (w->fmt && setvbuf(w->fmt, NULL, _IOFBF, 64 * 1024) != 0) {
			fclose(w->fmt);
			w->fmt = NULL;
		}
		if (w->fmt) {
			/* This thread's alone: held once, not locked per call. */
			flockfile(w->fmt);
			if (j->listing)
				print_text_thread_begin();
		}
	}
	for (;;) {
		if (!w->in_len && w->cur_out && w->cur_out->n) {
			/* Nothing to do: what is made goes out now, not when
			 * the block is full. */
			fmt_settle(w);
			publish_out_locked(j, w);
			continue;
		}
		if (!w->in_len) {
			if (j->stop)
				break;
			wait_worker_locked(j, w);
			continue;
		}
		struct in_block *b = w->in[w->in_head];
		w->in_head = (w->in_head + 1) % IN_RING;
		w->in_len--;
		wake_main_locked(j);
		pthread_mutex_unlock(&j->mu);
		run_block(j, w, b);
		pthread_mutex_lock(&j->mu);
		b->next = w->in_free;
		w->in_free = b;
	}
	if (w->fmt) {
		if (j->listing)
			print_text_thread_end();
		funlockfile(w->fmt);
		fclose(w->fmt);
		w->fmt = NULL;
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* ---- calling thread ---- */

/* Hand on what the oldest events of the sequence have ready. 1 if
 * anything was. */
static int consume(struct jobs *j)
{
	struct run_ctx *ctx = j->ctx;
	int moved = 0;
	while (j->seq_len) {
		const struct seq_entry *e = &j->seq[j->seq_head];
		if (e->worker < 0 && e->fn) {
			/* (Off the sequence first: fn may add to it.) */
			void (*fn)(void *) = e->fn;
			void *arg = e->arg;
			j->seq_head = (j->seq_head + 1) % SEQ_MAX;
			j->seq_len--;
			fn(arg);
			moved = 1;
			continue;
		}
		if (e->worker < 0 && e->event == NOTE_MERGE_FLUSH) {
			if (ctx->merge)
				merge_flush(ctx->merge, ctx);
			j->seq_head = (j->seq_head + 1) % SEQ_MAX;
			j->seq_len--;
			moved = 1;
			continue;
		}
		if (e->worker < 0) {
			struct csd_frame_out fo;
			memset(&fo, 0, sizeof(fo));
			fo.event = e->event;
			fo.offset = e->offset;
			fo.reason = e->reason;
			cli_report_frame_error(ctx, &fo);
			j->seq_head = (j->seq_head + 1) % SEQ_MAX;
			j->seq_len--;
			moved = 1;
			continue;
		}
		struct worker *w = &j->w[e->worker];
		if (!w->rd) {
			pthread_mutex_lock(&j->mu);
			if (w->out_len) {
				w->rd = w->out[w->out_head];
				w->out_head = (w->out_head + 1) % OUT_RING;
				w->out_len--;
				w->out_bytes -= out_block_bytes(w->rd);
				wake_worker_locked(w);
			}
			pthread_mutex_unlock(&j->mu);
			if (!w->rd)
				return moved;
			w->rd_pos = 0;
			w->rd_text = 0;
		}
		struct source_slot *s = e->slot;
		int ended = 0, recs = 0;
		/* Texts that go straight out, gathered while they follow one
		 * another in the block: one write for many items. */
		size_t out_from = 0, out_len = 0;
		while (w->rd_pos < w->rd->n) {
			const struct item *it = &w->rd->it[w->rd_pos++];
			if (it->kind == IT_END) {
				ended = 1;
				break;
			}
			if (it->kind == IT_RECORD_TEXT || it->kind == IT_PACKET_TEXT) {
				const size_t at = w->rd_text;
				const char *text = w->rd->text ? w->rd->text + at : "";
				w->rd_text += it->text_len;
				if (it->kind == IT_RECORD_TEXT) {
					if (s->perf) {
						s->taken_pid = it->pid;
						s->taken_tid = it->tid;
					}
					recs = 1;
					if (!cli_record_text_straight(ctx, s, &it->u.r)) {
						/* (The merge may write what it delivers.) */
						write_text(ctx, w->rd, &out_from, &out_len);
						cli_take_record_text(ctx, s, &it->u.r, text, it->text_len);
						continue;
					}
					cli_count_record(s, &it->u.r);
				} else {
					cli_count_packet_text(ctx, s, &it->u.p);
				}
				if (!out_len)
					out_from = at;
				out_len += it->text_len;
				continue;
			}
			write_text(ctx, w->rd, &out_from, &out_len);
			if (it->kind == IT_RECORD) {
				cli_take_record(ctx, s, &it->u.r);
				recs = 1;
			} else {
				cli_take_packet(ctx, s, &it->u.p);
			}
		}
		write_text(ctx, w->rd, &out_from, &out_len);
		if (recs)
			cli_check_output(ctx);
		moved = 1;
		if (w->rd_pos == w->rd->n) {
			pthread_mutex_lock(&j->mu);
			w->rd->next = w->out_free;
			w->out_free = w->rd;
			pthread_mutex_unlock(&j->mu);
			w->rd = NULL;
		}
		if (ended) {
			j->seq_head = (j->seq_head + 1) % SEQ_MAX;
			j->seq_len--;
		}
	}
	return moved;
}

static int publish_in_locked(struct worker *w)
{
	if (w->in_len == IN_RING)
		return 0;
	w->in[(w->in_head + w->in_len) % IN_RING] = w->cur_in;
	w->in_len++;
	w->cur_in = NULL;
	wake_worker_locked(w);
	return 1;
}

/* Make progress or wait for a worker: hand on what is ready; else give
 * the workers every pending run and wait until one of them has done
 * something. The caller checks again for what it needs. */
static void step(struct jobs *j)
{
	if (consume(j))
		return;
	pthread_mutex_lock(&j->mu);
	for (int i = 0; i < j->nw; i++)
		if (j->w[i].cur_in && j->w[i].cur_in->nev)
			publish_in_locked(&j->w[i]);
	int ready = 0;
	if (j->seq_len) {
		const struct seq_entry *e = &j->seq[j->seq_head];
		ready = e->worker < 0 || j->w[e->worker].out_len > 0;
	}
	if (!ready) {
		j->main_waiting = 1;
		pthread_cond_wait(&j->cv_main, &j->mu);
		j->main_waiting = 0;
	}
	pthread_mutex_unlock(&j->mu);
}

static void grow_array(void **p, size_t n, size_t elem)
{
	void *q = realloc(*p, n * elem);
	if (!q)
		die_io("out of memory");
	*p = q;
}

/* Worker w's block being filled, with room for an event of `need` bytes
 * (and their steps when `offsets`). */
static struct in_block *in_block(struct jobs *j, struct worker *w, size_t need, int offsets)
{
	for (;;) {
		struct in_block *b = w->cur_in;
		if (b && b->nev < IN_EVENTS && b->cap - b->used >= need && (!offsets || b->step))
			return b;
		if (b && b->nev) {
			pthread_mutex_lock(&j->mu);
			int done = publish_in_locked(w);
			pthread_mutex_unlock(&j->mu);
			if (done)
				consume(j);
			else
				step(j);
			continue;
		}
		if (!b) {
			pthread_mutex_lock(&j->mu);
			b = w->in_free;
			if (b)
				w->in_free = b->next;
			pthread_mutex_unlock(&j->mu);
			if (!b && !(b = calloc(1, sizeof(*b))))
				die_io("out of memory");
			b->nev = b->used = b->njump = 0;
			w->cur_in = b;
		}
		size_t cap = b->cap < need ? (need > IN_BYTES ? need : IN_BYTES) : b->cap;
		if (cap != b->cap || !b->data) {
			grow_array((void **)&b->data, cap ? cap : 1, 1);
			if (b->step)
				grow_array((void **)&b->step, cap ? cap : 1, 1);
			b->cap = cap;
		}
		if (offsets && !b->step)
			grow_array((void **)&b->step, b->cap ? b->cap : 1, 1);
		return b;
	}
}

static void seq_push(struct jobs *j, const struct seq_entry *e)
{
	while (j->seq_len == SEQ_MAX)
		step(j);
	j->seq[(j->seq_head + j->seq_len) % SEQ_MAX] = *e;
	j->seq_len++;
}

/* Whether every step of the n offsets is 1..255 (a loop without
 * branches, which the compiler vectorizes). */
static int steps_fit(const uint64_t *off, size_t n)
{
	uint64_t big = 0;
	for (size_t i = 1; i < n; i++)
		big |= (off[i] - off[i - 1] - 1) >> 8;
	return big == 0;
}

/* The steps of run by at b->step + b->used, its jumps at the end of b's
 * (growing them: at most one a byte, so bounded by the block's bytes). */
static void put_steps(struct in_block *b, const struct csd_bytes *by)
{
	const uint64_t *off = by->offsets;
	uint8_t *d = b->step + b->used;
	d[0] = 0;
	if (steps_fit(off, by->size)) {
		for (size_t i = 1; i < by->size; i++)
			d[i] = (uint8_t)(off[i] - off[i - 1]);
		return;
	}
	for (size_t i = 1; i < by->size; i++) {
		uint64_t step = off[i] - off[i - 1];
		if (step - 1 < 255) {
			d[i] = (uint8_t)step;
			continue;
		}
		d[i] = 0;
		if (b->njump == b->jump_cap) {
			size_t n = b->jump_cap ? 2 * b->jump_cap : 1024;
			grow_array((void **)&b->jump, n, sizeof(*b->jump));
			b->jump_cap = n;
		}
		b->jump[b->njump++] = off[i];
	}
}

static void add_event(struct jobs *j, int kind, struct source_slot *s, const struct csd_bytes *by)
{
	const int wi = s->worker % j->nw;
	struct worker *w = &j->w[wi];
	size_t need = by ? by->size : 0;
	int offsets = by && by->offsets;
	/* The sequence first: waiting for room in it may give the worker
	 * the block being filled, which must then hold whole events only. */
	struct seq_entry se = { .worker = wi, .slot = s };
	seq_push(j, &se);
	struct in_block *b = in_block(j, w, need, offsets);
	struct in_event *e = &b->ev[b->nev++];
	e->kind = (uint8_t)kind;
	e->slot = s;
	e->has_offsets = (uint8_t)offsets;
	e->jump_pos = b->njump;
	e->pos = b->used;
	e->size = need;
	e->base = by ? by->base : 0;
	if (need) {
		memcpy(b->data + b->used, by->data, need);
		if (offsets) {
			e->first = by->offsets[0];
			put_steps(b, by);
		}
	}
	b->used += need;
}

void jobs_data(struct jobs *j, struct source_slot *s, const struct csd_bytes *b)
{
	add_event(j, EV_DATA, s, b);
}

void jobs_frame_note(struct jobs *j, const struct csd_frame_out *fo)
{
	struct seq_entry se = { .worker = -1, .event = fo->event, .offset = fo->offset, .reason = fo->reason };
	seq_push(j, &se);
}

void jobs_source_end(struct jobs *j, struct source_slot *s)
{
	add_event(j, EV_FINISH, s, NULL);
}

void jobs_call(struct jobs *j, void (*fn)(void *arg), void *arg)
{
	struct seq_entry se = { .worker = -1, .fn = fn, .arg = arg };
	seq_push(j, &se);
}

void jobs_merge_flush(struct jobs *j)
{
	struct seq_entry se = { .worker = -1, .event = NOTE_MERGE_FLUSH };
	seq_push(j, &se);
}

static void out_block_free(struct out_block *b)
{
	if (b)
		free(b->text);
	free(b);
}

static void jobs_stop(struct jobs *j, int started)
{
	pthread_mutex_lock(&j->mu);
	j->stop = 1;
	for (int i = 0; i < started; i++)
		pthread_cond_signal(&j->w[i].cv);
	pthread_mutex_unlock(&j->mu);
	uint64_t printed = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(j->w[i].th, NULL);
		printed += j->w[i].printed;
	}
	/* (Test-only: how much the workers printed, on stderr.) */
	if (started && getenv("CSDEC_TEST_JOBS_STATS"))
		fprintf(stderr, "csdec: jobs: %d workers printed %llu items\n", started, (unsigned long long)printed);
	for (int i = 0; i < j->nw; i++) {
		struct worker *w = &j->w[i];
		struct in_block *ib = w->in_free;
		if (w->cur_in) {
			w->cur_in->next = ib;
			ib = w->cur_in;
		}
		for (unsigned k = 0; k < w->in_len; k++) {
			struct in_block *b = w->in[(w->in_head + k) % IN_RING];
			b->next = ib;
			ib = b;
		}
		for (struct in_block *b = ib, *nx; b; b = nx) {
			nx = b->next;
			free(b->data);
			free(b->step);
			free(b->jump);
			free(b);
		}
		for (unsigned k = 0; k < w->out_len; k++)
			out_block_free(w->out[(w->out_head + k) % OUT_RING]);
		for (struct out_block *b = w->out_free, *nx; b; b = nx) {
			nx = b->next;
			out_block_free(b);
		}
		out_block_free(w->rd);
		out_block_free(w->cur_out);
		free(w->offs);
		pthread_cond_destroy(&w->cv);
	}
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv_main);
	free(j->seq);
	free(j->w);
	free(j);
}

void jobs_finish(struct jobs *j)
{
	for (int id = 0; id < MAX_IDS; id++)
		if (j->ctx->slot[id])
			add_event(j, EV_FINISH, j->ctx->slot[id], NULL);
	jobs_end(j);
}

void jobs_wait(struct jobs *j)
{
	if (j->seq_len)
		step(j);
}

void jobs_sync(struct jobs *j)
{
	while (j->seq_len)
		step(j);
}

void jobs_end(struct jobs *j)
{
	jobs_sync(j);
	jobs_stop(j, j->nw);
}

/* Nothing but printing is wanted of the records and packets. */
static int prints_only(const struct run_ctx *ctx)
{
	return ctx->format != FMT_NONE && !ctx->on_record && !ctx->on_packet;
}

/* nw workers for ctx's sources (count_only: they count and pass no
 * records on); NULL when threads or memory cannot be had. */
static struct jobs *jobs_start(struct run_ctx *ctx, int nw, int count_only, int format_text, int listing,
			       unsigned out_max)
{
	struct jobs *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->ctx = ctx;
	j->out_max = out_max;
	j->nw = nw;
	j->count_only = count_only;
	j->format_text = format_text;
	j->listing = format_text && listing;
	j->w = calloc((size_t)nw, sizeof(*j->w));
	j->seq = malloc(SEQ_MAX * sizeof(*j->seq));
	int ok = j->w && j->seq;
	for (int i = 0; ok && i < nw; i++)
		for (int k = 0; k < OUT_MIN + 2; k++) {
			struct out_block *b = out_block_new();
			if (!b) {
				ok = 0;
				break;
			}
			b->next = j->w[i].out_free;
			j->w[i].out_free = b;
		}
	if (!j->w)
		j->nw = 0;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv_main, NULL);
	for (int i = 0; i < j->nw; i++)
		pthread_cond_init(&j->w[i].cv, NULL);
	if (!ok) {
		jobs_stop(j, 0);
		return NULL;
	}
	/* Test-only: text lost as to short memory, every Nth write of a
	 * worker's stream (the calling thread then prints those items). */
	const char *fail = getenv("CSDEC_TEST_JOBS_TEXT_FAIL");
	const int fail_every = fail ? atoi(fail) : 0;
	int started = 0;
	for (; started < nw; started++) {
		j->w[started].j = j;
		j->w[started].fail_every = fail_every > 0 ? (unsigned)fail_every : 0;
		if (pthread_create(&j->w[started].th, NULL, worker_main, &j->w[started]) != 0)
			break;
	}
	if (started < nw) {
		jobs_stop(j, started);
		return NULL;
	}
	return j;
}

struct jobs *jobs_new(struct run_ctx *ctx, int jobs, int64_t capture_size)
{
	const int count_only = cli_counts_only(ctx);
	int nslots = 0;
	for (int id = 0; id < MAX_IDS; id++)
		nslots += ctx->slot[id] != NULL;
	/* Where threads cannot win, the default takes one. Nothing printed:
	 * the calling thread's reading and demultiplexing, which the workers
	 * cannot share, is much of the work, and the hand-off costs about
	 * what the decode it spreads saves. One source: overlapping its
	 * decode with the printing saves less than moving every record
	 * between threads costs. A small capture: starting and stopping
	 * threads costs more than its decode. */
	if (ctx->jobs_default && (count_only || nslots < 2 ||
				  (capture_size >= 0 && capture_size < JOBS_MIN_CAPTURE)))
		return NULL;
	int nw = jobs < nslots ? jobs : nslots;
	/* One source: its worker decodes while this thread prints or counts
	 * (with nothing printed or counted there is nothing to overlap). */
	if (nslots == 1 && jobs > 1 && (ctx->format != FMT_NONE || ctx->on_record || ctx->on_packet))
		nw = 1;
	else if (nw < 2)
		return NULL;
	int listing = 0;
	for (int id = 0; id < MAX_IDS; id++)
		listing |= ctx->slot[id] && ctx->slot[id]->kind == SLOT_FLOW && ctx->format == FMT_TEXT;
	struct jobs *j = jobs_start(ctx, nw, count_only, prints_only(ctx), listing, OUT_MIN);
	for (int id = 0, k = 0; j && id < MAX_IDS; id++)
		if (ctx->slot[id])
			ctx->slot[id]->worker = k++;
	return j;
}

struct jobs *jobs_new_sources(struct run_ctx *ctx, int jobs, int nsources, int64_t capture_size, int listing)
{
	const int count_only = cli_counts_only(ctx);
	/* The default's rule as in jobs_new(). One source: its pieces decode
	 * at once when --jobs asks, but a listing of them loses (a worker on
	 * a later piece soon waits for the earlier one to be written, and
	 * moving every record between threads costs more than printing it
	 * here). */
	if (ctx->jobs_default && (count_only || nsources < 2 ||
				  (capture_size >= 0 && capture_size < JOBS_MIN_CAPTURE)))
		return NULL;
	if (jobs < 2)
		return NULL;
	return jobs_start(ctx, jobs, count_only, prints_only(ctx), listing, OUT_RING);
}
