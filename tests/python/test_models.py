"""loom.compile / loom.load / Model.run from Python against PyTorch's outputs (the models fixture:
scripts/export_test_models.py), and the errors a Python caller gets: Loom's kinds as exceptions
with the C++ messages, naming the argument."""
import os
import subprocess
import sys

import numpy as np
import pytest

import loom

MODELS = os.environ["LOOM_MODELS_DIR"]


def case(name):
    path = os.path.join(MODELS, name)
    return path + ".onnx", np.load(path + ".input0.npy"), np.load(path + ".output0.npy")


@pytest.mark.parametrize("name", ["mlp", "conv_bias_relu", "conv_depthwise", "densenet_transition"])
def test_onnx_model_matches_pytorch(name):
    onnx, x, want = case(name)
    m = loom.compile(onnx)
    assert m.inputs[0]["shape"] == x.shape and m.inputs[0]["dtype"] == "float32"
    (got,) = m.run(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))


def test_saved_model_loads_and_runs_the_same(tmp_path):
    onnx, x, want = case("conv_bias_relu")
    m = loom.compile(onnx)
    (first,) = m.run(x)
    path = str(tmp_path / "m.loom")
    m.save(path)
    loaded = loom.load(path)
    assert loaded.outputs == m.outputs
    (again,) = loaded.run(x)
    np.testing.assert_array_equal(first, again)
    with pytest.raises(loom.RuntimeError, match="loaded from a file"):
        loaded.save(str(tmp_path / "again.loom"))


def test_inputs_of_other_layouts_are_read_by_value():
    onnx, x, want = case("mlp")
    m = loom.compile(onnx)
    (contiguous,) = m.run(x)
    fortran = np.asfortranarray(x)
    strided = np.repeat(x, 2, axis=-1)[..., ::2]
    for other in (fortran, strided):
        (got,) = m.run(other)
        np.testing.assert_array_equal(got, contiguous)


def test_wrong_inputs_are_errors_naming_the_input():
    onnx, x, _ = case("mlp")
    m = loom.compile(onnx)
    name = m.inputs[0]["name"]
    with pytest.raises(loom.TypeError, match=f"input '{name}' expects float32"):
        m.run(x.astype(np.float64))
    with pytest.raises(loom.ShapeError, match=f"input '{name}' expects float32"):
        m.run(x[..., :3])
    with pytest.raises(loom.TypeError, match=f"input 0 '{name}' is a list, not a numpy array"):
        m.run(x.tolist())
    with pytest.raises(loom.TypeError, match="numpy dtype complex64 has no Loom tensor type"):
        m.run(x.astype(np.complex64))
    with pytest.raises(loom.RuntimeError, match="model takes 1 inputs, got 2"):
        m.run(x, x)


def test_errors_are_loom_kinds_with_the_cores_messages(tmp_path):
    with pytest.raises(loom.ModelError, match="'nosuch' is neither a file nor a built-in model"):
        loom.compile("nosuch")
    with pytest.raises(loom.ConfigError, match="target 'gpu' is not one"):
        loom.compile("mlp", target="gpu")
    with pytest.raises(loom.RuntimeError, match="cannot open"):
        loom.load(str(tmp_path / "missing.loom"))
    bad = tmp_path / "bad.loom"
    bad.write_bytes(b"not a model")
    with pytest.raises(loom.ModelError):
        loom.load(str(bad))
    for kind in (loom.ModelError, loom.ConfigError, loom.ShapeError, loom.TypeError, loom.DeviceError):
        assert issubclass(kind, loom.Error) and kind is not loom.Error
    assert issubclass(loom.Error, RuntimeError)


def test_builtin_model_at_another_size():
    m = loom.compile("mlp", batch=3)
    assert m.inputs[0]["shape"][0] == 3
    x = np.random.default_rng(1).standard_normal(m.inputs[0]["shape"]).astype(np.float32)
    (batched,) = m.run(x)
    one = loom.compile("mlp")
    for row in range(3):
        (single,) = one.run(x[row : row + 1])
        np.testing.assert_allclose(batched[row : row + 1], single, rtol=1e-5, atol=1e-6)


# Loads two models and checks their outputs equal bit for bit, in a process of its own: nothing
# compiled before the load, so the runtime's hooks must resolve for a package imported RTLD_LOCAL.
SAME_OUTPUTS = """
import sys
import numpy as np
import loom
cpu, accel = loom.load(sys.argv[1]), loom.load(sys.argv[2])
x = np.random.default_rng(3).standard_normal(cpu.inputs[0]["shape"]).astype(np.float32)
(want,) = cpu.run(x)
(got,) = accel.run(x)
assert np.any(want != 0)
np.testing.assert_array_equal(got, want)
print("bit for bit")
"""


@pytest.mark.parametrize("image", [32])
def test_int8_model_on_the_functional_simulator_equals_the_cpu(tmp_path, image):
    # Compiled by the command line; loaded in a fresh interpreter. The accelerator's layers run on
    # fsim (registered by the extension), and the CPU's kernels call back into the runtime
    # (parallel loops): both equal the int8 model on the CPU bit for bit.
    loom_bin = os.environ["LOOM_BIN"]
    paths = {}
    for target in ("cpu", "accel"):
        paths[target] = str(tmp_path / f"{target}.loom")
        args = [loom_bin, "compile", "resnet18", "--image", str(image), "--quantize", "int8", "--calibrate", "2",
                "--target", target, "-o", paths[target], "-q"]
        subprocess.run(args, check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-c", SAME_OUTPUTS, paths["cpu"], paths["accel"]], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and "bit for bit" in run.stdout, run.stdout + run.stderr
