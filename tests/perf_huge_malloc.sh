#!/bin/sh
# perf_huge_malloc.sh CARVE: the carve command puts glibc's malloc in huge
# pages (tools/carve.c, malloc_in_huge_pages; docs/performance.md): it
# starts itself again once with glibc.malloc.hugetlb=1 added to
# GLIBC_TUNABLES, and for `lower` also glibc.malloc.top_pad=64 MiB and
# glibc.malloc.mmap_max=0; it keeps the user's other tunables (one the
# user set is never overridden), and leaves the process alone when the
# user named hugetlb, set CARVE_NO_REEXEC, or the system has transparent
# huge pages off. Seen through strace's execve calls and the environment
# each one passes. The second start keeps the command's name (ps, top).
# shellcheck disable=SC2086 # $envs, $lower and $version are split into words on purpose
set -eu
CARVE=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v strace >/dev/null || fail "strace is missing (scripts/deps.sh)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# execs ENV... -- ARGS...: the carve execve calls of `carve ARGS` run with
# ENV, one line each with its GLIBC_TUNABLES (or "none")
execs() {
  envs=""
  while [ "$1" != -- ]; do envs="$envs $1"; shift; done
  shift
  env $envs strace -f -qq -v -s 1000 -e trace=execve -o "$dir/trace" "$CARVE" "$@" >"$dir/out" 2>&1 ||
    fail "carve $* failed with$envs: $(cat "$dir/out")"
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
cp "$(dirname "$CARVE")/example.onnx" "$dir/m.onnx"
version="--version"
lower="lower $dir/m.onnx --target htp -o $dir/o.onnx --report $dir/o.json"
all=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864:glibc.malloc.mmap_max=0

# expect WHAT GOT WANT...: GOT must be the lines WANT (the execve calls)
expect() {
  what=$1 got=$2
  shift 2
  echo "$what: $got"
  [ "$got" = "$(printf '%s\n' "$@")" ] || fail "$what: carve's execve calls were $got, not $*"
}

if [ $huge = yes ]; then
  expect "lower" "$(execs -u GLIBC_TUNABLES -u CARVE_NO_REEXEC -- $lower)" none "\"GLIBC_TUNABLES=$all\""
  expect "--version: hugetlb only, no pad" "$(execs -u GLIBC_TUNABLES -u CARVE_NO_REEXEC -- $version)" none \
    '"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"'
  expect "run: hugetlb only, no pad" \
    "$(execs -u GLIBC_TUNABLES -u CARVE_NO_REEXEC -- run "$dir/m.onnx" --random-inputs 1)" none \
    '"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"'
  expect "a user's tunable kept in front" \
    "$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.arena_max=2 -- $lower)" \
    '"GLIBC_TUNABLES=glibc.malloc.arena_max=2"' "\"GLIBC_TUNABLES=glibc.malloc.arena_max=2:$all\""
  expect "a user's top_pad kept" \
    "$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.top_pad=1048576 -- $lower)" \
    '"GLIBC_TUNABLES=glibc.malloc.top_pad=1048576"' \
    '"GLIBC_TUNABLES=glibc.malloc.top_pad=1048576:glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0"'
  expect "a user's mmap_max kept" \
    "$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.mmap_max=7 -- $lower)" \
    '"GLIBC_TUNABLES=glibc.malloc.mmap_max=7"' \
    '"GLIBC_TUNABLES=glibc.malloc.mmap_max=7:glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864"'
  expect "CARVE_NO_REEXEC=0 (as CARVE_NO_FSYNC=0: not set)" \
    "$(execs -u GLIBC_TUNABLES CARVE_NO_REEXEC=0 -- $lower)" none "\"GLIBC_TUNABLES=$all\""
else
  expect "huge pages off: no second start" "$(execs -u GLIBC_TUNABLES -u CARVE_NO_REEXEC -- $lower)" none
fi
expect "a user's hugetlb: no second start" \
  "$(execs -u CARVE_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.hugetlb=0 -- $lower)" '"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"'
expect "CARVE_NO_REEXEC=1: no second start" "$(execs -u GLIBC_TUNABLES CARVE_NO_REEXEC=1 -- $lower)" none

# the second start gets the same arguments: a lowering's output is the same
env -u GLIBC_TUNABLES -u CARVE_NO_REEXEC "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/a.onnx" --report "$dir/a.json" 2>/dev/null ||
  fail "carve lower failed"
CARVE_NO_REEXEC=1 "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/b.onnx" --report "$dir/b.json" 2>/dev/null ||
  fail "carve lower failed with CARVE_NO_REEXEC=1"
cmp "$dir/a.onnx" "$dir/b.onnx" || fail "the lowered model differs with and without the second start"

# the second start keeps the command's name (Linux names a process after
# the file it executes: /proc/self/exe would make it "exe" in ps and top):
# read while the lowering waits to open its --cpu-nodes list, a FIFO
if [ $huge = yes ]; then
  mkfifo "$dir/names"
  env -u GLIBC_TUNABLES -u CARVE_NO_REEXEC "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/c.onnx" \
    --cpu-nodes "@$dir/names" >"$dir/out" 2>&1 &
  pid=$!
  i=0
  while [ "$(cat "/proc/$pid/wchan" 2>/dev/null)" != wait_for_partner ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  name=$(cat "/proc/$pid/comm" 2>/dev/null || echo "gone")
  tunables=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -c '^GLIBC_TUNABLES=' || true)
  : >"$dir/names"
  wait $pid || fail "the lowering waiting on a FIFO failed: $(cat "$dir/out")"
  echo "name of the second start: $name"
  [ "$tunables" = 1 ] || fail "the process read was not the second start (no GLIBC_TUNABLES in its environment)"
  [ "$name" = "$(basename "$CARVE")" ] || fail "the second start is named '$name', not '$(basename "$CARVE")'"
fi
echo "ok"
