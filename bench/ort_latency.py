#!/usr/bin/env python3
"""ONNX Runtime's CPU latency for one ONNX file through its Python package: zoo_bench's baseline on
hosts that have `onnxruntime` for Python but no Node (zoo_bench --ort-python PYTHON).

usage: PYTHON bench/ort_latency.py MODEL.onnx THREADS REPS SHAPE[;SHAPE...] [OUTPUT.f32]
Same arguments, input and JSON line as bench/ort_latency.js: float input element k is sin(k), an
integer input (SHAPE int64:DIMS or int32:DIMS) all ones; the median
and fastest of REPS runs after 5 warm-ups, in milliseconds (graph optimizations 'all', sequential
execution, intra-op threads THREADS); OUTPUT.f32 receives the first output's float32 values.
"""
import json
import math
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    model, threads, reps, shapes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    out_file = sys.argv[5] if len(sys.argv) == 6 else None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for spec, shape in zip(session.get_inputs(), shapes.split(";")):
        kind, _, dims_text = shape.rpartition(":")
        dims = [int(d) for d in dims_text.split("x")]
        n = math.prod(dims)
        if kind in ("int64", "int32"):
            feeds[spec.name] = np.ones(dims, dtype=kind)
        else:
            feeds[spec.name] = np.sin(np.arange(n, dtype=np.float64)).astype(np.float32).reshape(dims)
    times = []
    for r in range(5 + reps):
        t0 = time.perf_counter_ns()
        results = session.run(None, feeds)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if r == 0 and out_file:
            np.ascontiguousarray(results[0], dtype=np.float32).tofile(out_file)
        if r >= 5:
            times.append(ms)
    times.sort()
    print(json.dumps({"model": model, "threads": threads, "median_ms": times[len(times) // 2],
                      "min_ms": times[0], "ort": ort.__version__}))


if __name__ == "__main__":
    main()
