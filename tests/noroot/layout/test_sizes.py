# SPDX-License-Identifier: GPL-2.0-only
"""Small rooms: no source file over 700 lines in user/ or bpf/, no function over 120.

A file is about one thing and a function fits a screen (README.md, "Layout").
Functions are found as the kernel style writes them: the body opens with a
`{` in column 0 and closes with a `}` in column 0; the name is the last
identifier before a `(` on the lines above the opening brace.
"""
import glob
import os
import re

from conftest import ROOT

MAX_FILE_LINES = 700
MAX_FUNC_LINES = 120
FILES = ("user/**/*.c", "user/**/*.h", "bpf/*.bpf.c", "bpf/*.bpf.h")
FUNCS = FILES + ("cupti/*.c", "tools/**/*.c")
NAME = re.compile(r"(\w+)\s*\(")


def paths(root, patterns):
    out = set()
    for pat in patterns:
        out.update(glob.glob(os.path.join(root, pat), recursive=True))
    return sorted(p for p in out if "/node_modules/" not in p and "/llama-server/" not in p)


def long_files(root, limit=MAX_FILE_LINES):
    bad = []
    for p in paths(root, FILES):
        with open(p, errors="replace") as f:
            n = sum(1 for _ in f)
        if n > limit:
            bad.append("%s: %d lines" % (os.path.relpath(p, root), n))
    return bad


def functions(text):
    """(name, first line, length) of every column-0-braced function body."""
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and i > 0:
            j = i - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = NAME.findall(lines[j])
            start = (i, m[0] if m else "?")
        elif line.startswith("}") and start:
            yield start[1], start[0] + 1, i - start[0] + 1
            start = None


def long_functions(root, limit=MAX_FUNC_LINES):
    bad = []
    for p in paths(root, FUNCS):
        with open(p, errors="replace") as f:
            for name, line, n in functions(f.read()):
                if n > limit:
                    bad.append("%s:%d %s: %d lines" % (os.path.relpath(p, root), line, name, n))
    return bad


def test_no_file_over_700_lines():
    bad = long_files(ROOT)
    assert not bad, "\n".join(bad)


def test_no_function_over_120_lines():
    bad = long_functions(ROOT)
    assert not bad, "\n".join(bad)


def test_a_long_file_and_function_are_caught(tmp_path):
    d = tmp_path / "user" / "model"
    d.mkdir(parents=True)
    body = "\n".join("\tx += %d;" % i for i in range(130))
    (d / "big.c").write_text("static int f(int x)\n{\n%s\n\treturn x;\n}\n" % body +
                             "\n" * 600)
    (d / "ok.c").write_text("int g(void)\n{\n\treturn 0;\n}\n")
    assert long_files(str(tmp_path)) == ["user/model/big.c: 734 lines"]
    assert long_functions(str(tmp_path)) == ["user/model/big.c:2 f: 133 lines"]
