/*
 * cmd_timeline.c - `csdec timeline`: the call timeline of a trace as a
 * Chrome trace-event JSON file (ui.perfetto.dev, chrome://tracing,
 * speedscope).
 *
 * Each source follows its calls as `profile` does (prof_accum.c): a taken
 * branch with link opens a call at the next instruction, which returns
 * when execution arrives at the address after the branch. Every frame
 * becomes one complete event ("X": start and duration) when it ends, so
 * the file is written as the trace is decoded and frames that started
 * before anything was seen (a trace that begins deep in a call stack) can
 * still be given the start of their track: a complete event needs nothing
 * before it in the file, and viewers nest them by time and duration.
 * Memory is a bounded stack per source and a bounded table of tracks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "symbols.h"

#define TL_SOURCES 128
#define TL_STACK_MAX 16384    /* frames followed per source (the stack is paged in as it deepens) */
#define TL_RETURN_SEARCH 64   /* frames looked through for a return address */
#define TL_TRACKS_KNOWN 4096  /* tracks whose metadata is written once */

enum clock_kind { CLOCK_AUTO, CLOCK_INSN, CLOCK_CYCLES, CLOCK_TIMESTAMPS };
static const char *const clock_names[] = { "auto", "instructions", "cycles", "timestamps" };

enum frame_kind {
	FR_START,     /* open when the track's trace began: its call was never seen */
	FR_CALL,      /* a call seen in the trace */
	FR_EXCEPTION, /* an exception, until the return to its return address */
	FR_HANDLER,   /* the code an exception went to */
};

struct tl_frame {
	double start;
	uint64_t entry;               /* first address (named by it without a symbol) */
	uint64_t ret;                 /* FR_CALL, FR_EXCEPTION: where it returns to */
	const struct sym_func *fn;    /* the function (NULL: none known) */
	const char *exc;              /* FR_EXCEPTION: its name */
	uint8_t kind;
};

struct tl_source {
	int started;                  /* a track (pid) is chosen */
	int stopped;                  /* past --to or the event cap */
	int in_window;                /* past --from */
	int64_t pid;                  /* process of the track */
	int clock;                    /* enum clock_kind in use */
	/* time: a counter (instructions or cycles) and, with timestamps, the
	 * timestamp it was last set from and the rate measured before */
	uint64_t insns, units;
	double now;                   /* time of the next instruction */
	double ts_base;
	uint64_t ts_units;            /* units at the last timestamp */
	double rate;                  /* timestamp ticks per unit */
	int have_ts;
	uint64_t emitted;             /* events written */
	double seg_start;             /* where the current track segment began */
	double win_start;             /* time at --from */
	/* calls */
	struct tl_frame stack[TL_STACK_MAX];
	unsigned depth;
	uint64_t hidden;              /* calls past TL_STACK_MAX since the last return to a frame */
	int pending;                  /* a call or handler starts at the next instruction */
	uint64_t pend_ret;
	int check_return;
	int lost;
};

struct track_key {
	int64_t pid;
	unsigned tid;
};

struct timeline {
	FILE *out;
	const struct symtab *st;
	int dynamic;                  /* no symbols */
	int clock_opt;
	int64_t from, to;             /* window, instructions or time; -1 none */
	int from_time, to_time;
	uint64_t max_events;
	uint64_t events, spans, instants;
	/* Frames open on sources in their window: each is one event to come,
	 * so the cap holds them back from new events. */
	uint64_t owed;
	int cut;                      /* the event cap was reached */
	int any_event;                /* one is written (the next needs a comma) */
	char cut_note[256];
	unsigned clocks_used;         /* bits of enum clock_kind */
	uint64_t deep_calls;
	struct track_key known[TL_TRACKS_KNOWN];
	size_t nknown;
	struct tl_source *src[TL_SOURCES];
};

