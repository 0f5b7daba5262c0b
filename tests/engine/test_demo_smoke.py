# SPDX-License-Identifier: GPL-2.0-only
"""`make demo`'s script (tools/demo/run.sh) with a small load: it exits 0 and
prints the client's and ttftrace's numbers side by side (root, demo engine)."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, TTFTRACE, needs_root, require_built
from e2e_helpers import LOADGEN, demo_missing_reason

pytestmark = [needs_root,
              pytest.mark.skipif(demo_missing_reason() is not None,
                                 reason=demo_missing_reason() or "")]

N = 3


def test_demo_script_prints_side_by_side(tmp_path):
    require_built(TTFTRACE)
    require_built(LOADGEN)
    env = dict(os.environ, N=str(N), C="1", M="8", RUNDIR=str(tmp_path / "run"))
    p = subprocess.run([os.path.join(ROOT, "tools", "demo", "run.sh")], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    out = p.stdout
    assert p.returncode == 0, "run.sh exit %d\n%s\n%s" % (p.returncode, out, p.stderr)
    assert "== client vs ttftrace, per request ==" in out, out
    # One table row per request: "IDX PORT#SEQ | client TTFT TPOT tokens | ttftrace ... |"
    rows = re.findall(r"^(\d+)\s+(\d+)#(\d+)\s+\|\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+\|"
                      r"\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+\|", out, re.M)
    assert sorted(int(r[0]) for r in rows) == list(range(N)), out
    for r in rows:
        assert int(r[5]) == 8 and int(r[8]) == 8, "token counts client %s ttftrace %s\n%s" % (
            r[5], r[8], out)
    assert "matched %d of %d client requests to %d traced requests" % (N, N, N) in out, out
    assert "client: %d/%d ok, %d tokens" % (N, N, 8 * N) in out, out
    for f in ("server.log", "ttftrace.ndjson", "loadgen.json"):
        assert os.path.getsize(tmp_path / "run" / f) > 0, f
