"""The accelerator from Python below the model level: loom.build(target='accel') on a schedule
written in Python (checked against numpy), devices by name with their options, programs, the
commit records and their first divergence (a planted one found where it was planted), timelines,
the performance model on its own against the perf device, DSE on the local executor against the
threads one, and loom.build(target='cuda')."""
import json
import os
import re
import sys

import numpy as np
import pytest

import loom

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import accel_gemm  # noqa: E402  (the tutorial's GEMM and schedule)

HAVE_RTL = "rtl" in loom.accel.backends()


def built_gemm(config, n=64, **tiling):
    A, W, C, stages = accel_gemm.gemm(config, config.batch, n, n)
    s = accel_gemm.schedule(config, A, W, C, stages, **tiling)
    f = loom.build(s, [A, W, C], target="accel", config=config, name="gemm")
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, A.shape, dtype=np.int8)
    w = rng.integers(-128, 128, W.shape, dtype=np.int8)
    return f, a, w, accel_gemm.reference(a, w)


@pytest.mark.parametrize("config_file", [None, "1x32x32.json"])
def test_accel_build_matches_numpy(config_file):
    """A GEMM scheduled in Python runs on fsim equal to numpy (VTA's default and a 32x32 core); on
    the perf device its cycles are the performance model's estimate of the same stream."""
    config = loom.accel.Config() if config_file is None else loom.accel.Config.load(
        os.path.join(os.path.dirname(__file__), "..", "..", "accel", "configs", config_file))
    for tiling in ({}, {"n_tile": 2}, {"virtual_threads": 2}):
        f, a, w, want = built_gemm(config, n=4 * config.block_out, **tiling)
        np.testing.assert_array_equal(f(a, w), want)
        stats = f.stats
        assert stats["device"] == "fsim" and stats["instructions"] == f.instruction_count
        assert stats["counters"]["gemm_macs"] == a.shape[0] * a.shape[2] * 4 * config.block_out * a.shape[1] * a.shape[3]
        out = np.zeros_like(want)
        with loom.accel.Device("perf", config=config) as perf:
            assert f(a, w, out, device=perf) is None
        np.testing.assert_array_equal(out, want)
        assert f.stats["cycles"] == loom.accel.estimate_cycles(f)["cycles"] > 0
    assert "GEMM" in f.disassemble() and [x["name"] for x in f.args] == ["A", "W", "C"]


def test_accel_build_errors():
    config = loom.accel.Config()
    f, a, w, _ = built_gemm(config)
    other = loom.accel.Config()
    other.block_in = other.block_out = 32
    with pytest.raises(loom.ConfigError, match="not the one the function was built for"):
        f(a, w, device=loom.accel.Device("fsim", config=other))
    with pytest.raises(loom.TypeError, match=r"gemm: argument 0 'A' is int16\[1, 4, 1, 16\], expects int8"):
        f(a.astype(np.int16), w)
    with pytest.raises(loom.TypeError, match="device is a str"):
        f(a, w, device="fsim")
    A, W, C, stages = accel_gemm.gemm(config, 1, 64, 64)
    s = loom.create_schedule(C)  # nothing mapped onto the accelerator: its stages are host loops
    with pytest.raises(loom.Error):
        loom.build(s, [A, W, C], target="accel")
    with pytest.raises(loom.ConfigError, match="needs target='accel'"):
        loom.build(s, [A, W, C], config=config)


def test_programs_and_counters(tmp_path):
    p = loom.accel.matmul_program(16, 64, 128, seed=5)
    p.save(tmp_path / "m.prg")
    q = loom.accel.Program.load(tmp_path / "m.prg")
    assert q.instruction_count == p.instruction_count > 0 and q.checks == 1
    assert q.disassemble() == p.disassemble()
    with loom.accel.Device("fsim") as d:
        r = q.run(d)
        assert r["mismatched_checks"] == 0 and "ok" in r["report"]
        assert r["counters"]["gemm_macs"] == d.counters()["gemm_macs"] == 16 * 64 * 128
    assert d.closed
    with pytest.raises(loom.DeviceError, match="Device.counters: the fsim device is closed"):
        d.counters()
    with pytest.raises(loom.ShapeError, match="N = 60 is not a positive multiple of 16"):
        loom.accel.matmul_program(16, 60, 128)


