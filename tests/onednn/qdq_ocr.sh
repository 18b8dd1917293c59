#!/bin/sh
# qdq_ocr.sh: the static-QDQ PP-OCRv4 det that tests/partition/real_qdq_ocr
# writes (QDQ_SAVE) lowered for onednn and run through oneDNN's int8
# (dn_qdq_ocr.c says what is checked).
#   qdq_ocr.sh REAL_QDQ_OCR ONEDNN_QDQ_OCR MODEL_CACHE
set -eu
[ $# -eq 3 ] || { echo "usage: qdq_ocr.sh REAL_QDQ_OCR ONEDNN_QDQ_OCR MODEL_CACHE" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
QDQ_SAVE="$dir/qdq.onnx" "$1" "$3" >"$dir/make.log" 2>&1 || { tail -5 "$dir/make.log"; echo "FAIL real_qdq_ocr"; exit 1; }
"$2" "$dir/qdq.onnx"
