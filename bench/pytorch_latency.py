#!/usr/bin/env python3
"""Latency of torchvision models in PyTorch (the baseline of model_bench), as JSON on stdout.

usage: /usr/bin/python3 bench/pytorch_latency.py MODEL BATCH THREADS REPS
Median of REPS timed runs after warm-up, in milliseconds; eval mode, no_grad, float32.
MODEL resnet18_int8: torchvision's quantizable ResNet-18, every layer int8 (post-training static
quantization calibrated on 4 random images) on PyTorch's oneDNN quantized engine (Debian's
torch 1.13 has no FBGEMM).
"""
import json
import sys
import time

import torch
import torchvision


def int8_resnet18(x):
    torch.backends.quantized.engine = "onednn"
    model = torchvision.models.quantization.resnet18(quantize=False).eval()
    model.fuse_model()
    model.qconfig = torch.ao.quantization.get_default_qconfig("onednn")
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn_like(x))
    return torch.ao.quantization.convert(model, inplace=True)


def main():
    name, batch, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    models = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50,
              "mobilenet_v2": torchvision.models.mobilenet_v2}
    x = torch.randn(batch, 3, 224, 224)
    model = int8_resnet18(x) if name == "resnet18_int8" else models[name]().eval()
    with torch.no_grad():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print(json.dumps({"model": name, "threads": threads, "median_ms": times[len(times) // 2], "min_ms": times[0],
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
