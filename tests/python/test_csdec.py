"""Tests of the csdec Python package (run by tests/test_python.c under
/usr/bin/python3 with PYTHONPATH=python). Each check compares with what the
csdec tool (CSD_TOOL) prints for the same trace."""
import json
import os
import subprocess
import sys

import csdec

TOOL = os.environ["CSD_TOOL"]
TC2 = os.path.join(os.environ["CSD_SHARED"], "traces", "TC2")
SAMPLE = "examples/sample"
failed = 0
checks = 0


def check(cond, what):
    global failed, checks
    checks += 1
    if not cond:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def tool(*args):
    return subprocess.run([TOOL] + list(args), check=False, capture_output=True, text=True).stdout


def jsonl_by_source(text):
    per = {}
    for line in text.splitlines():
        o = json.loads(line)
        per.setdefault(o["id"], []).append(o)
    return per


def by_source(records):
    per = {}
    for r in records:
        per.setdefault(r.id, []).append(r.as_dict())
    return per


def same_records(label, trace, cli_args):
    got = by_source(trace.records())
    want = jsonl_by_source(tool(*cli_args))
    n = sum(len(v) for v in want.values())
    check(n > 0, label + ": the tool printed records")
    check(sorted(got) == sorted(want), label + ": the same sources")
    differ = 0
    for sid in want:
        a, b = got.get(sid, []), want[sid]
        if a != b:
            differ += 1
            k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            print("%s source 0x%02x: record %d: %r / tool %r (%d / %d records)"
                  % (label, sid, k, a[k] if k < len(a) else None, b[k] if k < len(b) else None, len(a), len(b)),
                  file=sys.stderr)
    check(differ == 0, label + ": every source's records equal the tool's JSON Lines")
    return n


def count_of(summary):
    return int(summary.split()[0])


# TC2 snapshot: records equal `decode --format jsonl`, field for field
t = csdec.open(TC2)
n = same_records("TC2", t, ["decode", TC2, "--format", "jsonl", "--order", "capture"])
insns = t.instructions()
want = count_of(tool("decode", TC2, "--format", "none"))
ranges = sum(r.count for r in t.records() if r.type == "range")
print("python TC2: %d records, %d instructions (tool %d)" % (n, len(insns), want))
check(len(insns) == want == ranges, "TC2 instruction count equals the tool's")
try:
    import numpy
    check(isinstance(insns, numpy.ndarray) and insns.dtype == numpy.uint64, "instructions() is a NumPy array")
except ImportError:
    check(isinstance(insns, list) and all(isinstance(a, int) for a in insns[:100]), "instructions() is a list")
check(len(t.sources) == 5 and t.sources[0][2] == "etm3", "TC2 sources")

# A raw formatted capture with its registers and the program's ELF
raw = csdec.open(os.path.join(SAMPLE, "trace.bin"), protocol="ptm", formatted=True, trace_id=0x10,
                 etmcr=0x10001000, etmccer=0x34C01AC2, elf=os.path.join(SAMPLE, "demo.elf"))
same_records("sample raw", raw, ["decode", "--trace", os.path.join(SAMPLE, "trace.bin"), "--protocol", "ptm", "--formatted",
                                 "--trace-id", "0x10", "--reg", "ETMCR=0x10001000", "--reg", "ETMCCER=0x34C01AC2",
                                 "--elf", os.path.join(SAMPLE, "demo.elf"), "--format", "jsonl"])
exc = [r for r in raw.records() if r.type == "exception"]
check(len(exc) >= 1 and all(e.name == "SVC" and e["return"].startswith("0x") for e in exc), "exception fields")

# the sample snapshot with only the ETMv3 source
snap = csdec.open(SAMPLE)
same_records("sample", snap, ["decode", SAMPLE, "--format", "jsonl", "--order", "capture"])

# errors: one class, with the C code
for args, kw in (((os.path.join(TC2, "no-such-dir"),), {}), ((os.path.join(SAMPLE, "trace.bin"),), {}),
                 ((os.path.join(SAMPLE, "trace.bin"),), {"protocol": "pft"})):
    try:
        csdec.open(*args, **kw)
        check(False, "open %r %r raises" % (args, kw))
    except csdec.CsdecError as e:
        check(isinstance(e.code, int) and e.code < 0 and e.message, "CsdecError carries a code and message")
try:
    list(csdec.open(os.path.join(SAMPLE, "trace.bin"), protocol="ptm", elf="/no/such.elf").records())
    check(False, "a missing ELF raises")
except csdec.CsdecError as e:
    check(e.code < 0 and "such.elf" in e.message, "a missing ELF raises CsdecError naming it")

print("test_csdec.py: %d of %d checks failed" % (failed, checks) if failed else "test_csdec.py: %d checks passed" % checks)
sys.exit(1 if failed else 0)
