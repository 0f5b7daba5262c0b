# SPDX-License-Identifier: GPL-2.0-only
"""Run every cmocka unit-test binary (built from tests/unit/<layer>/test_*.c) as one pytest test.
tests/unit/cupti/ is built only where `make` found CUDA 13's CUPTI headers (.output/cupti.conf):
without them its tests are skipped, with the reason."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from conftest import cupti_build  # noqa: E402

CUPTI = cupti_build()
BINS = sorted(
    p for p in glob.glob(os.path.join(ROOT, ".output", "tests", "unit", "*", "test_*"))
    if os.access(p, os.X_OK) and not p.endswith((".o", ".d"))
)
SRCS = sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "*", "test_*.c")))
CUPTI_SRCS = [s for s in SRCS if os.path.basename(os.path.dirname(s)) == "cupti"]
SKIP_CUPTI = ("tests/unit/cupti not built: %s (make CUDA_HOME=/path/to/cuda-13)"
              % (CUPTI["why"] or CUPTI["tests_why"]))


def test_unit_binaries_built():
    """One binary per source that this build can build: all, or all but tests/unit/cupti/."""
    want = SRCS if CUPTI["tests"] else [s for s in SRCS if s not in CUPTI_SRCS]
    want = {os.path.relpath(s, os.path.join(ROOT, "tests", "unit"))[:-2] for s in want}
    got = {os.path.relpath(b, os.path.join(ROOT, ".output", "tests", "unit")) for b in BINS}
    assert want <= got, "run `make` first: not built: %s" % sorted(want - got)
    assert len(BINS) == len(want), sorted(got - want)


def cmocka_params():
    """Every binary built; without the CUPTI headers, tests/unit/cupti/ as skipped, with why."""
    params = [pytest.param(b, id=os.path.basename(b)) for b in BINS]
    if not CUPTI["tests"]:
        params += [pytest.param(s, id=os.path.basename(s)[:-2], marks=pytest.mark.skip(
            reason=SKIP_CUPTI)) for s in CUPTI_SRCS]
    return params


@pytest.mark.parametrize("binary", cmocka_params())
def test_cmocka(binary):
    p = subprocess.run([binary], capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[  PASSED  ]" in out, out
