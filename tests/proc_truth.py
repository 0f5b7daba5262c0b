# SPDX-License-Identifier: GPL-2.0-only
"""What the kernel says a process used, read by the tests themselves: the
independent truth for the summary's cost of tracing (docs/metrics.md M23)."""
import os


def cpu_ns(pid):
    """On-CPU ns of every live thread of pid (first field of each task's schedstat)."""
    total = 0
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open("%s/%s/schedstat" % (task, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass    # a thread that ended in between
    return total


def bpf_stats(pid):
    """(runs, run_time_ns) summed over the BPF programs pid holds, each once
    (/proc/PID/fdinfo of each anon_inode:bpf-prog fd; docs/kernel.md B15)."""
    seen = {}
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink("%s/%s" % (fd_dir, fd)) != "anon_inode:bpf-prog":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                kv = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        seen[int(kv["prog_id"])] = (int(kv["run_cnt"]), int(kv["run_time_ns"]))
    return sum(v[0] for v in seen.values()), sum(v[1] for v in seen.values())
