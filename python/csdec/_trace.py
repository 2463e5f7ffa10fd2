"""Traces: what csdec.open() returns, and the records they decode into."""
import builtins
import ctypes
import os
import struct

from . import _lib as L
from . import _perf
from ._lib import CsdecError

READ_CHUNK = 1 << 20

# enum csd_rec_type / csd_rec_flag values used below
R_RANGE, R_INSN, R_EXCEPTION, R_EXC_RETURN, R_TRACE_ON, R_CONTEXT, R_TIMESTAMP = 1, 2, 3, 4, 5, 6, 7
R_CYCLE_COUNT, R_NO_MEMORY, R_NOSYNC, R_ISA_UNSUPPORTED, R_ERROR = 8, 9, 10, 11, 12
F_CYCLES, F_NS, F_HYP, F_CANCELLED, F_BRANCH, F_TAKEN = 1, 2, 4, 8, 16, 32
F_CONTEXT_ID, F_VMID = 128, 256


# A record's size, and its type and address alone (struct.iter_unpack
# over a batch of records' bytes).
_REC_SIZE = ctypes.sizeof(L.CRecord)
_TYPE_ADDR = struct.Struct("=I%dxQ%dx" % (L.CRecord.addr.offset - 4, _REC_SIZE - L.CRecord.addr.offset - 8))
assert L.CRecord.type.offset == 0


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _hex(v):
    return "0x%08x" % v


class Record:
    """One decoded record. Its attributes are the fields of the JSON object
    `csdec decode --format jsonl` prints for it, with the same names and
    values (addresses as "0x%08x" strings); `r["return"]` reaches the
    field that is a Python keyword. as_dict() gives them all."""

    __slots__ = ("_f",)

    def __init__(self, fields):
        self._f = fields

    def __getattr__(self, name):
        try:
            return self._f[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name):
        return self._f[name]

    def __contains__(self, name):
        return name in self._f

    def get(self, name, default=None):
        return self._f.get(name, default)

    def as_dict(self):
        return dict(self._f)

    def __repr__(self):
        return "Record(%r)" % (self._f,)


