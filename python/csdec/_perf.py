"""perf.data input: the library's perf.data session (csd_perf_session_*)
says which decoders to make, what each is fed, which image it reads and when
it ends, by the rules docs/DESIGN.md gives ("perf.data input"); here flow
decoders are made for it and their records yielded, as `csdec decode FILE
--format jsonl --order capture` prints them (tests/python/test_csdec.py
compares the two).
"""
import ctypes
import os

from . import _lib as L
from ._lib import CsdecError

# Ended decoders kept to be reset for a later piece of their key, at most.
IDLE_MAX = 16

# enum csd_perf_action_type, csd_perf_action_flag, csd_perf_session_flag
ACT_SETTLE, ACT_WARNING, ACT_SOURCE, ACT_DATA, ACT_FRAME_ERROR, ACT_END, ACT_CAPTURE_END, ACT_AUX_LOST = range(1, 9)
ACTF_PER_THREAD = 1 << 1
SESSION_IMAGES, SESSION_FRAMES_BY_ID = 1 << 0, 1 << 1
UNIT_ETM3, UNIT_PTM = 1, 2
ID_NONE = 0
AUX_LOST_FLAGS = ((0x01, "truncated"), (0x04, "partial"), (0x08, "collision"))
REC_CONTEXT, RECF_CONTEXT_ID = 6, 128

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


def decodable(c):
    """A traced CPU (struct csd_perf_cpu) whose trace csdec decodes."""
    return c.unit in (UNIT_ETM3, UNIT_PTM) and c.id_from != ID_NONE


def elf_build_id(path):
    """The GNU build ID of an ELF file (bytes, or b"" when it has none, is no
    ELF file or cannot be read): csd_elf_build_id."""
    buf = (ctypes.c_uint8 * 20)()
    n = L.elf_build_id(os.fsencode(path), buf)
    return bytes(buf[:n]) if n > 0 else b""


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class _Slot:
    """One decoder of the session: a trace ID's of an AUX queue."""
    __slots__ = ("dec", "cfg", "id", "cpu", "pid", "tid", "per_cpu", "image")


def _aux_lost(ev):
    f = {"type": "aux_lost"}
    for k in ("cpu", "pid", "tid"):
        if getattr(ev, k) >= 0:
            f[k] = getattr(ev, k)
    f.update(offset=ev.offset, aux_offset=ev.aux_offset, aux_size=ev.aux_size,
             flags=[name for bit, name in AUX_LOST_FLAGS if ev.aux_flags & bit])
    return ("fields", f)


def _frame_error(fo):
    kind = "frame_truncated" if fo.event == L.FRAME_TRUNCATED else "frame_error"
    return ("fields", {"type": kind, "packet": kind, "offset": fo.offset,
                       "reason": _s(fo.reason) if fo.reason else "bad frame"})


