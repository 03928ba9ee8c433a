"""Token generation from Python: a Llama-style decoder (RMSNorm, rotary positions, SwiGLU,
grouped-query attention) exported from PyTorch with its key/value cache as inputs and outputs
(scripts/export_decoder.py), compiled once with the sequence and cache axes as shape variables,
generates PyTorch's own greedy tokens; sampling is seeded; what does not fit is a clear error."""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

import loom

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_decoder  # noqa: E402

RANGES = {"seq": (1, 64), "past": (0, 63)}


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    out = tmp_path_factory.mktemp("decoder")
    path, prompt, tokens, _ = export_decoder.export(str(out), layers=2, dim=64, steps=24, prompt_length=5)
    return path, prompt, tokens


@pytest.fixture(scope="module")
def model(decoder):
    return loom.compile(loom.frontend.from_onnx(decoder[0], shape_vars=RANGES))


def test_greedy_tokens_equal_pytorchs(decoder, model):
    _, prompt, tokens = decoder
    r = model.generate(prompt, max_new_tokens=len(tokens))
    assert r["tokens"] == tokens
    assert len(r["step_seconds"]) == len(tokens) - 1 and r["tokens_per_second"] > 0


def test_generating_again_starts_from_an_empty_cache(decoder, model):
    _, prompt, tokens = decoder
    assert model.generate(prompt, max_new_tokens=8)["tokens"] == tokens[:8]
    assert model.generate(prompt, max_new_tokens=8)["tokens"] == tokens[:8]


def test_sampling_is_seeded(decoder, model):
    _, prompt, tokens = decoder
    a = model.generate(prompt, max_new_tokens=12, top_k=8, temperature=1.5, seed=7)["tokens"]
    assert a == model.generate(prompt, max_new_tokens=12, top_k=8, temperature=1.5, seed=7)["tokens"]
    assert a != model.generate(prompt, max_new_tokens=12, top_k=8, temperature=1.5, seed=8)["tokens"]
    assert a != tokens[:12]
    # The most likely token alone is greedy.
    assert model.generate(prompt, max_new_tokens=12, top_k=1, seed=3)["tokens"] == tokens[:12]


def test_stop_token_ends_generation(decoder, model):
    _, prompt, tokens = decoder
    assert model.generate(prompt, max_new_tokens=20, stop_token=tokens[3])["tokens"] == tokens[:tokens.index(tokens[3]) + 1]


def test_out_of_range_prompts_and_lengths_are_errors(model):
    with pytest.raises(loom.ShapeError, match=r"a prompt of 65 tokens is outside seq's range \[1, 64\]"):
        model.generate(list(range(65)))
    with pytest.raises(loom.ShapeError, match=r"need a cache of 68 tokens at the last step, beyond past's range \[0, 63\]"):
        model.generate([1, 2, 3, 4, 5], max_new_tokens=65)
    with pytest.raises(loom.RuntimeError, match=r"prompt token 1 is 300, outside the vocabulary \[0, 256\)"):
        model.generate([1, 300])


def test_a_cache_of_the_wrong_length_is_an_error(model):
    ids = np.array([[1]], np.int64)
    key, short = np.zeros((1, 2, 4, 8), np.float32), np.zeros((1, 2, 3, 8), np.float32)
    with pytest.raises(loom.ShapeError,
                       match=r"input 'past_key_values.0.value' has past = 3 .* but input 'past_key_values.0.key' has past = 4"):
        model.run(ids, key, short, key, key)
    with pytest.raises(loom.ShapeError, match=r"past = 64 is outside its range \[0, 63\]"):
        model.run(ids, *[np.zeros((1, 2, 64, 8), np.float32)] * 4)


@pytest.mark.parametrize("present", ["past itself", "past twice"])
def test_a_past_present_pair_that_is_no_cache_is_an_error(decoder, tmp_path, present):
    m = onnx.load(decoder[0])
    # present.0.key becomes the past key itself, or the past key twice over: not grown by seq (the
    # grown one stays inside).
    for n in m.graph.node:
        n.input[:] = ["grown_key" if i == "present.0.key" else i for i in n.input]
        n.output[:] = ["grown_key" if o == "present.0.key" else o for o in n.output]
    past = "past_key_values.0.key"
    m.graph.node.append(helper.make_node("Identity", [past], ["present.0.key"]) if present == "past itself" else
                        helper.make_node("Concat", [past, past], ["present.0.key"], axis=2))
    path = str(tmp_path / "no_cache.onnx")
    onnx.save(m, path)
    bad = loom.compile(loom.frontend.from_onnx(path, shape_vars=RANGES))
    with pytest.raises(loom.ModelError, match=r"past 'past_key_values.0.key' .* and present 'present.0.key' .* are not a "
                                              r"cache pair: the present must be the past grown by seq"):
        bad.generate([1, 2])


ONE_TOKEN = {"input_shapes": {"input_ids": [1, 1]}, "shape_vars": {"past": (0, 63)}}


