#!/usr/bin/env python3
"""Export a small Llama-style decoder with a key/value cache, and PyTorch's greedy tokens.

usage: /usr/bin/python3 scripts/export_decoder.py OUTDIR [--layers N] [--dim D] [--steps S] [--prompt-length P]
                                                      [--vocab V] [--computed-mask]

The decoder (random weights, seeded): token embedding, N pre-norm blocks of RMSNorm, attention
with rotary positions and grouped-query heads (8 query heads over 2 key/value heads), and a
SwiGLU feed-forward; a final RMSNorm and the vocabulary projection. Its ONNX form is the usual
one for generation:
    inputs   input_ids [1, seq] int64, past_key_values.<L>.key / .value [1, 2, past, head_dim]
    outputs  logits [1, seq, vocab], present.<L>.key / .value [1, 2, past + seq, head_dim]
with seq and past dynamic (past 0 on the prompt's step). Positions and the causal mask are
slices of tables at [past, past + seq), so the graph reads no position input; with
--computed-mask they are ranges over the shapes compared, as Hugging Face exports write them.

Writes OUTDIR/tiny_llama.onnx, tiny_llama.prompt.npy (int64 token ids) and tiny_llama.greedy.npy
(the S tokens PyTorch's own greedy loop over the same module generates after the prompt, with the
cache), and tiny_llama.json (sizes, and the smallest gap between the best and second logit along
the loop: a loop whose gap is tiny would make the tokens depend on rounding, so the seed is
chosen where it is not).
"""
import argparse
import inspect
import json
import math
import os
import warnings

import numpy as np
import torch
import torch.nn as nn

HEADS, KV_HEADS, MAX_POS = 8, 2, 512


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.head_dim = dim // HEADS
        self.q = nn.Linear(dim, HEADS * self.head_dim, bias=False)
        self.k = nn.Linear(dim, KV_HEADS * self.head_dim, bias=False)
        self.v = nn.Linear(dim, KV_HEADS * self.head_dim, bias=False)
        self.o = nn.Linear(HEADS * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        hd = self.head_dim
        q = self.q(x).view(1, -1, HEADS, hd).transpose(1, 2)
        k = self.k(x).view(1, -1, KV_HEADS, hd).transpose(1, 2)
        v = self.v(x).view(1, -1, KV_HEADS, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        total = k.shape[2]
        group = HEADS // KV_HEADS
        k_all = k[:, :, None].expand(1, KV_HEADS, group, total, hd).reshape(1, HEADS, total, hd)
        v_all = v[:, :, None].expand(1, KV_HEADS, group, total, hd).reshape(1, HEADS, total, hd)
        scores = q @ k_all.transpose(2, 3) / math.sqrt(hd) + mask
        out = torch.softmax(scores, dim=-1) @ v_all
        return self.o(out.transpose(1, 2).reshape(1, -1, HEADS * hd)), k, v


class Block(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(dim), Attention(dim)
        self.ffn_norm = RMSNorm(dim)
        self.gate = nn.Linear(dim, ffn, bias=False)
        self.up = nn.Linear(dim, ffn, bias=False)
        self.down = nn.Linear(ffn, dim, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        a, k, v = self.attn(self.attn_norm(x), cos, sin, mask, past_k, past_v)
        x = x + a
        h = self.ffn_norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h)), k, v


class TinyLlama(nn.Module):
    def __init__(self, layers, dim, ffn, vocab, computed_mask=False):
        super().__init__()
        self.computed_mask = computed_mask
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, ffn) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        hd = dim // HEADS
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(MAX_POS).float(), inv)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos_table", angles.cos())
        self.register_buffer("sin_table", angles.sin())
        causal = torch.full((MAX_POS, MAX_POS), -1e9).triu(1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids, *past):
        seq, start = input_ids.shape[1], past[0].shape[2]
        if self.computed_mask:
            # As exporters of Hugging Face models write it: positions from a range over the shapes,
            # the causal mask from comparing them.
            positions = torch.arange(start, start + seq)
            cos, sin = self.cos_table[positions], self.sin_table[positions]
            keys = torch.arange(start + seq)
            mask = torch.where(keys[None, :] <= positions[:, None], torch.tensor(0.0), torch.tensor(-1e9))
        else:
            cos = self.cos_table[start:start + seq]
            sin = self.sin_table[start:start + seq]
            mask = self.causal[start:start + seq, :start + seq]
        x = self.embed(input_ids)
        present = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.norm(x)), *present)


