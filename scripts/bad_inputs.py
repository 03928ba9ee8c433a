#!/usr/bin/env python3
"""Runs `loom` on bad input the way a careless user or a hostile file would, and sorts every run
into clean error / crash / hang / silent / unclear (the bad-input table of docs/testing.md).

  scripts/bad_inputs.py --loom build/bin/loom [--models build/models] [--configs accel/configs]

Cases (generated, so new commands and options are covered without editing this file):
  * every numeric option of every command (read from `loom <cmd> --help`) given values that are
    not numbers, have trailing junk, overflow, are negative for an unsigned option, or fall
    outside the printed range; every option with a value given none; an unknown option per
    command;
  * output files in folders that do not exist; the step, cycle and host-memory limits;
  * accelerator configs with a missing, unknown, duplicated, mistyped or out-of-range field, a
    name that would break the generated SystemVerilog, and files that are not JSON objects;
  * program files (from `loom accel-example`): truncated at many lengths, with header counts and
    addresses near 2^32 / 2^64, and with bytes flipped;
  * compiled models (.loom) truncated and with bytes flipped, ONNX files that are garbage or cut.

A run is clean when it exits 1 or 2 with a message naming what is wrong (the option, field or
file); a crash is a signal, a sanitizer report or an uncaught exception; a hang is a run past the
timeout; silent is exit 0 where an error was due; unclear is an error that does not say what.
Runs whose input may legally be accepted (a flipped byte in data) only count if they crash or hang.
Exits 1 unless every run is clean. Standard library only.
"""
import argparse
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

COMMANDS_WITH_BASE = {
    # command: arguments that make the command otherwise valid ({W}: work folder, {P}: a program,
    # {M}: a compiled model, {O}: an ONNX model), so the bad option is what fails.
    "accel-example": ["--out", "{W}/ex.loomprg"],
    "accel-run": ["conv2d", "--channels", "16", "--out-channels", "16", "--size", "4"],
    "bench": ["{M}", "--reps", "1", "--warmup", "0"],
    "compile": ["{O}", "-o", "{W}/c.loom", "-q"],
    "demo": [],
    "disasm": ["{P}"],
    "export": ["gemm", "{W}/g.so", "--size", "8"],
    "hw-params": [],
    "lower": ["gemm", "--size", "8"],
    "run": ["gemm", "--size", "8", "--reps", "1"],
    "sim": ["{P}"],
    "tune": ["gemm", "--size", "16", "--trials", "2", "--repeats", "1", "-q"],
}


class Runner:
    def __init__(self, loom, timeout, verbose):
        self.loom, self.timeout, self.verbose = loom, timeout, verbose
        self.rows = []  # (category, kind, args, detail)

    def run(self, kind, args, expect=None, may_succeed=False):
        """expect: a regex the output must match for the error to count as clean."""
        try:
            p = subprocess.run([self.loom] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=self.timeout)
            out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
        except subprocess.TimeoutExpired:
            self.rows.append(("hang", kind, args, "no exit after %d s" % self.timeout))
            return
        crash_marks = ("Sanitizer", "terminate called", "Segmentation fault", "Aborted", "runtime error:", "core dumped")
        if rc < 0 or rc >= 128 or any(m in out for m in crash_marks):
            cat, detail = "crash", "exit %d: %s" % (rc, out.strip()[-300:])
        elif rc == 0:
            cat, detail = ("accepted" if may_succeed else "silent"), out.strip()[-200:]
        elif rc == 1 and may_succeed and re.search(r"mismatch|differ", out):
            cat, detail = "accepted", out.strip()[-200:]
        elif expect and not re.search(expect, out, re.S):
            cat, detail = "unclear", "exit %d, wanted /%s/: %s" % (rc, expect, out.strip()[-300:])
        else:
            cat, detail = "clean", out.strip().splitlines()[-1] if out.strip() else ""
        self.rows.append((cat, kind, args, detail))
        if self.verbose:
            print("%-8s %-10s loom %s\n         %s" % (cat, kind, " ".join(args), detail[:200]))


