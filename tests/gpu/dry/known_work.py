# SPDX-License-Identifier: GPL-2.0-only
"""The dry run's stand-in for tests/gpu/known_work.cu (no GPU, no nvcc).

Usage: known_work.py LIBGPU_FEED SOCK. Prints the same lines (OP NAME
TARGET_NS EVENT_NS HOST_START_NS HOST_END_NS BYTES) for the same operations,
and sends the records a collector would send for them (dry/feed.py): each
span starts 10 us into its host window; its "event" time is the span plus
1 us, as cudaEvents around a launch read. Copies move 12 GB/s pinned, 6 GB/s
pageable.
"""
import sys
import time

from feed import Feed

REPS, KERNEL_NS = 3, (20000, 100000, 1000000, 5000000)
SIZES = (1 << 20, 16 << 20, 64 << 20)


def timed(kind, name, target, dur_ns, nbytes, send):
    h0 = time.monotonic_ns()
    send(h0 + 10000, h0 + 10000 + dur_ns)
    while time.monotonic_ns() < h0 + dur_ns + 20000:
        time.sleep(0.0002)
    print(kind, name, target, dur_ns + 1000, h0, time.monotonic_ns(), nbytes, flush=True)


def main():
    feed = Feed(sys.argv[1], sys.argv[2])
    for _ in range(3):
        for ns in KERNEL_NS:
            timed("kernel", f"spin_{ns // 1000}us", ns, ns + 700, 0,
                  lambda a, b: feed.kernel(a, b))
    for _ in range(3):
        for size in SIZES:
            for m in range(4):
                h2d, pageable = m < 2, bool(m & 1)
                name = f"{'h2d' if h2d else 'd2h'}_{'pageable' if pageable else 'pinned'}"
                dur = size * 1000 // (6000 if pageable else 12000)
                timed("copy", name, 0, dur, size,
                      lambda a, b, s=size, h=h2d, p=pageable: feed.copy(a, b, s, h, p))

    def graph(a, _b):
        for i in range(4):
            feed.kernel(a + i * 51000, a + i * 51000 + 50000, graph=7)
    for _ in range(3):
        timed("graph", "replay_4x50us", 200000, 4 * 51000 - 1000, 0, graph)
    time.sleep(0.3)
    sys.exit(1 if feed.close() else 0)


if __name__ == "__main__":
    main()
