"""Shapes known at run time from Python: a transformer encoder exported from PyTorch with a dynamic
sequence axis, imported with that axis as a shape variable and compiled once, runs every length
in its range with PyTorch's outputs at each; lengths outside the range are errors naming it."""
import numpy as np
import pytest
import torch
import torch.nn as nn

import loom


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, activation="gelu",
                                       batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    path = str(tmp_path_factory.mktemp("dyn") / "encoder.onnx")
    torch.onnx.export(enc, (torch.randn(1, 16, 64),), path, input_names=["x"], output_names=["y"],
                      opset_version=14, dynamic_axes={"x": {1: "seq"}, "y": {1: "seq"}})
    return enc, path


def test_one_compiled_encoder_runs_every_length(encoder):
    enc, path = encoder
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (1, 96)}))
    assert m.inputs[0]["dims"] == (1, "seq", 64) and m.inputs[0]["shape"] == (1, 96, 64)
    for seq in [96, 1, 2, 17, 64]:
        x = np.random.RandomState(seq).randn(1, seq, 64).astype(np.float32)
        (got,) = m.run(x)
        with torch.no_grad():
            want = enc(torch.from_numpy(x)).numpy()
        assert got.shape == (1, seq, 64)
        assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want)), seq


def test_lengths_outside_the_range_are_errors(encoder):
    _, path = encoder
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (4, 32)}))
    with pytest.raises(loom.ShapeError, match=r"seq = 33 is outside its range \[4, 32\]"):
        m.run(np.zeros((1, 33, 64), np.float32))
    with pytest.raises(loom.ShapeError, match=r"seq = 3 is outside its range \[4, 32\]"):
        m.run(np.zeros((1, 3, 64), np.float32))


def test_a_shape_variable_must_name_a_dimension(encoder):
    _, path = encoder
    with pytest.raises(loom.ModelError, match=r"shape variable 'tokens' names no input dimension.*x:seq"):
        loom.frontend.from_onnx(path, shape_vars={"tokens": (1, 8)})


def test_a_table_filled_to_a_shape_from_shapes_is_filled_at_run_time(tmp_path):
    # y = x * ConstantOfShape(Shape(x), 2.5) + range(0, seq): both change with seq.
    from onnx import TensorProto, helper
    import onnx
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["fill"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Range", ["zero", "seq", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x", "fill"], ["m"]),
             helper.make_node("Add", ["m", "rf"], ["y"])]
    consts = [helper.make_tensor(n, TensorProto.INT64, [], [v]) for n, v in (("one", 1), ("zero", 0))]
    g = helper.make_graph(nodes, "fill", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], consts)
    path = str(tmp_path / "fill.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (1, 40)}))
    for seq in [40, 1, 7]:
        x = np.random.RandomState(seq).randn(1, seq).astype(np.float32)
        (y,) = m.run(x)
        assert np.allclose(y, x * 2.5 + np.arange(seq, dtype=np.float32)[None, :]), seq


def test_a_dimension_named_as_a_sum_of_variables(tmp_path):
    # A cache's growth times a mask whose length the model names 'past + seq', as exporters name an
    # attention mask's: y = concat(past, x) * mask[..., None].
    from onnx import TensorProto, helper
    import onnx
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    nodes = [helper.make_node("Concat", ["past", "x"], ["grown"], axis=1),
             helper.make_node("Unsqueeze", ["mask", "axes"], ["m"]),
             helper.make_node("Mul", ["grown", "m"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4]),
              helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, "past", 4]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "past + seq"])]
    g = helper.make_graph(nodes, "sum_dim", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [axes])
    path = str(tmp_path / "sum_dim.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (1, 8), "past": (0, 8)}))
    assert m.inputs[2]["dims"] == (1, "past + seq")
    rs = np.random.RandomState(0)
    for past, seq in [(3, 2), (0, 5), (8, 8)]:
        x, p = rs.randn(1, seq, 4).astype(np.float32), rs.randn(1, past, 4).astype(np.float32)
        mask = rs.randn(1, past + seq).astype(np.float32)
        (y,) = m.run(x, p, mask)
        assert np.allclose(y, np.concatenate([p, x], axis=1) * mask[..., None]), (past, seq)
    with pytest.raises(loom.ShapeError, match=r"input 'mask' .*dimension 1 is 6, not past \+ seq = 5"):
        m.run(np.zeros((1, 2, 4), np.float32), np.zeros((1, 3, 4), np.float32), np.zeros((1, 6), np.float32))
    # Longer than its storage: refused before it is copied.
    with pytest.raises(loom.ShapeError, match=r"input 'mask' .*dimension 1 is 1000, outside past \+ seq's range \[1, 16\]"):
        m.run(np.zeros((1, 2, 4), np.float32), np.zeros((1, 3, 4), np.float32), np.zeros((1, 1000), np.float32))


def test_named_dimensions_parse_as_affine_forms(tmp_path):
    from onnx import TensorProto, helper
    import onnx
    names = ["seq", "2*seq", "past", "past + seq - 1", "3 + past"]
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, n]) for i, n in enumerate(names)]
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(len(names))]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None) for i in range(len(names))]
    path = str(tmp_path / "forms.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "forms", inputs, outputs),
                                opset_imports=[helper.make_opsetid("", 14)]), path)
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars={"seq": (1, 8), "past": (1, 8)}))
    assert [i["dims"][1] for i in m.inputs] == ["seq", "2*seq", "past", "past + seq - 1", "past + 3"]
    xs = [np.full((1, n), -1.0 + k, np.float32) for k, n in enumerate([3, 6, 4, 6, 7])]  # seq 3, past 4
    assert [y.shape for y in m.run(*xs)] == [(1, 3), (1, 6), (1, 4), (1, 6), (1, 7)]
    # A named dimension that is no form of the variables stays an error naming it.
    with pytest.raises(loom.ModelError, match=r"input 'z': dimension 'seq \* past' is neither static nor an affine form of the shape variables"):
        onnx.save(helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["z"], ["w"])], "bad",
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, "seq * past"]),
             helper.make_tensor_value_info("s", TensorProto.FLOAT, ["seq", "past"])],
            [helper.make_tensor_value_info("w", TensorProto.FLOAT, None)]),
            opset_imports=[helper.make_opsetid("", 14)]), str(tmp_path / "bad.onnx"))
        loom.frontend.from_onnx(str(tmp_path / "bad.onnx"), shape_vars={"seq": (1, 8), "past": (1, 8)})


