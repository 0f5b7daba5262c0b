# SPDX-License-Identifier: GPL-2.0-only
"""--help is wrapped by argp at the terminal's width ($COLUMNS), not by hand.

At 80 and 120 columns: no line reaches the width, no line is only blanks
(glibc's argp writes one when a text ends exactly at the margin), and every
example is whole: its command line on a line of its own, the same at both
widths, with its description indented below it; the EXIT STATUS table is
the same at 80 columns as at 200 (none of its lines is wrapped).
"""
import os
import subprocess

import pytest

from conftest import TTFTRACE, require_built

COMMANDS = ["", "pcie", "copybw", "replay", "report", "gpu-attach"]


def help_text(cmd, columns):
    require_built(TTFTRACE)
    env = dict(os.environ, COLUMNS=str(columns))
    env.pop("ARGP_HELP_FMT", None)
    args = [TTFTRACE] + ([cmd] if cmd else []) + ["--help"]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def examples(text):
    """(command, description) pairs of the EXAMPLES section."""
    lines = text.splitlines()
    start = lines.index("EXAMPLES:") + 1
    out = []
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.strip():
            break
        if line.startswith("      "):
            assert out and out[-1][1] is None, "description without a command: %r" % line
            out[-1] = (out[-1][0], line.strip())
        else:
            assert line.startswith("  ") and not line.startswith("   "), line
            assert out == [] or out[-1][1] is not None, "two command lines: %r" % line
            out.append((line.strip(), None))
    return out


def exit_table(text):
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("EXIT STATUS:"))
    end = lines.index("", start)
    assert end - start > 3, lines[start:]
    return lines[start:end]


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c or "ttftrace" for c in COMMANDS])
def test_help_fits_the_width(cmd):
    widths = {}
    for columns in (80, 120):
        text = help_text(cmd, columns)
        for line in text.splitlines():
            assert len(line) < columns, (columns, line)
            assert line == "" or line.strip(), "a line of blanks at %d columns" % columns
        widths[columns] = max(len(l) for l in text.splitlines())
        ex = examples(text)
        assert len(ex) >= 3, ex
        for c, what in ex:
            assert what, "example without a description: %r" % c
            assert "ttftrace" in c and "#" not in c, c
        if cmd:
            assert any(cmd in c.split() or "--" + cmd in c.split() for c, _ in ex), ex
        if columns == 80:
            ex80 = ex
    # the same examples, unbroken, at both widths; the wider help uses the width
    assert examples(help_text(cmd, 120)) == ex80
    # the exit code table is laid out for 80 columns: argp breaks none of its lines
    assert exit_table(help_text(cmd, 80)) == exit_table(help_text(cmd, 200))
    if cmd == "":
        assert widths[120] > 80, widths
