#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Print client-side (loadgen) and server-side (ttftrace) timings side by side.

Requests are joined on the connection and the request's place on it: the
client's local port is the remote port in ttftrace's "conn" field
("laddr:lport<-raddr:rport"), and loadgen's conn_seq counts like ttftrace's.

The client's TTFT runs from "request headers sent" to "first token event
received"; ttftrace's from "first request byte arrived" to "first token
written or transmitted". On loopback the client's is a little longer.

usage: compare.py LOADGEN.json TTFTRACE.ndjson
"""
import json
import re
import sys

CONN_RE = re.compile(r"<-\[?[^\]]*\]?:(\d+)$")
PCTS = ("p50", "p90", "p95", "p99")


def fmt(v, width=8, prec=2):
    if v is None:
        return "-".rjust(width)
    if isinstance(v, float):
        return ("%.*f" % (prec, v)).rjust(width)
    return str(v).rjust(width)


def load_ndjson(path):
    reqs, summary, bad = [], None, 0
    try:
        f = open(path)
    except OSError as e:
        print("Error: cannot read %s: %s" % (path, e.strerror), file=sys.stderr)
        return [], None, 0
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if o.get("type") == "request":
                reqs.append(o)
            elif o.get("type") == "summary":
                summary = o
    return reqs, summary, bad


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            client = json.load(f)
    except (OSError, ValueError) as e:
        print("Error: cannot read loadgen results %s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    server, ssum, bad = load_ndjson(argv[2])

    by_key = {}
    for s in server:
        m = CONN_RE.search(s.get("conn") or "")
        if m:
            by_key[(int(m.group(1)), s.get("conn_seq", 0))] = s

    print("%-17s | %-24s | %-24s | %s" % ("", "client (loadgen)".center(24),
                                            "server (ttftrace)".center(24), "client-server"))
    print("%-4s %-12s | %8s %8s %6s | %8s %8s %6s | %8s" % (
        "req", "port#seq", "TTFT ms", "TPOT ms", "tokens",
        "TTFT ms", "TPOT ms", "tokens", "TTFT ms"))
    matched = 0
    for r in client.get("requests", []):
        key = (r.get("local_port"), r.get("conn_seq", 0))
        s = by_key.get(key)
        port = "%s#%s" % key
        d = None
        if s is not None:
            matched += 1
            if r.get("ttft_ms") is not None and s.get("ttft_ms") is not None:
                d = r["ttft_ms"] - s["ttft_ms"]
        s = s or {}
        flags = ",".join(f for f in s.get("flags") or [] if f != "stream")
        note = "  [%s]" % flags if flags else ""
        if r.get("error") is not None:
            note += "  client error: " + r["error"]
        print("%-4s %-12s | %s %s %s | %s %s %s | %s%s" % (
            r.get("index"), port,
            fmt(r.get("ttft_ms")), fmt(r.get("tpot_ms")), fmt(r.get("tokens"), 6),
            fmt(s.get("ttft_ms")), fmt(s.get("tpot_ms")), fmt(s.get("tokens"), 6),
            fmt(d), note))

    n_client = len(client.get("requests", []))
    print("\nmatched %d of %d client requests to %d traced requests%s" % (
        matched, n_client, len(server),
        " (%d unparseable NDJSON lines)" % bad if bad else ""))

    csum = client.get("summary", {})
    print("\n%-17s | %s | %s" % ("summary", "client".center(8 * 4 + 3),
                                "ttftrace".center(8 * 4 + 3)))
    print("%-17s | %s | %s" % ("", " ".join(p.rjust(8) for p in PCTS),
                               " ".join(p.rjust(8) for p in PCTS)))
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        c = csum.get(k) or {}
        s = (ssum or {}).get(k) or {}
        print("%-17s | %s | %s" % (k, " ".join(fmt(c.get(p)) for p in PCTS),
                                   " ".join(fmt(s.get(p)) for p in PCTS)))
    print("client: %s/%s ok, %s tokens in %s s, %s tokens/s" % (
        csum.get("ok"), csum.get("requests"), csum.get("tokens"), csum.get("wall_s"),
        csum.get("throughput_tok_s")))
    if ssum is None:
        print("ttftrace: no summary line in %s" % argv[2])
    if matched < n_client:
        print("note: unmatched requests were not reported by ttftrace (see its counters "
              "for drops)")
    print_stages(client, by_key, ssum)
    print_hops(client, by_key, ssum)
    return 0


STAGES = ("net_in", "read_wait", "frontend", "queue", "prefill", "copy", "emit", "net_out",
          "server")


def print_stages(client, by_key, ssum):
    """Where each request's TTFT went, as ttftrace split it (ms)."""
    shown = [st for st in STAGES
             if any((s.get("stages_ms") or {}).get(st) is not None for s in by_key.values())]
    if not shown:
        return
    print("\n== where the TTFT went (ttftrace stages, ms) ==")
    print("%-4s %-12s %8s | %s | %s" % ("req", "port#seq", "TTFT", " ".join(
        st[:9].rjust(9) for st in shown), "attribution"))
    for r in client.get("requests", []):
        key = (r.get("local_port"), r.get("conn_seq", 0))
        s = by_key.get(key)
        if not s or not s.get("stages_ms"):
            continue
        st = s["stages_ms"]
        how = s.get("attribution") or ""
        if s.get("inferred_by"):
            how += " (%s)" % s["inferred_by"]
        print("%-4s %-12s %8s | %s | %s" % (
            r.get("index"), "%s#%s" % key, fmt(s.get("ttft_ms")),
            " ".join(fmt(st.get(x), 9) for x in shown), how))
    stages = (ssum or {}).get("stages_ms") or {}
    if stages:
        print("%-26s | %s" % ("P95 over requests", " ".join(
            fmt((stages.get(x) or {}).get("p95"), 9) for x in shown)))
    if ssum and ssum.get("tail_stage"):
        print("the tail (requests at or above P95 TTFT) is dominated by: %s" % ssum["tail_stage"])
    fit = (ssum or {}).get("prefill_fit")
    if fit:
        print("prefill vs prompt: %.2f ms + %.4f ms/token (r2 %.3f)"
              % (fit["intercept_ms"], fit["ms_per_token"], fit["r2"]))


