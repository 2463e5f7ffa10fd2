"""perf.data input: the decoding pipeline of tools/perf_input.c over the
library's perf.data reader (csd_perf_*), rule for rule, so that a Trace of a
perf.data file gives the records `csdec decode FILE --format jsonl --order
capture` prints. What the rules are, and why, is in docs/DESIGN.md
("perf.data input"); the comments here name the C function each part
follows. Change both together: tests/python/test_csdec.py compares them.
"""
import ctypes
import os

from . import _lib as L
from ._lib import CsdecError

CHUNK = 1 << 20
MAX_QUEUES = 64
MAX_IDS = 128
MAX_PROCESSES = 4096
MAX_THREADS = 1 << 20
MAX_FILES = 4096
MAX_WARNINGS = 8
PROT_EXEC = 4

# enum csd_perf_event_type, csd_perf_event_flag, csd_perf_unit, csd_perf_id_source
EV_AUX_DATA, EV_AUX, EV_MMAP, EV_COMM, EV_ITRACE_START, EV_SWITCH, EV_HW_ID, EV_FORK, EV_EXIT, EV_LOST = range(1, 11)
EVF_CONTINUES, EVF_RAW, EVF_OUT, EVF_EXEC, EVF_BUILD_ID = 1 << 1, 1 << 3, 1 << 4, 1 << 6, 1 << 7
UNIT_ETM3, UNIT_PTM = 1, 2
ID_NONE = 0
AUX_LOST_FLAGS = ((0x01, "truncated"), (0x04, "partial"), (0x08, "collision"))
UNIT_NAMES = ("?", "an ETMv3", "a PTM", "an ETMv4", "an ETE", "an unknown ETMv3-format unit")
REC_CONTEXT, RECF_CONTEXT_ID = 6, 128
FRAME_BY_ID = 1

PERF_MAGICS = (b"PERFILE2", b"2ELIFREP", b"PERFFILE")


def is_perf_data(path):
    """A regular file starting with a perf magic (cli_is_perf_data)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(8) in PERF_MAGICS
    except OSError:
        return False


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def elf_build_id(path):
    """The GNU build ID of an ELF file (bytes, or b"" when it has none, is no
    ELF file or cannot be read): csd_elf_build_id."""
    buf = (ctypes.c_uint8 * 20)()
    n = L.elf_build_id(os.fsencode(path), buf)
    return bytes(buf[:n]) if n > 0 else b""


class _Slot:
    """One decoder of a queue: a trace ID's (cli.h struct source_slot)."""
    __slots__ = ("dec", "cfg", "id", "cpu", "pid", "tid", "perf")


class _Queue:
    """An AUX queue: a CPU (cpu >= 0) or, per thread, a thread."""

    def __init__(self):
        self.used = False
        self.last_use = 0
        self.cpu = self.tid = -1
        self.active = False
        self.raw = False
        self.next = 0
        self.fd = None
        self.img = None
        self.pid = self.ptid = -1
        self.raw_cpu = -1
        self.slots = {}  # trace ID -> _Slot with a live decoder


