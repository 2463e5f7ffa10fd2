#!/usr/bin/python3
"""Summarise a trace with the csdec Python package: instructions, exceptions
and the five most executed addresses (of all sources together).

    PYTHONPATH=python python3 examples/trace_summary.py SNAPSHOT-DIR|PERF.DATA [ELF]
"""
import collections
import sys

import csdec


def main(path, elf=None):
    trace = csdec.open(path, elf=elf)
    per_source = collections.Counter()
    exceptions = collections.Counter()
    for r in trace.records():
        if r.type == "range":
            per_source[r.id] += r.count
        elif r.type == "exception":
            exceptions[r.name] += 1
    for sid, n in sorted(per_source.items()):
        print("source 0x%02x: %d instructions" % (sid, n))
    for name, n in exceptions.most_common():
        print("exception %s: %d" % (name, n))
    hot = collections.Counter(int(a) for a in trace.instructions())
    for addr, n in hot.most_common(5):
        print("0x%08x executed %d times" % (addr, n))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        main(*sys.argv[1:3])
    except csdec.CsdecError as e:
        sys.exit("trace_summary: %s" % e)
