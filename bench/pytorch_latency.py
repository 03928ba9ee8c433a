#!/usr/bin/env python3
"""Latency of torchvision models in PyTorch (the baseline of model_bench), as JSON on stdout.

usage: /usr/bin/python3 bench/pytorch_latency.py MODEL BATCH THREADS REPS
Median of REPS timed runs after warm-up, in milliseconds; eval mode, no_grad, float32.
MODEL resnet18_int8, mobilenet_v2_int8, shufflenet_v2_x1_0_int8: torchvision's quantizable networks, every layer int8
(post-training static quantization calibrated on 4 random images) on PyTorch's x86 quantized engine:
FBGEMM where the build has it, else oneDNN (Debian's torch 1.13 has no FBGEMM); the engine is in
the JSON. bert_encoder: zoo_bench's transformer encoder (scripts/export_zoo_models.py: 4 layers of
d 768, 12 heads, 1x128x768); bert_encoder_int8: its linear layers int8 by PyTorch's dynamic
quantization (weights int8, activations quantized per run: PyTorch's int8 path for transformers).
"""
import functools
import json
import sys
import time

import torch
import torchvision


def quantized_engine():
    engines = torch.backends.quantized.supported_engines
    return "fbgemm" if "fbgemm" in engines else "onednn"


def int8_static(build, x):
    engine = quantized_engine()
    torch.backends.quantized.engine = engine
    model = build(quantize=False).eval()
    model.fuse_model()
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn_like(x))
    return torch.ao.quantization.convert(model, inplace=True)


def bert_encoder():
    layer = torch.nn.TransformerEncoderLayer(768, 12, dim_feedforward=3072, dropout=0.0, activation="gelu",
                                             batch_first=True)
    return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval()


def main():
    name, batch, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    models = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50,
              "mobilenet_v2": torchvision.models.mobilenet_v2}
    quantizable = {"resnet18_int8": torchvision.models.quantization.resnet18,
                   "mobilenet_v2_int8": torchvision.models.quantization.mobilenet_v2,
                   "shufflenet_v2_x1_0_int8": torchvision.models.quantization.shufflenet_v2_x1_0}
    engine = None
    if name.startswith("bert_encoder"):
        x = torch.randn(batch, 128, 768)
        model = bert_encoder()
        if name == "bert_encoder_int8":
            engine = quantized_engine()
            torch.backends.quantized.engine = engine
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            # The fused float fast path reads the float weights the int8 layers no longer have; a
            # zero attention mask (no effect on the values) keeps the encoder off it.
            mask = torch.zeros(x.shape[1], x.shape[1])
            model = functools.partial(model, mask=mask)
    else:
        x = torch.randn(batch, 3, 224, 224)
        if name in quantizable:
            engine = quantized_engine()
            model = int8_static(quantizable[name], x)
        else:
            model = models[name]().eval()
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
                      "torch": torch.__version__, "engine": engine}))


if __name__ == "__main__":
    main()
