"""Ctrl-C during a long simulation: an int8 ResNet-18 (64x64) running on the RTL simulation in a child
interpreter stops within seconds of SIGINT as KeyboardInterrupt with Loom's message, and the same
Model runs again afterwards (its devices reloaded) until a second SIGINT stops it the same way."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

import loom

CHILD = r"""
import sys, numpy as np, loom
m = loom.load(sys.argv[1], backend="rtl")
x = np.zeros(m.inputs[0]["shape"], np.float32)
for attempt in range(2):
    print("running", flush=True)
    try:
        m.run(x)
        print("finished", flush=True)
    except KeyboardInterrupt as e:
        print("stopped:", e, flush=True)
# Nothing of the interrupts is left over: a compile that runs models (calibration) goes through.
loom.compile("mlp", quantize="int8", calibrate=2)
print("compiled", flush=True)
"""


def wait_for(proc, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith(text):
            return line.strip()
    raise AssertionError(f"no line starting {text!r} within {timeout} s")


def test_ctrl_c_stops_an_rtl_simulation_and_the_model_runs_again(tmp_path):
    cal = [np.random.default_rng(k).standard_normal((1, 3, 64, 64)).astype(np.float32) for k in range(2)]
    path = str(tmp_path / "r18.loom")
    loom.compile("resnet18", image=64, target="accel", quantize="int8", calibrate=cal).save(path)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    try:
        for _ in range(2):
            wait_for(proc, "running", 60)
            time.sleep(0.5)  # well inside the run, which takes about two seconds on the RTL of a fast host
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            line = wait_for(proc, "stopped:", 30)
            assert time.monotonic() - t0 < 5, "the simulation did not stop promptly"
            assert "interrupted: the" in line, line
        wait_for(proc, "compiled", 60)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
