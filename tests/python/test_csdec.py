"""Tests of the csdec Python package (run by tests/test_python.c under
/usr/bin/python3 with PYTHONPATH=python). Each check compares with what the
csdec tool (CSD_TOOL) prints for the same trace."""
import builtins
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import csdec
from csdec import _perf

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
    numpy = None
    check(isinstance(insns, list) and all(isinstance(a, int) for a in insns[:100]), "instructions() is a list")


def insn_addrs(*args):
    """The address of each record of `csdec decode ARGS --insn --format jsonl`."""
    return [int(json.loads(l)["addr"], 16) for l in tool("decode", *args, "--insn", "--format", "jsonl").splitlines()
            if '"type":"insn"' in l]


def without_numpy(f):
    """f() as it runs where NumPy is not installed."""
    saved = sys.modules.get("numpy")
    sys.modules["numpy"] = None     # (import numpy then raises ImportError)
    try:
        return f()
    finally:
        if saved is None:
            del sys.modules["numpy"]
        else:
            sys.modules["numpy"] = saved


# The addresses themselves: the tool's, per source in the capture's order,
# so here (sources in runs of theirs) the same addresses as often each.
import collections
check(collections.Counter(int(a) for a in insns) == collections.Counter(insn_addrs(TC2, "--order", "capture")),
      "TC2 instructions() are the tool's --insn addresses")
if numpy is not None:
    plain = without_numpy(t.instructions)
    check(isinstance(plain, list) and plain == [int(a) for a in insns], "instructions() without NumPy: the same list")
check(len(t.sources) == 5 and t.sources[0][2] == "etm3", "TC2 sources")

# A raw formatted capture with its registers and the program's ELF
raw = csdec.open(os.path.join(SAMPLE, "trace.bin"), protocol="ptm", formatted=True, trace_id=0x10,
                 etmcr=0x10001000, etmccer=0x34C01AC2, elf=os.path.join(SAMPLE, "demo.elf"))
same_records("sample raw", raw, ["decode", "--trace", os.path.join(SAMPLE, "trace.bin"), "--protocol", "ptm", "--formatted",
                                 "--trace-id", "0x10", "--reg", "ETMCR=0x10001000", "--reg", "ETMCCER=0x34C01AC2",
                                 "--elf", os.path.join(SAMPLE, "demo.elf"), "--format", "jsonl"])
exc = [r for r in raw.records() if r.type == "exception"]
check(len(exc) >= 1 and all(e.name == "SVC" and e["return"].startswith("0x") for e in exc), "exception fields")

# A Cortex-M TPIU capture (tests/roundtrip_m.mk) opened raw with core=:
# the records of its snapshot, whose core name says Cortex-M3 (the
# profile's exception names: SysTick, PendSV...).
m_dir = os.path.join(os.environ["CSD_GEN_M"], "cm3demo--etm3-ca-tpiu")
m_raw = csdec.open(os.path.join(m_dir, "trace.bin"), protocol="etm3", formatted="port", etmcr=0x1000,
                   core="cortex-m3", elf=os.path.join(os.environ["CSD_PROGRAMS_M"], "cm3demo.elf"))
same_records("Cortex-M capture with core=", m_raw, ["decode", m_dir, "--format", "jsonl"])
check("SysTick" in {r.name for r in m_raw.records() if r.type == "exception"}, "core='cortex-m3': Cortex-M names")
for bad in ({"core": "cortex-x"}, {"core": "cortex-m3", "protocol": "ptm"}):
    try:
        args = dict(protocol="etm3")
        args.update(bad)
        csdec.open(os.path.join(m_dir, "trace.bin"), **args)
        check(False, "%r refused" % (bad,))
    except csdec.CsdecError:
        check(True, "%r refused" % (bad,))

# ETMv3 data trace: a run of demo.elf's _start with the two stores of its
# push, written as an execution log and traced by `csdec gen`, with
# addresses and values and then data-only: data records with the tool's
# fields (no offset; insn, dir and size only where instructions are traced).
tmp_data = tempfile.mkdtemp()
with builtins.open(os.path.join(tmp_data, "run.log"), "w") as f:
    f.write("I 10124 T32\nW 7fff0ff8 4 00000007\nW 7fff0ffc 4 0001f001\n")
    for a in ("10126", "1012a", "1012e", "10132", "10136", "10138", "1013a", "1013c", "10142", "10144"):
        f.write("I %s T32\n" % a)