def test_device_memory_registers_and_errors():
    d = loom.accel.Device("fsim")
    addr = d.alloc(64)
    d.write(addr, np.arange(64, dtype=np.int8))
    np.testing.assert_array_equal(d.read(addr, (4, 16))[2], np.arange(32, 48, dtype=np.int8))
    d.launch(0x7000_0000, 3)  # no stream there
    with pytest.raises(loom.DeviceError, match="instruction 0"):
        d.wait(1.0)
    with pytest.raises(loom.ConfigError, match="did you mean 'cycle_limit'"):
        loom.accel.Device("rtl" if HAVE_RTL else "perf", cycle_limt=10)
    with pytest.raises(loom.ConfigError, match='unknown option "bogus"'):
        loom.accel.Device("fsim", bogus=1)
    with pytest.raises(loom.ConfigError, match="belong to its server"):
        loom.accel.Device("rpc://127.0.0.1:9/fsim", trace="x.json")
    with pytest.raises(loom.DeviceError, match="no accelerator backend named 'nosuch'"):
        loom.accel.Device("nosuch")


@pytest.mark.skipif(not HAVE_RTL, reason="built without the RTL simulation (Verilator)")
def test_compare_and_a_planted_divergence(tmp_path):
    p = loom.accel.matmul_program(16, 64, 128)
    r = loom.accel.compare(p, ["fsim", "rtl"])
    assert r["same"] and r["divergences"] == [] and r["errors"] == {"fsim": None, "rtl": None}
    assert len(r["records"]["fsim"]) == len(r["records"]["rtl"]) == p.instruction_count - 1  # FINISH commits nothing
    assert [x["digest"] for x in r["records"]["fsim"]] == [x["digest"] for x in r["records"]["rtl"]]
    # Plant: one byte of the weights changed in the copy the RTL runs. The first weight load parts them.
    p.save(tmp_path / "m.prg")
    q = loom.accel.Program.load(tmp_path / "m.prg")
    weights = next(i for i, s in enumerate(q.segments) if s["nbytes"] == 64 * 128)
    data = q.read_segment(weights)
    with loom.accel.Device("fsim") as d:
        d.record_commits()
        p.run(d)
        a = d.take_commits()
    data[5] ^= 1
    q.write_segment(weights, data)
    with loom.accel.Device("rtl") as d:
        d.record_commits()
        assert q.run(d)["mismatched_checks"] == 1
        b = d.take_commits()
    first_wgt_load = next(i for i, line in enumerate(p.disassemble().splitlines()) if "LOAD wgt" in line)
    div = loom.accel.first_divergence(a, b)
    assert div["index"] == first_wgt_load and div["run"] == 1
    assert div["a"]["opcode"] == div["b"]["opcode"] == "LOAD" and "wgt" in div["a"]["target"]
    assert div["a"]["digest"] != div["b"]["digest"]
    assert loom.accel.first_divergence(a, a) is None
    with pytest.raises(loom.ConfigError, match="does not record per-instruction commits"):
        loom.accel.compare(p, ["fsim", "board-fsim"])
    with pytest.raises(loom.TypeError, match="has no 'digest'"):
        loom.accel.first_divergence([{"run": 1, "index": 0, "module": "load", "opcode": "LOAD", "target": ""}], a)


@pytest.mark.skipif(not HAVE_RTL, reason="built without the RTL simulation (Verilator)")
def test_timelines(tmp_path):
    """The RTL's and the perf device's timelines (Chrome / Perfetto JSON) and the performance
    model's per-instruction timing as records."""
    p = loom.accel.matmul_program(16, 64, 128)
    with loom.accel.Device("rtl", trace=tmp_path / "rtl.json") as d:
        cycles = p.run(d)["cycles"]
    events = json.loads((tmp_path / "rtl.json").read_text())["traceEvents"]
    busy = [e for e in events if e.get("name", "").endswith(" busy")]  # one slice per instruction
    assert len(busy) == p.instruction_count
    assert max(e["ts"] + e["dur"] for e in busy) - min(e["ts"] for e in busy) <= cycles
    with loom.accel.Device("perf", trace=tmp_path / "perf.json", dram_latency=64) as d:
        perf_cycles = p.run(d)["cycles"]
    assert json.loads((tmp_path / "perf.json").read_text())["traceEvents"]
    e = loom.accel.estimate_cycles(p, timeline=True, dram_latency=64)
    assert e["cycles"] == perf_cycles
    rows = e["timeline"]
    assert len(rows) == p.instruction_count and all(r["start"] <= r["end"] <= e["cycles"] for r in rows)
    assert sum(r["end"] - r["start"] for r in rows if r["module"] == "compute") == e["busy"]["compute"]
    with pytest.raises(loom.ConfigError, match="dram_latncy"):
        loom.accel.estimate_cycles(p, dram_latncy=1)


