"""loom.tune from Python: a GEMM template searched with a per-trial callback (its records, a
callback's exception stopping the search, the tuning log `loom compile` reads), and the
accelerator's conv2d tiling measured in cycles on the performance model."""
import json

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