class _Names(dict):
    """The library's name of each value of an enum, asked once per value
    rather than once per record (each ask is a call through ctypes)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, v):
        name = self[v] = _s(self.fn(v))
        return name


_TYPE_NAME, _ISA_NAME = _Names(L.rec_type_name), _Names(L.isa_name)
_COND_NAME, _REASON_NAME = _Names(L.cond_name), _Names(L.reason_name)


def _fields(r, cfg, head=None):
    """The JSON Lines fields of C record r (tools/print.c, print_record_json);
    head's after "type" and "id" (its "id" in place of the record's)."""
    t = r.type
    f = {"type": _TYPE_NAME[t], "id": r.id}
    if head:
        f.update(head)
    f["offset"] = r.offset
    if t == R_RANGE:
        f.update(addr=_hex(r.addr), end=_hex(r.end), last=_hex(r.last), count=r.count,
                 isa=_ISA_NAME[r.isa], cond=_COND_NAME[r.cond])
        if r.flags & F_BRANCH:
            f["taken"] = bool(r.flags & F_TAKEN)
    elif t == R_INSN:
        f.update(addr=_hex(r.addr), isa=_ISA_NAME[r.isa], size=r.size, cond=_COND_NAME[r.cond])
    elif t == R_EXCEPTION:
        f["number"] = r.exception
        f["name"] = _s(L.exception_name(ctypes.byref(cfg), r.exception))
        f["return"] = _hex(r.addr)
        f["target"] = _hex(r.target)
        f["cancelled"] = bool(r.flags & F_CANCELLED)
    elif t == R_TRACE_ON:
        f.update(reason=_REASON_NAME[r.reason], addr=_hex(r.addr), isa=_ISA_NAME[r.isa])
    elif t == R_CONTEXT:
        f.update(isa=_ISA_NAME[r.isa], ns=bool(r.flags & F_NS), hyp=bool(r.flags & F_HYP))
        if r.flags & F_CONTEXT_ID:
            f["context_id"] = _hex(r.context_id)
        if r.flags & F_VMID:
            f["vmid"] = r.vmid
    elif t == R_TIMESTAMP:
        f["timestamp"] = r.timestamp
    elif t == R_NO_MEMORY:
        f.update(addr=_hex(r.addr), count=r.count)
    name = f["type"]
    if name == "address_unknown":
        f.update(count=r.count, isa=_ISA_NAME[r.isa])
    elif name == "nosync":
        f["size"] = r.size
    elif name == "isa_unsupported":
        f.update(addr=_hex(r.addr), isa=_ISA_NAME[r.isa])
    elif name == "error":
        f["reason"] = _s(r.error) if r.error else "bad trace"
    elif name == "truncated":
        f["size"] = r.size
        f["reason"] = _s(r.error) if r.error else "packet cut by the end of the capture"
    if r.flags & F_CYCLES:
        f["cycles"] = r.cycles
    return f


class _Source:
    def __init__(self, name, config, image_loader):
        self.name = name
        self.config = config
        self.image_loader = image_loader


class _Buffer:
    def __init__(self, path, frame_format, sources):
        self.path = path
        self.frame_format = frame_format
        self.sources = sources


class Trace:
    """A trace to decode: a snapshot directory or a raw capture with its
    configuration. Decoding happens on each call of records() or
    instructions(), streaming: records() keeps no more than a decoder's
    state, whatever the trace's length."""

    def __init__(self, path, buffers, extra_elfs, extra_images, keep=None):
        self.path = path
        self._buffers = buffers
        self._elfs = list(extra_elfs)
        self._images = list(extra_images)
        self._keep = keep  # objects the sources' configurations refer to

    @property
    def sources(self):
        """(name, trace ID, protocol) of each source decoded."""
        out = []
        for b in self._buffers:
            for s in b.sources:
                proto = {L.PROTO_ETM3: "etm3", L.PROTO_PTM: "ptm"}.get(s.config.protocol, "?")
                out.append((s.name, s.config.trace_id, proto))
        return out

    def _add_extra(self, img):
        """Add the --image and --elf files to img, in the tool's order."""
        for path, addr in self._images:
            rc = L.image_add_file(img, os.fsencode(path), 0, 0, addr)
            if rc < 0:
                raise CsdecError(rc, "image %s: %s" % (path, _s(L.image_error(img)) or _s(L.errstr(rc))))
        for path, bias in self._elfs:
            rc = L.image_add_elf(img, os.fsencode(path), bias)
            if rc < 0:
                raise CsdecError(rc, "elf %s: %s" % (path, _s(L.image_error(img)) or _s(L.errstr(rc))))

    def _image(self, src):
        img = L.image_new()
        if not img:
            raise CsdecError(-2, "out of memory")
        try:
            if src.image_loader:
                src.image_loader(img)
            for path, bias in self._elfs:
                rc = L.image_add_elf(img, os.fsencode(path), bias)
                if rc < 0:
                    raise CsdecError(rc, "elf %s: %s" % (path, _s(L.image_error(img)) or _s(L.errstr(rc))))
            for path, addr in self._images:
                rc = L.image_add_file(img, os.fsencode(path), 0, 0, addr)
                if rc < 0:
                    raise CsdecError(rc, "image %s: %s" % (path, _s(L.image_error(img)) or _s(L.errstr(rc))))
        except BaseException:
            L.image_free(img)
            raise
        return img

    def _decode(self, flags, convert, batch=False):
        for buf in self._buffers:
            yield from self._decode_buffer(buf, flags, convert, batch)

    def _decode_buffer(self, buf, flags, convert, batch):
        flows, images = {}, []
        fd = None
        try:
            for src in buf.sources:
                img = self._image(src)
                images.append(img)
                fc = L.FlowConfig(size=ctypes.sizeof(L.FlowConfig), trace=ctypes.pointer(src.config), image=img,
                                  flags=flags)
                dec = L.flow_new(ctypes.byref(fc))
                if not dec:
                    raise CsdecError(-1, "cannot create a decoder for source %s (protocol and ETMIDR disagree?)"
                                     % src.name)
                flows[src.config.trace_id] = (dec, src.config)
            raw_id = buf.sources[0].config.trace_id if buf.sources else 0
            fcfg = L.FrameConfig(size=ctypes.sizeof(L.FrameConfig), format=buf.frame_format, raw_id=raw_id,
                                 flags=1)  # CSD_FRAME_BY_ID: long runs per source
            fd = L.frame_new(ctypes.byref(fcfg))
            if not fd:
                raise CsdecError(-1, "cannot create a frame decoder")
            out = L.FrameOut()
            recs = ctypes.POINTER(L.CRecord)()

            def drain(dec, cfg):
                while True:
                    n = L.flow_next_batch(dec, ctypes.byref(recs))
                    if n == L.EAGAIN or n == L.EEOS:
                        return
                    L.check(n, "flow decode")
                    if batch:
                        yield convert(recs, n, cfg)
                        continue
                    for i in range(n):
                        yield convert(recs[i], cfg)

            def frames():
                while True:
                    rc = L.frame_next(fd, ctypes.byref(out))
                    if rc == L.EAGAIN or rc == L.EEOS:
                        return
                    L.check(rc, "frame decode")
                    if out.event != L.FRAME_DATA:
                        continue
                    slot = flows.get(out.bytes.id)
                    if slot is None:
                        continue
                    L.check(L.flow_feed(slot[0], ctypes.byref(out.bytes)), "flow feed")
                    yield from drain(*slot)

            try:
                f = builtins.open(buf.path, "rb")
            except OSError as e:
                raise CsdecError(-5, "%s: %s" % (buf.path, e.strerror)) from None
            with f:
                offset = 0
                while True:
                    chunk = f.read(READ_CHUNK)
                    if not chunk:
                        break
                    cbuf = ctypes.create_string_buffer(chunk, len(chunk))
                    L.check(L.frame_feed(fd, cbuf, len(chunk), offset), "frame feed")
                    yield from frames()
                    offset += len(chunk)
            L.frame_finish(fd)
            yield from frames()
            for dec, cfg in flows.values():
                L.flow_finish(dec)
                yield from drain(dec, cfg)
        finally:
            for dec, _ in flows.values():
                L.flow_free(dec)
            for img in images:
                L.image_free(img)
            if fd:
                L.frame_free(fd)

    def records(self):
        """Iterate the records, as `csdec decode --format jsonl` has them
        (ranges of instructions), each source's in its order; several
        sources' come in runs per source rather than by timestamp."""
        return self._decode(0, lambda r, cfg: Record(_fields(r, cfg)))

    def instructions(self):
        """The address of every executed instruction, in order (source by
        source): a NumPy uint64 array when NumPy is installed, else a list."""
        try:
            import numpy
        except ImportError:
            numpy = None
        # The records' bytes copied a batch at a time and only their type
        # and address read, rather than fields through ctypes record by
        # record; for NumPy, a few MB of batches at once, as each call has
        # a cost of its own.
        def raw(recs, n, cfg):
            return ctypes.string_at(recs, n * _REC_SIZE)
        if numpy is None:
            out = []
            for b in self._decode(L.FLOW_INSN, raw, batch=True):
                out.extend(a for t, a in _TYPE_ADDR.iter_unpack(b) if t == R_INSN)
            return out
        dt = numpy.dtype({"names": ["type", "addr"], "formats": ["=u4", "=u8"],
                          "offsets": [L.CRecord.type.offset, L.CRecord.addr.offset], "itemsize": _REC_SIZE})

        def addrs(held):
            a = numpy.frombuffer(b"".join(held), dtype=dt)
            return a["addr"][a["type"] == R_INSN]
        parts, held, size = [], [], 0
        for b in self._decode(L.FLOW_INSN, raw, batch=True):
            held.append(b)
            size += len(b)
            if size >= 1 << 22:
                parts.append(addrs(held))
                held, size = [], 0
        parts.append(addrs(held))
        return numpy.concatenate(parts)