static void usage_timeline(FILE *out)
{
	fprintf(out,
		"Usage: csdec timeline <snapshot-dir>|<perf.data> [--elf FILE[@BIAS]]... -o FILE.json\n"
		"                      [--from [insn:|time:]N] [--to [insn:|time:]N] [--max-events N]\n"
		"                      [--clock auto|insn|cycles|timestamps] [decode options]\n"
		"       csdec timeline --trace FILE --protocol etm3|ptm [decode options] -o FILE.json\n"
		"\n"
		"The calls of the trace over time as a Chrome trace-event JSON file, for\n"
		"ui.perfetto.dev, chrome://tracing and speedscope: one track per source\n"
		"(and per process, where the context ID or perf.data says which), a span per\n"
		"function call named from the ELF's symbols (else by address), exceptions as\n"
		"spans of their own, trace gaps and overflows as instant events.\n"
		"\n"
		"  -o FILE            the JSON file to write (- for standard output)\n"
		"  --elf FILE[@BIAS]  symbols and code of the program; may be repeated\n"
		"  --clock C          the time axis: timestamps (interpolated by cycles, or by\n"
		"                     instructions without them), cycles, or insn\n"
		"                     (instructions, also accepted as the name); auto\n"
		"                     (default): the first of these the source traces. The\n"
		"                     file's metadata names it.\n"
		"  --from N, --to N   only this part of each source: N is an instruction index\n"
		"                     (or insn:N), or time:T in the file's time unit; spans open\n"
		"                     at the edges are cut there\n"
		"  --max-events N     write at most N spans and instant events (default\n"
		"                     1000000, 0: no limit): where one more would pass N,\n"
		"                     the spans open end and the rest is cut with a message\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"  --jobs N           decode on up to N threads, one source per thread (default:\n"
		"                     the online cores, one for one source or a capture under\n"
		"                     1 MiB; 1: all on one; N >= 2 given: a capture's one\n"
		"                     source is cut into chunks); the result is the same\n"
		"Other options as for 'csdec decode' (--trace, --protocol, --reg, --image...).\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (the timeline of what decoded\n"
		"is still written), 2 usage or I/O error.\n");
}

struct tl_opts {
	struct timeline *t;
	const char *out_path;
};

static void parse_bound(const char *v, int64_t *n, int *is_time)
{
	*is_time = 0;
	if (strncmp(v, "insn:", 5) == 0) {
		v += 5;
	} else if (strncmp(v, "time:", 5) == 0) {
		v += 5;
		*is_time = 1;
	}
	*n = (int64_t)parse_number(v, "--from/--to position");
}

static int timeline_option(void *user, int argc, char **argv, int *i)
{
	struct tl_opts *o = user;
	const char *a = argv[*i], *v;
	if ((v = cli_opt_value(argc, argv, i, "-o"))) {
		o->out_path = v;
	} else if ((v = cli_opt_value(argc, argv, i, "--from"))) {
		parse_bound(v, &o->t->from, &o->t->from_time);
	} else if ((v = cli_opt_value(argc, argv, i, "--to"))) {
		parse_bound(v, &o->t->to, &o->t->to_time);
	} else if ((v = cli_opt_value(argc, argv, i, "--max-events"))) {
		o->t->max_events = parse_number(v, "--max-events count");
	} else if ((v = cli_opt_value(argc, argv, i, "--clock"))) {
		/* ("instructions": the name the file's metadata gives it) */
		int c = strcmp(v, "auto") == 0 ? CLOCK_AUTO :
			strcmp(v, "insn") == 0 || strcmp(v, "instructions") == 0 ? CLOCK_INSN :
			strcmp(v, "cycles") == 0 ? CLOCK_CYCLES : strcmp(v, "timestamps") == 0 ? CLOCK_TIMESTAMPS : -1;
		if (c < 0)
			die_usage("--clock expects auto, insn, cycles or timestamps, got '%s'", v);
		o->t->clock_opt = c;
	} else {
		if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0 || strcmp(a, "--insn") == 0 ||
		    strcmp(a, "--data-only") == 0)
			die_usage("timeline: %s is an option of decode", a);
		return 0;
	}
	return 1;
}