def empty_cache(model, layers):
    hd = model.blocks[0].attn.head_dim
    return [torch.zeros(1, KV_HEADS, 0, hd) for _ in range(2 * layers)]


def greedy(model, layers, prompt, steps):
    """PyTorch's own loop: the prompt with an empty cache, then one token per step."""
    tokens, gaps = [], []
    past = empty_cache(model, layers)
    ids = prompt
    with torch.no_grad():
        for _ in range(steps):
            logits, *past = model(ids, *past)
            top2 = logits[0, -1].topk(2).values
            gaps.append(float(top2[0] - top2[1]))
            nxt = int(logits[0, -1].argmax())
            tokens.append(nxt)
            ids = torch.tensor([[nxt]])
    return tokens, min(gaps)


def export(outdir, layers=2, dim=128, steps=32, prompt_length=7, vocab=256, computed_mask=False, max_seed=100,
           name="tiny_llama"):
    """Writes the files above; returns (onnx path, prompt, greedy tokens, the module)."""
    os.makedirs(outdir, exist_ok=True)
    ffn = dim * 8 // 3 // 16 * 16
    # The first seed whose greedy loop keeps every step's best logit clear of the second.
    for seed in range(max_seed):
        torch.manual_seed(seed)
        model = TinyLlama(layers, dim, ffn, vocab, computed_mask).eval()
        for pname, p in model.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=1.0 / math.sqrt(p.shape[1]) if "embed" not in pname else 1.0)
        prompt = torch.randint(0, vocab, (1, prompt_length))
        tokens, gap = greedy(model, layers, prompt, steps)
        if gap > 1e-2:
            break
    names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    outs = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    dynamic = {"input_ids": {1: "seq"}, "logits": {1: "seq"}}
    dynamic.update({n: {2: "past"} for n in names})
    dynamic.update({n: {2: "total"} for n in outs})
    example_past = [torch.randn(1, KV_HEADS, 3, dim // HEADS) for _ in names]
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    path = os.path.join(outdir, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randint(0, vocab, (1, 2)), *example_past), path, opset_version=14,
                          input_names=["input_ids", *names], output_names=["logits", *outs], dynamic_axes=dynamic,
                          **legacy)
    np.save(os.path.join(outdir, name + ".prompt.npy"), prompt.numpy().astype(np.int64))
    np.save(os.path.join(outdir, name + ".greedy.npy"), np.array(tokens, dtype=np.int64))
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump({"layers": layers, "dim": dim, "ffn": ffn, "heads": HEADS, "kv_heads": KV_HEADS, "vocab": vocab,
                   "max_positions": MAX_POS, "seed": seed, "steps": steps, "min_top2_gap": gap}, f, indent=1)
    return path, prompt[0].tolist(), tokens, model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prompt-length", type=int, default=7)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--computed-mask", action="store_true",
                    help="positions and the causal mask from ranges over the shapes (as Hugging Face exports write "
                         "them), not slices of tables; writes tiny_llama_computed_mask.*")
    args = ap.parse_args()
    path, prompt, tokens, _ = export(args.outdir, args.layers, args.dim, args.steps, args.prompt_length, args.vocab,
                                     args.computed_mask, name="tiny_llama_computed_mask" if args.computed_mask else
                                     "tiny_llama")
    print(f"{path}: prompt {','.join(map(str, prompt))}; {args.steps} greedy tokens")


if __name__ == "__main__":
    main()
