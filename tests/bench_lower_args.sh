#!/bin/sh
# bench_lower_args.sh BENCH_LOWER: bench/bench_lower refuses a bad --runs,
# --max or --shape and an unknown flag with exit status 2 and a message
# naming the option and the value, before it builds a model or makes its
# scratch folder (no new /tmp/bench_lower.* appears), and runs a good call.
set -eu
B=$1
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
scratch() { find /tmp -maxdepth 1 -name 'bench_lower.*' | sort; }
before=$(scratch)
# refused WANT ARGS...: exit 2, WANT in stderr, nothing on stdout
refused() {
  want=$1
  shift
  set +e
  timeout 120 "$B" "$@" >"$t/out" 2>"$t/err"
  rc=$?
  set -e
  [ $rc = 2 ] || fail "bench_lower $*: exit $rc, not 2"
  grep -qF -- "$want" "$t/err" || fail "bench_lower $*: no '$want' in: $(cat "$t/err")"
  [ ! -s "$t/out" ] || fail "bench_lower $* printed figures: $(head -3 "$t/out")"
  echo "ok: $* -> $(cat "$t/err")"
}
refused "--runs takes 1 to 16, not '0'" --runs 0
refused "--runs takes 1 to 16, not '17'" --runs 17
refused "--runs takes 1 to 16, not '3x'" --runs 3x
refused "--runs takes 1 to 16, not '-1'" --runs -1
refused "--max takes a whole number from 1000 to 1000000, not 'abc'" --max abc
refused "--max takes a whole number from 1000 to 1000000, not '999'" --max 999
refused "--max takes a whole number from 1000 to 1000000, not '2000000'" --max 2000000
refused "--shape takes chain, dag, transformer or all, not 'dags'" --shape dags
refused "usage: bench_lower" --frobnicate
[ "$before" = "$(scratch)" ] || fail "a scratch folder was made: $(scratch)"
# a good call runs: the smallest size of one shape, in memory
"$B" --max 1000 --shape chain --in-memory >"$t/ok" 2>&1 || fail "bench_lower --max 1000 failed: $(cat "$t/ok")"
grep -q '^chain  *1000 ' "$t/ok" || fail "no chain row for 1000 nodes: $(cat "$t/ok")"
echo "ok"