/* ---- JSON ---- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c); /* symbol names are bytes: kept as Latin-1 */
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * Times are written on a grid of thousandths of a unit (a nanosecond in
 * the viewer), a span's start and end each rounded to it and its duration
 * the difference of the two: rounded separately, a child's end could pass
 * its parent's by a grid step, and viewers that nest by integer
 * nanoseconds then see the spans overlap. Beyond TL_FINE_MAX a double no
 * longer holds thousandths, and the grid is whole units.
 */
#define TL_FINE_MAX 9e12

/* x rounded to a whole number (half away from zero), without libm: from
 * 2^52 on a double is whole already. */
static double whole(double x)
{
	if (x >= 4503599627370496.0 || x <= -4503599627370496.0)
		return x;
	return (double)(long long)(x < 0 ? x - 0.5 : x + 0.5);
}

static int fine_grid(double t)
{
	return t < TL_FINE_MAX && t > -TL_FINE_MAX;
}

static void json_grid(FILE *f, double v, int fine)
{
	if (!fine) {
		fprintf(f, "%.0f", v);
		return;
	}
	const long long q = (long long)v; /* v: whole thousandths */
	const long long units = q / 1000, frac = q % 1000;
	if (!frac) {
		fprintf(f, "%lld", units);
		return;
	}
	char digits[4];
	snprintf(digits, sizeof(digits), "%03lld", frac < 0 ? -frac : frac);
	for (int k = 2; k > 0 && digits[k] == '0'; k--)
		digits[k] = 0;
	fprintf(f, "%s%lld.%s", q < 0 && units == 0 ? "-" : "", units, digits);
}

/* A span's start and end on one grid (*s, *e); returns whether it is
 * the fine one. */
static int span_grid(double start, double end, double *s, double *e)
{
	const int fine = fine_grid(start) && fine_grid(end);
	*s = fine ? whole(start * 1000.0) : whole(start);
	*e = fine ? whole(end * 1000.0) : whole(end);
	return fine;
}

/* An instant's time, on the grid of a span that starts and ends there. */
static void json_time(FILE *f, double t)
{
	double g, same;
	const int fine = span_grid(t, t, &g, &same);
	json_grid(f, g, fine);
}

static void event_sep(struct timeline *t)
{
	if (t->any_event)
		fputs(",\n", t->out);
	t->any_event = 1;
}

static void track_metadata(struct timeline *t, const struct source_slot *s, struct tl_source *ts)
{
	for (size_t i = 0; i < t->nknown; i++)
		if (t->known[i].pid == ts->pid && t->known[i].tid == s->id)
			return;
	if (t->nknown < TL_TRACKS_KNOWN) {
		t->known[t->nknown].pid = ts->pid;
		t->known[t->nknown++].tid = s->id;
	}
	char name[96];
	if (s->perf && s->pid >= 0)
		snprintf(name, sizeof(name), "pid %" PRId64, ts->pid);
	else if (ts->pid >= 0)
		snprintf(name, sizeof(name), "context ID 0x%" PRIx64, ts->pid);
	else
		snprintf(name, sizeof(name), "trace");
	event_sep(t);
	fprintf(t->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"args\":{\"name\":", ts->pid);
	json_string(t->out, name);
	fputs("}}", t->out);
	if (s->perf && s->cpu >= 0)
		snprintf(name, sizeof(name), "cpu %d (trace ID 0x%02x, %s)", (int)s->cpu, s->id,
			 s->cfg.protocol == CSD_PROTO_PTM ? "PTM" : "ETMv3");
	else
		snprintf(name, sizeof(name), "source 0x%02x (%s)", s->id, s->cfg.protocol == CSD_PROTO_PTM ? "PTM" : "ETMv3");
	event_sep(t);
	fprintf(t->out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"name\":", ts->pid,
		s->id);
	json_string(t->out, name);
	fprintf(t->out, ",\"clock\":\"%s\"}}", clock_names[ts->clock]);
	event_sep(t);
	fprintf(t->out, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"sort_index\":%u}}",
		ts->pid, s->id, s->id);
}

static int emitting(const struct tl_source *ts)
{
	return ts->in_window && !ts->stopped;
}