for extra in ([], ["--data-only"]):
    d = os.path.join(tmp_data, "snap%d" % len(extra))
    subprocess.run([TOOL, "gen", "--exec-log", os.path.join(tmp_data, "run.log"), "--elf",
                    os.path.join(SAMPLE, "demo.elf"), "--protocol", "etm3", "--data-trace", "both", "-o", d] + extra,
                   check=True, capture_output=True)
    same_records("data trace" + (" (data only)" if extra else ""), csdec.open(d),
                 ["decode", d, "--format", "jsonl", "--order", "capture"])
    data = [r for r in csdec.open(d).records() if r.type == "data"]
    check([r.value for r in data] == ["0x00000007", "0x0001f001"] and [r.addr for r in data] == ["0x7fff0ff8", "0x7fff0ffc"],
          "data records: addresses and values")
    check(all(("insn" in r) == (not extra) and "offset" not in r for r in data), "data records: their keys")
shutil.rmtree(tmp_data)

# Records are values: equal when their fields are, copied and pickled whole.
import copy
import pickle
first = next(iter(csdec.open(SAMPLE).records()))
check(copy.copy(first) == first and copy.deepcopy(first) == first, "Record copies")
check(pickle.loads(pickle.dumps(first)) == first and pickle.loads(pickle.dumps(first)).type == first.type,
      "Record pickles")

# The arguments: one (path, bias) pair for elf=, a single ID for ids=
# (on a raw capture, its trace ID), and mistakes refused by open() itself.
elf_pair = csdec.open(SAMPLE, elf=(os.path.join(SAMPLE, "demo.elf"), 0))
check(len(list(elf_pair.records())) > 0, "elf=(path, bias)")
check([s[1] for s in csdec.open(SAMPLE, ids=0x11).sources] == [0x11], "ids= a single ID")
raw_id = csdec.open(os.path.join(SAMPLE, "trace.bin"), protocol="ptm", formatted=True, ids=[0x10],
                    etmcr=0x10001000, etmccer=0x34C01AC2)
check(raw_id.sources[0][1] == 0x10 and len(list(raw_id.records())) > 10, "ids= on a raw capture: its trace ID")
raw = os.path.join(SAMPLE, "trace.bin")
for label, kw in (("trace_id out of range", dict(path=raw, protocol="ptm", trace_id=0x70)),
                  ("etmcr over 32 bits", dict(path=raw, protocol="ptm", etmcr=1 << 40)),
                  ("etmcr not a number", dict(path=raw, protocol="ptm", etmcr="0x1000")),
                  ("formatted unknown", dict(path=raw, protocol="ptm", formatted="tpiu")),
                  ("two IDs on a raw capture", dict(path=raw, protocol="ptm", ids=[0x10, 0x11])),
                  ("ids and trace_id differ", dict(path=raw, protocol="ptm", ids=[0x10], trace_id=0x11)),
                  ("image not a pair", dict(path=SAMPLE, image=[os.path.join(SAMPLE, "mem_0.bin")])),
                  ("missing elf", dict(path=SAMPLE, elf="/no/such.elf")),
                  ("a snapshot with protocol=", dict(path=SAMPLE, protocol="ptm")),
                  ("a snapshot's .ini file", dict(path=os.path.join(SAMPLE, "snapshot.ini"))),
                  ("registers for a snapshot", dict(path=SAMPLE, etmcr=0x1000)),
                  ("no source with the ID", dict(path=SAMPLE, ids=[0x40]))):
    path = kw.pop("path")
    try:
        csdec.open(path, **kw)
        check(False, label + ": refused")
    except csdec.CsdecError as e:
        check(str(e) != "", label + ": refused (%s)" % e)
try:
    csdec.open(SAMPLE, ids=[0x40])
except csdec.CsdecError as e:
    check(e.code == -7 and "with the requested ID" in str(e), "no source with the ID: ENOENT, as the tool says")

# close() and `with`: the trace is let go, and using it after says so.
with csdec.open(SAMPLE) as t_closed:
    check(len(list(t_closed.records())) > 0, "records in a with block")
try:
    list(t_closed.records())
    check(False, "records() after close() refused")
except csdec.CsdecError:
    check(True, "records() after close() refused")
check(csdec.open(SAMPLE).warnings == [], "a snapshot without skipped sources: no warnings")
# Two sources with one trace ID: the second skipped, with the tool's warning.
tmp_same = tempfile.mkdtemp()
same_dir = os.path.join(tmp_same, "s")
shutil.copytree(SAMPLE, same_dir)
ini = os.path.join(same_dir, "ETM_1.ini")
with builtins.open(ini) as f:
    text = f.read()
with builtins.open(ini, "w") as f:
    f.write(text.replace("ETMTRACEIDR(0x080)=0x00000011", "ETMTRACEIDR(0x080)=0x00000010"))
