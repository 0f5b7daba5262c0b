# SPDX-License-Identifier: GPL-2.0-only
"""Docs that cannot drift (docs/README.md, README.md "Layout").

- Every section label cited in the code, the tests or the docs
  (`docs/kernel.md B14`, `docs/cases.md #17`, `case 35`, or a bare `D9`
  inside design.md itself) has a section with that label in its doc.
- docs/README.md indexes every file of docs/ and every labelled section.
- README.md's layout names only paths that exist, and names every
  top-level folder and every folder of user/ two levels deep.
- Every source or test path the docs cite (`user/model/hops/join.c`,
  `tests/root/hops/test_pd.py`) exists, so a moved file cannot leave its
  docs behind.

Each check is a function of a root path, so that the tests below can plant
a failure in a copy and see it caught.
"""
import glob
import os
import re
import shutil

from conftest import ROOT

# The label schemes: a prefix letter per doc; the field cases go by number.
SCHEMES = {"D": "design.md", "B": "kernel.md", "M": "metrics.md", "P": "protocols.md",
           "A": "cupti.md", "O": "otel.md", "T": "tls.md"}
CASES = "cases.md"
LABEL = r"(?:#\d+|[A-Z]\d+(?:\.\d+)?)"
HEADING = re.compile(r"^#{2,4} (%s)\b" % LABEL, re.M)
# a doc named, then the labels that follow it: "docs/protocols.md P8, P9",
# "docs/cases.md #14, #5", "docs/design.md D14, case 31"
CITE = re.compile(r"\b(%s)\.md((?:(?:,\s*|\s+|\s+and\s+|\s+or\s+)(?:case\s+)?%s\b)+)"
                  % ("|".join(n[:-3] for n in list(SCHEMES.values()) + [CASES]), LABEL))
CITED_LABEL = re.compile(r"(case\s+)?(%s)\b" % LABEL)
# "case 29", "Case 35", "cases 14": not C's "case 2:"
CASE_WORD = re.compile(r"\b([Cc]ase|Cases|cases)\s+#?(\d+)\b(\s*:)?")
# words that look like a doc's own labels but are not: percentiles, GPU models
NOT_LABELS = {"P50", "P90", "P95", "P97", "P98", "P99", "A10", "A30", "A40", "A100"}
SCANNED = ("README.md", "bench/README.md", "docs/*.md", "Makefile", "user/**/*.[ch]",
           "bpf/*.[ch]", "cupti/*.[ch]", "tools/**/*.[ch]", "tools/**/*.sh", "tools/**/*.py",
           "tests/**/*.py", "tests/**/*.c", "tests/**/*.sh", "tests/**/*.go", "bench/*",
           "deploy/**/*", "profiles/**/*")
# top-level folders that builds and runs create (.gitignore)
NOT_SOURCE = {"runs", "node_modules", "__pycache__"}


def doc_labels(root):
    """{doc file name: set of section labels}, for every file in docs/."""
    labels = {}
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        with open(path) as f:
            labels[os.path.basename(path)] = set(HEADING.findall(f.read()))
    return labels


def doc_of(label):
    return CASES if label.startswith("#") else SCHEMES.get(label[0])


def citations(root):
    """(where, doc, label) for every label cited under root."""
    found = []
    seen = set()
    for pattern in SCANNED:
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            if (path in seen or not os.path.isfile(path) or "/.output/" in path
                    or path == os.path.abspath(__file__)):
                continue
            seen.add(path)
            rel = os.path.relpath(path, root)
            with open(path, errors="replace") as f:
                text = f.read()
            for m in CITE.finditer(text):
                doc = m.group(1) + ".md"
                for cm in CITED_LABEL.finditer(m.group(2)):
                    label = cm.group(2)
                    if cm.group(1):
                        found.append((rel, CASES, "#" + label.lstrip("#")))
                    elif label.startswith("#") or doc != CASES:
                        found.append((rel, doc, label))
            for m in CASE_WORD.finditer(text):
                if m.group(1) == "case" and m.group(3):
                    continue
                found.append((rel, CASES, "#" + m.group(2)))
            name = os.path.basename(path)
            if rel == os.path.join("docs", name) and name in SCHEMES.values():
                prefix = [p for p, n in SCHEMES.items() if n == name][0]
                for label in re.findall(r"(?<![\w.])(%s\d+(?:\.\d+)?)\b" % prefix, text):
                    if label not in NOT_LABELS:
                        found.append((rel, name, label))
    return found


def stale_labels(root):
    labels = doc_labels(root)
    bad = set()
    for where, doc, label in citations(root):
        if label not in labels.get(doc, ()):
            bad.add("%s cites docs/%s %s, which has no such section" % (where, doc, label))
    return sorted(bad)


def unindexed(root):
    with open(os.path.join(root, "docs", "README.md")) as f:
        index = f.read()
    bad = []
    for doc, labels in doc_labels(root).items():
        if doc == "README.md":
            continue
        if "(%s)" % doc not in index:
            bad.append("docs/README.md does not link docs/%s" % doc)
        for label in sorted(labels):
            if not re.search(r"(?<![\w#.])%s(?![\w.])" % re.escape(label), index):
                bad.append("docs/README.md does not index docs/%s %s" % (doc, label))
    return bad


