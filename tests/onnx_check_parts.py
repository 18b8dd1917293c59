#!/usr/bin/python3
"""onnx_check_parts.py EXPORT_DIR: ONNX's own full checker
(onnx.checker.check_model(m, full_check=True), Debian's python3-onnx) on every
partition the manifest marks `onnx_1_12_checkable` (IR <= 8, opset <= 17, no
4- or 16-bit types: all this onnx knows); prints what each partition got and
exits 1 on a failure."""
import json, os, sys
import onnx

d = sys.argv[1]
man = json.load(open(os.path.join(d, "manifest.json")))
bad = checked = 0
for p in man["partitions"]:
    if not p["onnx_1_12_checkable"]:
        io = p["inputs"] + p["outputs"]
        why = ("an input or output of unknown rank" if any(x["shape"] is None for x in io)
               else f"IR {p['ir_version']} opset {p['opset']} or a 4/16-bit type is past onnx {onnx.__version__}")
        print(f"skip {p['name']}: {why}")
        continue
    try:
        onnx.checker.check_model(onnx.load(os.path.join(d, p["file"])), full_check=True)
        checked += 1
        print(f"ok   {p['name']}: full_check (IR {p['ir_version']}, opset {p['opset']})")
    except Exception as e:  # the checker's message names the node
        bad += 1
        print(f"FAIL {p['name']}: {str(e).splitlines()[0][:300]}")
print(f"checker: {checked} passed, {bad} failed")
sys.exit(1 if bad else 0)
