#!/usr/bin/env python3
"""Layer by layer: a PyTorch model against Loom's float model, its int8 model on the CPU and the
int8 model on the accelerator's functional simulator, with the first layer whose error exceeds
each column's tolerance (loom.compare).

usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/compare_int8.py [--image 64] [--csv out.csv]
"""
import argparse
import csv

import torch
import torchvision

import loom


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", type=int, default=64, help="input height and width (default 64)")
    ap.add_argument("--csv", help="also write the records to this CSV file")
    args = ap.parse_args()

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, args.image, args.image)
    report = loom.compare(net, x, backends=["fsim"], calibrate=8)
    print(report)
    if args.csv:  # the records are plain dicts: csv, pandas.DataFrame(report.records), ...
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(report.records[0]))
            w.writeheader()
            w.writerows(report.records)
    assert report.first_divergence["float"] is None, "a layer of Loom's float model strays from PyTorch"
    assert report.first_mismatch["fsim"] is None, "the simulator differs from int8 on the CPU"


if __name__ == "__main__":
    main()
