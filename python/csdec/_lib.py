"""Loading libcsdec and the C structures of include/csdec.h used here."""
import ctypes
import os

c_u8, c_u16, c_u32, c_u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
c_size, c_char_p, c_void_p = ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p

EINVAL, ENOMEM, EAGAIN, EEOS, EIO, EFORMAT, ENOENT = -1, -2, -3, -4, -5, -6, -7
PROTO_ETM3, PROTO_PTM = 1, 2
FRAME_RAW, FRAME_ALIGNED, FRAME_PORT = 0, 1, 2
FRAME_DATA, FRAME_SYNC, FRAME_ERROR, FRAME_ALIGN_INFERRED, FRAME_TRUNCATED = 1, 2, 3, 4, 5
FLOW_INSN = 1


class CsdecError(Exception):
    """An error of libcsdec (or of opening what it reads): `code` is the C
    error code (negative, enum csd_error), `message` says what failed."""

    def __init__(self, code, message):
        super().__init__("%s (error %d)" % (message, code))
        self.code = code
        self.message = message


class TraceConfig(ctypes.Structure):
    _fields_ = [("size", c_size), ("protocol", c_u32), ("etmcr", c_u32), ("etmccer", c_u32),
                ("etmidr", c_u32), ("trace_id", c_u8), ("core_profile", c_u8)]


class Bytes(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(c_u8)), ("size", c_size), ("offsets", ctypes.POINTER(c_u64)),
                ("base", c_u64), ("id", c_u8)]


class FrameConfig(ctypes.Structure):
    _fields_ = [("size", c_size), ("format", c_u32), ("raw_id", c_u8), ("flags", c_u32)]


class FrameOut(ctypes.Structure):
    _fields_ = [("event", c_u32), ("bytes", Bytes), ("offset", c_u64), ("reason", c_char_p)]


class FlowConfig(ctypes.Structure):
    _fields_ = [("size", c_size), ("trace", ctypes.POINTER(TraceConfig)), ("image", c_void_p), ("flags", c_u32)]


class CRecord(ctypes.Structure):
    _fields_ = [("type", c_u32), ("flags", c_u32), ("offset", c_u64), ("addr", c_u64), ("end", c_u64),
                ("last", c_u64), ("target", c_u64), ("cycles", c_u64), ("timestamp", c_u64),
                ("count", c_u32), ("opcode", c_u32), ("size", c_u64), ("isa", c_u8), ("cond", c_u8),
                ("reason", c_u8), ("vmid", c_u8), ("id", c_u8), ("exception", c_u16),
                ("context_id", c_u32), ("error", c_char_p)]


class SnapshotBuffer(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("path", c_char_p), ("format", c_char_p), ("frame_format", c_u32)]


class SnapshotSource(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("type", c_char_p), ("core_name", c_char_p), ("core_type", c_char_p),
                ("buffer", ctypes.c_int), ("config", TraceConfig)]


class PerfCpu(ctypes.Structure):
    _fields_ = [("cpu", ctypes.c_int32), ("unit", c_u32), ("id_from", c_u32), ("config", TraceConfig),
                ("traceidr", c_u64), ("offset", c_u64)]


class PerfBuildId(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_int32), ("cpumode", c_u16), ("size", c_u8), ("id", c_u8 * 20),
                ("filename", c_char_p)]


class PerfEvent(ctypes.Structure):
    _fields_ = [("size", c_size), ("type", c_u32), ("record", c_u32), ("offset", c_u64), ("flags", c_u32),
                ("cpumode", c_u16), ("cpu", ctypes.c_int32), ("pid", ctypes.c_int32), ("tid", ctypes.c_int32),
                ("time", c_u64), ("data_offset", c_u64), ("data_size", c_u64), ("aux_offset", c_u64),
                ("aux_size", c_u64), ("aux_flags", c_u64), ("idx", c_u32), ("addr", c_u64), ("len", c_u64),
                ("pgoff", c_u64), ("prot", c_u32), ("mmap_flags", c_u32), ("build_id_size", c_u8),
                ("build_id", c_u8 * 20), ("filename", c_char_p), ("comm", c_char_p),
                ("next_prev_pid", ctypes.c_int32), ("next_prev_tid", ctypes.c_int32), ("ppid", ctypes.c_int32),
                ("ptid", ctypes.c_int32), ("hw_id", c_u64), ("lost", c_u64)]


class PerfSessionConfig(ctypes.Structure):
    _fields_ = [("size", c_size), ("flags", c_u32), ("base", c_void_p), ("symfs", c_char_p),
                ("buildid_dir", c_char_p), ("ids", ctypes.POINTER(c_u8)), ("num_ids", c_size)]


class PerfAction(ctypes.Structure):
    _fields_ = [("size", c_size), ("type", c_u32), ("flags", c_u32), ("key", c_u32), ("cpu", ctypes.c_int32),
                ("pid", ctypes.c_int32), ("tid", ctypes.c_int32), ("source", ctypes.POINTER(PerfCpu)),
                ("image", c_void_p), ("bytes", Bytes), ("frame", FrameOut), ("event", ctypes.POINTER(PerfEvent)),
                ("text", c_char_p)]


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    # a built tree: python/csdec/ next to build/
    yield os.path.join(here, "..", "..", "build", "libcsdec.so")
    try:
        from . import _paths  # written by `make install`
        yield os.path.join(_paths.LIBDIR, "libcsdec.so.0")
    except ImportError:
        pass
    yield "libcsdec.so.0"


def _load():
    errors = []
    env = os.environ.get("CSDEC_LIB")
    if env:
        # A library asked for by name is that one or none: not another
        # one found behind the user's back.
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError("csdec: cannot load CSDEC_LIB=%s: %s" % (env, e)) from None
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError("csdec: cannot load libcsdec (build it with make, install it, or set CSDEC_LIB): "
                      + "; ".join(errors))


