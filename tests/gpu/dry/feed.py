# SPDX-License-Identifier: GPL-2.0-only
"""ctypes door to libgpu_feed.so (gpu_feed.c): this process plays a CUDA
process with the collector injected, for the dry run of tests/gpu/run.sh."""
import ctypes
import os


class Feed:
    def __init__(self, lib, sock):
        self.lib = ctypes.CDLL(lib)
        self.lib.gpu_feed_line.argtypes = [ctypes.c_char_p]
        self.lib.gpu_feed_close.restype = ctypes.c_longlong
        if self.lib.gpu_feed_open(sock.encode()) != 0:
            raise OSError(f"gpu_feed_open({sock}) failed")

    def kernel(self, start_ns, end_ns, name="spin_ns", graph=0, tid=None):
        tid = threading_tid() if tid is None else tid
        self._line(f"K {start_ns} {end_ns} {tid} {graph} {name}")

    def copy(self, start_ns, end_ns, nbytes, h2d, pageable, tid=None):
        tid = threading_tid() if tid is None else tid
        host = 1 if pageable else 2  # enum ttf_gpu_mem_kind: PAGEABLE, PINNED
        src, dst = (host, 3) if h2d else (3, host)
        self._line(f"C {start_ns} {end_ns} {tid} {nbytes} {1 if h2d else 2} {src} {dst}")

    def _line(self, line):
        if self.lib.gpu_feed_line(line.encode()) != 0:
            raise ValueError(f"gpu_feed: bad line {line!r}")

    def close(self):
        return self.lib.gpu_feed_close()


def threading_tid():
    import threading
    return threading.get_native_id() if hasattr(threading, "get_native_id") else os.getpid()
