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
F_DATA_ADDR, F_DATA_VALUE, F_STORE, F_DATA_NO_INSN = 1 << 10, 1 << 11, 1 << 12, 1 << 13


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
        # (Only fields: copy and pickle ask for special names before
        # _f is set, which must not recurse.)
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._f[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name):
        return self._f[name]

    def __contains__(self, name):
        return name in self._f

    def __eq__(self, other):
        return isinstance(other, Record) and self._f == other._f

    def __hash__(self):
        return hash(tuple(sorted(self._f.items())))

    def __reduce__(self):
        return (Record, (dict(self._f),))

    def get(self, name, default=None):
        """The field `name`, or `default` where the record has none."""
        return self._f.get(name, default)

    def as_dict(self):
        """All fields as a new dict, in the order the tool prints them."""
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
    if f["type"] == "data":
        return _data_fields(r, f)
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
    elif name == "data_lost":
        if r.last:
            f["insn"] = _hex(r.last)
    if r.flags & F_CYCLES:
        f["cycles"] = r.cycles
    return f


def _data_fields(r, f):
    """A data access (print_data_json): no offset or cycles; the
    instruction, direction and size unless a data-only trace has none;
    the address and value where traced, the value in as many hex digits
    as the access has bytes (8 without an instruction)."""
    no_insn = r.flags & F_DATA_NO_INSN
    if not no_insn:
        f.update(insn=_hex(r.last), dir="store" if r.flags & F_STORE else "load", size=r.size)
    if r.flags & F_DATA_ADDR:
        f["addr"] = _hex(r.addr)
    if r.flags & F_DATA_VALUE:
        digits = 8 if no_insn else 2 * r.size if 1 <= r.size <= 8 else 16
        f["value"] = "0x%0*x" % (digits, r.target)
    return f


