#!/usr/bin/python3
"""check_lowered_onnx.py DIR: every .onnx in DIR (the node sweep's lowered
models, tests/partition/nodesweep.c --save) must pass onnx.checker with
full_check (shape and type inference at the model's opset): what carve
writes is valid ONNX for the opset it declares, decomposition pieces
included. Prints the failures and "N models: N ok, N failed"."""
import os
import sys

import onnx
import onnx.checker

d = sys.argv[1]
ok = bad = 0
for f in sorted(os.listdir(d)):
    if not f.endswith(".onnx"):
        continue
    try:
        onnx.checker.check_model(onnx.load(os.path.join(d, f)), full_check=True)
        ok += 1
    except Exception as e:  # the checker's errors are of several classes
        bad += 1
        print("FAIL %s: %s" % (f, str(e).splitlines()[0][:400]))
print("%d models: %d ok, %d failed" % (ok + bad, ok, bad))
sys.exit(1 if bad or not ok else 0)
