# SPDX-License-Identifier: GPL-2.0-only
"""Copy bandwidth by PyTorch's own copies: the reference `ttftrace copybw` is
held to in tests/gpu/run.sh (step "copybw"). Shares no code with ttftrace.

Usage: copy_ref.py SIZES_BYTES(comma) ITERS WARMUP [--cudart LIB]
For each direction (h2d, d2h), memory (pinned, pageable) and size: WARMUP
untimed copies, then ITERS copies each followed by a synchronize, timed on
the host clock as one run (GB/s = 1e9 bytes/s). --cudart: the dry run's
stand-in runtime through ctypes instead of torch. Prints one JSON object.
"""
import ctypes
import json
import sys
import time


def torch_copier():
    import torch
    dev = torch.device("cuda")

    def make(nbytes, pinned):
        host = torch.ones(nbytes, dtype=torch.uint8)
        return (host.pin_memory() if pinned else host), torch.empty(nbytes, dtype=torch.uint8,
                                                                    device=dev)

    def copy(h2d, host, devbuf):
        (devbuf.copy_(host) if h2d else host.copy_(devbuf))
        torch.cuda.synchronize()
    return make, copy


def ctypes_copier(lib):
    rt = ctypes.CDLL(lib)

    def make(nbytes, pinned):
        h, d = ctypes.c_void_p(), ctypes.c_void_p()
        if pinned:
            rt.cudaMallocHost(ctypes.byref(h), ctypes.c_size_t(nbytes))
        else:
            h = ctypes.cast(ctypes.create_string_buffer(nbytes), ctypes.c_void_p)
        rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(nbytes))
        return (h, nbytes), d

    def copy(h2d, host, devbuf):
        h, n = host
        rt.cudaMemcpy(devbuf if h2d else h, h if h2d else devbuf, ctypes.c_size_t(n),
                      1 if h2d else 2)
        rt.cudaDeviceSynchronize()
    return make, copy


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    iters, warmup = int(sys.argv[2]), int(sys.argv[3])
    make, copy = (ctypes_copier(sys.argv[sys.argv.index("--cudart") + 1])
                  if "--cudart" in sys.argv else torch_copier())
    out = []
    for h2d in (True, False):
        for pinned in (True, False):
            for n in sizes:
                host, devbuf = make(n, pinned)
                for _ in range(warmup):
                    copy(h2d, host, devbuf)
                t0 = time.monotonic_ns()
                for _ in range(iters):
                    copy(h2d, host, devbuf)
                dt = time.monotonic_ns() - t0
                out.append({"dir": "h2d" if h2d else "d2h",
                            "memory": "pinned" if pinned else "pageable",
                            "bytes": n, "gbps": n * iters / dt if dt else 0})
                del host, devbuf
    print(json.dumps({"results": out}))


if __name__ == "__main__":
    main()
