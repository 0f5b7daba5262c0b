#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The cost of tracing, by CPU accounting: bench/cost.sh runs this (root).

On each target (the demo llama.cpp server, tools/demo/server.mjs,
llama.cpp's own llama-server, tools/demo/llama-server, and the high-rate
target "rate": the C fixture server, tests/fixtures/sse_server, writing
tokens as fast as it can to --rate-c connections at once) one server runs
ROUNDS rounds of loadgen under each configuration, interleaved and rotated
per round so that drift of a noisy machine hits all alike:

  N    no tracer
  T    ttftrace, default probes (network, scheduler, the llama.cpp profile)
  Tns  ttftrace --no-sched
  Tnu  ttftrace --no-profile (no engine uprobes)
  Tnh  ttftrace --no-hops (one process's view: no upstream discovery)
  Tu   ttftrace -p on an idle process, the server untraced: what the
       untraced work of a host pays for the machine-wide hooks (its BPF
       time per token of the untraced server) and the tracer's idle CPU
  Tr   T with the sock source's syscall arguments from raw sys_enter, not
       the per-syscall tracepoints syscalls:sys_enter_X (TTFTRACE_SKIP_PROGS
       leaves enter_write out; not in the default --configs)
  Tb   T with another build, $TTFTRACE_B (an A/B of two builds in one run;
       not in the default --configs)
  B    bench/bpftrace_baseline.bt plus the same engine uprobes, in bpftrace
  E    the floor: empty programs on the hooks T uses (bench/empty_hooks.bpf.c,
       loaded by bench/empty_hooks.c, with the same engine uprobes)

Per round and per streamed token (loadgen's token count) it measures:
  - the tracer process's CPU time (sum over its threads of
    /proc/PID/task/TID/schedstat's first field, ns on CPU);
  - each BPF program's run count and run time (kernel.bpf_stats_enabled, on
    for the whole run, N rounds included, and restored at exit; bpftool
    prog show), for the programs the tracer holds (fdinfo prog_id);
  - the server's CPU time, against the N round of the same round number
    (the rate target's threads end with their connections: its CPU time
    is /proc/PID/stat's utime + stime, dead threads included);
  - records the tracer lost (its summary's *_full counters and the
    scheduler spans overwritten before it read them), the tokens it
    counted against loadgen's, and its CPU as a share of one core over the
    round's wall time.
Each round sends new prompts (its own loadgen seed), so that no round gets
the engine's prompt cache for free.
The uprobe trap itself is measured apart: bench/uprobe_trap.c calls an
empty function in a loop, before and after ttftrace attaches a uprobe and
a uretprobe to it; the trap cost is the extra CPU per call less the BPF
programs' own run time.

It prints medians over rounds of the per-round figures and ratios, and per
BPF program of T the runs per token, ns per run and us per token.
Options: --targets demo,llama,rate --rounds 5 -c 8 -n 48 -m 64 --rate-c 1000
--rate-n 2000 --rate-m 256 --keep.
TTFTRACE=PATH measures another ttftrace build (default: ROOT/ttftrace).
"""
import argparse
import fnmatch
import glob
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("TTF_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TTFTRACE = os.environ.get("TTFTRACE") or os.path.join(ROOT, "ttftrace")
LOADGEN = os.path.join(ROOT, ".output", "bin", "loadgen")
STATS = "/proc/sys/kernel/bpf_stats_enabled"
TRACEFS = "/sys/kernel/tracing"
LLAMA_BIN = os.path.join(ROOT, "tools", "demo", "llama-server", "bin")
MODEL = os.path.join(ROOT, "tools", "demo", "model", "demo.gguf")
THREADS = min(2, os.cpu_count() or 1)
CONFIGS = ["N", "T", "Tns", "Tnu", "Tnh", "Tu", "B", "E"]
EXTRA_CONFIGS = ["Tr", "Tb"]
TTFTRACE_B = os.environ.get("TTFTRACE_B")
ENGINE_PROGS = ("handle_entry", "handle_return")	# bpf/engine.bpf.c
TT_ARGS = {"T": [], "Tns": ["--no-sched"], "Tnu": ["--no-profile"], "Tnh": ["--no-hops"],
           "Tu": [], "Tr": [], "Tb": []}
TT_ENV = {"Tr": {"TTFTRACE_SKIP_PROGS": "enter_write"}}


def die(msg, hint=None):
    print("Error: " + msg, file=sys.stderr)
    if hint:
        print("HINT: " + hint, file=sys.stderr)
    sys.exit(2)


def cpu_ns(pid):
    """CPU time of every live thread of pid, ns (schedstat: on-CPU time first)."""
    total = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def stat_cpu_ns(pid):
    """utime + stime of pid from /proc/PID/stat, exited threads included, ns."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")


def tracer_summary(path):
    """(records lost, tokens counted) from a tracer's NDJSON summary; (None, None) if none."""
    try:
        with open(path) as f:
            last = [json.loads(l) for l in f if l.startswith("{")][-1]
    except (OSError, IndexError, ValueError):
        return None, None
    if last.get("type") != "summary":
        return None, None
    lost = sum(v for k, v in last.get("counters", {}).items()
               if k.endswith("_full") or k == "sched_flight_overwritten")
    return lost, last.get("total_output_tokens")


def prog_ids(pid):
    ids = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(f) as fh:
                for line in fh:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def prog_stats(ids):
    """{name: [run_cnt, run_time_ns]} of programs ids, summed by name."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    res = {}
    for p in json.loads(out):
        if p.get("id") in ids:
            name = p.get("name", "?")
            r = res.setdefault(name, [0, 0])
            r[0] += p.get("run_cnt", 0)
            r[1] += p.get("run_time_ns", 0)
    return res


def wait_line(path, needle, timeout_s, proc):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with open(path) as f:
                if needle in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def stop(proc, sig):
    if proc and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Server:
    def __init__(self, target, work, c):
        self.target = target
        out = os.path.join(work, "server-%s.log" % target)
        self.log = open(out, "w")
        self.cpu = cpu_ns
        if target in ("rate", "demo"):
            # both print "listening on 127.0.0.1:PORT" and serve OpenAI chat
            if target == "rate":
                cmd = [os.path.join(ROOT, ".output", "tests", "fixtures", "sse_server"), "--port",
                       "0", "--ttft-ms", "0", "--itl-ms", "0", "--spin-us", "0"]
                self.cpu = stat_cpu_ns
            else:
                cmd = ["node", "tools/demo/server.mjs", "--port", "0", "--parallel", str(min(c, 8))]
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=self.log)
            if not wait_line(out, "listening on ", 120, self.proc):
                die("the %s server did not start: " % target + open(out).read()[-500:])
            line = [l for l in open(out) if l.startswith("listening on ")][0]
            self.port = int(line.strip().rsplit(":", 1)[1])
            self.url = "http://127.0.0.1:%d/v1/chat/completions" % self.port
            self.api = []
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            cmd = [os.path.join(LLAMA_BIN, "llama-server"), "-m", MODEL, "-np", str(c),
                   "-t", str(THREADS), "-c", str(1024 * c), "--host", "127.0.0.1",
                   "--port", str(self.port)]
            env = dict(os.environ, LD_LIBRARY_PATH=LLAMA_BIN)
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env)
            if not wait_line(out, "listening on http", 120, self.proc):
                die("llama-server did not start: " + open(out).read()[-500:])
            self.url = "http://127.0.0.1:%d/completion" % self.port
            self.api = ["--api", "llamacpp"]
        self.pid = self.proc.pid

    def libllama(self):
        with open("/proc/%d/maps" % self.pid) as f:
            for line in f:
                p = line.split()[-1]
                if "/libllama" in p and ".so" in p and "common" not in p:
                    return p
        return None

    def llama_symbols(self):
        """The llama.cpp functions T probes in this server: the profile's
        probes, less those whose only_with names no file the server maps
        (profiles/llamacpp.ini: llama_synchronize without a GPU backend), so
        that B and E set the same uprobes."""
        with open("/proc/%d/maps" % self.pid) as f:
            names = {os.path.basename(l.split()[-1]) for l in f if "/" in l}
        return [s for s in LLAMA_SYMBOLS
                if not ONLY_WITH.get(s) or
                any(fnmatch.fnmatch(n, g) for n in names for g in ONLY_WITH[s])]

    def close(self):
        stop(self.proc, 15)
        self.log.close()


def bpftrace_script(srv, path):
    with open(os.path.join(HERE, "bpftrace_baseline.bt")) as f:
        s = f.read()
    lib = srv.libllama() if srv.target != "rate" else None
    if not lib and srv.target != "rate":
        die("libllama is not mapped in the %s server" % srv.target)
    for sym in srv.llama_symbols() if lib else ():
        if sym == "llama_decode":
            # llama_batch by value at sp + 8: n_tokens and the first token's seq id
            s += ('uprobe:"%s":%s /pid == $1/ { $b = reg("sp") + 8; printf("S %%d %%llu %%d %%d\\n",'
                  ' tid, nsecs, *(int32 *)$b, *(int32 *)(*(uint64 *)(*(uint64 *)($b + 40)))); }\n'
                  % (lib, sym))
        else:
            s += 'uprobe:"%s":%s /pid == $1/ { printf("U %%d %%llu\\n", tid, nsecs); }\n' % (lib, sym)
        s += ('uretprobe:"%s":%s /pid == $1/ { printf("u %%d %%llu %%d\\n", tid, nsecs, retval); }\n'
              % (lib, sym))
    with open(path, "w") as f:
        f.write(s)


LLAMA_SYMBOLS = ("llama_decode", "llama_tokenize", "llama_sampler_sample", "llama_synchronize")


def profile_only_with(path):
    """{symbol: [only_with globs]} of an engine profile (its probe sections)."""
    out, sym = {}, None
    with open(path) as f:
        for line in f:
            line = line.split(";", 1)[0].strip()
            if line.startswith("[probe "):
                sym = None
            elif "=" in line:
                k, v = (x.strip() for x in line.split("=", 1))
                if k == "symbol":
                    sym = v
                elif k == "only_with" and sym:
                    out.setdefault(sym, []).append(v)
    return out


ONLY_WITH = profile_only_with(os.path.join(ROOT, "profiles", "llamacpp.ini"))


def build_empty_hooks(work):
    arch = {"x86_64": "x86", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    obj, exe = os.path.join(work, "empty_hooks.bpf.o"), os.path.join(work, "empty_hooks")
    subprocess.run(["clang", "-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_" + arch,
                    "-I", os.path.join(ROOT, "vmlinux", arch), "-c",
                    os.path.join(HERE, "empty_hooks.bpf.c"), "-o", obj], check=True)
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(HERE, "empty_hooks.c"), "-lbpf"],
                   check=True)
    return exe, obj


def start_empty(srv, work, tag):
    lib = srv.libllama() if srv.target != "rate" else None
    specs = ["%s:%s" % (lib, s) for s in srv.llama_symbols()] if lib else []
    out = os.path.join(work, tag + ".out")
    p = subprocess.Popen([os.path.join(work, "empty_hooks"), os.path.join(work, "empty_hooks.bpf.o")]
                         + specs, stdout=open(out, "w"), stderr=subprocess.STDOUT)
    if not wait_line(out, "attached", 30, p):
        die("empty_hooks did not start: " + open(out).read()[-500:])
    return p


def start_tracer(cfg, srv, work, tag):
    log = os.path.join(work, tag + ".log")
    if cfg == "E":
        return start_empty(srv, work, tag)
    if cfg == "B":
        bt = os.path.join(work, srv.target + ".bt")
        bpftrace_script(srv, bt)
        out = os.path.join(work, tag + ".out")
        p = subprocess.Popen(["bpftrace", "-o", out, bt, str(srv.pid), str(srv.port)],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                             env=dict(os.environ, BPFTRACE_STRLEN="200"))
        if not wait_line(out, "Attaching", 180, p):
            die("bpftrace did not start: " + open(log).read()[-500:])
        time.sleep(1)	# "Attaching" comes before the probes are attached
        return p
    exe = TTFTRACE_B if cfg == "Tb" else TTFTRACE
    decoy = subprocess.Popen(["sleep", "3600"]) if cfg == "Tu" else None
    what = ["-p", str(decoy.pid)] if decoy else ["--port", str(srv.port)]
    p = subprocess.Popen([exe] + what + ["--json", "-o", os.path.join(work, tag + ".ndjson")]
                         + TT_ARGS[cfg], stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                         env=dict(os.environ, **TT_ENV.get(cfg, {})))
    p.decoy = decoy
    if not wait_line(log, "Hit Ctrl-C to end", 60, p):
        die("ttftrace did not start: " + open(log).read()[-500:])
    # the profile attaches once libllama is seen; a build that found no
    # profile would be compared without the uprobes' cost
    if cfg not in ("Tnu", "Tu") and srv.target != "rate" and \
            not wait_line(log, "uprobe(s) attached", 10, p):
        stop(p, 2)
        die("ttftrace (%s) attached no engine uprobes to the %s server in 10 s; its log ends:\n%s"
            % (cfg, srv.target, open(log).read()[-500:]),
            "a build outside the tree finds profiles/ next to its binary or in "
            "$TTFTRACE_PROFILE_DIR")
    return p


def one_round(cfg, srv, args, work, tag, seed):
    tr = start_tracer(cfg, srv, work, tag) if cfg != "N" else None
    ids = prog_ids(tr.pid) if tr else set()
    before = prog_stats(ids) if ids else {}
    c, n, m = (args.rate_c, args.rate_n, args.rate_m) if srv.target == "rate" else (args.c, args.n,
                                                                                   args.m)
    t0, s0, w0 = (cpu_ns(tr.pid) if tr else 0), srv.cpu(srv.pid), time.monotonic_ns()
    res = os.path.join(work, tag + ".json")
    rc = subprocess.run([LOADGEN, "-u", srv.url, "-c", str(c), "-n", str(n),
                         "-m", str(m), "-P", "64", "--ignore-eos", "-s", str(seed), "-q", "-o", res]
                        + srv.api).returncode
    if rc != 0:
        die("loadgen failed (exit %d) in round %s" % (rc, tag), "see " + res)
    t1, s1, w1 = (cpu_ns(tr.pid) if tr else 0), srv.cpu(srv.pid), time.monotonic_ns()
    after = prog_stats(ids) if ids else {}
    stop(tr, 2)
    if getattr(tr, "decoy", None):
        tr.decoy.kill()
        tr.decoy.wait()
    lost, seen = tracer_summary(os.path.join(work, tag + ".ndjson")) \
        if tr and cfg not in ("B", "E") else (None, None)
    with open(res) as f:
        tokens = json.load(f)["summary"]["tokens"]
    progs = {k: [after[k][0] - before.get(k, [0, 0])[0], after[k][1] - before.get(k, [0, 0])[1]]
             for k in after}
    return {"tokens": tokens, "tracer_ns": t1 - t0, "server_ns": s1 - s0, "progs": progs,
            "wall_ns": w1 - w0, "lost": lost, "seen": seen}


def trap_bench(work):
    exe = os.path.join(work, "uprobe_trap")
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(HERE, "uprobe_trap.c")],
                   check=True)
    n = 200000
    p = subprocess.Popen([exe, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    base = float(p.stdout.readline().split()[1])
    log = os.path.join(work, "trap.log")
    tr = subprocess.Popen([TTFTRACE, "-p", str(p.pid), "--no-sched", "--probe",
                           "%s:ttf_trap_target=sample" % exe, "--json", "-o", "/dev/null"],
                          stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    if not wait_line(log, "Hit Ctrl-C to end", 60, tr):
        die("ttftrace did not attach to the trap benchmark: " + open(log).read()[-500:])
    time.sleep(0.5)
    ids = prog_ids(tr.pid)
    before = prog_stats(ids)
    p.stdin.write("go\n")
    p.stdin.flush()
    probed = float(p.stdout.readline().split()[1])
    after = prog_stats(ids)
    p.wait()
    stop(tr, 2)
    # only the engine programs (the network ones run for every syscall of the machine)
    eng = [k for k in after if k in ENGINE_PROGS]
    runs = sum(after[k][0] - before.get(k, [0, 0])[0] for k in eng)
    prog_ns = sum(after[k][1] - before.get(k, [0, 0])[1] for k in eng)
    per_call_prog = prog_ns / n
    return {"base_ns": base, "probed_ns": probed, "runs_per_call": runs / n,
            "prog_ns_per_call": per_call_prog,
            "trap_ns_per_call": probed - base - per_call_prog}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def report(target, rounds, cfgs):
    print("\n== %s: medians over %d rounds (per streamed token; ratios per round)" %
          (target, len(rounds)))
    print("%-4s %11s %10s %10s %11s %12s %10s" % ("cfg", "tracer us", "BPF us", "total us",
                                                  "server us", "server vs N", "tok/round"))
    totals = {}
    for cfg in cfgs:
        rs = [r[cfg] for r in rounds]
        tr = [x["tracer_ns"] / x["tokens"] / 1000 for x in rs]
        bpf = [sum(v[1] for v in x["progs"].values()) / x["tokens"] / 1000 for x in rs]
        tot = [a + b for a, b in zip(tr, bpf)]
        srv = [x["server_ns"] / x["tokens"] / 1000 for x in rs]
        vs_n = [(x["server_ns"] / x["tokens"]) / (r["N"]["server_ns"] / r["N"]["tokens"]) - 1
                for x, r in zip(rs, rounds)]
        totals[cfg] = tot
        print("%-4s %11.2f %10.2f %10.2f %11.2f %+11.1f%% %10d" % (
            cfg, med(tr), med(bpf), med(tot), med(srv), 100 * med(vs_n),
            med([x["tokens"] for x in rs])))
    print("\nper round: tracer CPU as % of one core, records lost, tokens counted / loadgen's")
    for cfg in cfgs:
        rs = [r[cfg] for r in rounds if r[cfg].get("wall_ns") and r[cfg].get("lost") is not None]
        if rs:
            print("%-4s %s" % (cfg, "  ".join("%.1f%% %d %d/%d" % (
                100 * x["tracer_ns"] / x["wall_ns"], x["lost"], x["seen"] or 0, x["tokens"])
                for x in rs)))
    if "T" in cfgs and "B" in cfgs:
        print("T/B total cost per token (median of per-round ratios): %.2f" %
              med([t / b if b else None for t, b in zip(totals["T"], totals["B"])]))
    if "T" in cfgs and "E" in cfgs:
        bpf = {c: [sum(v[1] for v in r[c]["progs"].values()) / r[c]["tokens"] for r in rounds]
               for c in ("T", "E")}
        print("T's BPF time / the empty programs' on the same hooks (median of per-round "
              "ratios): %.2f" % med([t / e if e else None for t, e in zip(bpf["T"], bpf["E"])]))
    if "T" in cfgs and "Tu" in cfgs:
        bpf = {c: [sum(v[1] for v in r[c]["progs"].values()) / r[c]["tokens"] for r in rounds]
               for c in ("T", "Tu")}
        print("Tu's BPF time (the server untraced) / T's (median of per-round ratios): %.2f"
              % med([u / t if t else None for u, t in zip(bpf["Tu"], bpf["T"])]))
    for c in ("T", "Tr", "Tb", "Tu", "E"):
        if c in cfgs:
            prog_table(c, rounds)


def prog_table(c, rounds):
    print("\nBPF programs of %s (medians): runs/token, ns/run, us/token" % c)
    names = sorted({k for r in rounds for k in r[c]["progs"]})
    rows = []
    for k in names:
        cnt = [r[c]["progs"].get(k, [0, 0])[0] / r[c]["tokens"] for r in rounds]
        ns = [r[c]["progs"][k][1] / r[c]["progs"][k][0]
              if r[c]["progs"].get(k, [0, 0])[0] else None for r in rounds]
        us = [r[c]["progs"].get(k, [0, 0])[1] / r[c]["tokens"] / 1000 for r in rounds]
        rows.append((med(us), k, med(cnt), med(ns)))
    for us, k, cnt, ns in sorted(rows, reverse=True):
        if cnt > 0:
            print("  %-28s %8.2f %9.0f %8.3f" % (k, cnt, ns, us))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default="demo,llama,rate")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-c", type=int, default=8)
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("-m", type=int, default=64)
    ap.add_argument("--rate-c", type=int, default=1000, help="the rate target's connections")
    ap.add_argument("--rate-n", type=int, default=2000, help="the rate target's requests")
    ap.add_argument("--rate-m", type=int, default=256, help="the rate target's tokens per request")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--report-only", metavar="ROUNDS_JSON",
                    help="print the report of a kept TARGET.rounds.json (e.g. of a run cut short)")
    args = ap.parse_args()
    cfgs = args.configs.split(",")
    if args.report_only:
        with open(args.report_only) as f:
            rounds = json.load(f)
        report(os.path.basename(args.report_only).split(".")[0], rounds, cfgs)
        return
    if "N" not in cfgs or any(c not in CONFIGS + EXTRA_CONFIGS for c in cfgs):
        die("--configs: N and any of %s" % ",".join(CONFIGS + EXTRA_CONFIGS))
    if "Tb" in cfgs and not (TTFTRACE_B and os.access(TTFTRACE_B, os.X_OK)):
        die("--configs Tb needs TTFTRACE_B=PATH, an executable ttftrace build")
    if os.geteuid() != 0:
        die("the benchmark loads BPF programs and must run as root", "sudo bench/cost.sh")
    for b in (TTFTRACE, LOADGEN):
        if not os.access(b, os.X_OK):
            die("%s is not built" % b, "make")
    for t in ("bpftool", "gcc") + (("bpftrace",) if "B" in cfgs else ()):
        if not shutil.which(t):
            die("%s not found" % t, "tools/setup.sh")
    targets = args.targets.split(",")
    if "llama" in targets and not os.access(os.path.join(LLAMA_BIN, "llama-server"), os.X_OK):
        die("llama-server is not built", "tools/setup.sh (builds it from the bundle in tools/demo)")
    work = tempfile.mkdtemp(prefix="ttftrace-cost.")
    with open(STATS) as f:
        stats_orig = f.read().strip()
    mounted = False
    try:
        if "B" in cfgs and not os.path.exists(TRACEFS + "/events/sock"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=True)
            mounted = True
        with open(STATS, "w") as f:
            f.write("1")
        if "E" in cfgs:
            build_empty_hooks(work)
        trap = trap_bench(work)
        print("uprobe trap (bench/uprobe_trap.c, 200,000 calls, uprobe + uretprobe): "
              "%.1f ns per call unprobed, %.1f probed; BPF programs %.1f ns per call "
              "(%.1f runs); the traps themselves %.1f ns per call" % (
                  trap["base_ns"], trap["probed_ns"], trap["prog_ns_per_call"],
                  trap["runs_per_call"], trap["trap_ns_per_call"]))
        for target in targets:
            srv = Server(target, work, args.c)
            try:
                one_round("N", srv, args, work, "%s-warmup" % target, 1)
                rounds = []
                for r in range(args.rounds):
                    res = {}
                    order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
                    for i, cfg in enumerate(order):
                        # a new seed per round: new prompts, no prompt-cache hits
                        res[cfg] = one_round(cfg, srv, args, work, "%s-%s-%d" % (target, cfg, r),
                                             1000 * (r + 1) + i)
                    rounds.append(res)
                    print("cost: %s round %d of %d done (%s)" % (target, r + 1, args.rounds,
                                                                 " ".join(order)), flush=True)
                    with open(os.path.join(work, target + ".rounds.json"), "w") as f:
                        json.dump(rounds, f)	# kept after each round (--report-only)
                report(target, rounds, cfgs)
            finally:
                srv.close()
    finally:
        with open(STATS, "w") as f:
            f.write(stats_orig)
        if mounted:
            subprocess.run(["umount", TRACEFS])
        if args.keep:
            print("cost: work files kept in " + work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