lib, library_path = _load()


def _fn(name, restype, *args):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(args)
    return f


errstr = _fn("csd_errstr", c_char_p, ctypes.c_int)
version = _fn("csd_version", c_char_p)
rec_type_name = _fn("csd_rec_type_name", c_char_p, ctypes.c_int)
isa_name = _fn("csd_isa_name", c_char_p, ctypes.c_int)
cond_name = _fn("csd_cond_name", c_char_p, ctypes.c_int)
reason_name = _fn("csd_reason_name", c_char_p, ctypes.c_int)
exception_name = _fn("csd_exception_name", c_char_p, ctypes.POINTER(TraceConfig), ctypes.c_uint)

image_new = _fn("csd_image_new", c_void_p)
image_free = _fn("csd_image_free", None, c_void_p)
image_add_elf = _fn("csd_image_add_elf", ctypes.c_int, c_void_p, c_char_p, ctypes.c_int64)
image_add_file = _fn("csd_image_add_file", ctypes.c_int, c_void_p, c_char_p, c_u64, c_u64, c_u64)
image_error = _fn("csd_image_error", c_char_p, c_void_p)

frame_new = _fn("csd_frame_new", c_void_p, ctypes.POINTER(FrameConfig))
frame_free = _fn("csd_frame_free", None, c_void_p)
frame_feed = _fn("csd_frame_feed", ctypes.c_int, c_void_p, c_void_p, c_size, c_u64)
frame_next = _fn("csd_frame_next", ctypes.c_int, c_void_p, ctypes.POINTER(FrameOut))
frame_finish = _fn("csd_frame_finish", ctypes.c_int, c_void_p)

flow_new = _fn("csd_flow_new", c_void_p, ctypes.POINTER(FlowConfig))
flow_free = _fn("csd_flow_free", None, c_void_p)
flow_feed = _fn("csd_flow_feed", ctypes.c_int, c_void_p, ctypes.POINTER(Bytes))
flow_next_batch = _fn("csd_flow_next_batch", ctypes.c_int, c_void_p, ctypes.POINTER(ctypes.POINTER(CRecord)))
flow_finish = _fn("csd_flow_finish", ctypes.c_int, c_void_p)
flow_reset = _fn("csd_flow_reset", ctypes.c_int, c_void_p)

snapshot_open = _fn("csd_snapshot_open", ctypes.c_int, c_char_p, ctypes.POINTER(c_void_p), ctypes.c_char_p, c_size)
snapshot_free = _fn("csd_snapshot_free", None, c_void_p)
snapshot_num_buffers = _fn("csd_snapshot_num_buffers", c_size, c_void_p)
snapshot_buffer = _fn("csd_snapshot_buffer", ctypes.POINTER(SnapshotBuffer), c_void_p, c_size)
snapshot_num_sources = _fn("csd_snapshot_num_sources", c_size, c_void_p)
snapshot_source = _fn("csd_snapshot_source", ctypes.POINTER(SnapshotSource), c_void_p, c_size)
snapshot_load_image = _fn("csd_snapshot_load_image", ctypes.c_int, c_void_p, c_char_p, c_void_p)

perf_open = _fn("csd_perf_open", ctypes.c_int, c_char_p, ctypes.POINTER(c_void_p), ctypes.c_char_p, c_size)
perf_free = _fn("csd_perf_free", None, c_void_p)
perf_num_cpus = _fn("csd_perf_num_cpus", c_size, c_void_p)
perf_cpu = _fn("csd_perf_cpu", ctypes.POINTER(PerfCpu), c_void_p, c_size)
perf_num_build_ids = _fn("csd_perf_num_build_ids", c_size, c_void_p)
perf_build_id = _fn("csd_perf_build_id", ctypes.POINTER(PerfBuildId), c_void_p, c_size)
perf_next = _fn("csd_perf_next", ctypes.c_int, c_void_p, ctypes.POINTER(PerfEvent))
perf_rewind = _fn("csd_perf_rewind", ctypes.c_int, c_void_p)
perf_read = _fn("csd_perf_read", ctypes.c_int, c_void_p, c_u64, c_void_p, c_size)
perf_error = _fn("csd_perf_error", c_char_p, c_void_p)
perf_file_build_id = _fn("csd_perf_file_build_id", ctypes.c_int, c_void_p, c_char_p, ctypes.c_int32,
                         ctypes.POINTER(c_u8))
elf_build_id = _fn("csd_elf_build_id", ctypes.c_int, c_char_p, ctypes.POINTER(c_u8))
perf_find_file = _fn("csd_perf_find_file", ctypes.c_int, c_char_p, ctypes.POINTER(c_u8), c_size, c_char_p, c_char_p,
                     ctypes.c_char_p, c_size, ctypes.POINTER(c_u8), ctypes.POINTER(c_size))

perf_session_new = _fn("csd_perf_session_new", ctypes.c_int, c_char_p, ctypes.POINTER(PerfSessionConfig),
                       ctypes.POINTER(c_void_p), ctypes.c_char_p, c_size)
perf_session_free = _fn("csd_perf_session_free", None, c_void_p)
perf_session_next = _fn("csd_perf_session_next", ctypes.c_int, c_void_p, ctypes.POINTER(PerfAction))
perf_session_error = _fn("csd_perf_session_error", c_char_p, c_void_p)
perf_session_context_pid = _fn("csd_perf_session_context_pid", ctypes.c_int32, c_void_p, c_u32)


def check(rc, what):
    """Raise CsdecError for a negative return code."""
    if rc < 0:
        raise CsdecError(rc, "%s: %s" % (what, errstr(rc).decode()))
    return rc