static void cap_reached(struct timeline *t, const struct source_slot *s, struct tl_source *ts);

/* May n more events come into being (a span to come, an instant)? At
 * the cap, everything ends: what is open is written, nothing more. */
static int cap_allows(struct timeline *t, const struct source_slot *s, struct tl_source *ts, uint64_t n)
{
	if (t->cut)
		return 0;
	if (!t->max_events || t->events + t->owed + n <= t->max_events)
		return 1;
	cap_reached(t, s, ts);
	return 0;
}

static void frame_name(const struct timeline *t, const struct tl_frame *f, char *buf, size_t cap)
{
	if (f->kind == FR_EXCEPTION)
		snprintf(buf, cap, "exception %s", f->exc);
	else if (f->fn)
		snprintf(buf, cap, "%s", f->fn->name);
	else if (t->dynamic && f->kind == FR_START)
		snprintf(buf, cap, "(unknown)");
	else
		snprintf(buf, cap, "0x%08" PRIx64, f->entry);
}

/* A frame ends at `end`: its span, or an instant for an exception that
 * took no time. Nothing of it before the window's start is shown. */
static void emit_frame(struct timeline *t, const struct source_slot *s, struct tl_source *ts, const struct tl_frame *f,
		       double end)
{
	char name[300];
	double start = f->start > ts->win_start ? f->start : ts->win_start;
	if (!emitting(ts))
		return;
	t->owed--;
	if (end < start)
		return;
	frame_name(t, f, name, sizeof(name));
	event_sep(t);
	fputs("{\"name\":", t->out);
	json_string(t->out, name);
	double gs, ge;
	const int fine = span_grid(start, end, &gs, &ge);
	if (ge == gs) {
		/* a zero-length span cannot be told apart from its parent */
		fprintf(t->out, ",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%" PRId64 ",\"tid\":%u,\"ts\":",
			f->kind == FR_EXCEPTION ? "exception" : "function", ts->pid, s->id);
		json_grid(t->out, gs, fine);
		t->instants++;
	} else {
		fprintf(t->out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%" PRId64 ",\"tid\":%u,\"ts\":",
			f->kind == FR_EXCEPTION ? "exception" : "function", ts->pid, s->id);
		json_grid(t->out, gs, fine);
		fputs(",\"dur\":", t->out);
		json_grid(t->out, ge - gs, fine);
		t->spans++;
	}
	/* no args: speedscope names a frame by its name and args together */
	fputc('}', t->out);
	t->events++;
	ts->emitted++;
}

static void instant(struct timeline *t, const struct source_slot *s, struct tl_source *ts, const char *name,
		    const char *detail)
{
	if (!emitting(ts) || !ts->started || !cap_allows(t, s, ts, 1))
		return;
	event_sep(t);
	fputs("{\"name\":", t->out);
	json_string(t->out, name);
	fprintf(t->out, ",\"cat\":\"trace\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%" PRId64 ",\"tid\":%u,\"ts\":", ts->pid, s->id);
	json_time(t->out, ts->now);
	fputs(",\"args\":{\"detail\":", t->out);
	json_string(t->out, detail);
	fputs("}}", t->out);
	t->events++;
	t->instants++;
	ts->emitted++;
}

static void close_all(struct timeline *t, const struct source_slot *s, struct tl_source *ts)
{
	while (ts->depth)
		emit_frame(t, s, ts, &ts->stack[--ts->depth], ts->now);
	ts->hidden = 0;
	ts->pending = 0;
}

static void push(struct timeline *t, const struct source_slot *s, struct tl_source *ts, const struct tl_frame *f)
{
	if (ts->depth >= TL_STACK_MAX) {
		ts->hidden++;
		t->deep_calls++;
		return;
	}
	if (emitting(ts)) {
		if (!cap_allows(t, s, ts, 1))
			return;
		t->owed++;
	}
	ts->stack[ts->depth++] = *f;
}

/* ---- time ---- */

