#!/usr/bin/env python3
"""Export the torchvision networks zoo_bench times against ONNX Runtime (issue #28's list).

usage: /usr/bin/python3 scripts/export_zoo_models.py OUTDIR [--only NAME,...]
Writes OUTDIR/NAME.onnx (batch 1, 3x224x224, opset 13, eval mode, seeded random weights) for
resnet18, mobilenet_v2, efficientnet_b0, resnext50_32x4d and densenet121. Timing only: the model
tests (scripts/export_test_models.py) hold the PyTorch reference checks.
"""
import argparse
import os
import warnings

import torch
import torchvision

MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "resnext50_32x4d", "densenet121"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--only", help="comma-separated names")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else MODELS
    os.makedirs(args.outdir, exist_ok=True)
    warnings.filterwarnings("ignore")
    for name in names:
        path = os.path.join(args.outdir, name + ".onnx")
        if os.path.exists(path):
            print(f"{path}: present")
            continue
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)().eval()
        x = torch.randn(1, 3, 224, 224)
        torch.onnx.export(model, (x,), path, opset_version=13, input_names=["input"], output_names=["output"])
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
