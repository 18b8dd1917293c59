#!/bin/sh
# perf_huge_malloc.sh CARVE: the carve command puts glibc's malloc in huge
# pages (tools/carve.c, malloc_in_huge_pages; docs/performance.md): it
# starts itself again once with glibc.malloc.hugetlb=1 and
# glibc.malloc.top_pad=64 MiB added to GLIBC_TUNABLES, keeps the user's
# other tunables (a top_pad of the user's own is not overridden), and
# leaves the process alone when the user named hugetlb, set
# CARVE_NO_REEXEC, or the system has transparent huge pages off. Seen through strace's execve calls and
# the environment each one passes.
set -eu
CARVE=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v strace >/dev/null || fail "strace is missing (scripts/deps.sh)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# execs ENV...: the carve execve calls of `carve --version` run with ENV, one
# line each with its GLIBC_TUNABLES (or "none"), and the version line
execs() {
  env "$@" strace -f -qq -v -s 1000 -e trace=execve -o "$dir/trace" "$CARVE" --version >"$dir/out" ||
    fail "carve --version failed with $*"
  grep -q '^carve ' "$dir/out" || fail "no version line with $*: $(cat "$dir/out")"
  grep 'execve(' "$dir/trace" | grep -v 'strace' | while read -r line; do
    t=$(echo "$line" | grep -o '"GLIBC_TUNABLES=[^"]*"' || true)
    echo "${t:-none}"
  done
}

mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "")
case "$mode" in
  *"[always]"* | *"[madvise]"*) huge=yes ;;
  *) huge=no ;;
esac
echo "transparent huge pages: ${mode:-unknown}"
ours=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864

got=$(execs -u GLIBC_TUNABLES -u CARVE_NO_REEXEC)
echo "plain: $got"
if [ $huge = yes ]; then
  [ "$got" = "$(printf 'none\n"GLIBC_TUNABLES=%s"' "$ours")" ] ||
    fail "carve did not start again once with $ours: $got"
else
  [ "$got" = none ] || fail "huge pages are off, yet carve started again: $got"
fi

got=$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.arena_max=2)
echo "user tunable: $got"
if [ $huge = yes ]; then
  [ "$got" = "$(printf '"GLIBC_TUNABLES=glibc.malloc.arena_max=2"\n"GLIBC_TUNABLES=glibc.malloc.arena_max=2:%s"' "$ours")" ] ||
    fail "the user's tunable was not kept in front of hugetlb: $got"
fi

got=$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.top_pad=1048576)
echo "user's top_pad: $got"
if [ $huge = yes ]; then
  [ "$got" = "$(printf '"GLIBC_TUNABLES=glibc.malloc.top_pad=1048576"\n"GLIBC_TUNABLES=glibc.malloc.top_pad=1048576:glibc.malloc.hugetlb=1"')" ] ||
    fail "carve overrode the user's glibc.malloc.top_pad: $got"
fi

got=$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.hugetlb=0)
echo "user's hugetlb: $got"
[ "$got" = '"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"' ] || fail "carve overrode the user's glibc.malloc.hugetlb: $got"

got=$(execs -u GLIBC_TUNABLES CARVE_NO_REEXEC=1)
echo "CARVE_NO_REEXEC: $got"
[ "$got" = none ] || fail "CARVE_NO_REEXEC=1, yet carve started again: $got"

got=$(execs -u GLIBC_TUNABLES CARVE_NO_REEXEC=0)
echo "CARVE_NO_REEXEC=0: $got"
[ $huge = no ] || [ "$got" = "$(printf 'none\n"GLIBC_TUNABLES=%s"' "$ours")" ] ||
  fail "CARVE_NO_REEXEC=0 (as CARVE_NO_FSYNC=0: not set) kept carve from starting again: $got"

# the second start gets the same arguments: a lowering's output is the same
cp "$(dirname "$CARVE")/example.onnx" "$dir/m.onnx"
env -u GLIBC_TUNABLES -u CARVE_NO_REEXEC "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/a.onnx" --report "$dir/a.json" 2>/dev/null ||
  fail "carve lower failed"
CARVE_NO_REEXEC=1 "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/b.onnx" --report "$dir/b.json" 2>/dev/null ||
  fail "carve lower failed with CARVE_NO_REEXEC=1"
cmp "$dir/a.onnx" "$dir/b.onnx" || fail "the lowered model differs with and without the second start"
echo "ok"
