#!/usr/bin/env python3
"""Export the networks zoo_bench times against ONNX Runtime (issue #28's list).

usage: /usr/bin/python3 scripts/export_zoo_models.py OUTDIR [--only NAME,...]
Writes OUTDIR/NAME.onnx (batch 1, eval mode, seeded random weights): the torchvision classifiers
resnet18, mobilenet_v2, efficientnet_b0, resnext50_32x4d and densenet121 (3x224x224, opset 13);
deeplabv3_mobilenet_v3_large, a segmentation net (3x224x224, its "out" map, opset 13); and
bert_encoder, a transformer encoder at BERT-base's width (4 post-norm layers of d = 768, 12 heads,
feed-forward 3072, GELU) over 128 token embeddings (1x128x768, opset 14). Timing only: the model
tests (scripts/export_test_models.py) hold the PyTorch reference checks.
With --only bert_encoder_seq: the same encoder with its sequence axis left dynamic (dim_param "seq"),
for dynamic_shapes_bench (not in the default list: zoo_bench compiles static shapes).
"""
import argparse
import inspect
import os
import warnings

import torch
import torchvision

MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "resnext50_32x4d", "densenet121",
          "deeplabv3_mobilenet_v3_large", "bert_encoder"]


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation nets return a dict; ONNX gets its "out" map."""
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def build(name):
    """(module, example input, opset) for one of MODELS."""
    if name in ("bert_encoder", "bert_encoder_seq"):
        layer = torch.nn.TransformerEncoderLayer(768, 12, dim_feedforward=3072, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        net = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        for pname, p in net.named_parameters():  # each layer its own weights (the copies start equal)
            if "norm" not in pname:
                torch.nn.init.xavier_uniform_(p) if p.dim() > 1 else torch.nn.init.normal_(p, std=0.02)
        return net, torch.randn(1, 128, 768), 14
    if name == "deeplabv3_mobilenet_v3_large":
        net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None)
        return SegmentationOut(net), torch.randn(1, 3, 224, 224), 13
    return getattr(torchvision.models, name)(), torch.randn(1, 3, 224, 224), 13


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
        model, x, opset = build(name)
        # PyTorch >= 2.9 exports through Dynamo by default; the TorchScript exporter writes the graphs
        # Loom's model tests were made with (PyTorch 1.13), so it is asked for where it is a choice.
        legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        dynamic = {"dynamic_axes": {"input": {1: "seq"}, "output": {1: "seq"}}} if name.endswith("_seq") else {}
        torch.onnx.export(model.eval(), (x,), path, opset_version=opset, input_names=["input"],
                          output_names=["output"], **legacy, **dynamic)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