@pytest.fixture(scope="module")
def reshape_topk(tmp_path_factory):
    """x: float[2, 3, 8] -> Reshape(shape) -> TopK(k) on the last axis: two inputs read as values."""
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("TopK", ["r", "k"], ["values", "indices"], axis=-1)],
        "reshape_topk",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("indices", TensorProto.INT64, None)])
    path = str(tmp_path_factory.mktemp("session") / "reshape_topk.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_a_session_compiles_per_value_of_the_inputs_read_as_shapes(reshape_topk):
    s = loom.OnnxSession(reshape_topk)
    assert s.input_names == ["x", "shape", "k"]
    assert s.compilations == 0
    x = np.random.RandomState(1).randn(2, 3, 8).astype(np.float32)
    runs = [((6, 8), 3), ((4, 12), 5), ((6, 8), 3), ((48, 1), 1), ((4, 12), 5)]
    for shape, k in runs:
        values, indices = s.run(x, np.array(shape, np.int64), np.array([k], np.int64))
        r = x.reshape(shape)
        want = -np.sort(-r, axis=-1)[:, :k]
        np.testing.assert_array_equal(values, want)
        np.testing.assert_array_equal(np.take_along_axis(r, indices, axis=-1), want)
    assert sorted(s.value_inputs) == ["k", "shape"]
    assert s.compilations == 3 and s.cached == 3


def test_a_bound_input_is_fixed_for_every_run(reshape_topk):
    s = loom.OnnxSession(reshape_topk, bind={"shape": np.array([6, 8], np.int64)}, max_compiled=1)
    assert s.input_names == ["x", "k"] and s.value_inputs == ["k"]
    x = np.arange(48, dtype=np.float32).reshape(2, 3, 8)
    for k in [2, 4, 2]:
        values, _ = s.run(x, np.array([k], np.int64))
        np.testing.assert_array_equal(values, x.reshape(6, 8)[:, ::-1][:, :k])
    assert s.compilations == 3 and s.cached == 1  # one kept: 2 was dropped for 4
    with pytest.raises(loom.ModelError, match=r"input 'k': the value given is int64\[2\]"):
        s.run(x, np.array([1, 2], np.int64))
    with pytest.raises(loom.ConfigError, match=r"max_compiled is 0, not in \[1, 1024\]"):
        loom.OnnxSession(reshape_topk, max_compiled=0)
