"""loom.compare against PyTorch: a planted wrong layer (a converter mapping that is wrong for one
node) is found at that layer on the CPU in float and int8 and on the accelerator's functional
simulator, and without it no layer diverges in float and the simulator equals int8 on the CPU."""
import os
import sys

import numpy as np
import pytest
import torch

import loom
from loom.frontend import torch_ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_test_models as etm  # noqa: E402


@pytest.fixture(scope="module")
def vgg():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    m = etm.VggSmall()
    etm.init_weights(m)
    etm.calibrate_batchnorm(m, torch.randn(x.shape))
    rng = np.random.default_rng(5)
    calibration = [rng.standard_normal(tuple(x.shape)).astype(np.float32) for _ in range(4)]
    return m.eval(), x, calibration


PLANTED = "features.6"  # VggSmall's second ReLU


def test_compare_finds_a_planted_wrong_layer(vgg, monkeypatch):
    module, x, calibration = vgg
    relu = torch_ops.MODULES[torch.nn.ReLU]

    def planted(cv, args, kwargs):
        if cv.node.target == PLANTED:  # relu(-x) where PyTorch computes relu(x)
            return cv.add("relu", [cv.add("neg", [cv.tensor(args[0])], suffix="_planted")])
        return relu(cv, args, kwargs)

    monkeypatch.setitem(torch_ops.MODULES, torch.nn.ReLU, planted)
    c = loom.compare(module, x, backends=["fsim"], calibrate=calibration)
    assert c.columns == ["float", "int8", "fsim"]
    for column in c.columns:
        d = c.first_divergence[column]
        assert d is not None and d["module"] == PLANTED and d["call"] == "nn.ReLU", (column, c.table())
    assert c.first_mismatch["fsim"] is None, c.table()
    text = c.table()
    assert f"first error above 0.0001 at layer {c.first_divergence['float']['layer']}" in text
    assert "every layer equals int8 on the CPU bit for bit" in text


def test_non_finite_values_count_as_divergence():
    from loom.compare import _error
    want = np.array([1.0, -2.0, np.inf], np.float32)
    assert _error(want, want) == 0.0  # the same infinity in both
    assert _error(np.array([1.0, np.nan, np.inf], np.float32), want) == float("inf")
    assert _error(np.array([1.0, -2.5, np.inf], np.float32), want) == 0.25


def test_compare_without_a_plant(vgg):
    module, x, calibration = vgg
    c = loom.compare(module, x, backends=["fsim"], calibrate=calibration)
    assert c.first_divergence["float"] is None, c.table()
    assert c.first_mismatch["fsim"] is None, c.table()
    layers = [r["module"] for r in c.records]
    assert layers[0] == "features.0" and "classifier.3" in layers  # every module call is a layer
    assert all(set(r) >= {"layer", "node", "module", "call", "shape", "float", "int8", "fsim", "fsim_equals_int8"}
               for r in c.records)
    # The records are what a user tabulates: the float errors are small, the int8 ones larger.
    assert max(r["float"] for r in c.records) <= 1e-4 < max(r["int8"] for r in c.records)


def test_compare_on_the_command_line(tmp_path):
    """`loom compare` on an ONNX model of the fixture: the reference interpreter against float, int8
    and fsim; with a tight int8 tolerance the first int8 divergence is the first layer computed in
    int8 (the second convolution: the first stays float), the same on fsim, which equals int8 on
    the CPU throughout."""
    import csv
    import json
    import os
    import subprocess

    onnx = os.path.join(os.environ["LOOM_MODELS_DIR"], "vgg_small.onnx")
    out = subprocess.run([os.environ["LOOM_BIN"], "compare", onnx, "--reference", "interpreter", "--backend", "fsim",
                          "--tolerance-int8", "1e-3", "--json", "--csv", str(tmp_path / "layers.csv")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert [c["name"] for c in j["columns"]] == ["float", "int8", "fsim"] and j["reference"] == "interpreter"
    assert j["layers"][0]["name"] == "/features/features.0/Conv" and j["layers"][-1]["name"] == "output"
    assert j["first_divergence"]["float"] is None
    assert j["first_divergence"]["int8"] == j["first_divergence"]["fsim"] == "/features/features.4/Conv"
    assert j["first_mismatch"]["fsim"] is None
    assert "first error above 0.001 at layer 3 '/features/features.4/Conv'" in out.stderr
    with open(tmp_path / "layers.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["name"] for r in rows] == [layer["name"] for layer in j["layers"]] and rows[0]["fsim_equals_int8"] == "1"
    bad = subprocess.run([os.environ["LOOM_BIN"], "compare", onnx, "--backend", "fsim,,rtl"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "--backend 'fsim,,rtl' has an empty entry" in bad.stderr


def test_compare_against_onnx_runtime(tmp_path):
    """`loom compare` on an ONNX file against the framework, ONNX Runtime: its nodes' float values
    (each made an output of the model ONNX Runtime runs) against Loom's float, int8 and fsim; the
    first int8 divergence at the same node as against the interpreter; without ONNX Runtime, auto
    falls back to the interpreter and says why, and --reference ort is an error saying why."""
    import json
    import os
    import subprocess

    loom_bin, onnx = os.environ["LOOM_BIN"], os.path.join(os.environ["LOOM_MODELS_DIR"], "vgg_small.onnx")
    out = subprocess.run([loom_bin, "compare", onnx, "--reference", "ort", "--backend", "fsim", "--tolerance-int8",
                          "1e-3", "--json"], capture_output=True, text=True)
    if out.returncode != 0 and ("is not installed" in out.stderr or "is not on PATH" in out.stderr):
        pytest.skip(f"ONNX Runtime is not here: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert j["reference"].startswith("onnxruntime ")
    auto = subprocess.run([loom_bin, "compare", onnx, "--json"], capture_output=True, text=True)
    assert json.loads(auto.stdout)["reference"] == j["reference"]  # the default for an ONNX file
    names = [layer["name"] for layer in j["layers"]]
    assert names[0] == "/features/features.0/Conv_output_0" and names[-1] == "output" and len(names) >= 10
    assert j["first_divergence"]["float"] is None
    assert all(layer["errors"]["float"] < 1e-5 for layer in j["layers"])
    assert j["first_divergence"]["int8"] == j["first_divergence"]["fsim"] == "/features/features.4/Conv_output_0"
    assert j["first_mismatch"]["fsim"] is None
    env = dict(os.environ, LOOM_ORT_DIR=str(tmp_path / "no-ort"))
    auto = subprocess.run([loom_bin, "compare", onnx, "--json"], capture_output=True, text=True, env=env)
    assert auto.returncode == 0 and json.loads(auto.stdout)["reference"] == "interpreter"
    assert "not ONNX Runtime: onnxruntime-node is not installed in" in auto.stderr
    forced = subprocess.run([loom_bin, "compare", onnx, "--reference", "ort"], capture_output=True, text=True, env=env)
    assert forced.returncode != 0 and "--reference ort: onnxruntime-node is not installed in" in forced.stderr
    builtin = subprocess.run([loom_bin, "compare", "mlp", "--reference", "ort"], capture_output=True, text=True)
    assert builtin.returncode != 0 and "'mlp' is a built-in model, not an ONNX file" in builtin.stderr