t_same = csdec.open(same_dir)
tool_err = subprocess.run([TOOL, "decode", same_dir, "--format", "none"], capture_output=True, text=True).stderr
check(len(t_same.sources) == 1 and len(t_same.warnings) == 1 and ("warning: " + t_same.warnings[0]) in tool_err,
      "a skipped source: the tool's warning (%r / %r)" % (t_same.warnings, tool_err))
shutil.rmtree(tmp_same)
check(isinstance(csdec.open(SAMPLE), csdec.Trace) and issubclass(csdec.PerfTrace, csdec.Trace), "Trace, PerfTrace")

# the sample snapshot with only the ETMv3 source
snap = csdec.open(SAMPLE)
same_records("sample", snap, ["decode", SAMPLE, "--format", "jsonl", "--order", "capture"])

# perf.data files written by `csdec gen --perf-data` from the recorded test
# programs (tests/programs.mk): records equal `decode FILE --format jsonl
# --order capture` record for record (with cpu, pid, tid), instructions the
# tool's count; also with the mapped file moved (symfs, buildid_dir,
# vmlinux, elf), with an AUX record flagged truncated (aux_lost) and with
# trace bytes corrupted.
PROGRAMS = os.environ.get("CSD_PROGRAMS", "")
tmp = tempfile.mkdtemp(prefix="csd_test_python_")


def perf_records(path):
    """(type, offset, header size) of each record of a perf.data file."""
    with builtins.open(path, "rb") as f:
        data = f.read()
    off, size = struct.unpack_from("<QQ", data, 40)
    end = off + size if size else len(data)
    out = []
    while off + 8 <= end:
        typ, _misc, sz = struct.unpack_from("<IHH", data, off)
        if sz < 8:
            break
        out.append((typ, off, sz))
        off += sz + (struct.unpack_from("<Q", data, off + 8)[0] if typ == 71 else 0)
    return data, out


def same_perf(label, path, **opts):
    args = []
    for k, v in opts.items():
        args += ["--" + k.replace("_", "-"), v]
    t = csdec.open(path, **opts)
    got = [r.as_dict() for r in t.records()]
    want = [json.loads(l) for l in tool("decode", path, "--format", "jsonl", "--order", "capture", *args).splitlines()]
    check(len(want) > 0, label + ": the tool printed records")
    if got != want:
        k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
        print("%s: record %d: %r / tool %r (%d / %d records)" % (label, k, got[k] if k < len(got) else None,
              want[k] if k < len(want) else None, len(got), len(want)), file=sys.stderr)
    check(got == want, label + ": records equal the tool's JSON Lines, in order")
    insns = t.instructions()
    n = len(insns)
    tn = count_of(tool("decode", path, "--format", "none", *args))
    check(n == tn, "%s: %d instructions, the tool %d" % (label, n, tn))
    # one source each: the tool's addresses in its order, with and without NumPy
    if len(t.sources) == 1:
        want_addrs = insn_addrs(path, "--order", "capture", *args)
        check([int(a) for a in insns] == want_addrs, label + ": instructions() are the tool's --insn addresses, in order")
        check(without_numpy(t.instructions) == want_addrs, label + ": the same without NumPy")
    print("python %s: %d records, %d instructions (tool %d), %d warnings" % (label, len(got), n, tn, len(t.warnings)))
    return t, got


def gen_perf(name, prog, elf, *args):
    out = os.path.join(tmp, name)
    r = subprocess.run([TOOL, "gen", "--qemu-log", os.path.join(PROGRAMS, prog + ".log"), "--elf", elf] + list(args)
                       + ["--perf-data", out], capture_output=True, text=True)
    check(r.returncode == 0, "gen %s: %s" % (name, r.stderr.strip()))
    return out