static int source_clock(const struct timeline *t, const struct csd_trace_config *cfg)
{
	int cyc = cfg->etmcr >> 12 & 1, tstamp = cfg->etmcr >> 28 & 1;
	if (t->clock_opt != CLOCK_AUTO)
		return t->clock_opt;
	return tstamp ? CLOCK_TIMESTAMPS : cyc ? CLOCK_CYCLES : CLOCK_INSN;
}

/* The counter the clock runs on advanced: time follows it (timestamps:
 * at the rate measured between the last two timestamps). */
static void advance(struct tl_source *ts, uint64_t insns, uint64_t cycles, int cycle_accurate)
{
	ts->insns += insns;
	uint64_t du = ts->clock == CLOCK_INSN ? insns : ts->clock == CLOCK_CYCLES ? cycles :
		      cycle_accurate ? cycles : insns;
	ts->units += du;
	ts->now += ts->clock == CLOCK_TIMESTAMPS ? (double)du * ts->rate : (double)du;
}

static void on_timestamp(struct tl_source *ts, uint64_t value)
{
	double v = (double)value;
	if (ts->have_ts && v > ts->ts_base && ts->units > ts->ts_units)
		ts->rate = (v - ts->ts_base) / (double)(ts->units - ts->ts_units);
	if (!ts->have_ts && !ts->emitted) {
		/* The first timestamp places what came before it, which no
		 * event shows yet: the open frames move with it. */
		double delta = v - ts->now;
		for (unsigned i = 0; i < ts->depth; i++)
			ts->stack[i].start += delta;
		ts->seg_start += delta;
		ts->win_start += delta;
		ts->now = v;
	} else if (v > ts->now) {
		/* time never goes back: a timestamp behind the estimate waits */
		ts->now = v;
	}
	ts->ts_base = v;
	ts->ts_units = ts->units;
	ts->have_ts = 1;
}

/* ---- calls ---- */

static const struct sym_func *fn_at(const struct timeline *t, uint64_t addr)
{
	return t->dynamic ? NULL : symtab_find(t->st, addr);
}

static void start_track(struct timeline *t, const struct source_slot *s, struct tl_source *ts, uint64_t addr)
{
	struct tl_frame f;
	memset(&f, 0, sizeof(f));
	f.kind = FR_START;
	f.entry = addr;
	f.fn = fn_at(t, addr);
	f.start = ts->now;
	ts->seg_start = ts->now;
	push(t, s, ts, &f);
}

/* Execution arrives at addr: the pending call or handler begins, or a
 * return to a frame ends the frames above it. */
static void arrive(struct timeline *t, const struct source_slot *s, struct tl_source *ts, uint64_t addr)
{
	if (!ts->depth) {
		start_track(t, s, ts, addr);
		ts->pending = ts->check_return = 0;
		return;
	}
	if (ts->pending) {
		ts->pending = 0;
		struct tl_frame *top = &ts->stack[ts->depth - 1];
		if (top->kind == FR_EXCEPTION && addr == ts->pend_ret && top->ret == addr) {
			/* the handler was not traced: the exception took no time */
			emit_frame(t, s, ts, &ts->stack[--ts->depth], ts->now);
			return;
		}
		struct tl_frame f;
		memset(&f, 0, sizeof(f));
		f.kind = top->kind == FR_EXCEPTION && top->ret == ts->pend_ret ? FR_HANDLER : FR_CALL;
		f.entry = addr;
		f.fn = fn_at(t, addr);
		f.ret = ts->pend_ret;
		f.start = ts->now;
		push(t, s, ts, &f);
		ts->check_return = 0;
		ts->lost = 0;
		return;
	}
	if (!ts->check_return)
		return;
	ts->check_return = 0;
	unsigned i = ts->depth, looked = 0;
	while (i > 0 && looked++ < TL_RETURN_SEARCH) {
		const struct tl_frame *f = &ts->stack[--i];
		if ((f->kind == FR_CALL || f->kind == FR_EXCEPTION) && f->ret == addr) {
			while (ts->depth > i)
				emit_frame(t, s, ts, &ts->stack[--ts->depth], ts->now);
			ts->hidden = 0;
			if (!ts->depth)
				start_track(t, s, ts, addr);
			ts->lost = 0;
			return;
		}
	}
	ts->lost = 0;
	if (t->dynamic || ts->hidden)
		return;
	const struct sym_func *fn = fn_at(t, addr);
	struct tl_frame *top = &ts->stack[ts->depth - 1];
	if (!fn || fn == top->fn || top->kind == FR_EXCEPTION)
		return;
	/* Into the middle of a function whose frame is open lower down: a
	 * return that skips frames (longjmp lands after its setjmp, whose
	 * own return was long ago), as the profile takes it. A tail call
	 * goes to a function's first instruction. */
	if (addr != fn->start) {
		unsigned k = ts->depth - 1, seen = 0;
		while (k > 0 && seen++ < TL_RETURN_SEARCH)
			if (ts->stack[--k].fn == fn) {
				while (ts->depth > k + 1)
					emit_frame(t, s, ts, &ts->stack[--ts->depth], ts->now);
				return;
			}
	}
	/* Into another function without a call or a return seen: a tail
	 * call (the frame is replaced, returning where it would have), or
	 * from the frame open since the track began, a return to a caller the
	 * trace never saw, whose frame opens at the start of the track. */
	struct tl_frame f = *top;
	emit_frame(t, s, ts, &ts->stack[--ts->depth], ts->now);
	f.entry = addr;
	f.fn = fn;
	if (f.kind == FR_START && ts->depth == 0)
		f.start = ts->seg_start;
	else
		f.start = ts->now;
	push(t, s, ts, &f);
}

