#!/usr/bin/env python3
"""Latency of torchvision models in PyTorch eager on a GPU: the baseline of Loom's CUDA models.

usage: python3 bench/pytorch_gpu_latency.py MODEL BATCH REPS
Median of REPS timed runs after 10 warm-ups, in milliseconds, measured like loom-run's steady state:
the input copied from the host and the output back to it each run; eval mode, no_grad, float32,
cuDNN benchmark mode on, TF32 off (Loom computes in fp32). Prints one JSON line.
"""
import json
import sys
import time

import torch
import torchvision


def main():
    name, batch, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = getattr(torchvision.models, name)().eval().cuda()
    x = torch.randn(batch, 3, 224, 224)
    times = []
    with torch.no_grad():
        for i in range(10 + reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = model(x.cuda()).cpu()
            t1 = time.perf_counter()
            if i >= 10:
                times.append((t1 - t0) * 1e3)
    times.sort()
    print(json.dumps({"model": name, "batch": batch, "device": torch.cuda.get_device_name(),
                      "torch": torch.__version__, "median_ms": times[len(times) // 2], "min_ms": times[0]}))


if __name__ == "__main__":
    main()