def _image_error(rc, kind, path, img):
    """As the tool's "--elf PATH: reason" (the image's message names the
    file already)."""
    msg = _s(L.image_error(img)) or ""
    return CsdecError(rc, "%s %s" % (kind, msg if msg.startswith(path) else "%s: %s" % (path, msg or _s(L.errstr(rc)))))


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
    state, whatever the trace's length. `warnings` lists the sources the
    tool would warn of and skip (a snapshot's sources it cannot tell
    apart). close(), or a `with` block, lets go of the snapshot at once
    rather than when the Trace is collected."""

    def __init__(self, path, buffers, extra_elfs, extra_images, keep=None):
        self.path = path
        self._buffers = buffers
        self._elfs = list(extra_elfs)
        self._images = list(extra_images)
        self._keep = keep  # objects the sources' configurations refer to
        self._closed = False
        self.warnings = []

    def close(self):
        """Release the snapshot; records() and instructions() then raise
        CsdecError. Calling it again does nothing."""
        self._closed = True
        if self._keep is not None:
            self._keep.free()
            self._keep = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _check_open(self):
        if self._closed:
            raise CsdecError(L.EINVAL, "%s: the trace is closed" % self.path)

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
                raise _image_error(rc, "image", path, img)
        for path, bias in self._elfs:
            rc = L.image_add_elf(img, os.fsencode(path), bias)
            if rc < 0:
                raise _image_error(rc, "elf", path, img)

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
                    raise _image_error(rc, "elf", path, img)
            for path, addr in self._images:
                rc = L.image_add_file(img, os.fsencode(path), 0, 0, addr)
                if rc < 0:
                    raise _image_error(rc, "image", path, img)
        except BaseException:
            L.image_free(img)
            raise
        return img

    def _decode(self, flags, convert, batch=False):
        self._check_open()
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
        """The address of every executed instruction, each source's in
        order, several sources' in runs of each as records() has them (the
        addresses carry no trace ID: open with ids= for one source's): a
        NumPy uint64 array when NumPy is installed, else a list."""
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


def _bad(what):
    return CsdecError(L.EINVAL, what)


def _path_of(v, what):
    if not isinstance(v, (str, bytes, os.PathLike)):
        raise _bad("%s: expected a path, not %r" % (what, v))
    return os.fsdecode(os.fspath(v))


def _int_of(v, what, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _bad("%s: expected an integer from 0x%x to 0x%x, not %r" % (what, lo, hi, v))
    return v


def _pairs(v, what, second):
    """A (path, number) pair or a list of paths or pairs (elf=: number 0
    when only the path is given; image=: the pair is needed)."""
    if v is None:
        return []
    one = isinstance(v, (str, bytes, os.PathLike)) or (
        isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], int) and not isinstance(v[1], bool))
    out = []
    for e in ([v] if one else v):
        if isinstance(e, tuple) and len(e) == 2:
            out.append((_path_of(e[0], what), _int_of(e[1], what + " " + second, -(1 << 63), (1 << 64) - 1)))
        elif second == "bias":
            out.append((_path_of(e, what), 0))
        else:
            raise _bad("%s: expected (path, %s) pairs, not %r" % (what, second, e))
    return out


def _check_files(kind, entries):
    """Read when the trace is decoded, but found now, so that open() says
    which one is missing."""
    for path, _ in entries:
        if not os.path.exists(path):
            raise CsdecError(-5, "%s %s: no such file" % (kind, path))
        if not os.path.isfile(path):
            raise CsdecError(-5, "%s %s: not a regular file" % (kind, path))


def _ids_of(ids):
    if ids is None:
        return None
    seq = [ids] if isinstance(ids, int) else ids
    try:
        return {_int_of(i, "ids", 1, 0x6F) for i in seq}
    except TypeError:
        raise _bad("ids: expected a trace ID or a list of them, not %r" % (ids,)) from None


def _core_profile(core):
    """The profile a core name gives, by the letter after "cortex-" (as the
    tool's --core and a snapshot's core name)."""
    name = str(core).lower()
    if name.startswith("cortex-") and name[7:8] in ("a", "r", "m"):
        return {"a": 0, "r": 1, "m": 2}[name[7]]
    raise _bad("core must be cortex-a, cortex-r or cortex-m (as cortex-a9 or cortex-m3), not %r" % (core,))


def open(path, protocol=None, etmcr=0, etmccer=0, etmidr=None, trace_id=None, formatted=False,
         elf=None, image=None, ids=None, symfs=None, buildid_dir=None, vmlinux=None, core=None):
    """Open a trace and return a Trace (a PerfTrace for perf.data).

    path: a CoreSight snapshot directory, a perf.data file (recognised by
    its magic, as the tool does), or with `protocol` ("etm3" or "ptm") a
    raw capture decoded with the registers etmcr, etmccer, etmidr (default:
    the newest version of the protocol) and trace_id (default 0x10; or
    ids=[ID], as the tool's --id with --trace); formatted=True (or
    "aligned") for 16-byte formatter frames (ETB/ETR), "port" for a TPIU
    capture; core: the traced core, as the tool's --core ("cortex-a" by
    default, "cortex-r", "cortex-m3"...: exception names and Cortex-M
    packets).
    elf: ELF file(s) of the program (a path, a (path, bias) pair, or a list
    of them), image: raw binaries, a (path, load address) pair or a list of
    them, ids: only this trace ID or these.
    perf.data only, as the tool's --symfs, --buildid-dir, --vmlinux:
    symfs: directory the recorded paths of mapped files are read under,
    buildid_dir: the build-ID cache (default ~/.debug), vmlinux: the
    kernel's ELF file.
    Mistakes in the arguments, and files that are missing, raise CsdecError
    here rather than when the trace is decoded.
    """
    path = _path_of(path, "path")
    elfs = _pairs(elf, "elf", "bias")
    images = _pairs(image, "image", "address")
    _check_files("elf", elfs)
    _check_files("image", images)
    id_set = _ids_of(ids)
    if protocol is None and _perf.is_perf_data(path):
        return PerfTrace(path, elfs, images, id_set, symfs, buildid_dir, vmlinux)
    if symfs is not None or buildid_dir is not None or vmlinux is not None:
        raise _bad("%s is for perf.data input" % (
            "symfs" if symfs is not None else "buildid_dir" if buildid_dir is not None else "vmlinux"))
    if core is not None and protocol is None:
        raise _bad("core is for a raw capture (protocol=): a snapshot names its cores")
    if protocol is not None:
        return _open_raw(path, protocol, etmcr, etmccer, etmidr, trace_id, formatted, elfs, images, id_set, core)
    for name, v in (("etmcr", etmcr), ("etmccer", etmccer), ("etmidr", etmidr), ("trace_id", trace_id)):
        if v not in (None, 0):
            raise _bad("%s is for a raw capture (protocol=): a snapshot has its registers" % name)
    if os.path.isfile(path):
        hint = (": open the snapshot's directory" if os.path.basename(path).endswith(".ini")
                else ": give protocol= (and its registers) for a raw capture")
        raise CsdecError(L.EINVAL, "%s is a file, not a snapshot directory or a perf.data file%s" % (path, hint))
    return _open_snapshot(path, elfs, images, id_set)


def _open_raw(path, protocol, etmcr, etmccer, etmidr, trace_id, formatted, elfs, images, id_set, core):
    proto = {"etm3": L.PROTO_ETM3, "ptm": L.PROTO_PTM}.get(protocol)
    if proto is None:
        raise _bad("protocol must be 'etm3' or 'ptm', not %r" % (protocol,))
    profile = 0 if core is None else _core_profile(core)
    if profile == 2 and proto == L.PROTO_PTM:
        raise _bad("a Cortex-M core has an ETM (protocol='etm3'), not a PTM")
    etmcr = _int_of(etmcr, "etmcr", 0, 0xFFFFFFFF)
    etmccer = _int_of(etmccer, "etmccer", 0, 0xFFFFFFFF)
    if etmidr is None:
        etmidr = 0x411CF312 if proto == L.PROTO_PTM else 0x410CF250
    etmidr = _int_of(etmidr, "etmidr", 0, 0xFFFFFFFF)
    if trace_id is not None:
        trace_id = _int_of(trace_id, "trace_id", 1, 0x6F)
    if id_set is not None:
        # One source: ids names its trace ID, as the tool's --id with --trace.
        if len(id_set) != 1 or (trace_id is not None and trace_id not in id_set):
            raise _bad("a raw capture is one source: give its trace ID once (ids= or trace_id=)")
        trace_id = next(iter(id_set))
    fmt = {False: L.FRAME_RAW, None: L.FRAME_RAW, True: L.FRAME_ALIGNED, "aligned": L.FRAME_ALIGNED,
           "port": L.FRAME_PORT}.get(formatted if isinstance(formatted, (bool, str, type(None))) else 0)
    if fmt is None:
        raise _bad("formatted must be False, True (or 'aligned') or 'port', not %r" % (formatted,))
    if os.path.isdir(path):
        raise CsdecError(L.EINVAL, "%s is a directory: a snapshot is opened without protocol=" % path)
    if not os.path.isfile(path):
        raise CsdecError(-5, "%s: %s" % (path, "no such file" if not os.path.exists(path) else "not a regular file"))
    if _perf.is_perf_data(path):
        raise CsdecError(L.EINVAL, "%s is a perf.data file: it is opened without protocol=" % path)
    cfg = L.TraceConfig(size=ctypes.sizeof(L.TraceConfig), protocol=proto, etmcr=etmcr, etmccer=etmccer,
                        etmidr=etmidr, trace_id=0x10 if trace_id is None else trace_id, core_profile=profile)
    return Trace(path, [_Buffer(path, fmt, [_Source("trace", cfg, None)])], elfs, images)


def _open_snapshot(path, elfs, images, ids):
    snap = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    rc = L.snapshot_open(os.fsencode(path), ctypes.byref(snap), err, len(err))
    if rc < 0:
        raise CsdecError(rc, err.value.decode("utf-8", "replace") or _s(L.errstr(rc)))
    handle = _Snapshot(snap)
    buffers, warnings = [], []
    for b in range(L.snapshot_num_buffers(snap)):
        buf = L.snapshot_buffer(snap, b).contents
        sources, seen = [], {}
        for i in range(L.snapshot_num_sources(snap)):
            src = L.snapshot_source(snap, i).contents
            cfg = src.config
            if src.buffer != b or cfg.protocol not in (L.PROTO_ETM3, L.PROTO_PTM):
                continue
            if ids is not None and cfg.trace_id not in ids:
                continue
            # As the tool, which warns of each: a source it cannot tell apart.
            why = None
            if buf.frame_format != L.FRAME_RAW and (cfg.trace_id == 0 or cfg.trace_id >= 0x70):
                why = ("ID 0 cannot appear in a formatted buffer" if cfg.trace_id == 0 else
                       "IDs 0x70-0x7f are reserved; a formatted buffer cannot carry them")
            elif buf.frame_format == L.FRAME_RAW and sources:
                why = "the buffer is unformatted, so it holds one source: %s" % sources[0].name
            elif cfg.trace_id in seen:
                why = "source %s has the same trace ID" % seen[cfg.trace_id]
            if why:
                warnings.append("source %s (trace ID 0x%02x) in buffer %s skipped: %s"
                                % (_s(src.name), cfg.trace_id, _s(buf.name), why))
                continue
            seen[cfg.trace_id] = _s(src.name)
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
        raise CsdecError(L.ENOENT, "%s: no ETMv3 or PTM trace source%s" % (
            path, " with the requested ID" if ids is not None else " that could be decoded" if warnings else ""))
    t = Trace(path, buffers, elfs, images, keep=handle)
    t.warnings = warnings
    return t


class _Snapshot:
    """Owns the C snapshot (the image loaders read its dumps)."""

    def __init__(self, snap):
        self.snap = snap

    def free(self):
        if self.snap:
            L.snapshot_free(self.snap)
            self.snap = None

    def __del__(self):
        self.free()


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
        self.ids = ids
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
        self._check_open()
        for item in _perf.PerfRun(self, flags, by_id=True, batch=batch).run():
            if item[0] == "record":
                yield convert(item[1], item[2].cfg)
            elif item[0] == "batch":
                yield convert(item[1], item[2], item[3].cfg)

    def records(self):
        """Iterate the records as `csdec decode FILE --format jsonl --order
        capture` prints them (ranges of instructions), in the same order."""
        self._check_open()
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