def test_isa_fields():
    fields = loom.accel.isa_fields("GEMM")
    assert fields[0] == {"name": "opcode", "offset": 0, "width": 3}
    assert all(a["offset"] + a["width"] <= b["offset"] for a, b in zip(fields, fields[1:]))
    with pytest.raises(loom.TypeError, match="'JUMP' is not one"):
        loom.accel.isa_fields("JUMP")


@pytest.mark.skipif(not hasattr(loom, "dse"), reason="built without the DSE library")
def test_dse_local_executor_equals_threads(tmp_path, monkeypatch):
    sweeps = {"block": [16, 32]}
    threads = loom.dse.sweep(sweeps, layers="c2,c5", jobs=2)
    local = loom.dse.sweep(sweeps, layers="c2,c5", jobs=2, executor="local", out=tmp_path / "local")
    assert [(r["block_in"], r["cycles"], r["lut"], r["legal"]) for r in local] == \
        [(r["block_in"], r["cycles"], r["lut"], r["legal"]) for r in threads]
    assert all(r["legal"] for r in local)
    assert (tmp_path / "local" / "regress" / "report.md").exists()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(loom.Error, match="sbatch"):
        loom.dse.sweep(sweeps, layers="c2", executor="slurm", out=tmp_path / "slurm")
    with pytest.raises(loom.ConfigError, match="executor 'cloud'"):
        loom.dse.sweep(sweeps, executor="cloud")