HOP_STAGES = ("net_in", "read_wait", "gateway_in", "upstream", "upstream_out", "gateway_out",
              "net_out")
UP_STAGES = ("read_wait", "frontend", "queue", "prefill", "emit", "server")


def print_hops(client, by_key, ssum):
    """Requests through a gateway: the hop split, and the upstream's own split (ms)."""
    if not any(s.get("hops") for s in by_key.values()):
        return
    print("\n== hops: the gateway and the server behind it (ms) ==")
    print("%-4s %8s | %s || %s | %s" % (
        "req", "TTFT", " ".join(x[:11].rjust(11) for x in HOP_STAGES),
        " ".join(x[:9].rjust(9) for x in UP_STAGES), "upstream, join"))
    for r in client.get("requests", []):
        s = by_key.get((r.get("local_port"), r.get("conn_seq", 0)))
        if not s or not s.get("hops"):
            continue
        gw, up = s["hops"]
        hs, us = s["hop_stages_ms"], up.get("stages_ms") or {}
        who = "%s pid %s, %s" % (up.get("comm") or "port %s" % up["port"], up.get("pid"),
                                 gw["join"]) if up.get("pid") else up.get("merged_why")
        if gw.get("buffering"):
            who += "; %s buffers (held %.1f ms)" % (gw["comm"], gw["held_ms"])
        print("%-4s %8s | %s || %s | %s" % (
            r.get("index"), fmt(s.get("ttft_ms")), " ".join(fmt(hs.get(x), 11) for x in HOP_STAGES),
            " ".join(fmt(us.get(x), 9) for x in UP_STAGES), who))
    h = (ssum or {}).get("hops")
    if h:
        print("%-13s | %s" % ("P95", " ".join(fmt((h["stages_ms"].get(x) or {}).get("p95"), 11)
                                            for x in HOP_STAGES)))
        print("the tail (P95) is longest in: %s; %d of %d joined exactly, %d buffered"
              % (h["tail_stage"], h["joined_exact"], h["requests"], h["buffered"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