check(os.path.isdir(PROGRAMS), "CSD_PROGRAMS (%r) holds the test programs" % PROGRAMS)
if os.path.isdir(PROGRAMS):
    for name, prog, args in (
            ("ptm-v2", "recurse-thumb-O2", ["--protocol", "ptm", "--return-stack", "--timestamps"]),
            ("etm3-v1", "indirect-arm-O2", ["--protocol", "etm3", "--cycle-accurate", "--context-id-bytes", "1",
                                           "--perf-data-version", "1", "--perf-aux-size", "2048"]),
            ("ptm-etm3-v2", "interwork-thumb-O0", ["--protocol", "ptm", "--protocol", "etm3", "--timestamps"]),
            ("ptm-ptm-v1", "switch-arm-O2", ["--protocol", "ptm", "--protocol", "ptm", "--cycle-accurate",
                                            "--perf-data-version", "1"])):
        path = gen_perf(name + ".data", prog, os.path.join(PROGRAMS, prog), *args)
        t, recs = same_perf(name, path)
        check(len(t.sources) == args.count("--protocol"), name + ": one source per CPU")
        check(all(r["cpu"] == 0 and r["pid"] == r["tid"] == 200 for r in recs if r["id"] == 0x10)
              and len({r["cpu"] for r in recs}) == len(t.sources), name + ": cpu, pid and tid in the records")

    # the program's file moved away from its recorded path
    moved = os.path.join(tmp, "a", "prog")
    os.makedirs(os.path.dirname(moved))
    shutil.copy(os.path.join(PROGRAMS, "longjmp-thumb-O2"), moved)
    path = gen_perf("moved.data", "longjmp-thumb-O2", moved, "--protocol", "ptm", "--return-stack")
    symfs = os.path.join(tmp, "symfs")
    os.makedirs(symfs + os.path.dirname(moved))
    os.rename(moved, symfs + moved)
    t, recs = same_perf("moved", path)
    check(any("not found" in w for w in t.warnings) and any(r["type"] == "no_memory" for r in recs)
          and not any(r["type"] == "range" for r in recs), "moved: the file is missing, its code too")
    same_perf("moved symfs", path, symfs=symfs)
    same_perf("moved vmlinux", path, vmlinux=symfs + moved)
    same_perf("moved elf", path, elf=symfs + moved)
    bid = _perf.elf_build_id(symfs + moved).hex()
    check(len(bid) == 40, "the program has a build ID")
    cache = os.path.join(tmp, "cache")
    os.makedirs(os.path.join(cache, ".build-id", bid[:2]))
    shutil.copy(symfs + moved, os.path.join(cache, ".build-id", bid[:2], bid[2:]))
    t, recs = same_perf("moved buildid_dir", path, buildid_dir=cache)
    check(not t.warnings and any(r["type"] == "range" for r in recs), "buildid_dir: found in the cache")
    # under symfs another program (another build ID): refused, as the tool does
    other = os.path.join(tmp, "symfs-other")
    os.makedirs(other + os.path.dirname(moved))
    shutil.copy(os.path.join(PROGRAMS, "longjmp-arm-O0"), other + moved)
    t, recs = same_perf("moved wrong build ID", path, symfs=other)
    check(any("not used" in w for w in t.warnings) and not any(r["type"] == "range" for r in recs),
          "symfs: a file with another build ID is not used")

    # trace lost (an AUX record flagged truncated), and damaged trace bytes
    data, recs = perf_records(os.path.join(tmp, "etm3-v1.data"))
    data = bytearray(data)
    aux = [off for typ, off, _ in recs if typ == 11]
    check(len(aux) > 2, "etm3-v1 has several AUX records")
    struct.pack_into("<Q", data, aux[1] + 24, 0x01)
    lost = os.path.join(tmp, "lost.data")
    with builtins.open(lost, "wb") as f:
        f.write(data)
    t, got = same_perf("aux_lost", lost)
    check([r["flags"] for r in got if r["type"] == "aux_lost"] == [["truncated"]], "one aux_lost record")
    rng = random.Random(22)
    for name in ("ptm-etm3-v2.data", "etm3-v1.data"):
        data, recs = perf_records(os.path.join(tmp, name))
        data = bytearray(data)
        for typ, off, sz in recs:
            if typ == 71:
                n = struct.unpack_from("<Q", data, off + 8)[0]
                for _ in range(max(1, n // 200)):
                    data[off + sz + rng.randrange(n)] = rng.randrange(256)
        bad = os.path.join(tmp, "bad-" + name)
        with builtins.open(bad, "wb") as f:
            f.write(data)
        t, got = same_perf("damaged " + name, bad)
        check(any(r["type"] in ("error", "frame_error") for r in got), name + " damaged: errors reported")

    # errors: a perf.data file cut inside its header
    with builtins.open(os.path.join(tmp, "ptm-v2.data"), "rb") as f:
        head = f.read(60)
    cut = os.path.join(tmp, "cut.data")
    with builtins.open(cut, "wb") as f:
        f.write(head)
    try:
        csdec.open(cut)
        check(False, "a cut perf.data file raises")
    except csdec.CsdecError as e:
        check(e.code < 0 and "cut.data" in e.message, "a cut perf.data file raises CsdecError naming it")
    try:
        csdec.open(os.path.join(tmp, "ptm-v2.data"), ids=[0x33])
        check(False, "perf.data with ids of no source raises")
    except csdec.CsdecError as e:
        check(e.code < 0, "perf.data with ids of no source raises CsdecError")
shutil.rmtree(tmp, ignore_errors=True)

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