class PerfRun:
    """One decode of a perf.data file: a generator of ("record", C record,
    slot) and ("fields", dict) items, or with batch ("batch", C records,
    count, slot) and ("fields", dict) items."""

    def __init__(self, trace, flags, by_id, batch=False):
        self.t = trace
        self.flags = flags
        self.by_id_frames = by_id
        # ("batch", records, n, slot) items rather than ("record", ...),
        # for callers that read neither records one by one nor their
        # process (a context ID then does not update the slot's pid)
        self.batch = batch
        self.warnings = trace.warnings

    def _base(self):
        """The sections every image starts with: vmlinux, then the extra
        images and ELF files, as the tool adds them."""
        t = self.t
        img = L.image_new()
        if not img:
            raise CsdecError(L.ENOMEM, "out of memory")
        try:
            if t.vmlinux is not None:
                rc = L.image_add_elf(img, os.fsencode(t.vmlinux), 0)
                if rc < 0:
                    raise CsdecError(rc, "vmlinux %s" % (_s(L.image_error(img)),))
            t._add_extra(img)
        except BaseException:
            L.image_free(img)
            raise
        return img

    def _source(self, a, idle):
        """A decoder for the action's key: the key's last one (ended, in
        idle) reset where it reads the same image, as the tool does (it
        keeps the code it classified), or a new one."""
        c = a.source.contents
        dec = None
        old = idle.pop(a.key, None)
        if old is not None:
            if old.image == a.image and L.flow_reset(old.dec) == 0:
                dec = old.dec
            else:
                L.flow_free(old.dec)
        fc = L.FlowConfig(size=ctypes.sizeof(L.FlowConfig), trace=ctypes.pointer(c.config), image=a.image,
                          flags=self.flags)
        if dec is None:
            dec = L.flow_new(ctypes.byref(fc))
        if not dec:
            raise CsdecError(L.EINVAL, "%s: cannot create a decoder for CPU %d (protocol and ETMIDR 0x%08x disagree?)"
                             % (self.t.path, c.cpu, c.config.etmidr))
        s = _Slot()
        s.dec, s.id, s.cpu, s.pid, s.tid = dec, c.config.trace_id, a.cpu, a.pid, a.tid
        s.cfg = L.TraceConfig()
        ctypes.pointer(s.cfg)[0] = c.config
        s.per_cpu = not a.flags & ACTF_PER_THREAD
        s.image = a.image
        return s

    def _drain(self, ps, s):
        """cli_drain_slot: the records so far; a context ID of a CPU's
        queue names its process (csd_perf_session_context_pid)."""
        recs = self.recs
        while True:
            n = L.flow_next_batch(s.dec, ctypes.byref(recs))
            if n == L.EAGAIN or n == L.EEOS:
                return
            L.check(n, "flow decode")
            if self.batch:
                yield ("batch", recs, n, s)
                continue
            for i in range(n):
                r = recs[i]
                if r.type == REC_CONTEXT and r.flags & RECF_CONTEXT_ID and s.per_cpu:
                    pid = L.perf_session_context_pid(ps, r.context_id)
                    if pid < 0:
                        s.pid = s.tid = -1
                    else:
                        if pid != s.pid:
                            s.tid = -1
                        s.pid = pid
                yield ("record", r, s)

    def run(self):
        t = self.t
        del self.warnings[:]
        self.recs = ctypes.POINTER(L.CRecord)()
        base = self._base()
        ids = sorted(t.ids) if t.ids is not None else []
        id_arr = (ctypes.c_uint8 * max(1, len(ids)))(*[i & 0xFF for i in ids])
        cfg = L.PerfSessionConfig(size=ctypes.sizeof(L.PerfSessionConfig),
                                  flags=SESSION_IMAGES | (SESSION_FRAMES_BY_ID if self.by_id_frames else 0),
                                  base=base,
                                  symfs=os.fsencode(t.symfs) if t.symfs is not None else None,
                                  buildid_dir=os.fsencode(t.buildid_dir) if t.buildid_dir is not None else None,
                                  ids=id_arr, num_ids=len(ids) if t.ids is not None else 0)
        if t.ids is not None and not ids:
            cfg.num_ids = 1  # (no ID wanted: ID 0 is no source's)
        ps = ctypes.c_void_p()
        err = ctypes.create_string_buffer(600)
        rc = L.perf_session_new(os.fsencode(t.path), ctypes.byref(cfg), ctypes.byref(ps), err, len(err))
        if rc < 0:
            L.image_free(base)
            raise CsdecError(rc, err.value.decode("utf-8", "replace") or _s(L.errstr(rc)))
        slots = {}
        idle = {}
        try:
            a = L.PerfAction(size=ctypes.sizeof(L.PerfAction))
            while True:
                rc = L.perf_session_next(ps, ctypes.byref(a))
                if rc != 0:
                    break
                kind = a.type
                if kind == ACT_DATA:
                    s = slots[a.key]
                    if L.flow_feed(s.dec, ctypes.byref(a.bytes)) == 0:
                        yield from self._drain(ps, s)
                elif kind == ACT_SOURCE:
                    slots[a.key] = self._source(a, idle)
                elif kind == ACT_END:
                    s = slots.pop(a.key)
                    try:
                        L.flow_finish(s.dec)
                        yield from self._drain(ps, s)
                    finally:
                        idle[a.key] = s
                        while len(idle) > IDLE_MAX:
                            # (The longest idle goes: each keeps its tables.)
                            L.flow_free(idle.pop(next(iter(idle))).dec)
                elif kind == ACT_FRAME_ERROR:
                    yield _frame_error(a.frame)
                elif kind == ACT_AUX_LOST:
                    yield _aux_lost(a.event.contents)
                elif kind == ACT_WARNING:
                    self.warnings.append(_s(a.text))
            if rc != L.EEOS:
                raise CsdecError(rc, _s(L.perf_session_error(ps)) or _s(L.errstr(rc)))
        finally:
            for s in list(slots.values()) + list(idle.values()):
                L.flow_free(s.dec)
            L.perf_session_free(ps)
            L.image_free(base)
