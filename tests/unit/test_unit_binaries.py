# SPDX-License-Identifier: GPL-2.0-only
"""Run every cmocka unit-test binary (built from tests/unit/<layer>/test_*.c) as one pytest test."""
import glob
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINS = sorted(
    p for p in glob.glob(os.path.join(ROOT, ".output", "tests", "unit", "*", "test_*"))
    if os.access(p, os.X_OK) and not p.endswith((".o", ".d"))
)


def test_unit_binaries_built():
    srcs = glob.glob(os.path.join(ROOT, "tests", "unit", "*", "test_*.c"))
    assert len(BINS) == len(srcs), "run `make` first: some unit tests are not built"


@pytest.mark.parametrize("binary", BINS, ids=[os.path.basename(b) for b in BINS])
def test_cmocka(binary):
    p = subprocess.run([binary], capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[  PASSED  ]" in out, out
