#!/usr/bin/env python3
"""A two-config sweep of the accelerator on an int8 network: each config's cycles (the calibrated
performance model, backend "perf") and area (the analytical model), as records, plotted with
matplotlib.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/accel_sweep.py [--image 64] [--plot sweep.png]
"""
import argparse
import pathlib

import numpy as np
import torch
import torchvision

import loom
from loom.frontend import from_torch

CONFIGS = pathlib.Path(__file__).resolve().parents[2] / "accel" / "configs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", type=int, default=64, help="input height and width (default 64)")
    ap.add_argument("--plot", default="accel_sweep.png", help="where the plot goes (default accel_sweep.png)")
    args = ap.parse_args()

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, args.image, args.image)
    graph = from_torch(net, (x,))
    calibration = [np.random.default_rng(k).standard_normal(tuple(x.shape)).astype(np.float32) for k in range(4)]

    configs = [loom.accel.Config(), loom.accel.Config.load(str(CONFIGS / "1x32x32.json"))]
    records = []
    reference = None
    for config in configs:
        m = loom.compile(graph, target="accel", quantize="int8", calibrate=calibration, config=config, backend="perf")
        profile = m.profile(x.numpy())
        (out,) = m.run(x.numpy())
        if reference is None:
            reference = out
        # Every config computes the same int8 model: the results agree bit for bit.
        assert np.array_equal(out, reference), f"{config.name} computes other values"
        on_accel = [p for p in profile if p["device"] == "accel"]
        records.append({"config": config.name, **{k: getattr(config, k) for k in ("batch", "block_in", "block_out")},
                        "cycles": sum(p["cycles"] for p in on_accel), "macs": sum(p["gemm_macs"] for p in on_accel),
                        "dram_bytes": sum(p["dma_bytes"] for p in on_accel), **config.area()})
    print(f"{'config':<10} {'cycles':>10} {'MACs/cycle':>10} {'DRAM MB':>8} {'LUT':>8} {'DSP':>6} {'BRAM36':>7}")
    for r in records:
        print(f"{r['config']:<10} {r['cycles']:>10} {r['macs'] / r['cycles']:>10.1f} {r['dram_bytes'] / 1e6:>8.2f} "
              f"{r['lut']:>8.0f} {r['dsp']:>6.0f} {r['bram36']:>7.1f}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for r in records:
        ax.scatter(r["lut"], r["cycles"])
        ax.annotate(r["config"], (r["lut"], r["cycles"]))
    ax.set_xlabel("LUTs (area model)")
    ax.set_ylabel(f"cycles, int8 ResNet-18 at {args.image}x{args.image}")
    ax.set_title("accelerator configs")
    fig.tight_layout()
    fig.savefig(args.plot)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
