#!/bin/sh
# layers.sh SRC_DIR OBJ_DIR: the library's layers look only down. From the
# bottom: ir, io, onnx, ops, runtime, passes, partition, backends
# (docs/ARCHITECTURE.md, "Layers"). A file may include headers and call
# functions of its own layer and those below, never above: checked on the
# sources' includes and on the object files' symbols (a function a layer
# calls, `nm -u`, defined by a higher layer, `nm --defined-only`). A
# fixture (a lower object calling a higher one's function) proves the
# symbol check catches what it should.
set -u
src=$1
obj=$2
layers="ir io onnx ops runtime passes partition backends"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

# includes: "../X/..." from layer L where X stands above L
i=0
for l in $layers; do
    i=$((i + 1))
    j=0
    for h in $layers; do
        j=$((j + 1))
        [ $j -gt $i ] || continue
        hits=$(grep -rn "#include \"\.\./$h/" "$src/src/$l" 2>/dev/null)
        if [ -n "$hits" ]; then
            echo "$l includes $h, a layer above it:"
            echo "$hits" | sed "s#^$src/##; s/^/    /"
            bad=1
        fi
    done
done

# symbols: what layer L's objects take from a higher layer's objects
# objects DIR L [SRC_ROOT]: layer L's object files; with SRC_ROOT only those
# whose source still exists (a build folder keeps the objects of moved or
# deleted sources: DIR/L/x.c.o stands for SRC_ROOT/L/x.c)
objects() {
    find "$1/$2" -name '*.o' | while read -r o; do
        o=${o%.o}
        [ -z "${3:-}" ] || [ -f "$3/${o#"$1"/}" ] || continue
        echo "$o.o"
    done
}
# up_calls DIR_OF_LAYER_OBJECT_FOLDERS [SRC_ROOT]: "L -> H: names" lines
up_calls() {
    for l in $layers; do
        [ -d "$1/$l" ] || continue
        objects "$1" "$l" "${2:-}" | xargs nm --defined-only 2>/dev/null |
            awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u >"$tmp/def_$l"
    done
    i=0
    for l in $layers; do
        i=$((i + 1))
        [ -d "$1/$l" ] || continue
        objects "$1" "$l" "${2:-}" | xargs nm -u 2>/dev/null | awk '{ print $2 }' | sort -u >"$tmp/und"
        j=0
        for h in $layers; do
            j=$((j + 1))
            [ $j -gt $i ] && [ -f "$tmp/def_$h" ] || continue
            n=$(comm -12 "$tmp/und" "$tmp/def_$h" | tr '\n' ' ')
            [ -z "$n" ] || echo "$l -> $h: $n"
        done
    done
}
if [ ! -d "$obj/ops" ] || [ ! -d "$obj/ir" ]; then
    echo "no object files under $obj (build the library first)"
    exit 1
fi
out=$(up_calls "$obj" "$src/src")
if [ -n "$out" ]; then
    echo "a lower layer calls a higher one (layer -> layer: functions):"
    echo "$out" | sed 's/^/    /'
    bad=1
fi

# the fixture: ops calling a function that only runtime defines
mkdir -p "$tmp/fx/ops" "$tmp/fx/runtime"
printf 'int cv_fixture_up(void);\nint f(void) { return cv_fixture_up(); }\n' >"$tmp/a.c"
printf 'int cv_fixture_up(void) { return 1; }\n' >"$tmp/b.c"
cc=${CC:-cc}
"$cc" -c "$tmp/a.c" -o "$tmp/fx/ops/a.o" && "$cc" -c "$tmp/b.c" -o "$tmp/fx/runtime/b.o" || {
    echo "could not compile the fixture"
    exit 1
}
got=$(up_calls "$tmp/fx")
if [ "$got" != "ops -> runtime: cv_fixture_up " ]; then
    echo "the symbol check missed or misreported the fixture: '$got'"
    exit 1
fi
# with a source root, an object counts only while its source exists
mkdir -p "$tmp/fxsrc/ops" "$tmp/fxsrc/runtime"
: >"$tmp/fxsrc/ops/a"
: >"$tmp/fxsrc/runtime/b"
got=$(up_calls "$tmp/fx" "$tmp/fxsrc")
if [ "$got" != "ops -> runtime: cv_fixture_up " ]; then
    echo "with sources, the symbol check missed the fixture: '$got'"
    exit 1
fi
rm "$tmp/fxsrc/runtime/b"
got=$(up_calls "$tmp/fx" "$tmp/fxsrc")
if [ -n "$got" ]; then
    echo "an object whose source is gone still counted: '$got'"
    exit 1
fi
[ $bad -eq 0 ] || exit 1
echo "layers look only down ($layers): includes and calls checked; the fixture's call up caught"