def test_cuda_build(tmp_path):
    from loom import te
    n = 1024
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0 + B[i], name="C")
    s = loom.create_schedule(C)
    bx, tx = s[C].split(C.op.axis[0], factor=128)
    s[C].bind(bx, "blockIdx.x")
    s[C].bind(tx, "threadIdx.x")
    try:
        f = loom.build(s, [A, B, C], target="cuda", name="axpy")
    except loom.CodegenError as e:
        pytest.skip(f"no NVRTC: {e}")
    assert "__global__" in f.source and ".entry" in f.ptx
    (k,) = f.kernels
    assert k["grid"] == [n // 128, 1, 1] and k["block"] == [128, 1, 1] and k["registers"] > 0
    a, b = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    ok, why = loom.cuda_available()
    if not ok:
        with pytest.raises(loom.DeviceError):
            f(a, b)
        pytest.skip(f"no GPU to run on: {why}")
    np.testing.assert_allclose(f(a, b), a * 2 + b)


def _stub_names(path):
    """Top-level names of a .pyi and each class's members."""
    import ast
    tree = ast.parse(open(path).read())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        if isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names, members


@pytest.mark.parametrize("module,stub", [("_loom", "_loom.pyi"), ("accel", "accel.pyi"), ("te", "te.pyi"), ("tune", "tune.pyi")])
def test_stubs_name_every_public_binding(module, stub):
    """Every public function, class and class member of the compiled module has its type stub."""
    if not hasattr(loom._ext, module) and module != "_loom":
        pytest.skip(f"built without {module}")
    ext = loom._ext if module == "_loom" else getattr(loom._ext, module)
    names, members = _stub_names(os.path.join(os.path.dirname(loom.__file__), stub))
    for name in (n for n in dir(ext) if not n.startswith("_")):
        obj = getattr(ext, name)
        if isinstance(obj, type(os)) and module == "_loom":
            continue  # a submodule: its own stub
        assert name in names, f"{stub} lacks {name}"
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            missing = {m for m in dir(obj) if not m.startswith("_")} - members.get(name, set())
            assert not missing, f"{stub}: {name} lacks {sorted(missing)}"


def test_mixed_precision_from_python():
    """Layers given wider weights: on a W4A8 config fc2 at 8 bits runs in two passes of 4-bit
    digits and equals the CPU model at W4A8 with the same table; a cosine budget chooses the table
    (the layers widened differ from the all-narrow model); a table and a budget together, and a
    width the config does not run, are refused."""
    configs = os.path.join(os.path.dirname(__file__), "..", "..", "accel", "configs")
    c = loom.accel.Config.load(os.path.join(configs, "w4a8.json"))
    table = {"fc2": 8}
    accel = loom.compile("mlp", target="accel", quantize="int8", calibrate=2, config=c, layer_weight_bits=table)
    cpu = loom.compile("mlp", quantize="int8", calibrate=2, precision="W4A8", layer_weight_bits=table)
    narrow = loom.compile("mlp", quantize="int8", calibrate=2, precision="W4A8")
    x = np.random.default_rng(6).uniform(-1, 1, (1, 256)).astype(np.float32)
    assert len([k for k in accel.profile(x) if k["device"] == "accel"]) == 3
    assert np.array_equal(accel.run(x), cpu.run(x))
    assert not np.array_equal(cpu.run(x), narrow.run(x))
    chosen = loom.compile("mlp", target="accel", quantize="int8", calibrate=2, config=c, mixed_precision=0.9999)
    assert not np.array_equal(chosen.run(x), narrow.run(x))
    with pytest.raises(loom.ConfigError, match="give one"):
        loom.compile("mlp", quantize="int8", layer_weight_bits=table, mixed_precision=0.99)
    with pytest.raises(loom.ConfigError, match=re.escape("layer 'fc2' is given 2-bit weights; config 'w4a8'")):
        loom.compile("mlp", target="accel", quantize="int8", config=c, layer_weight_bits={"fc2": 2})


def test_narrow_precision_from_python():
    """A W4A8 config: its programs run on fsim, the performance model and the RTL with their checks;
    a model compiled for it quantizes at its widths and equals a CPU model compiled at W4A8; a
    precision that disagrees with the config, and 16-bit accumulators, are refused by name."""
    configs = os.path.join(os.path.dirname(__file__), "..", "..", "accel", "configs")
    c = loom.accel.Config.load(os.path.join(configs, "w4a8.json"))
    assert (c.wgt_bits, c.inp_bits, c.out_bits) == (4, 8, 8)
    p = loom.accel.matmul_program(16, 64, 128, config=c)
    for backend in ("fsim", "perf") + (("rtl",) if HAVE_RTL else ()):
        with loom.accel.Device(backend, config=c) as d:
            r = p.run(d)
        assert r["mismatched_checks"] == 0 and r["counters"]["dma_load_bytes_wgt"] == 64 * 128 // 2, (backend, r)
    accel = loom.compile("mlp", target="accel", quantize="int8", calibrate=2, config=c)
    cpu = loom.compile("mlp", quantize="int8", calibrate=2, precision="W4A8")
    x = np.random.default_rng(5).uniform(-1, 1, (1, 256)).astype(np.float32)
    assert np.array_equal(accel.run(x), cpu.run(x))
    assert not np.array_equal(cpu.run(x), loom.compile("mlp", quantize="int8", calibrate=2).run(x))
    with pytest.raises(loom.ConfigError, match=re.escape("precision W8A8: accelerator config 'w4a8' is W4A8")):
        loom.compile("mlp", target="accel", quantize="int8", config=c, precision="W8A8")
    # 16-bit accumulators: the mlp's layers could overflow them, so they stay on the CPU.
    a16 = loom.compile("mlp", target="accel", quantize="int8", calibrate=2, config=os.path.join(configs, "acc16.json"))
    assert not [k for k in a16.profile(x) if k["device"] == "accel"]
    assert np.array_equal(a16.run(x), loom.compile("mlp", quantize="int8", calibrate=2).run(x))
    c.wgt_bits = 3
    with pytest.raises(loom.ConfigError, match="'wgt_bits' must be 2, 4 or 8"):
        c.validate()
