"""Structural check of a `csdec timeline` file (run by tests/test_timeline.c).

Usage: timeline_check.py FILE.json

Loads the file as JSON and checks, per track (pid, tid): every span ("X")
has a positive duration and lies inside the span it starts in (spans
properly nested, exactly: in whole nanoseconds of the viewer, as times in
thousandths of a unit that viewers nest by); spans end, and instant events ("i") happen, in
non-decreasing time in the order of the file. Prints "error: ..." lines
for what is wrong, then one line per function name with the time spent in
its spans outside the spans nested in them ("self NAME VALUE"), one line
"clock VALUE", "depth N" (the most spans nested in one another on a
track) and a summary line "spans N instants N tracks N".
"""
import json
import sys
from collections import defaultdict


def main(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    errors = []
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks = defaultdict(list)
    last_end = {}
    last_instant = {}
    instants = 0
    for i, ev in enumerate(events):
        ph = ev.get("ph")
        if ph not in ("X", "i", "M"):
            errors.append("event %d: phase %r" % (i, ph))
            continue
        if ph == "M":
            continue
        key = (ev["pid"], ev["tid"])
        if not isinstance(ev.get("name"), str) or not isinstance(ev.get("ts"), (int, float)):
            errors.append("event %d: no name or ts" % i)
            continue
        if ph == "i":
            instants += 1
            if ev["ts"] < last_instant.get(key, ev["ts"]):
                errors.append("event %d: instant at %r before the previous one" % (i, ev["ts"]))
            last_instant[key] = ev["ts"]
            continue
        dur = ev.get("dur")
        if not isinstance(dur, (int, float)) or dur <= 0:
            errors.append("event %d: duration %r" % (i, dur))
            continue
        # In whole thousandths (the viewer's nanoseconds): start, and end
        # as start plus duration, each as written.
        ts_q, dur_q = round(ev["ts"] * 1000), round(dur * 1000)
        if dur_q <= 0:
            errors.append("event %d: duration %r under a nanosecond" % (i, dur))
            continue
        end_q = ts_q + dur_q
        if end_q < last_end.get(key, end_q):
            errors.append("event %d: ends at %r before the previous span's end" % (i, end_q / 1000))
        last_end[key] = max(end_q, last_end.get(key, end_q))
        tracks[key].append((ts_q, -dur_q, ev["name"]))
    self_time = defaultdict(float)
    spans = 0
    depth = 0
    for key, spans_of in tracks.items():
        spans_of.sort()
        stack = []  # [end, name, child time]
        for ts, negdur, name in spans_of:
            dur = -negdur
            end = ts + dur
            while stack and stack[-1][0] <= ts:
                e, n, child = stack.pop()
                if stack:
                    stack[-1][2] += 0  # children were added at push
            if stack and end > stack[-1][0]:
                errors.append("track %r: span %s [%r, %r] overlaps %s ending at %r"
                              % (key, name, ts / 1000, end / 1000, stack[-1][1], stack[-1][0] / 1000))
            if stack:
                self_time[stack[-1][1]] -= dur
            self_time[name] += dur
            stack.append([end, name, 0.0])
            depth = max(depth, len(stack))
            spans += 1
    for e in errors[:20]:
        print("error:", e)
    for name in sorted(self_time):
        v = self_time[name] / 1000
        print("self %s %s" % (name, ("%d" % round(v)) if abs(v - round(v)) < 1e-6 else repr(v)))
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    print("clock %s" % other.get("clock", "?"))
    print("depth %d" % depth)
    print("spans %d instants %d tracks %d errors %d" % (spans, instants, len(tracks), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
