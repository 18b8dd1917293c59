#!/bin/sh
# op_lists.sh SRC_DIR: the tree has no list of op names outside the op table
# (tests/lint/op_lists.py), and the checker does catch the fixture's lists.
set -u
src=$1
py=${PYTHON:-python3}
out=$("$py" "$src/tests/lint/op_lists.py" "$src" 2>&1); rc=$?
if [ $rc -ne 0 ]; then
    echo "op lists in C code outside the op table (rc $rc):"
    echo "$out"
    exit 1
fi
out=$("$py" "$src/tests/lint/op_lists.py" "$src" "$src/tests/lint/bad" 2>&1); rc=$?
want="src/lists.c:7: compares the op against a list (Transpose, Reshape): ask the op table's flags
src/lists.c:11: a list of op names (Shape, Size): a flag of the op table, or mark declared data 'op-list: data'"
if [ $rc -ne 1 ] || [ "$out" != "$want" ]; then
    echo "the checker missed or misreported the fixture (rc $rc):"
    echo "$out"
    exit 1
fi
echo "no op lists outside the op table; the fixture's two lists caught"
