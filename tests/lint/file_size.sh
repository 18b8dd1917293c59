#!/bin/sh
# file_size.sh SRC_DIR: no C source or header under src/ or tools/ has more
# than 1,000 lines (issue #12: a file a newcomer can read whole); and the
# check itself catches a long file (a fixture made on the fly).
set -u
src=$1
limit=1000
# long_files DIR: "path: N lines" for each .c/.h/.def over the limit
long_files() {
    find "$1" \( -name '*.c' -o -name '*.h' -o -name '*.def' \) -type f | sort | while read -r f; do
        n=$(wc -l <"$f")
        [ "$n" -le $limit ] || echo "${f#"$2"/}: $n lines"
    done
}
out=$( (long_files "$src/src" "$src"; long_files "$src/tools" "$src") )
if [ -n "$out" ]; then
    echo "files over $limit lines (split them by concern):"
    echo "$out"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
seq 1 $((limit + 1)) | sed 's/^/int x/; s/$/;/' >"$tmp/src/long.c"
seq 1 $limit | sed 's/^/int y/; s/$/;/' >"$tmp/src/at_limit.c"
got=$(long_files "$tmp/src" "$tmp")
if [ "$got" != "src/long.c: $((limit + 1)) lines" ]; then
    echo "the check missed or misreported the fixture: '$got'"
    exit 1
fi
echo "no file under src/ or tools/ over $limit lines; the fixture's long file caught, the one at the limit passed"
