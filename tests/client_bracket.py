# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace's TTFT, TPOT and ITL held to an independent client's view of the
same request (tests/indep_client.py, or tests/fixtures/sse_client.c where
there is no Python): the bracket the end-to-end, Perfetto and QEMU tests share.
Standard library only, so tests/qemu/run.py can use it outside pytest.

Client record fields (both clients write them): index, local_port, conn_seq,
start_ns and sent_ns (clock reads just before and after its send()),
first_token_ns, token_ns (the kernel's receive stamp, SO_TIMESTAMPNS, of the
segment that brought each token event's last byte), token_shared (that stamp
is also the next event's), tokens, ttft_ms.

Why the bracket holds on loopback, both sides on CLOCK_MONOTONIC: ttftrace's
TTFT starts when the request reaches the server's socket, after the client's
start and before its send() returned; it ends when the first token's skb
leaves through the loopback device, before the client's kernel stamps it. So
  client (first_token - sent) - D  <=  ttftrace TTFT  <=  client TTFT + clock reads
where D is how long after the transmit the receive stamp was taken, and every
token event ttftrace saw leave did so before the client's stamp of it.
A stamp is late by more than D when its segment waited unread in the socket
and a later one was merged into it: TCP then keeps the later segment's stamp
(net/ipv4/tcp_input.c tcp_try_coalesce), and both events carry it. Such a
"shared" stamp bounds its event only from above. Where neither end of a gap
between two token events (ITL) is shared, the gap differs from the client's
by at most D either way; TPOT (first to last token event over tokens - 1), when
neither is shared, by at most D / (tokens - 1).
"""

# Clock reads: both sides read CLOCK_MONOTONIC (bpf_ktime_get_ns, time.monotonic_ns
# or clock_gettime); the stamps are converted from CLOCK_REALTIME by an offset read once.
CLOCK_EPS_MS = 0.1


def rx_delay_ms(client_ttft_ms):
    """D, the most a receive stamp may trail the transmit ttftrace saw: 0.01 to
    0.13 ms on an idle machine, up to 6 ms with the 2 cores loaded (load average
    7) over the longest TTFTs; allowed as 1 ms + 2 % of the client's TTFT (the
    bound test_demo_llama held with loadgen before)."""
    return 1.0 + 0.02 * client_ttft_ms


def _ms(ns):
    return ns / 1e6


def check(c, s, delay_ms=rx_delay_ms):
    """Problems with ttftrace's record s of the client's request c, as strings
    with the values seen; [] when its TTFT, ITL and TPOT lie in the bracket."""
    key = "req %d (port %d #%d)" % (c["index"], c["local_port"], c["conn_seq"])
    bad = []
    c_ttft = c["ttft_ms"]
    if c_ttft is None or not c["first_token_ns"]:
        return ["%s: the client saw no token" % key]
    d = delay_ms(c_ttft) + CLOCK_EPS_MS
    s_ttft = s.get("ttft_ms")
    if s_ttft is None:
        return ["%s: ttftrace ttft_ms null (client %.3f ms)" % (key, c_ttft)]
    ts, shared = c["token_ns"], c["token_shared"]
    lo = _ms(c["first_token_ns"] - c["sent_ns"]) - d if not shared[0] else 0.0
    hi = c_ttft + CLOCK_EPS_MS
    if not lo <= s_ttft <= hi:
        bad.append("%s: TTFT ttftrace %.3f ms outside the client's [%.3f, %.3f] (client %.3f)"
                   % (key, s_ttft, lo, hi, c_ttft))

    s_itl = s.get("itl_ms") or []
    if len(s_itl) != len(ts) - 1:
        return bad + ["%s: ttftrace has %d ITL gaps, the client %d"
                      % (key, len(s_itl), len(ts) - 1)]
    # every token event left the server before the client's stamp of it
    t = _ms(s["t_first_token_ns"])
    for i, gap in enumerate([0.0] + s_itl):
        t += gap
        if t > _ms(ts[i]) + CLOCK_EPS_MS:
            bad.append("%s: token event %d left the server %.3f ms after the client's stamp"
                       % (key, i, t - _ms(ts[i])))
    for i, a in enumerate(s_itl):
        b = _ms(ts[i + 1] - ts[i])
        if not shared[i] and not shared[i + 1] and abs(a - b) > d:
            bad.append("%s: ITL %d ttftrace %.3f ms, client %.3f ms (allowed +-%.3f)"
                       % (key, i, a, b, d))

    n = c["tokens"]
    if n >= 2 and len(ts) >= 2 and not shared[0] and not shared[-1]:
        c_tpot = _ms(ts[-1] - ts[0]) / (n - 1)
        s_tpot = s.get("tpot_ms")
        if s_tpot is None or abs(s_tpot - c_tpot) > d / (n - 1):
            bad.append("%s: TPOT ttftrace %s ms, client %.3f ms (allowed +-%.3f)"
                       % (key, s_tpot, c_tpot, d / (n - 1)))
    return bad


def clean_gaps(c):
    """How many of the client's ITL gaps have no shared stamp at either end."""
    sh = c["token_shared"]
    return sum(1 for a, b in zip(sh, sh[1:]) if not a and not b)


def spread(pairs):
    """For the log: (min and max of client TTFT - ttftrace TTFT, worst |ITL difference|
    over gaps with no shared stamp, such gaps, all gaps), ms, over joined pairs."""
    dt = [c["ttft_ms"] - s["ttft_ms"] for c, s in pairs if s.get("ttft_ms") is not None]
    di = []
    for c, s in pairs:
        ts, sh = c["token_ns"], c["token_shared"]
        for i, a in enumerate((s.get("itl_ms") or [])[:len(ts) - 1]):
            if not sh[i] and not sh[i + 1]:
                di.append(abs(a - _ms(ts[i + 1] - ts[i])))
    return (min(dt, default=0.0), max(dt, default=0.0), max(di, default=0.0), len(di),
            sum(max(len(c["token_ns"]) - 1, 0) for c, _ in pairs))


SPREAD_FMT = ("client TTFT - ttftrace TTFT: min %.3f max %.3f ms; worst ITL difference "
              "%.3f ms over %d of %d gaps (the rest have a shared stamp)")