class PerfRun:
    """One decode of a perf.data file (cli_run_perf): a generator of
    ("record", C record, slot) and ("fields", dict) items."""

    def __init__(self, trace, flags, by_id):
        self.t = trace
        self.flags = flags
        self.by_id_frames = by_id
        self.warnings = trace.warnings

    def warn(self, msg):
        self.warnings.append(msg)

    # -------------------------------------------------------------- setup

    def setup_cpus(self):
        pd = self.pd
        self.ncpus = L.perf_num_cpus(pd)
        self.cpus = [L.perf_cpu(pd, i).contents for i in range(self.ncpus)]
        self.cpu_state = [[-1, -1, 0, 0] for _ in range(self.ncpus)]  # pid, tid, switches, at piece
        self.by_id = {}
        self.warned_id = set()
        for c in self.cpus:
            if c.unit not in (UNIT_ETM3, UNIT_PTM):
                self.warned_id.add(c.traceidr & 0x7F)
                self.warn("%s: CPU %d is traced by %s, which csdec does not decode; its trace is skipped"
                          % (self.t.path, c.cpu, UNIT_NAMES[c.unit] if c.unit < 6 else "an unknown unit"))
                continue
            tid = c.config.trace_id
            if c.id_from == ID_NONE:
                self.warn("%s: CPU %d has trace ID 0x%02x (IDs are 0x01-0x6f); its trace is skipped"
                          % (self.t.path, c.cpu, tid))
                continue
            if tid in self.by_id:
                self.warn("%s: CPU %d has the trace ID 0x%02x of CPU %d; its trace is skipped"
                          % (self.t.path, c.cpu, tid, self.by_id[tid].cpu))
                continue
            self.by_id[tid] = c

    # ---------------------------------------------------- threads, processes

    def tid_set(self, pid, tid):
        if pid < 0 or tid < 0:
            return
        # the tool's table stops taking threads (new or known) at half of
        # its largest size
        if len(self.tids) * 2 >= MAX_THREADS:
            return
        self.tids[tid] = pid

    def tid_pid(self, tid):
        return self.tids.get(tid, -1) if tid >= 0 else -1

    def pid_known(self, pid):
        return pid > 0 and self.tid_pid(pid) == pid

    def context_id(self, s, cid):
        """perf_context_id: a context ID names the process of a CPU queue."""
        if s.perf != 2:
            return
        pid = -1
        if cid <= 0x7FFFFFFF and self.pid_known(cid):
            pid = cid
        elif self.pid_known(cid >> 8):
            pid = cid >> 8
        if pid < 0:
            s.pid = s.tid = -1
            return
        if pid != s.pid:
            s.tid = -1
        s.pid = pid

    # ---------------------------------------------------------------- images

    def image_new(self):
        img = L.image_new()
        if not img:
            raise CsdecError(L.ENOMEM, "out of memory")
        self.images.append(img)
        t = self.t
        if t.vmlinux is not None:
            rc = L.image_add_elf(img, os.fsencode(t.vmlinux), 0)
            if rc < 0:
                raise CsdecError(rc, "vmlinux %s" % (_s(L.image_error(img)),))
        t._add_extra(img)
        return img

    def process_image(self, pid, create):
        img = self.procs.get(pid)
        if img is not None:
            return img
        if not create or len(self.procs) == MAX_PROCESSES:
            return None
        img = self.procs[pid] = self.image_new()
        return img

    def image_for(self, pid):
        img = self.process_image(pid, False) if pid > 0 else None
        return img if img is not None else self.all

    def process_exec(self, pid):
        # the old image lives on in self.images: a decoder may still read it
        if pid in self.procs:
            self.procs[pid] = self.image_new()

    def table_build_id(self, name, pid):
        buf = (ctypes.c_uint8 * 20)()
        n = L.perf_file_build_id(self.pd, name, pid, buf)
        return bytes(buf[:n]) if n > 0 else b""

    def find_file(self, name, bid):
        """csd_perf_find_file: the build-ID cache, then symfs + the recorded
        path; warned about when the file there has another build ID."""
        t = self.t
        path = ctypes.create_string_buffer(8192)
        other = (ctypes.c_uint8 * 20)()
        other_n = ctypes.c_size_t(0)
        idbuf = (ctypes.c_uint8 * 20)(*bid)
        rc = L.perf_find_file(name, idbuf, len(bid), os.fsencode(t.symfs) if t.symfs is not None else None,
                              os.fsencode(t.buildid_dir) if t.buildid_dir is not None else None, path, 8192,
                              other, ctypes.byref(other_n))
        if rc == L.ENOENT and other_n.value:
            self.warn("%s: build ID %s, the recording's %s is %s: not used"
                      % (os.fsdecode(path.value), bytes(other[:other_n.value]).hex(), os.fsdecode(name), bid.hex()))
        return os.fsdecode(path.value) if rc == 0 else None

    def file_lookup(self, name, bid):
        key = (name, bid)
        if key in self.files:
            return self.files[key]
        path = self.find_file(name, bid)
        if len(self.files) == MAX_FILES:
            return path  # a full table: found again next time, not warned about
        self.files[key] = path
        if path is None:
            if self.missing_warnings < MAX_WARNINGS:
                t = self.t
                self.warn("%s: mapped file %s not found (%s%s%s%s); its code is not in the image"
                          % (t.path, os.fsdecode(name), "build ID " if bid else "", bid.hex(), ", " if bid else "",
                             "--symfs" if t.symfs else "no --symfs"))
                self.missing_warnings += 1
            else:
                self.missing_more += 1
        return path

    def add_mapping(self, img, path, ev):
        try:
            size = os.stat(path).st_size
        except OSError:
            return
        if size <= ev.pgoff:
            return
        n = min(size - ev.pgoff, ev.len)
        if n and L.image_add_file(img, os.fsencode(path), ev.pgoff, n, ev.addr) < 0 \
                and self.missing_warnings < MAX_WARNINGS:
            self.warn("%s: mapping of %s at 0x%x not used: %s" % (self.t.path, path, ev.addr, _s(L.image_error(img))))
            self.missing_warnings += 1

    def on_mmap(self, ev):
        self.tid_set(ev.pid, ev.tid)
        name = ev.filename
        if not name.startswith(b"/") or ev.len == 0:
            return
        if ev.record == 10 and ev.prot and not ev.prot & PROT_EXEC:
            return
        if ev.flags & EVF_BUILD_ID:
            bid = bytes(ev.build_id[:ev.build_id_size])
        else:
            bid = self.table_build_id(name, ev.pid)
        path = self.file_lookup(name, bid)
        if path is None:
            return
        own = self.process_image(ev.pid, True) if ev.pid > 0 else None
        if own is not None:
            self.add_mapping(own, path, ev)
        self.add_mapping(self.all, path, ev)

    # ------------------------------------------------------ queues, decoders

    def queue_get(self, cpu, tid):
        """queue_get: (queue, evicted queue to end first or None)."""
        free_q = old = None
        for q in self.queues:
            if q.used and q.cpu == cpu and q.tid == tid:
                self.use_clock += 1
                q.last_use = self.use_clock
                return q, False
            if not q.used and free_q is None:
                free_q = q
            if q.used and (old is None or q.last_use < old.last_use):
                old = q
        return (free_q, False) if free_q is not None else (old, True)

    def drain_slot(self, s):
        """cli_drain_slot / cli_deliver_record."""
        recs = self.recs
        while True:
            n = L.flow_next_batch(s.dec, ctypes.byref(recs))
            if n == L.EAGAIN or n == L.EEOS:
                return
            L.check(n, "flow decode")
            for i in range(n):
                r = recs[i]
                if r.type == REC_CONTEXT and r.flags & RECF_CONTEXT_ID:
                    self.context_id(s, r.context_id)
                yield ("record", r, s)

    def frame_error(self, fo):
        kind = "frame_truncated" if fo.event == L.FRAME_TRUNCATED else "frame_error"
        return ("fields", {"type": kind, "packet": kind, "offset": fo.offset,
                           "reason": _s(fo.reason) if fo.reason else "bad frame"})

    def queue_end(self, q):
        if q.fd:
            L.frame_finish(q.fd)
            fo = L.FrameOut()
            while L.frame_next(q.fd, ctypes.byref(fo)) == 0:
                if fo.event in (L.FRAME_ERROR, L.FRAME_TRUNCATED):
                    yield self.frame_error(fo)
            L.frame_free(q.fd)
            q.fd = None
        for s in q.slots.values():
            L.flow_finish(s.dec)
            yield from self.drain_slot(s)
        for s in q.slots.values():
            L.flow_free(s.dec)
        q.slots = {}
        q.active = False

    def queue_slot(self, q, tid, c):
        s = q.slots.get(tid)
        if s is not None:
            return s
        if c is None or (self.t.ids is not None and tid not in self.t.ids):
            return None
        fc = L.FlowConfig(size=ctypes.sizeof(L.FlowConfig), trace=ctypes.pointer(c.config), image=q.img,
                          flags=self.flags)
        dec = L.flow_new(ctypes.byref(fc))
        if not dec:
            raise CsdecError(L.EINVAL, "%s: cannot create a decoder for CPU %d (protocol and ETMIDR 0x%08x disagree?)"
                             % (self.t.path, c.cpu, c.config.etmidr))
        s = _Slot()
        s.dec, s.id, s.cpu = dec, tid, c.cpu
        s.cfg = L.TraceConfig()
        ctypes.pointer(s.cfg)[0] = c.config
        s.perf = 1 if q.cpu == -1 else 2
        s.pid, s.tid = q.pid, q.ptid
        q.slots[tid] = s
        return s

    def feed_slot(self, s, b):
        if L.flow_feed(s.dec, ctypes.byref(b)) == 0:
            yield from self.drain_slot(s)

    def drain_frames(self, q):
        fo = self.fo
        while L.frame_next(q.fd, ctypes.byref(fo)) == 0:
            if fo.event in (L.FRAME_ERROR, L.FRAME_TRUNCATED):
                yield self.frame_error(fo)
                continue
            if fo.event != L.FRAME_DATA or fo.bytes.id >= MAX_IDS:
                continue
            tid = fo.bytes.id
            c = self.by_id.get(tid)
            if c is None and tid not in self.warned_id:
                self.warned_id.add(tid)
                self.warn("%s: trace ID 0x%02x is no decodable CPU's; its trace is skipped" % (self.t.path, tid))
            s = self.queue_slot(q, tid, c)
            if s is not None:
                yield from self.feed_slot(s, fo.bytes)

    def cpu_index(self, cpu):
        for i, c in enumerate(self.cpus):
            if c.cpu == cpu:
                return i
        return -1

    @staticmethod
    def decodable(c):
        return c.unit in (UNIT_ETM3, UNIT_PTM) and c.id_from != ID_NONE

    def raw_cpu(self, ev):
        ci = self.cpu_index(ev.cpu) if ev.cpu >= 0 else -1
        if ci >= 0:
            return ci
        dec = [i for i, c in enumerate(self.cpus) if self.decodable(c)]
        only = dec[0] if dec else -1
        if len(dec) > 1 and not self.warned_raw_cpu:
            self.warned_raw_cpu = True
            self.warn("%s: unformatted trace of a thread traced on %d CPUs: taken as CPU %d's"
                      % (self.t.path, len(dec), self.cpus[only].cpu))
        return only

    def piece_context(self, ev):
        if ev.cpu == -1:
            return (ev.pid if ev.pid >= 0 else self.tid_pid(ev.tid)), ev.tid
        ci = self.cpu_index(ev.cpu)
        if ci < 0:
            return -1, -1
        st = self.cpu_state[ci]
        pid = tid = -1
        if st[2] == st[3]:
            pid, tid = st[0], st[1]
        st[3] = st[2]
        return pid, tid

    def run_piece(self, ev):
        raw = bool(ev.flags & EVF_RAW)
        q, evict = self.queue_get(ev.cpu, ev.tid if ev.cpu == -1 else -1)
        if evict:
            yield from self.queue_end(q)  # evicted: its next piece starts afresh
        if not q.used or evict:
            q.used = True
            q.cpu = ev.cpu
            q.tid = ev.tid if ev.cpu == -1 else -1
            self.use_clock += 1
            q.last_use = self.use_clock
        cont = ev.flags & EVF_CONTINUES and q.active and q.raw == raw and q.next == ev.aux_offset
        if not cont:
            yield from self.queue_end(q)
            q.raw = raw
            q.pid, q.ptid = self.piece_context(ev)
            q.img = self.image_for(q.pid)
            if raw:
                q.raw_cpu = self.raw_cpu(ev)
            else:
                fcfg = L.FrameConfig(size=ctypes.sizeof(L.FrameConfig), format=L.FRAME_ALIGNED,
                                     flags=FRAME_BY_ID if self.by_id_frames else 0)
                q.fd = L.frame_new(ctypes.byref(fcfg))
                if not q.fd:
                    raise CsdecError(L.ENOMEM, "out of memory")
            q.active = True
        q.next = ev.aux_offset + ev.data_size
        rs = None
        if raw and q.raw_cpu >= 0:
            c = self.cpus[q.raw_cpu]
            if self.decodable(c):
                rs = self.queue_slot(q, c.config.trace_id, c)
        if raw and rs is None:
            return
        done = 0
        while done < ev.data_size:
            n = min(ev.data_size - done, CHUNK)
            off = ev.data_offset + done
            if L.perf_read(self.pd, off, self.buf, n) < 0:
                self.io_error = (L.EIO, _s(L.perf_error(self.pd)))
                return
            if rs is not None:
                b = L.Bytes(data=ctypes.cast(self.buf, ctypes.POINTER(L.c_u8)), size=n, base=off, id=rs.id)
                yield from self.feed_slot(rs, b)
            else:
                L.frame_feed(q.fd, self.buf, n, off)
                yield from self.drain_frames(q)
            done += n

    # -------------------------------------------------------------- sideband

    def set_cpu_task(self, cpu, pid, tid, switched):
        ci = self.cpu_index(cpu) if cpu >= 0 else -1
        if ci < 0:
            return
        st = self.cpu_state[ci]
        st[0], st[1] = pid, tid
        st[2] = (st[2] + switched) & 0xFFFFFFFF

    def on_aux(self, ev):
        flags = [name for bit, name in AUX_LOST_FLAGS if ev.aux_flags & bit]
        if not flags:
            return None
        f = {"type": "aux_lost"}
        for k in ("cpu", "pid", "tid"):
            if getattr(ev, k) >= 0:
                f[k] = getattr(ev, k)
        f.update(offset=ev.offset, aux_offset=ev.aux_offset, aux_size=ev.aux_size, flags=flags)
        return ("fields", f)

    def on_event(self, ev):
        t = ev.type
        if t == EV_AUX_DATA:
            yield from self.run_piece(ev)
        elif t == EV_AUX:
            item = self.on_aux(ev)
            if item is not None:
                yield item
        elif t == EV_MMAP:
            self.on_mmap(ev)
        elif t == EV_COMM:
            self.tid_set(ev.pid, ev.tid)
            if ev.flags & EVF_EXEC and ev.pid > 0:
                self.process_exec(ev.pid)
        elif t == EV_FORK:
            self.tid_set(ev.pid, ev.tid)
        elif t == EV_ITRACE_START:
            self.tid_set(ev.pid, ev.tid)
            self.set_cpu_task(ev.cpu, ev.pid, ev.tid, 0)
        elif t == EV_SWITCH:
            if ev.record == 15:
                # CPU-wide: out names the next task, in this one
                if ev.flags & EVF_OUT:
                    self.tid_set(ev.next_prev_pid, ev.next_prev_tid)
                    self.set_cpu_task(ev.cpu, ev.next_prev_pid, ev.next_prev_tid, 1)
                else:
                    self.tid_set(ev.pid, ev.tid)
                    self.set_cpu_task(ev.cpu, ev.pid, ev.tid, 1)
            elif ev.flags & EVF_OUT:
                self.set_cpu_task(ev.cpu, -1, -1, 1)
            else:
                self.tid_set(ev.pid, ev.tid)
                self.set_cpu_task(ev.cpu, ev.pid, ev.tid, 1)
        elif t == EV_LOST:
            self.lost_records += ev.lost

    # ------------------------------------------------------------------ run

    def run(self):
        t = self.t
        del self.warnings[:]
        pd = ctypes.c_void_p()
        err = ctypes.create_string_buffer(600)
        rc = L.perf_open(os.fsencode(t.path), ctypes.byref(pd), err, len(err))
        if rc < 0:
            raise CsdecError(rc, err.value.decode("utf-8", "replace") or _s(L.errstr(rc)))
        self.pd = pd
        self.images, self.procs, self.files, self.tids = [], {}, {}, {}
        self.queues = [_Queue() for _ in range(MAX_QUEUES)]
        self.use_clock = 0
        self.missing_warnings = self.missing_more = self.lost_records = 0
        self.warned_raw_cpu = False
        self.io_error = None
        self.buf = ctypes.create_string_buffer(CHUNK)
        self.fo = L.FrameOut()
        self.recs = ctypes.POINTER(L.CRecord)()
        try:
            self.setup_cpus()
            if not any(tid in self.by_id for tid in (t.ids if t.ids is not None else self.by_id)):
                raise CsdecError(L.ENOENT, "%s: no ETMv3 or PTM trace source%s" % (
                    t.path, " with the requested ID" if t.ids is not None else " that could be decoded"))
            self.all = self.image_new()
            ev = L.PerfEvent(size=ctypes.sizeof(L.PerfEvent))
            while self.io_error is None:
                walk = L.perf_next(pd, ctypes.byref(ev))
                if walk != 0:
                    break
                yield from self.on_event(ev)
            for q in self.queues:
                if q.used:
                    yield from self.queue_end(q)
            if self.missing_more:
                self.warn("%s: %d more mapped files not found" % (t.path, self.missing_more))
            if self.lost_records:
                self.warn("%s: perf lost %d records while recording (mappings may be missing)"
                          % (t.path, self.lost_records))
            if self.io_error is not None:
                raise CsdecError(*self.io_error)
            if walk < 0 and walk != L.EEOS:
                raise CsdecError(walk, _s(L.perf_error(pd)))
        finally:
            for q in self.queues:
                for s in q.slots.values():
                    L.flow_free(s.dec)
                q.slots = {}
                if q.fd:
                    L.frame_free(q.fd)
                    q.fd = None
            for img in self.images:
                L.image_free(img)
            L.perf_free(pd)