static struct tl_source *tl_source(struct timeline *t, const struct source_slot *s)
{
	struct tl_source **p = &t->src[s->id % TL_SOURCES];
	if (!*p) {
		*p = calloc(1, sizeof(**p));
		if (!*p)
			die_io("out of memory");
		(*p)->pid = -1;
		(*p)->rate = 1.0;
		(*p)->clock = source_clock(t, &s->cfg);
		(*p)->in_window = t->from < 0;
		t->clocks_used |= 1u << (*p)->clock;
	}
	return *p;
}

/* The process of s's next records changed (context ID, perf): its frames
 * end on the old track; the next instruction opens the new one. */
static void switch_track(struct timeline *t, const struct source_slot *s, struct tl_source *ts, int64_t pid)
{
	if (ts->started && pid == ts->pid)
		return;
	close_all(t, s, ts);
	ts->pid = pid;
	ts->started = 1;
	if (emitting(ts))
		track_metadata(t, s, ts);
}

/* The event cap: everything still open ends now, in every source, and
 * nothing more is written. */
static void cap_reached(struct timeline *t, const struct source_slot *s, struct tl_source *ts)
{
	t->cut = 1;
	snprintf(t->cut_note, sizeof(t->cut_note),
		 "--max-events %" PRIu64 " reached at instruction %" PRIu64 " of source 0x%02x (time %.15g): "
		 "the rest of the trace is not in the file",
		 t->max_events, ts->insns, s->id, ts->now);
	for (size_t i = 0; i < TL_SOURCES; i++)
		if (t->src[i]) {
			/* other sources' slots are not at hand: their frames end at their own time */
			struct source_slot dummy;
			memset(&dummy, 0, sizeof(dummy));
			dummy.id = (uint8_t)i;
			close_all(t, i == s->id % TL_SOURCES ? s : &dummy, t->src[i]);
			t->src[i]->stopped = 1;
		}
}

static int window_check(struct timeline *t, const struct source_slot *s, struct tl_source *ts)
{
	/* (After the cap, a source met for the first time is stopped too.) */
	if (ts->stopped || t->cut)
		return 0;
	if (!ts->in_window && t->from >= 0 &&
	    (t->from_time ? ts->now >= (double)t->from : ts->insns >= (uint64_t)t->from)) {
		/* The frames open at the window's start are spans to come. */
		if (!cap_allows(t, s, ts, ts->depth))
			return 0;
		t->owed += ts->depth;
		ts->in_window = 1;
		ts->win_start = ts->now;
		if (ts->started)
			track_metadata(t, s, ts);
	}
	if (t->to >= 0 && (t->to_time ? ts->now >= (double)t->to : ts->insns >= (uint64_t)t->to)) {
		close_all(t, s, ts);
		ts->stopped = 1;
		return 0;
	}
	return 1;
}