def layout_paths(root):
    with open(os.path.join(root, "README.md")) as f:
        text = f.read()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    # a path starts a line; an indented line goes on with the one above
    return [line.split()[0] for line in block.splitlines() if line.strip() and not line[0].isspace()]


def layout_problems(root):
    named = layout_paths(root)
    bad = ["README.md's layout names %s, which does not exist" % p
           for p in named if not os.path.exists(os.path.join(root, p))]
    folders = [d + "/" for d in sorted(os.listdir(root))
               if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")
               and d not in NOT_SOURCE]
    for pattern in ("user/*/", "user/*/*/"):
        folders += sorted(os.path.relpath(p, root) + "/"
                          for p in glob.glob(os.path.join(root, pattern))
                          if os.path.basename(p.rstrip("/")) not in NOT_SOURCE)
    # a top-level folder may be named by a path inside it (user/main.c ...)
    bad += ["README.md's layout misses %s" % d for d in folders
            if d not in named and not (d.count("/") == 1 and any(p.startswith(d) for p in named))]
    return bad


# a file of the tree named in prose: user/..., bpf/..., tests/..., tools/..., with an extension
CITED_PATH = re.compile(r"(?<![\w./-])((?:user|bpf|cupti|tests|tools|bench|deploy|profiles)"
                        r"/[\w./-]*\w\.(?:c|h|py|sh|go|js|mjs|ini|json|yml|html))\b")
PROSE = ("README.md", "bench/README.md", "docs/*.md")


def stale_paths(root, prose=PROSE):
    """'doc cites path, which does not exist' for every cited file missing under root
    (placeholders such as profiles/stacks/NAME.ini and the kernel's own tools/testing/
    are not ours)."""
    bad = []
    for pattern in prose:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            with open(path, errors="replace") as f:
                text = f.read()
            for cited in sorted(set(CITED_PATH.findall(text))):
                if re.search(r"/[A-Z]+\.", cited) or cited.startswith("tools/testing/"):
                    continue
                if not os.path.exists(os.path.join(root, cited)):
                    bad.append("%s cites %s, which does not exist"
                               % (os.path.relpath(path, root), cited))
    return bad


def test_every_cited_path_exists():
    bad = stale_paths(ROOT)
    assert not bad, "\n".join(bad)


def test_every_cited_label_has_its_section():
    bad = stale_labels(ROOT)
    assert not bad, "\n".join(bad)


def test_docs_index_lists_every_doc_and_section():
    bad = unindexed(ROOT)
    assert not bad, "\n".join(bad)


def test_readme_layout_matches_the_tree():
    bad = layout_problems(ROOT)
    assert not bad, "\n".join(bad)


def copy_of_docs(tmp_path):
    """README.md, docs/ and the folders of the tree (empty), in tmp_path."""
    shutil.copy(os.path.join(ROOT, "README.md"), tmp_path / "README.md")
    shutil.copytree(os.path.join(ROOT, "docs"), tmp_path / "docs")
    for path in layout_paths(ROOT):
        if path.endswith("/"):
            (tmp_path / path).mkdir(parents=True, exist_ok=True)
        else:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text("")
    return tmp_path


def test_a_stale_label_is_caught(tmp_path):
    """A comment that cites a section docs/design.md does not have, or a
    field case cases.md does not tell, is found."""
    root = copy_of_docs(tmp_path)
    (root / "user" / "model" / "x.c").write_text(
        "/* joined by order (docs/design.md D17, D99); see case 99 */\n"
        "switch (n) { case 3: break; }\n")
    assert stale_labels(str(root)) == [
        "user/model/x.c cites docs/cases.md #99, which has no such section",
        "user/model/x.c cites docs/design.md D99, which has no such section",
    ]


def test_an_unindexed_doc_is_caught(tmp_path):
    """A new doc file, and a new labelled section in an indexed doc, are
    found until docs/README.md lists them."""
    root = copy_of_docs(tmp_path)
    (root / "docs" / "extra.md").write_text("# Extra\n\n## X1 Something\n")
    with open(root / "docs" / "kernel.md", "a") as f:
        f.write("\n## B99 A new fact\n")
    assert unindexed(str(root)) == [
        "docs/README.md does not link docs/extra.md",
        "docs/README.md does not index docs/extra.md X1",
        "docs/README.md does not index docs/kernel.md B99",
    ]


def test_a_layout_mismatch_is_caught(tmp_path):
    """A folder the layout names but the tree lacks, and a folder of user/
    the layout does not name, are found."""
    root = copy_of_docs(tmp_path)
    shutil.rmtree(root / "bench")
    (root / "user" / "model" / "newpart").mkdir()
    assert layout_problems(str(root)) == [
        "README.md's layout names bench/, which does not exist",
        "README.md's layout misses user/model/newpart/",
    ]


def test_a_stale_path_is_caught(tmp_path):
    """A doc that names a file the tree no longer has is found."""
    root = copy_of_docs(tmp_path)
    (root / "user" / "model" / "there.c").write_text("")
    (root / "docs" / "x.md").write_text("See user/model/there.c and user/model/gone.c.\n")
    assert stale_paths(str(root), ("docs/x.md",)) == ["docs/x.md cites user/model/gone.c, which does not exist"]
