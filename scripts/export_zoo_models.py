#!/usr/bin/env python3
"""Export the networks zoo_bench times against ONNX Runtime (issue #28's list).

usage: /usr/bin/python3 scripts/export_zoo_models.py OUTDIR [--only NAME,...]
Writes OUTDIR/NAME.onnx (batch 1, eval mode, seeded random weights): the torchvision classifiers
resnet18, mobilenet_v2, efficientnet_b0, resnext50_32x4d, densenet121, shufflenet_v2_x1_0 and
convnext_tiny (3x224x224, opset 13), swin_t and the vision transformers vit_s_16 (ViT-S/16: 12
layers of d 384, 6 heads) and vit_b_16 (3x224x224, opset 14); deeplabv3_mobilenet_v3_large, a
segmentation net (3x224x224, its "out" map, opset 13); ssdlite_head, a detector-style net
(SSDlite320's MobileNetV3 backbone and its class and box heads, 3x320x320, without the box decoding
and non-maximum suppression: two outputs, opset 13); bert_encoder, a transformer encoder at
BERT-base's width (4 post-norm layers of d = 768, 12 heads, feed-forward 3072, GELU) over 128 token
embeddings (1x128x768, opset 14); bert_tokens, a 4-layer d-256 encoder over 128 int64 token ids
(embedding, 4 heads, classifier on the first token, opset 14); and lstm_lm, gru_lm, 2-layer
recurrent models of width 512 over 64 int64 token ids (opset 14). Timing only: the model tests
(scripts/export_test_models.py) hold the PyTorch reference checks.
With --only bert_encoder_seq: the same encoder with its sequence axis left dynamic (dim_param "seq"),
for dynamic_shapes_bench (not in the default list: zoo_bench compiles static shapes).
"""
import argparse
import inspect
import os
import warnings

import torch
import torchvision

MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "resnext50_32x4d", "densenet121", "shufflenet_v2_x1_0",
          "convnext_tiny", "swin_t", "vit_s_16", "vit_b_16", "deeplabv3_mobilenet_v3_large", "ssdlite_head",
          "bert_encoder", "bert_tokens", "lstm_lm", "gru_lm"]


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation nets return a dict; ONNX gets its "out" map."""
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


class DetectorHead(torch.nn.Module):
    """SSDlite320's backbone and heads: class logits and box offsets per anchor (no decoding)."""
    def __init__(self):
        super().__init__()
        net = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        self.backbone, self.head = net.backbone, net.head

    def forward(self, x):
        features = list(self.backbone(x).values())
        out = self.head(features)
        return out["cls_logits"], out["bbox_regression"]


class TokenEncoder(torch.nn.Module):
    """Token ids -> embeddings -> a post-norm encoder -> a classifier on the first token."""
    def __init__(self, vocab=30522, seq=128, d=256, heads=4, layers=4, classes=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, ids):
        return self.head(self.enc(self.tok(ids) + self.pos)[:, 0])


class RecurrentLM(torch.nn.Module):
    """Token ids -> embeddings -> a 2-layer LSTM or GRU -> next-token logits at every step."""
    def __init__(self, cell, vocab=8000, d=512):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.rnn = cell(d, d, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.rnn(self.tok(ids))[0])


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
    if name == "bert_tokens":
        return TokenEncoder(), torch.randint(0, 30522, (1, 128)), 14
    if name in ("lstm_lm", "gru_lm"):
        return RecurrentLM(torch.nn.LSTM if name == "lstm_lm" else torch.nn.GRU), torch.randint(0, 8000, (1, 64)), 14
    if name == "ssdlite_head":
        return DetectorHead(), torch.randn(1, 3, 320, 320), 13
    if name in ("vit_s_16", "vit_b_16"):
        if name == "vit_s_16":
            net = torchvision.models.vision_transformer.VisionTransformer(
                image_size=224, patch_size=16, num_layers=12, num_heads=6, hidden_dim=384, mlp_dim=1536)
        else:
            net = torchvision.models.vit_b_16()
        # torchvision starts the classifier at zero: every output would be 0 and checking it nothing.
        torch.nn.init.normal_(net.heads.head.weight, std=0.02)
        torch.nn.init.normal_(net.heads.head.bias, std=0.02)
        return net, torch.randn(1, 3, 224, 224), 14
    if name == "swin_t":
        return torchvision.models.swin_t(), torch.randn(1, 3, 224, 224), 14
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
        outputs = ["output", "boxes"] if name == "ssdlite_head" else ["output"]
        torch.onnx.export(model.eval(), (x,), path, opset_version=opset, input_names=["input"],
                          output_names=outputs, **legacy, **dynamic)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