static void on_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	struct timeline *t = ctx->user;
	struct tl_source *ts = tl_source(t, s);
	int cycle_accurate = s->cfg.etmcr >> 12 & 1;
	uint64_t cyc = (r->flags & CSD_RECF_CYCLES) ? r->cycles : 0;
	char detail[128];
	if (!window_check(t, s, ts))
		return;
	if (s->perf && s->pid != ts->pid && s->pid >= 0)
		switch_track(t, s, ts, s->pid);
	switch (r->type) {
	case CSD_REC_RANGE:
	case CSD_REC_INSN: {
		uint64_t n = r->type == CSD_REC_RANGE ? r->count : 1;
		uint64_t end = r->type == CSD_REC_RANGE ? r->end : r->addr + r->size;
		uint64_t last = r->type == CSD_REC_RANGE ? r->last : r->addr;
		if (!n)
			break;
		if (!ts->started)
			switch_track(t, s, ts, s->perf && s->pid >= 0 ? s->pid : -1);
		arrive(t, s, ts, r->addr);
		advance(ts, n, cyc, cycle_accurate);
		uint32_t taken = CSD_RECF_BRANCH | CSD_RECF_TAKEN;
		if ((r->flags & taken) == taken && (r->flags & CSD_RECF_LINK)) {
			ts->pending = 1;
			ts->pend_ret = end;
		} else if ((r->flags & taken) == taken) {
			ts->check_return = 1;
		}
		(void)last;
		break;
	}
	case CSD_REC_EXCEPTION:
		advance(ts, 0, cyc, cycle_accurate);
		if (ts->depth) {
			struct tl_frame f;
			memset(&f, 0, sizeof(f));
			f.kind = FR_EXCEPTION;
			f.entry = r->target;
			f.ret = r->addr;
			f.exc = csd_exception_name(&s->cfg, r->exception);
			f.start = ts->now;
			push(t, s, ts, &f);
			ts->pending = 1;
			ts->pend_ret = r->addr;
		}
		ts->check_return = 0;
		break;
	case CSD_REC_EXCEPTION_RETURN:
		advance(ts, 0, cyc, cycle_accurate);
		ts->check_return = 1;
		break;
	case CSD_REC_TIMESTAMP:
		advance(ts, 0, cyc, cycle_accurate);
		if (ts->clock == CLOCK_TIMESTAMPS)
			on_timestamp(ts, r->timestamp);
		break;
	case CSD_REC_CONTEXT:
		if ((r->flags & CSD_RECF_CONTEXT_ID) && !s->perf)
			switch_track(t, s, ts, r->context_id);
		break;
	case CSD_REC_CYCLE_COUNT:
		advance(ts, 0, cyc, cycle_accurate);
		snprintf(detail, sizeof(detail), "%" PRIu64 " cycles with trace off", cyc);
		instant(t, s, ts, "trace gap", detail);
		break;
	case CSD_REC_TRACE_ON:
	case CSD_REC_NO_MEMORY:
	case CSD_REC_ADDRESS_UNKNOWN:
	case CSD_REC_NOSYNC:
	case CSD_REC_ISA_UNSUPPORTED:
	case CSD_REC_ERROR:
	case CSD_REC_TRUNCATED:
		advance(ts, 0, cyc, cycle_accurate);
		if (r->type == CSD_REC_TRACE_ON) {
			snprintf(detail, sizeof(detail), "trace on (%s) at 0x%08" PRIx64, csd_reason_name(r->reason), r->addr);
			instant(t, s, ts, r->reason == CSD_REASON_OVERFLOW ? "overflow" :
					  r->reason == CSD_REASON_PERIODIC ? "sync" : "trace on", detail);
		} else {
			snprintf(detail, sizeof(detail), "%s at offset %" PRIu64 "%s%s", csd_rec_type_name(r->type),
				 r->offset, r->error ? ": " : "", r->error ? r->error : "");
			instant(t, s, ts, r->type == CSD_REC_ERROR || r->type == CSD_REC_NOSYNC ? "trace lost" : "trace gap",
				detail);
		}
		/* a periodic sync says nothing new about where execution is */
		if (r->type == CSD_REC_TRACE_ON && r->reason == CSD_REASON_PERIODIC)
			break;
		ts->pending = 0;
		ts->check_return = 1;
		ts->lost = 1;
		break;
	default:
		break;
	}
}

