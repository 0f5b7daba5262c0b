# SPDX-License-Identifier: GPL-2.0-only
"""A gateway's own timers as truth for ttftrace's hop stages (docs/hops.md,
"Held to nginx's and HAProxy's own timers").

nginx writes one access log line per request (NGINX_LOG_FORMAT), HAProxy one
log line per request (HAPROXY_LOG_FORMAT); each line carries the client's
port, the key the test's own client knows, so a truth row is never picked
with ttftrace's output. Every timer is in whole milliseconds.

Which stages each timer covers (docs/metrics.md M20; the timers' meanings:
nginx's ngx_http_upstream_module and ngx_http_log_module variables, HAProxy
2.6 configuration manual section 8.4). Both clocks start where nginx or
HAProxy read the client request: the end of ttftrace's `read_wait`.

- nginx `$upstream_connect_time`, HAProxy `TR+Tw+Tc`: `gateway_in` (the
  gateway read the request, parsed it and connected; the request is written
  right after, in the same event loop turn).
- nginx `$upstream_header_time`, HAProxy `TR+Tw+Tc+Tr`: until the upstream's
  response header was read. On a whole (non-streamed) response the header
  and the body (the token) come in one write: `gateway_in + upstream +
  upstream_out`. The fixture server writes a stream's header at once: nginx
  sends it on within microseconds, so there it ends with the client's TTFB,
  `ttfb - net_in - read_wait`. HAProxy's stream left the host only with its
  last byte (header and tokens; the test's client saw the same, first token
  to end 0.1 ms, and ttftrace's `net_out` shows the hold): TTFB ends there,
  so on a stream HAProxy's header timer has no ttftrace figure.
- nginx `$upstream_response_time`, `$request_time`, HAProxy `Ta`: until the
  response's last byte: `e2e - net_in - read_wait` (on a whole response E2E
  is TTFT, so this holds `gateway_out + net_out` too).
- No timer: `net_in` and `read_wait` (before either gateway's first read);
  HAProxy's `Th`, `Ti` and `Tt` (accept to first byte, and to close) cover
  no stage.
"""
import re

# nginx variables (nginx.org/en/docs/http/ngx_http_upstream_module.html#variables,
# ngx_http_core_module.html#variables): seconds with millisecond resolution.
NGINX_LOG_FORMAT = ("$remote_port $msec $request_time $upstream_connect_time "
                    "$upstream_header_time $upstream_response_time $status")
# HAProxy 2.6 log-format aliases (configuration.txt 8.2.4 and 8.4): milliseconds.
HAPROXY_LOG_FORMAT = "%cp %TR %Tw %Tc %Tr %Ta %Tt %ST"

TICK_MS = 1.0


def parse_nginx(path):
    """{client port: timers in ms} from the access log; a port seen twice is an error."""
    rows = {}
    for line in open(path):
        f = line.split()
        port, status = int(f[0]), int(f[6])
        sec = [float(x) * 1e3 for x in f[2:6]]
        assert port not in rows, "client port %d logged twice" % port
        rows[port] = {"status": status, "ran": True, "request": sec[0], "connect": sec[1],
                      "header": sec[2], "response": sec[3]}
    return rows


def parse_haproxy(path):
    """{client port: timers in ms} from HAProxy's raw log lines; `ran`: no
    timer is -1 (start_haproxy's readiness probe sends no request: 400, -1)."""
    rows = {}
    for line in open(path):
        m = re.match(r"^(\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (\d+)$",
                     line.strip())
        if not m:
            continue        # HAProxy's own start-up notices share stdout
        port, tr_, tw, tc, tr, ta, tt, status = (int(x) for x in m.groups())
        assert port not in rows, "client port %d logged twice" % port
        rows[port] = {"status": status, "ran": min(tr_, tw, tc, tr, ta) >= 0,
                      "to_connect": tr_ + tw + tc,
                      "to_header": tr_ + tw + tc + tr, "active": ta, "session": tt}
    return rows


def pairs(gateway, rec, t, whole):
    """(name, ttftrace's ms, the gateway's timer ms) for one request."""
    s = rec["hop_stages_ms"]
    after_read = s["net_in"] + s["read_wait"]
    to_last = rec["e2e_ms"] - after_read
    if whole:
        to_header = s["gateway_in"] + s["upstream"] + s["upstream_out"]
    else:
        to_header = rec["ttfb_ms"] - after_read
    if gateway == "nginx":
        return [("gateway_in ~ upstream_connect_time", s["gateway_in"], t["connect"]),
                ("to header ~ upstream_header_time", to_header, t["header"]),
                ("to last byte ~ upstream_response_time", to_last, t["response"]),
                ("to last byte ~ request_time", to_last, t["request"])]
    out = [("gateway_in ~ TR+Tw+Tc", s["gateway_in"], t["to_connect"]),
           ("to last byte ~ Ta", to_last, t["active"])]
    if whole:
        out.append(("to header ~ TR+Tw+Tc+Tr", to_header, t["to_header"]))
    return out


def over_bar_ms(got_ms, timer_ms):
    """How far ttftrace's figure lies outside the bar around the timer (<= 0: inside).

    The bar is the issue's max(1 ms, 3%) plus one timer tick: each timer is
    the difference of two clock readings truncated to whole milliseconds
    (nginx: gettimeofday and CLOCK_MONOTONIC, ms; HAProxy: its ms clock), so
    the true interval lies anywhere in (timer - 1 ms, timer + 1 ms)."""
    return abs(got_ms - timer_ms) - (max(1.0, 0.03 * timer_ms) + TICK_MS)
