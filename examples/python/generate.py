#!/usr/bin/env python3
"""Token generation with a key/value cache: a small Llama-style decoder from PyTorch, exported to
ONNX with its past and present key/values, compiled once for every sequence and cache length,
then greedy and sampled generation after a prompt, against PyTorch's own greedy loop.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/generate.py [--dim 128] [--tokens 32]
"""
import argparse
import os
import sys
import tempfile

import loom

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_decoder  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=128, help="model width (default 128)")
    ap.add_argument("--tokens", type=int, default=32, help="tokens to generate (default 32)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as out:
        path, prompt, torch_tokens, _ = export_decoder.export(out, layers=2, dim=args.dim, steps=args.tokens)
        # seq: the tokens of one step; past: the cache's length, 0 on the prompt's step.
        model = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (1, 128), "past": (0, 127)}))
    model.generate(prompt, max_new_tokens=2)  # the first run touches the buffers and starts the threads
    greedy = model.generate(prompt, max_new_tokens=args.tokens)
    print(f"prompt {prompt}")
    print(f"greedy  {greedy['tokens']}")
    print(f"PyTorch {torch_tokens}: {'equal' if greedy['tokens'] == torch_tokens else 'DIFFERENT'}")
    sampled = model.generate(prompt, max_new_tokens=args.tokens, top_k=20, temperature=0.8, seed=1)
    print(f"top-20 sampled (seed 1) {sampled['tokens']}")
    print(f"prompt step {greedy['prefill_seconds'] * 1e3:.2f} ms, then {greedy['tokens_per_second']:.0f} tokens/s")
    return 0 if greedy["tokens"] == torch_tokens else 1


if __name__ == "__main__":
    sys.exit(main())
