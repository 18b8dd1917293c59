#!/usr/bin/env python3
"""op_lists.py: fails when C code outside the op table names a list of ops.

An op property (layout op, makes int64, constant producer, ...) is a flag
of the op table (src/ops/optable.def and ops_*.def, asked with cv_op_has);
C code does not keep its own list of op names. This finds, in src/ and
tools/ (*.c, *.h):
  - a comparison chain: one statement joining two or more comparisons of an
    op name with || or && (strcmp, cv_node_is, ...), and
  - a list: a brace initializer holding two or more op-name literals.
An op name is any name the table has a row for. Declared data (a pattern
table, a JSON profile) may name ops: such a table carries the marker
comment "op-list: data" at most ten lines above its "= {" (a comparison
chain, on the line before it: kept for rules still to move into the table).

usage: op_lists.py REPO_ROOT [SCAN_ROOT]
  op names from REPO_ROOT/src/ops/*.def; scans SCAN_ROOT's src/ and tools/
  (REPO_ROOT's by default). Exit 0 clean, 1 found (listed), 2 usage.
"""
import os
import re
import sys


def op_names(root):
    names = set()
    d = os.path.join(root, "src", "ops")
    for f in os.listdir(d):
        if f.endswith(".def"):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                for line in fh:
                    m = re.match(r"\s*OP\((\w+),", line)
                    if m:
                        names.add(m.group(1))
    return names


def strip_comments(text):
    # keeps line numbers: comments become spaces, newlines stay
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":  # a string or character literal, kept whole
            j = i + 1
            while j < n and text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


LIT = re.compile(r'"((?:[^"\\]|\\.)*)"')
CMP = re.compile(r'(?:strcmp|cv_node_is|is_op)\s*\([^;]*?"(\w+)"\s*\)')


def scan(path, rel, ops, found):
    with open(path, encoding="utf-8", errors="replace") as fh:
        raw = fh.read()
    marked = {i + 1 for i, l in enumerate(raw.split("\n")) if "op-list: data" in l}
    text = strip_comments(raw)
    # statements: split at ; { } keeping the line where each starts
    pos = 0
    for m in re.finditer(r"[;{}]", text):
        stmt = text[pos:m.end()]
        line = text.count("\n", 0, pos) + 1 + (len(stmt) - len(stmt.lstrip()) and stmt[:len(stmt) - len(stmt.lstrip())].count("\n"))
        if "||" in stmt or "&&" in stmt:
            hits = [o for o in CMP.findall(stmt) if o in ops]
            if len(hits) >= 2 and not (marked & set(range(line - 2, line + 1))):
                found.append("%s:%d: compares the op against a list (%s): ask the op table's flags" %
                             (rel, line, ", ".join(hits)))
        pos = m.end()
    # brace initializers with two or more op names
    for m in re.finditer(r"=\s*\{", text):
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = text[m.end():j]
        hits = [s for s in LIT.findall(body) if s in ops]
        line = text.count("\n", 0, m.start()) + 1
        if len(hits) >= 2 and not (marked & set(range(line - 10, line + 1))):
            found.append("%s:%d: a list of op names (%s): a flag of the op table, or mark declared data "
                         "'op-list: data'" % (rel, line, ", ".join(hits[:6]) + (" ..." if len(hits) > 6 else "")))


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: op_lists.py REPO_ROOT [SCAN_ROOT]", file=sys.stderr)
        return 2
    ops = op_names(sys.argv[1])
    root = sys.argv[-1]
    if len(ops) < 100:
        print("op_lists.py: read only %d op names from src/ops/*.def" % len(ops), file=sys.stderr)
        return 2
    found = []
    for top in ("src", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    p = os.path.join(d, f)
                    scan(p, os.path.relpath(p, root), ops, found)
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
