"""loom.accel.Config and its area model, and loom.dse.sweep, from Python: a config read, changed,
validated and saved; a sweep's records against the command line's points.csv of the same sweep."""
import csv
import os
import subprocess
import sys

import pytest

import loom


def test_config_read_modify_validate_save(tmp_path):
    c = loom.accel.Config()
    assert (c.batch, c.block_in, c.block_out, c.inp_bits) == (1, 16, 16, 8)
    c.block_in = c.block_out = 32
    c.name = "wide"
    c.validate()
    path = str(tmp_path / "wide.json")
    c.save(path)
    again = loom.accel.Config.load(path)
    assert again == c and again.to_dict()["block_in"] == 32
    assert loom.accel.Config.from_json('{"batch": 2}').batch == 2
    assert c.area()["dsp"] > loom.accel.Config().area()["dsp"]  # a 32x32 core takes more DSPs
    c.block_in = 24
    with pytest.raises(loom.ConfigError, match="block_in"):
        c.validate()
    with pytest.raises(loom.ConfigError, match="block_in"):
        c.save(str(tmp_path / "bad.json"))
    with pytest.raises(loom.ConfigError, match="nosuch"):
        loom.accel.Config.from_json('{"nosuch": 1}')


@pytest.mark.skipif(not hasattr(loom, "dse"), reason="built without the DSE library")
def test_sweep_records_match_the_command_line(tmp_path):
    records = loom.dse.sweep({"block": [16, 32]}, layers="c2,c5", jobs=2)
    assert [r["block_in"] for r in records] == [16, 32]  # "block" sets block_in and block_out
    assert all(r["legal"] and r["cycles"] > 0 and r["layers"] for r in records)
    assert records[1]["cycles"] < records[0]["cycles"] and records[1]["dsp"] > records[0]["dsp"]
    assert all(r["pareto"] for r in records)  # faster costs more area: both on the front
    out = tmp_path / "cli"
    subprocess.run([os.environ["LOOM_BIN"], "dse", "--sweep", "block=16,32", "--layers", "c2,c5", "--out", str(out),
                    "--jobs", "2", "-q"], check=True, capture_output=True)
    with open(out / "points.csv") as f:
        cli = list(csv.DictReader(f))
    assert [int(row["cycles"]) for row in cli] == [r["cycles"] for r in records]
    with pytest.raises(loom.Error, match="nosuch"):
        loom.dse.sweep({"nosuch": [1]})
    with pytest.raises(loom.TypeError, match="values are numbers"):
        loom.dse.sweep({"block": ["16"]})


@pytest.mark.skipif(not hasattr(loom, "dse"), reason="built without the DSE library")
def test_sweep_precision_energy_and_constraints():
    records = loom.dse.sweep({"precision": ["w8a8", "w4a8"]}, layers="c10", objectives=["energy", "cycles"],
                             fits="xc7z020")
    assert [r["precision"] for r in records] == ["w8a8", "w4a8"]
    assert [r["operand_widths"] for r in records] == ["W8A8", "W4A8"]
    assert records[1]["energy_uj"] < records[0]["energy_uj"]  # half the weight bytes, narrower products
    assert records[1]["energy"]["mac"] < records[0]["energy"]["mac"]
    assert abs(sum(records[0]["energy"].values()) - records[0]["energy_uj"]) < 1e-6 * records[0]["energy_uj"]
    assert all(r["feasible"] and r["accuracy"] is None and r["asic_mm2"] > 0 for r in records)
    assert records[1]["pareto"]
    too_much = loom.dse.sweep({"precision": ["w8a8"]}, layers="c10", max_energy=1e-6)
    assert not too_much[0]["feasible"] and "above --max-energy" in too_much[0]["infeasible"]
    assert not too_much[0]["pareto"]
    with pytest.raises(loom.TypeError, match="names such as 'w4a8'"):
        loom.dse.sweep({"precision": [8]})
    with pytest.raises(loom.Error, match="unknown objective 'speed'"):
        loom.dse.sweep({"block": [16]}, objectives=["cycles", "speed"])
    with pytest.raises(loom.Error, match="needs the accuracy of a model"):
        loom.dse.sweep({"block": [16]}, min_accuracy=0.99)


@pytest.mark.skipif(not hasattr(loom, "regress"), reason="built without the regression library")
def test_regress_run_records(tmp_path):
    manifest = tmp_path / "suite.json"
    manifest.write_text("""{
  "name": "py-suite",
  "jobs": [
    {"name": "convs", "workloads": ["resnet18:c11"], "backends": ["fsim", "perf"], "expect": {"reference": "cpu"}},
    {"name": "budget", "workloads": ["resnet18:c11"], "backends": ["perf"], "expect": {"max_cycles": 1000}}
  ]
}""")
    run = loom.regress.run(manifest, out=tmp_path / "out", jobs=2)
    by_group = {}
    for r in run.records:
        by_group.setdefault(r["group"], []).append(r)
    assert run.exit_code == 1  # the budget job fails its cycle limit
    assert sorted(r["backend"] for r in by_group["convs"]) == ["fsim", "perf"]
    assert all(r["status"] == "pass" for r in by_group["convs"])
    (budget,) = by_group["budget"]
    assert budget["status"] == "fail" and budget["metrics"]["cycles"] > 1000
    assert (tmp_path / "out" / "report.md").exists()
    again = loom.regress.run(manifest, out=tmp_path / "out", jobs=2)  # cached: the same results
    assert [r["status"] for r in again.records] == [r["status"] for r in run.records]
    with pytest.raises(loom.ConfigError, match="executor 'cloud'"):
        loom.regress.run(manifest, out=tmp_path / "o2", executor="cloud")
    # Passing jobs pass as the runner sees them too (it keys results by its workers' build, the
    # `loom` executable's, not by this interpreter's), and Ctrl-C is Python's again afterwards.
    script = f"""
import os, signal, loom
run = loom.regress.run({str(manifest)!r}, out={str(tmp_path / "o3")!r}, jobs=2, only="convs")
print("exit", run.exit_code, sorted(r["status"] for r in run.records))
try:
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):
        pass
except KeyboardInterrupt:
    print("KeyboardInterrupt")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "exit 0 ['not run', 'pass', 'pass']" in r.stdout and "KeyboardInterrupt" in r.stdout, r.stdout + r.stderr


def test_remote_device_by_name(tmp_path):
    """backend='rpc://HOST:PORT/BACKEND': the accelerator's kernels on a loom-rpc-server started on
    127.0.0.1 for this test, equal to the int8 model on the CPU."""
    import numpy as np
    server = os.path.join(os.path.dirname(os.environ["LOOM_BIN"]), "loom-rpc-server")
    proc = subprocess.Popen([server, "--port", "0", "--exit-after", "120"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "serving fsim (config 'default', x86_64) on 127.0.0.1:PORT"
        port = int(line.rsplit(":", 1)[1])
        x = np.random.default_rng(0).standard_normal((1, 256)).astype(np.float32)
        cal = [np.random.default_rng(k).standard_normal((1, 256)).astype(np.float32) for k in range(4)]
        cpu = loom.compile("mlp", quantize="int8", calibrate=cal)
        remote = loom.compile("mlp", target="accel", quantize="int8", calibrate=cal,
                              backend=f"rpc://127.0.0.1:{port}/fsim")
        assert any(p["device"] == "accel" for p in remote.profile(x))
        np.testing.assert_array_equal(remote.run(x)[0], cpu.run(x)[0])
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(loom.DeviceError, match="no accelerator backend named 'nosuch'"):
        loom.compile("mlp", target="accel", quantize="int8", calibrate=cal, backend="nosuch")