def test_a_model_of_one_token_steps_takes_the_prompt_a_token_a_step(decoder):
    _, prompt, tokens = decoder
    m = loom.compile(loom.frontend.from_onnx(decoder[0], **ONE_TOKEN))
    assert m.inputs[0]["shape"] == (1, 1) and "dims" not in m.inputs[0]
    r = m.generate(prompt, max_new_tokens=len(tokens))
    assert r["tokens"] == tokens
    assert len(r["step_seconds"]) == len(tokens) - 1
    with pytest.raises(loom.ShapeError, match=r"need a cache of 64 tokens at the last step, beyond past's range"):
        m.generate(prompt, max_new_tokens=61)
    # A token a step, the prompt alone can outgrow the cache: said before the first step.
    with pytest.raises(loom.ShapeError, match=r"65 prompt tokens and 1 new ones need a cache of 64 tokens"):
        m.generate(list(range(65)), max_new_tokens=1)


@pytest.fixture(scope="module")
def int8_steps(decoder):
    """The one-token-step decoder quantized to int8 for the CPU and for the accelerator (fsim), on
    the same calibration inputs (the float model's own steps over the prompt and its first tokens,
    caches of 0 to 11 tokens): the accelerator's model runs the projections and the MLP."""
    _, prompt, tokens = decoder
    g = loom.frontend.from_onnx(decoder[0], **ONE_TOKEN)
    float_steps = loom.compile(g)
    steps, caches = [], [np.zeros((1, 2, 0, 8), np.float32)] * 4
    for token in list(prompt) + tokens[:7]:
        steps.append((np.array([[token]], np.int64), *caches))
        caches = float_steps.run(*steps[-1])[1:]
    cpu = loom.compile(g, quantize="int8", calibrate=steps)
    accel = loom.compile(g, target="accel", quantize="int8", calibrate=steps)
    return cpu, accel, steps


def test_int8_generation_with_a_symbolic_step_on_the_cpu(decoder, int8_steps):
    """The int8 decoder with seq and past variables (the prompt in one step), calibrated on the
    same one-token steps, keeps PyTorch's first greedy tokens as the one-token model does."""
    _, prompt, tokens = decoder
    m = loom.compile(loom.frontend.from_onnx(decoder[0], shape_vars=RANGES), quantize="int8", calibrate=int8_steps[2])
    assert m.inputs[0]["dims"] == (1, "seq")
    got = m.generate(prompt, max_new_tokens=32)["tokens"]
    assert len(got) == 32 and got[:6] == tokens[:6]


def test_int8_generation_on_the_accelerator_equals_the_cpu_int8_reference(decoder, int8_steps):
    cpu, accel, _ = int8_steps
    _, prompt, tokens = decoder
    want = cpu.generate(prompt, max_new_tokens=32)["tokens"]
    assert accel.generate(prompt, max_new_tokens=32)["tokens"] == want
    assert want[:6] == tokens[:6]  # int8 keeps PyTorch's first greedy tokens (then the small gaps part them)
    # One step's logits and cache, bit for bit, at a cache of 9 tokens.
    rng = np.random.RandomState(3)
    inputs = [np.array([[17]], np.int64)] + [rng.randn(*s["shape"][:2], 9, s["shape"][3]).astype(np.float32)
                                             for s in cpu.inputs[1:]]
    for got, ref in zip(accel.run(*inputs), cpu.run(*inputs)):
        assert got.shape == ref.shape and np.array_equal(got, ref)
    devices = [k["device"] for k in accel.profile(*inputs)]
    layers = 2
    assert devices.count("accel") >= 7 * layers  # q, k, v, o, gate, up, down per layer


def test_a_cache_that_cannot_be_empty_is_an_error(decoder):
    m = loom.compile(loom.frontend.from_onnx(decoder[0], shape_vars={"seq": (1, 64), "past": (1, 63)}))
    with pytest.raises(loom.ModelError, match=r"the cache length 'past' has the range \[1, 63\]; .*--shape-var past=0..63"):
        m.generate([1, 2])


def test_positions_and_mask_computed_from_shapes(tmp_path):
    # As Hugging Face exports write them: ranges over the shapes, gathered and compared.
    path, prompt, tokens, _ = export_decoder.export(str(tmp_path), layers=2, dim=64, steps=16, prompt_length=6,
                                                    computed_mask=True, name="computed")
    kinds = {n.op_type for n in onnx.load(path).graph.node}
    assert {"Range", "LessOrEqual", "Where"} <= kinds
    m = loom.compile(loom.frontend.from_onnx(path, shape_vars=RANGES))
    assert m.generate(prompt, max_new_tokens=len(tokens))["tokens"] == tokens


def test_a_range_from_shapes_that_does_not_count_by_one_is_an_error(tmp_path):
    # (Folded at each probe point, its values differ: an error naming it.)
    # y = x + range(0, 2 * seq, 2), the range's limit from x's shape.
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Mul", ["seq", "two"], ["limit"]),
             helper.make_node("Range", ["zero", "limit", "two"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    consts = [helper.make_tensor(n, onnx.TensorProto.INT64, [], [v]) for n, v in (("one", 1), ("two", 2), ("zero", 0))]
    g = helper.make_graph(nodes, "range_by_two", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, "seq"])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], consts)
    path = str(tmp_path / "range.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    with pytest.raises(loom.ModelError, match=r"the value of 'rf', computed at import, depends on the shape variables \(float32\[8\] at seq = 8"):
        loom.frontend.from_onnx(path, shape_vars={"seq": (1, 8)})