def help_options(loom, cmd):
    """(option, type, range text) for every option with a value in `loom cmd --help`."""
    out = subprocess.run([loom, cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode()
    opts = []
    for line in out.splitlines():
        m = re.match(r"^\s+(?:-\w,)?(--[\w-]+)\s+(INT|UINT|FLOAT|TEXT)(\S*)", line)
        if m:
            opts.append((m.group(1), m.group(2), m.group(3)))
    return opts


def out_of_range_values(typ, rng):
    m = re.search(r"in [\[(]([-\d.e+]+), ([-\d.e+]+)[\])]", rng)
    vals = []
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        if typ != "FLOAT" and hi < 2**32 - 1:
            vals.append("4294967312")  # 2^32 + 16: wraps to 16 in a 32-bit parse
        vals += [repr(int(hi) + 1) if typ != "FLOAT" else repr(hi * 2), repr(int(lo) - 1) if typ != "FLOAT" else repr(lo - 1)]
    m = re.search(r">= ([-\d.e+]+)", rng)
    if m:
        vals.append(repr(int(float(m.group(1))) - 1))
    return vals


def substitute(args, ctx):
    return [a.format(**ctx) for a in args]


def option_cases(r, loom, ctx):
    for cmd, base in COMMANDS_WITH_BASE.items():
        if any("{M}" in a for a in base) and not ctx.get("M") or any("{O}" in a for a in base) and not ctx.get("O"):
            continue
        base = substitute(base, ctx)
        r.run("option", [cmd] + base + ["--no-such-option", "3"], expect=r"--no-such-option")
        for opt, typ, rng in help_options(loom, cmd):
            # Drop the option from the base arguments, so the bad value is the only one.
            b = list(base)
            if opt in b:
                i = b.index(opt)
                del b[i:i + 2]
            name = re.escape(opt)
            r.run("option", [cmd] + b + [opt], expect=name)  # no value
            if typ == "TEXT":
                continue
            bad = ["abc", "16abc", "", "99999999999999999999999", "0x10", "1e999"]
            if typ == "UINT":
                bad.append("-1")
            if typ in ("INT", "UINT"):
                bad.append("1.5")
            bad += out_of_range_values(typ, rng)
            for v in bad:
                r.run("option", [cmd] + b + [opt, v], expect=name)


def output_path_cases(r, ctx):
    W = ctx["W"]
    cases = [
        ["accel-example", "--out", "/nonexistent-dir/p.loomprg"],
        ["export", "gemm", "/nonexistent-dir/g.so"],
        ["hw-params", "--out", "/nonexistent-dir/p.sv"],
        ["tune", "gemm", "--size", "16", "--trials", "2", "--log", "/nonexistent-dir/t.jsonl"],
        ["accel-example", "--out", W],  # a folder, not a file
        ["sim", ctx["P"], "--backend", "rtl", "--fst", "/nonexistent-dir/w.fst"],
    ]
    if ctx.get("O"):
        cases.append(["compile", ctx["O"], "-o", "/nonexistent-dir/m.loom", "-q"])
    if ctx.get("M"):
        cases.append(["run", ctx["M"], "-o", "/nonexistent-dir/out.npy"])
        cases.append(["run", ctx["M"], "--reference", "/nonexistent-dir/ref.npy"])
        cases.append(["run", ctx["M"], "-i", "/nonexistent-dir/in.npy"])
    for c in cases:
        r.run("output", c, expect=r"nonexistent-dir|folder|director|exist|" + re.escape(W))


def limit_cases(r, ctx):
    """Limits that stop runaway work must fire with a message naming the flag that raises them."""
    r.run("limit", ["sim", ctx["P"], "--step-limit", "100"], expect=r"stopped after 100 micro-op steps.*--step-limit")
    r.run("limit", ["sim", ctx["P"], "--backend", "rtl", "--cycle-limit", "100"], expect=r"no FINISH after 100 cycles.*--cycle-limit")
    if ctx.get("M"):
        r.run("limit", ["run", ctx["M"], "--max-host-memory", "100"], expect=r"more than the limit of 100.*--max-host-memory")


def config_cases(r, configs, W):
    base = json.load(open(os.path.join(configs, "default.json")))
    variants = []
    for k in base:
        missing = dict(base)
        del missing[k]
        variants.append(("missing " + k, json.dumps(missing), k))
        if k != "name":
            for bad in ["\"16\"", "-16", "0", "1099511627776", "3.5", "null", "[16]"]:
                variants.append(("%s=%s" % (k, bad), json.dumps(base)[:-1] + ', "%s": %s}' % (k, bad), k))
    text = json.dumps(base)
    variants += [
        ("unknown field", text[:-1] + ', "blok_in": 16}', "blok_in"),
        ("duplicate field", text[:-1] + ', "batch": 2}', "batch"),
        ("name with newline", json.dumps(dict(base, name="a\nb")), "name"),
        ("name with quote", json.dumps(dict(base, name='a"; endpackage')), "name"),
        ("empty name", json.dumps(dict(base, name="")), "name"),
        ("not an object", "[1, 2, 3]", "object"),
        ("empty file", "", "JSON|json"),
        ("truncated", text[: len(text) // 2], "JSON|json"),
        ("block_in not a power of two", json.dumps(dict(base, block_in=12)), "block_in"),
        ("tiny buffers", json.dumps(dict(base, inp_buffer_bytes=8)), "inp_buffer_bytes"),
    ]
    for i, (what, body, field) in enumerate(variants):
        path = os.path.join(W, "cfg%d.json" % i)
        with open(path, "w") as f:
            f.write(body)
        expect = re.escape(field) if re.match(r"^\w+$", field) else field
        r.run("config", ["hw-params", "--config", path], expect=expect)
        r.run("config", ["accel-example", "--config", path, "--out", os.path.join(W, "x.loomprg")], expect=expect)


def program_layout(data):
    """Offsets of the program file's header fields (see accel/program.h)."""
    f = {}
    off = 8
    (n,) = struct.unpack_from("<I", data, off)
    f["config_len"] = off
    off += 4 + n
    f["segments"] = off
    (segs,) = struct.unpack_from("<I", data, off)
    off += 4
    f["seg"] = []
    for _ in range(segs):
        addr, size, align = struct.unpack_from("<QQQ", data, off)
        f["seg"].append(off)
        off += 24 + size
    f["insn_addr"] = off
    f["insn_count"] = off + 8
    off += 12
    f["checks"] = off
    (checks,) = struct.unpack_from("<I", data, off)
    off += 4
    f["check"] = []
    for _ in range(checks):
        addr, size = struct.unpack_from("<QQ", data, off)
        f["check"].append(off)
        off += 16 + size
    return f


def program_cases(r, P, W):
    data = open(P, "rb").read()
    lay = program_layout(data)
    rng = random.Random(7)

    def variant(name, body, expect=None, may_succeed=False):
        path = os.path.join(W, "prg_%s.loomprg" % re.sub(r"\W", "_", name))
        with open(path, "wb") as f:
            f.write(body)
        for cmd in ("disasm", "sim"):
            r.run("program", [cmd, path], expect=expect, may_succeed=may_succeed)

    def put(fmt, off, value):
        b = bytearray(data)
        struct.pack_into(fmt, b, off, value)
        return bytes(b)

    for cut in sorted({1, 7, 8, 11, 12, lay["segments"] + 2, lay["seg"][0] + 10, lay["insn_addr"] + 3, lay["checks"] + 2} |
                      {rng.randrange(len(data)) for _ in range(12)}):
        variant("cut%d" % cut, data[:cut], expect=r"truncated|bad magic|not a Loom")
    variant("config length 0xffffffff", put("<I", lay["config_len"], 0xFFFFFFFF), expect=r"truncated|config")
    variant("segments 0xffffffff", put("<I", lay["segments"], 0xFFFFFFFF), expect=r"truncated|segment")
    variant("segment bytes 2^64-1", put("<Q", lay["seg"][0] + 8, 2**64 - 1), expect=r"truncated|segment")
    variant("segment addr 2^64-16", put("<Q", lay["seg"][0], 2**64 - 16), expect=r"segment|address|outside|overlap|memory")
    variant("segment alignment 3", put("<Q", lay["seg"][0] + 16, 3), expect=r"align")
    variant("insn addr 2^64-8", put("<Q", lay["insn_addr"], 2**64 - 8), expect=r"instruction|outside|segment")
    variant("insn count 0xffffffff", put("<I", lay["insn_count"], 0xFFFFFFFF), expect=r"instruction|outside|segment")
    variant("insn count 0", put("<I", lay["insn_count"], 0), expect=r"FINISH|instruction|empty")
    variant("checks 0xffffffff", put("<I", lay["checks"], 0xFFFFFFFF), expect=r"truncated|check")
    if lay["check"]:
        variant("check addr 2^64-4", put("<Q", lay["check"][0], 2**64 - 4), expect=r"check|outside|memory")
        variant("check bytes 2^63", put("<Q", lay["check"][0] + 8, 2**63), expect=r"truncated|check")
    variant("trailing bytes", data + b"xx", expect=r"trailing|bytes")
    for i in range(24):  # flipped bytes past the config: may legally run (a data byte), must not crash
        b = bytearray(data)
        pos = rng.randrange(lay["segments"], len(data))
        b[pos] ^= 1 << rng.randrange(8)
        variant("flip%d" % i, bytes(b), may_succeed=True)


def model_cases(r, M, W):
    data = open(M, "rb").read()
    rng = random.Random(11)
    for i, cut in enumerate([0, 8, 15, 16, 40, len(data) // 2, len(data) - 9, len(data) - 1]):
        path = os.path.join(W, "cut%d.loom" % i)
        open(path, "wb").write(data[:cut])
        r.run("model", ["run", path], expect=r"truncated|bad magic|" + re.escape(path))
    for i in range(8):
        b = bytearray(data)
        b[rng.randrange(16, len(data))] ^= 0x20
        path = os.path.join(W, "flip%d.loom" % i)
        open(path, "wb").write(bytes(b))
        r.run("model", ["run", path], expect=r"corrupted")


def onnx_cases(r, O, W):
    data = open(O, "rb").read()
    cases = {"garbage": b"this is not an onnx model", "empty": b"", "zeros": bytes(64),
             "cut_half": data[: len(data) // 2], "cut_3": data[:3], "cut_minus1": data[:-1]}
    for name, body in cases.items():
        path = os.path.join(W, "bad_%s.onnx" % name)
        open(path, "wb").write(body)
        r.run("onnx", ["compile", path, "-o", os.path.join(W, "bad.loom"), "-q"], expect=re.escape(path) + "|ONNX|onnx")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", required=True)
    ap.add_argument("--configs", default=os.path.join(os.path.dirname(__file__), "..", "accel", "configs"))
    ap.add_argument("--models", help="folder with mlp.loom and relu.onnx (the suite's exported models)")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--only", help="comma-separated kinds: option,output,limit,config,program,model,onnx")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    r = Runner(os.path.abspath(a.loom), a.timeout, a.verbose)
    with tempfile.TemporaryDirectory(prefix="loom-bad-inputs-") as W:
        P = os.path.join(W, "good.loomprg")
        subprocess.run([a.loom, "accel-example", "--out", P], check=True, stdout=subprocess.DEVNULL)
        ctx = {"W": W, "P": P}
        if a.models and os.path.exists(os.path.join(a.models, "mlp.loom")):
            ctx["M"] = os.path.join(a.models, "mlp.loom")
        if a.models and os.path.exists(os.path.join(a.models, "relu.onnx")):
            ctx["O"] = os.path.join(a.models, "relu.onnx")
        kinds = set(a.only.split(",")) if a.only else {"option", "output", "limit", "config", "program", "model", "onnx"}
        if "option" in kinds:
            option_cases(r, a.loom, ctx)
        if "output" in kinds:
            output_path_cases(r, ctx)
        if "limit" in kinds:
            limit_cases(r, ctx)
        if "config" in kinds:
            config_cases(r, a.configs, W)
        if "program" in kinds:
            program_cases(r, P, W)
        if "model" in kinds and ctx.get("M"):
            model_cases(r, ctx["M"], W)
        if "onnx" in kinds and ctx.get("O"):
            onnx_cases(r, ctx["O"], W)
    cats = ["clean", "accepted", "crash", "hang", "silent", "unclear"]
    kinds = sorted({k for _, k, _, _ in r.rows})
    print("%-10s %6s " % ("input", "tried") + " ".join("%8s" % c for c in cats))
    for k in kinds + ["all"]:
        rows = [x for x in r.rows if k == "all" or x[1] == k]
        print("%-10s %6d " % (k, len(rows)) + " ".join("%8d" % sum(1 for x in rows if x[0] == c) for c in cats))
    bad = [x for x in r.rows if x[0] in ("crash", "hang", "silent", "unclear")]
    for cat, kind, args, detail in bad:
        print("%s (%s): loom %s\n    %s" % (cat.upper(), kind, " ".join(args), detail))
    print("bad inputs: %d runs, %d not clean" % (len(r.rows), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
