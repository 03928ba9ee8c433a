#!/usr/bin/env python3
"""Checks `loom run --board BOARD --json` on a float model against what the ONNX file says by
itself: the CPU kernels' operations are at least two per multiply-add of its Gemm/MatMul layers
(their bias and activation add a few per output) and within 5% of that; the estimate is the
roofline of those operations and bytes at the board's figures (given here from the vendors'
manuals, not read from Loom), and the total is the kernels' sum.
usage: check_board_estimate.py MODEL.onnx RUN.json PEAK_OPS_PER_S DDR_BYTES_PER_S"""
import json
import sys

import onnx
from onnx import numpy_helper, shape_inference

model_path, run_path, peak, ddr = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
model = shape_inference.infer_shapes(onnx.load(model_path))
inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
          for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
macs = 0
for n in model.graph.node:
    if n.op_type in ("Gemm", "MatMul"):
        w = inits[n.input[1]].shape
        rows = shapes[n.input[0]][0] or 1
        macs += rows * w[0] * w[1]
assert macs > 0, "no Gemm/MatMul layers"
est = json.load(open(run_path))["board_estimate"]
assert est["estimate"] is True
ops = est["cpu_ops"]
assert 2 * macs <= ops <= 2 * macs * 1.05, (ops, 2 * macs)
# Each kernel takes the longer of its two times: the sum lies between the longer and the sum of the totals'.
low, high = max(ops / peak, est["cpu_bytes"] / ddr), ops / peak + est["cpu_bytes"] / ddr
assert low * (1 - 1e-9) <= est["cpu_ms"] / 1e3 <= high * (1 + 1e-9), (est["cpu_ms"], low, high)
assert abs(est["ms"] - sum(k["ms"] for k in est["kernels"])) <= 1e-9 + 1e-9 * est["ms"]
print(f"board estimate ok: {ops:.0f} operations for {macs} multiply-adds, {est['cpu_ms']:.3f} ms on {est['board']}")