static void on_source_end(struct run_ctx *ctx, struct source_slot *s)
{
	struct timeline *t = ctx->user;
	struct tl_source *ts = t->src[s->id % TL_SOURCES];
	if (ts)
		close_all(t, s, ts);
}

static int insn_mode(struct run_ctx *ctx, const struct csd_trace_config *cfg)
{
	(void)ctx;
	(void)cfg;
	return 0; /* calls and returns are at range boundaries */
}

int csd_cmd_timeline(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	struct timeline *t = calloc(1, sizeof(*t));
	struct tl_opts to = { t, NULL };
	if (!t)
		die_io("out of memory");
	t->from = t->to = -1;
	t->max_events = 1000000;
	cli_parse_options(argc, argv, &o, CLI_DECODE, usage_timeline, timeline_option, &to);
	if (!to.out_path)
		die_usage("timeline: -o FILE.json is needed");
	struct symtab *st = cli_load_symbols(&o);
	t->st = st;
	t->dynamic = !st || symtab_num_funcs(st) == 0;
	FILE *f = strcmp(to.out_path, "-") == 0 ? stdout : fopen(to.out_path, "w");
	if (!f) {
		fprintf(stderr, "%s: %s: cannot write: %s\n", prog, to.out_path, strerror(errno));
		symtab_free(st);
		free(t);
		return EXIT_USAGE;
	}
	t->out = f;
	fputs("{\"traceEvents\":[\n", f);
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stderr;
	ctx.on_record = on_record;
	ctx.on_source_end = on_source_end;
	ctx.insn_mode = insn_mode;
	ctx.user = t;
	int status = cli_run(&o, &ctx, SLOT_FLOW);
	if (status != EXIT_USAGE) {
		/* sources whose end the pipeline did not report */
		for (size_t i = 0; i < TL_SOURCES; i++)
			if (t->src[i] && t->src[i]->depth) {
				struct source_slot dummy;
				memset(&dummy, 0, sizeof(dummy));
				dummy.id = (uint8_t)i;
				close_all(t, &dummy, t->src[i]);
			}
		fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":", f);
		char gen[64];
		snprintf(gen, sizeof(gen), "csdec %s", csd_version());
		json_string(f, gen);
		fputs(",\"clock\":\"", f);
		int first = 1;
		for (int c = CLOCK_INSN; c <= CLOCK_TIMESTAMPS; c++)
			if (t->clocks_used >> c & 1) {
				fprintf(f, "%s%s", first ? "" : ",", clock_names[c]);
				first = 0;
			}
		fputs("\",\"time_unit\":", f);
		json_string(f, "ts is the clock's count: timestamp ticks (interpolated by cycles or instructions), cycles, "
			       "or instructions, one per microsecond of the viewer");
		fprintf(f, ",\"spans\":%" PRIu64 ",\"instants\":%" PRIu64 ",\"calls_beyond_depth\":%" PRIu64, t->spans,
			t->instants, t->deep_calls);
		if (t->cut) {
			fputs(",\"cut\":", f);
			json_string(f, t->cut_note);
		}
		fputs("}}\n", f);
		if (t->cut)
			fprintf(stderr, "%s: timeline: %s\n", prog, t->cut_note);
	}
	if (cli_end_output(f, to.out_path) < 0)
		status = EXIT_USAGE;
	for (size_t i = 0; i < TL_SOURCES; i++)
		free(t->src[i]);
	free(t);
	symtab_free(st);
	return status;
}
