# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for the message-hop split tests (docs/design.md D15, D16)."""


def bounds(rec, stages):
    """Each stage's absolute start (CLOCK_MONOTONIC ns), back from the first
    token: the stages of rec["hop_stages_ms"] sum to TTFT."""
    st, out, x = rec["hop_stages_ms"], {}, rec["t_first_token_ns"]
    for k in reversed(stages):
        x -= st[k] * 1e6
        out[k] = x
    return out


def check_order(rec, order):
    """order: [(what, ok)]: every crossing on the right side of its handoff."""
    assert all(ok for _, ok in order), (rec["id"], [k for k, ok in order if not ok],
                                        rec["hop_stages_ms"])
