"""csdec: decode ARM CoreSight ETMv3 / PTM program-flow trace from Python.

A thin layer over the C library libcsdec (ctypes):

    import csdec
    t = csdec.open("snapshot-dir")                    # a CoreSight snapshot
    t = csdec.open("trace.bin", protocol="ptm",       # or a raw capture
                   etmcr=0x1000, elf=["prog.elf"])
    t = csdec.open("perf.data", symfs="rootfs/")      # or perf record -e cs_etm// output
    for r in t.records():                             # as `csdec decode --format jsonl`
        if r.type == "range":
            print(r.id, r.addr, r.count)
    addrs = t.instructions()                          # NumPy array (or list)

Errors are CsdecError, whose `code` is the library's (negative) error code.
open() returns a Trace, or for perf.data a PerfTrace (a Trace whose records
also carry cpu, pid and tid). `library_path` is the libcsdec the package
loaded: the one CSDEC_LIB names, else the build tree's or the installed one.
"""
from ._lib import CsdecError, library_path
from ._trace import PerfTrace, Record, Trace, open

__all__ = ["CsdecError", "PerfTrace", "Record", "Trace", "open", "library_path"]
