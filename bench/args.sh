# args.sh: what the benchmark scripts against onnxruntime share; sourced:
#   . "$ROOT/bench/args.sh"; bench_args NAME
# bench_args checks $RUNS (1 to 99) and that $BUILD holds the carve binary,
# and exits 2 with a message naming NAME otherwise, before any work.
bench_args() {
  if ! [[ $RUNS =~ ^[1-9][0-9]?$ ]]; then
    echo "$1: RUNS takes 1 to 99, not '$RUNS'" >&2
    exit 2
  fi
  if [ ! -x "$BUILD/carve" ]; then
    echo "$1: no carve binary in '$BUILD' (build it, or name the build folder)" >&2
    exit 2
  fi
}