def _parse_elfs(elf):
    out = []
    for e in ([elf] if isinstance(elf, (str, bytes, os.PathLike)) else (elf or [])):
        if isinstance(e, tuple):
            out.append((os.fspath(e[0]), int(e[1])))
        else:
            out.append((os.fspath(e), 0))
    return out


def _core_profile(core):
    """The profile a core name gives, by the letter after "cortex-" (as the
    tool's --core and a snapshot's core name)."""
    name = str(core).lower()
    if name.startswith("cortex-") and name[7:8] in ("a", "r", "m"):
        return {"a": 0, "r": 1, "m": 2}[name[7]]
    raise CsdecError(-1, "core must be cortex-a, cortex-r or cortex-m (as cortex-a9 or cortex-m3), not %r" % (core,))


def open(path, protocol=None, etmcr=0, etmccer=0, etmidr=None, trace_id=0x10, formatted=False,
         elf=None, image=None, ids=None, symfs=None, buildid_dir=None, vmlinux=None, core=None):
    """Open a trace and return a Trace.

    path: a CoreSight snapshot directory, a perf.data file (recognised by
    its magic, as the tool does), or with `protocol` ("etm3" or "ptm") a
    raw capture decoded with the registers etmcr, etmccer, etmidr (default:
    the newest version of the protocol) and trace_id; formatted=True for
    16-byte formatter frames (ETB/ETR), "port" for a TPIU capture; core:
    the traced core, as the tool's --core ("cortex-a" by default,
    "cortex-r", "cortex-m3"...: exception names and Cortex-M packets).
    elf: ELF file(s) of the program (a path, or (path, bias)), image:
    [(raw binary path, load address)], ids: only these trace IDs.
    perf.data only, as the tool's --symfs, --buildid-dir, --vmlinux:
    symfs: directory the recorded paths of mapped files are read under,
    buildid_dir: the build-ID cache (default ~/.debug), vmlinux: the
    kernel's ELF file.
    """
    path = os.fspath(path)
    elfs = _parse_elfs(elf)
    images = [(os.fspath(p), int(a)) for p, a in (image or [])]
    if protocol is None and _perf.is_perf_data(path):
        return PerfTrace(path, elfs, images, ids, symfs, buildid_dir, vmlinux)
    if symfs is not None or buildid_dir is not None or vmlinux is not None:
        raise CsdecError(L.EINVAL, "%s is for perf.data input" % (
            "symfs" if symfs is not None else "buildid_dir" if buildid_dir is not None else "vmlinux"))
    if core is not None and protocol is None:
        raise CsdecError(L.EINVAL, "core is for a raw capture (protocol=): a snapshot names its cores")
    if protocol is not None:
        proto = {"etm3": L.PROTO_ETM3, "ptm": L.PROTO_PTM}.get(protocol)
        if proto is None:
            raise CsdecError(-1, "protocol must be 'etm3' or 'ptm', not %r" % (protocol,))
        profile = 0 if core is None else _core_profile(core)
        if profile == 2 and proto == L.PROTO_PTM:
            raise CsdecError(L.EINVAL, "a Cortex-M core has an ETM (protocol='etm3'), not a PTM")
        if etmidr is None:
            etmidr = 0x411CF312 if proto == L.PROTO_PTM else 0x410CF250
        cfg = L.TraceConfig(size=ctypes.sizeof(L.TraceConfig), protocol=proto, etmcr=etmcr, etmccer=etmccer,
                            etmidr=etmidr, trace_id=trace_id, core_profile=profile)
        fmt = L.FRAME_PORT if formatted == "port" else L.FRAME_ALIGNED if formatted else L.FRAME_RAW
        if not os.path.isfile(path):
            raise CsdecError(-5, "%s: not a regular file" % path)
        return Trace(path, [_Buffer(path, fmt, [_Source("trace", cfg, None)])], elfs, images)
    if os.path.isfile(path):
        raise CsdecError(-1, "%s: a raw trace needs protocol= (and its registers)" % path)
    snap = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    rc = L.snapshot_open(os.fsencode(path), ctypes.byref(snap), err, len(err))
    if rc < 0:
        raise CsdecError(rc, err.value.decode("utf-8", "replace") or _s(L.errstr(rc)))
    handle = _Snapshot(snap)
    buffers = []
    for b in range(L.snapshot_num_buffers(snap)):
        buf = L.snapshot_buffer(snap, b).contents
        sources, seen = [], set()
        for i in range(L.snapshot_num_sources(snap)):
            src = L.snapshot_source(snap, i).contents
            cfg = src.config
            if src.buffer != b or cfg.protocol not in (L.PROTO_ETM3, L.PROTO_PTM):
                continue
            if ids is not None and cfg.trace_id not in ids:
                continue
            if cfg.trace_id in seen or (buf.frame_format == L.FRAME_RAW and sources):
                continue  # as the tool, which warns: a source it cannot tell apart
            if buf.frame_format != L.FRAME_RAW and (cfg.trace_id == 0 or cfg.trace_id >= 0x70):
                continue
            seen.add(cfg.trace_id)
            core = src.core_name

            def loader(img, core=core):
                r = L.snapshot_load_image(handle.snap, core, img)
                if r < 0:
                    raise CsdecError(r, "memory dump of %s: %s"
                                     % (_s(core) or "?", _s(L.image_error(img)) or _s(L.errstr(r))))

            cfg_copy = L.TraceConfig()
            ctypes.pointer(cfg_copy)[0] = cfg
            sources.append(_Source(_s(src.name), cfg_copy, loader))
        if sources:
            buffers.append(_Buffer(_s(buf.path), buf.frame_format, sources))
    if not buffers:
        raise CsdecError(-1, "%s: no ETMv3 or PTM trace source" % path)
    return Trace(path, buffers, elfs, images, keep=handle)



