# SPDX-License-Identifier: GPL-2.0-only
"""What the attach tests (test_zmtp_attach.py, test_len32_hop.py) hold every
request to: split by the message hop, stages summing to TTFT, joined
exactly to the engine process by its id (docs/design.md D15)."""
from conftest import conn_client_port

STAGES = ["net_in", "read_wait", "frontend", "ipc_in", "queue", "prefill", "ipc_out", "emit",
          "net_out"]


def assert_split_exact(tr, results, fe_pid, eng_pid):
    """Every driven request (drive()'s results) split and joined; returns the summary's counters."""
    recs = {conn_client_port(r): r for r in tr.requests()}
    s = tr.summary()
    c = s["counters"]
    missing = [resp.local_port for _, resp in results if resp.local_port not in recs]
    assert not missing and len(recs) == len(results), (
        "%d records for %d requests; no record for client ports %s; counters %s; stderr %s"
        % (len(recs), len(results), missing[:20], c, tr.stderr[-2000:]))
    unsplit = [r for r in recs.values() if "hop_stages_ms" not in r]
    assert not unsplit, (unsplit[:1], c)
    for _, resp in results:
        rec = recs[resp.local_port]
        st = rec["hop_stages_ms"]
        assert list(st) == STAGES, st
        assert abs(sum(st.values()) - rec["ttft_ms"]) <= 0.002 * len(st), (st, rec["ttft_ms"])
        fe, eng = rec["hops"]
        assert fe["hop"] == "frontend" and eng["hop"] == "engine", rec["hops"]
        assert eng["join"] == "exact", eng
        assert eng["pid"] == eng_pid and fe["pid"] == fe_pid, rec["hops"]
    assert s["msg_hops"]["requests"] == len(results), s.get("msg_hops")
    assert c["msg_hop_joins"] == len(results), c
    assert c["msg_hop_unjoined"] == 0, c
    return c
