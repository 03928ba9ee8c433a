#!/usr/bin/env python3
"""torchvision's ResNet-18 through loom.frontend.from_torch: float on the CPU against PyTorch, then
int8 with its int8 layers on the accelerator (functional simulator) against int8 on the CPU, and
where the time goes.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/resnet18_from_torch.py [--image 224]
"""
import argparse
import time

import numpy as np
import torch
import torchvision

import loom
from loom.frontend import from_torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", type=int, default=224, help="input height and width (default 224)")
    ap.add_argument("--calibrate", type=int, default=8, help="random calibration inputs for int8 (default 8)")
    args = ap.parse_args()

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()  # weights=None: no download
    x = torch.randn(1, 3, args.image, args.image)
    with torch.no_grad():
        want = net(x).numpy()

    t0 = time.perf_counter()
    graph = from_torch(net, (x,))
    cpu = loom.compile(graph)
    print(f"from_torch + compile for the CPU: {time.perf_counter() - t0:.1f} s, {len(graph)} graph nodes")
    (got,) = cpu.run(x.numpy())
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print(f"float on the CPU vs PyTorch: largest error {err:.2e} of the largest logit")
    assert err < 1e-4, "Loom's float result strays from PyTorch's"

    calibration = [np.random.default_rng(k).standard_normal(x.shape).astype(np.float32) for k in range(args.calibrate)]
    int8_cpu = loom.compile(graph, quantize="int8", calibrate=calibration)
    int8_accel = loom.compile(graph, target="accel", quantize="int8", calibrate=calibration)
    (a,) = int8_cpu.run(x.numpy())
    (b,) = int8_accel.run(x.numpy())
    print(f"int8: accuracy report {int8_cpu.quantization['accuracy']:.4f} (lowest cosine with float); "
          f"top-1 {'agrees' if a.argmax() == want.argmax() else 'differs'} with PyTorch")
    print(f"int8 on the accelerator (fsim) equals int8 on the CPU bit for bit: {np.array_equal(a, b)}")
    assert np.array_equal(a, b)

    # Where the time goes: the performance model (backend "perf") counts the accelerator's cycles.
    timed = loom.compile(graph, target="accel", quantize="int8", calibrate=calibration, backend="perf")
    profile = timed.profile(x.numpy())
    on_accel = [p for p in profile if p["device"] == "accel"]
    print(f"{len(profile)} kernel calls, {len(on_accel)} on the accelerator: "
          f"{sum(p['cycles'] for p in on_accel)} cycles, {sum(p['gemm_macs'] for p in on_accel)} MACs, "
          f"{sum(p['dma_bytes'] for p in on_accel)} DMA bytes")
    slowest = max(profile, key=lambda p: p["seconds"])
    print(f"slowest kernel call: {slowest['kernel']} on the {slowest['device']}, {slowest['seconds'] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
