"""loom.tune from Python: a GEMM template searched with a per-trial callback (its records, a
callback's exception stopping the search, the tuning log `loom compile` reads), and the
accelerator's conv2d tiling measured in cycles on the performance model, and a whole model tuned kernel by
kernel into a log that loom.compile reads."""
import json

import numpy as np
import pytest

import loom

pytestmark = pytest.mark.skipif(not hasattr(loom, "tune"), reason="built without the tuner")


def test_gemm_search_calls_back_every_trial(tmp_path):
    t = loom.tune.gemm(64, 64, 64)
    assert t.op == "gemm" and t.shape == [64, 64, 64] and t.space_size > 1
    assert set(t.default_config) == set(t.knobs)
    seen = []
    log = str(tmp_path / "tuning.jsonl")
    r = loom.tune.tune(t, trials=4, budget_seconds=30, repeats=2, confirm_seconds=0.01, cold_confirm=False,
                       on_trial=seen.append, log=log)
    assert 1 <= len(seen) <= 4 and [s["trial"] for s in seen] == list(range(1, len(seen) + 1))
    assert all(s["ok"] and s["gflops"] > 0 and set(s["config"]) == set(t.knobs) for s in seen)
    assert [s["config"] for s in seen] == [x["config"] for x in r["trials"]]
    assert r["default"]["config"] == t.default_config and r["best"]["ok"]
    with open(log) as f:
        entry = json.loads(f.readline())
    assert entry["op"] == "gemm" and entry["shape"] == [64, 64, 64] and entry["target"] == t.target


def test_a_callbacks_exception_stops_the_search():
    calls = []

    def stop(record):
        calls.append(record)
        raise ValueError("enough")

    with pytest.raises(ValueError, match="enough"):
        loom.tune.tune(loom.tune.gemm(32, 32, 32), trials=8, on_trial=stop)
    assert len(calls) == 1
    with pytest.raises(loom.TypeError, match="not a function"):
        loom.tune.tune(loom.tune.gemm(32, 32, 32), on_trial=3)
    with pytest.raises(loom.ConfigError, match="trials must be at least 1"):
        loom.tune.tune(loom.tune.gemm(32, 32, 32), trials=0)


def test_accel_conv_tiling_in_cycles():
    t = loom.tune.accel_conv2d(32, 32, 8, config=loom.accel.Config(), device="perf")
    cycles = []
    r = loom.tune.tune(t, trials=3, on_trial=lambda rec: cycles.append(rec["cycles"]))
    assert cycles and all(c > 0 for c in cycles)
    assert r["best"]["cycles"] <= r["default"]["cycles"]
    with pytest.raises(loom.ConfigError, match="device 'gpu'"):
        loom.tune.accel_conv2d(32, 32, 8, device="gpu")


def test_a_whole_model_tuned_from_python(tmp_path):
    """model_templates gives every distinct kernel a build looks up: each tuned into a log, a build
    with that log finds a configuration for every lookup, and its outputs are the untuned build's."""
    templates = loom.tune.model_templates("resnet18", image=32)
    assert len(templates) >= 5 and all(t.op == "conv2d_nchwc" for t in templates)
    assert len({(t.op, tuple(t.shape)) for t in templates}) == len(templates)  # distinct
    log = str(tmp_path / "model.jsonl")
    for t in templates:
        loom.tune.tune(t, trials=2, repeats=1, confirm_seconds=0, cold_confirm=False, use_model=False, log=log)
    tuned = loom.compile("resnet18", image=32, tuning_log=log)
    cpu = tuned.tuning["cpu"]
    assert cpu["looked_up"] >= len(templates) and cpu["found"] == cpu["looked_up"]
    untuned = loom.compile("resnet18", image=32)
    assert untuned.tuning is None
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = untuned.run(x)[0]
    np.testing.assert_allclose(tuned.run(x)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())
    (tmp_path / "empty.jsonl").write_text("")
    assert loom.compile("resnet18", image=32, tuning_log=tmp_path / "empty.jsonl").tuning["cpu"]["found"] == 0
    accel = loom.tune.model_templates("resnet18", image=32, target="accel")
    assert accel and all(t.op == "accel_conv2d" and "device=rtl" in t.target for t in accel)
    int8 = loom.tune.model_templates("resnet18", image=32, quantize="int8")
    assert int8 and all(t.op == "conv2d_nchwc_int8" for t in int8)
    with pytest.raises(loom.ConfigError, match="target 'gpu'"):
        loom.tune.model_templates("resnet18", target="gpu")
    with pytest.raises(loom.TypeError, match="tune.model_templates: model is a int"):
        loom.tune.model_templates(3)