class _Snapshot:
    """Owns the C snapshot (the image loaders read its dumps)."""

    def __init__(self, snap):
        self.snap = snap

    def __del__(self):
        if self.snap:
            L.snapshot_free(self.snap)
            self.snap = None


class PerfTrace(Trace):
    """A perf.data file (Linux `perf record -e cs_etm//`), decoded as
    `csdec decode FILE --order capture` decodes it: every record also
    carries its CPU (`cpu`) and, where known, process and thread (`pid`,
    `tid`); a PERF_RECORD_AUX saying trace was lost is an `aux_lost` record
    and a bad formatter frame a `frame_error` record (these have no `id`).
    `warnings` holds what the tool would have warned about (missing mapped
    files, CPUs it cannot decode) in the last decode."""

    def __init__(self, path, elfs, images, ids, symfs, buildid_dir, vmlinux):
        super().__init__(path, [], elfs, images)
        self.ids = None if ids is None else set(ids)
        self.symfs = None if symfs is None else os.fspath(symfs)
        self.buildid_dir = None if buildid_dir is None else os.fspath(buildid_dir)
        self.vmlinux = None if vmlinux is None else os.fspath(vmlinux)
        self.warnings = []
        # read the header, metadata and sources now, so that open() raises
        pd = ctypes.c_void_p()
        err = ctypes.create_string_buffer(600)
        rc = L.perf_open(os.fsencode(path), ctypes.byref(pd), err, len(err))
        if rc < 0:
            raise CsdecError(rc, err.value.decode("utf-8", "replace") or _s(L.errstr(rc)))
        try:
            cpus = [L.perf_cpu(pd, i).contents for i in range(L.perf_num_cpus(pd))]
            self._sources, seen = [], set()
            for c in cpus:
                tid = c.config.trace_id
                if not _perf.decodable(c) or tid in seen:
                    continue
                seen.add(tid)
                if self.ids is None or tid in self.ids:
                    proto = {L.PROTO_ETM3: "etm3", L.PROTO_PTM: "ptm"}.get(c.config.protocol, "?")
                    self._sources.append(("cpu%d" % c.cpu, tid, proto))
        finally:
            L.perf_free(pd)
        if not self._sources:
            raise CsdecError(L.ENOENT, "%s: no ETMv3 or PTM trace source%s" % (
                path, " with the requested ID" if self.ids is not None else " that could be decoded"))

    @property
    def sources(self):
        """(name "cpuN", trace ID, protocol) of each CPU decoded."""
        return list(self._sources)

    def _decode(self, flags, convert, batch=False):
        for item in _perf.PerfRun(self, flags, by_id=True, batch=batch).run():
            if item[0] == "record":
                yield convert(item[1], item[2].cfg)
            elif item[0] == "batch":
                yield convert(item[1], item[2], item[3].cfg)

    def records(self):
        """Iterate the records as `csdec decode FILE --format jsonl --order
        capture` prints them (ranges of instructions), in the same order."""
        for item in _perf.PerfRun(self, 0, by_id=False).run():
            if item[0] == "fields":
                yield Record(item[1])
                continue
            r, s = item[1], item[2]
            head = {"id": s.id, "cpu": s.cpu}
            if s.pid >= 0:
                head["pid"] = s.pid
            if s.tid >= 0:
                head["tid"] = s.tid
            yield Record(_fields(r, s.cfg, head))
