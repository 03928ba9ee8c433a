#!/bin/sh
# What a new user meets in the first hour with Loom, run as they would run it (README, docs/).
#   first_hour.sh LOOM WORKDIR MODELS_DIR SOURCE_DIR CASE
# Each case prints what it found and exits 0 when Loom behaved as documented.
set -eu
loom=$1
dir=$2/$5
models=$3
src=$4
python=/usr/bin/python3
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
fail() { echo "FIRST_HOUR_FAIL: $*"; exit 1; }
# A .npy file of the given shape, filled by a numpy expression of `x` (a standard normal draw).
npy() { $python -c "import numpy as np; x = np.random.default_rng(7).standard_normal($2).astype(np.float32); np.save('$1', $3)"; }

case $5 in
  new_user_mobilenet_v3)
    # README's bring-your-own-model commands on a torchvision MobileNetV3-Large (realistic random
    # weights, ImageNet-normalized input): the compile prints its agreement with the float model;
    # the int8 model on the accelerator's functional simulator is within cosine 0.9 of PyTorch, or
    # the compile warned and said what to do.
    "$loom" compile "$models/mobilenet_v3_large.onnx" --quantize int8 --calibrate 16 --target accel -o m.loom -q \
      > compile.txt 2> compile.err || fail "compile: $(cat compile.err)"
    cat compile.txt compile.err
    grep -q "agreement with the float model" compile.txt || fail "no agreement figures"
    grep -q "held-out (16 other random inputs" compile.txt || fail "no held-out figures"
    grep -q "saturation (share of values beyond the quantized range" compile.txt || fail "no saturation"
    "$loom" run m.loom --input "$models/mobilenet_v3_large.input0.npy" --reference \
      "$models/mobilenet_v3_large.output0.npy" > run.txt || true
    cat run.txt
    cosine=$(sed -n 's/.*; cosine \([-0-9.e]*\)$/\1/p' run.txt)
    [ -n "$cosine" ] || fail "loom run printed no cosine"
    if $python -c "import sys; sys.exit(0 if float('$cosine') >= 0.9 else 1)"; then
      echo "FIRST_HOUR_OK: cosine $cosine against PyTorch"
    elif grep -q "^warning: " compile.err && grep -q "what to do: calibrate on inputs like" compile.err; then
      echo "FIRST_HOUR_OK: cosine $cosine against PyTorch, and the compile warned"
    else
      fail "cosine $cosine against PyTorch, and the compile did not warn"
    fi
    ;;
  compile_json)
    # --json: stdout is one JSON object (the report included), everything else goes to stderr.
    "$loom" compile mlp --quantize int8 --calibrate 4 --json -o m.loom > out.json 2> err.txt
    $python -c "
import json
d = json.load(open('out.json'))
q = d['quantization']
print('FIRST_HOUR_OK: outputs', d['outputs'], 'accuracy', q['accuracy'], 'held-out inputs', q['held_out']['inputs'])"
    grep -q "quantizing: calibrating on 4 random inputs" err.txt || fail "the progress did not go to stderr"
    ;;
  compile_min_accuracy)
    # --min-accuracy above what the model reaches: an error, and no file written.
    if "$loom" compile mlp --quantize int8 --calibrate 4 --min-accuracy 1 -o m.loom > out.txt 2>&1; then
      fail "compiled although below --min-accuracy"
    fi
    cat out.txt
    [ ! -e m.loom ] || fail "m.loom was written"
    grep -q "error: --min-accuracy 1: the quantized model's accuracy is 0\.[0-9]* on the held-out inputs; nothing written" \
      out.txt && echo "FIRST_HOUR_OK"
    ;;
  run_json)
    # loom run --json on an int8 model: stdout is one JSON object with the kernels and outputs.
    "$loom" compile mlp --quantize int8 --calibrate 2 -q -o m.loom > /dev/null
    "$loom" run m.loom --json > out.json 2> err.txt
    $python -c "
import json
d = json.load(open('out.json'))
print('FIRST_HOUR_OK: %d kernels, outputs %s' % (len(d['kernels']), [o['name'] for o in d['outputs']]))"
    grep -q "output 0 'fc3'" err.txt || fail "the output line did not go to stderr"
    ;;
  non_finite_inputs)
    # NaN into an int8 model: an error naming the input; --allow-non-finite lets it through; the
    # float model propagates NaN.
    "$loom" compile mlp --quantize int8 --calibrate 2 -q -o q.loom > /dev/null
    "$loom" compile mlp -q -o f.loom > /dev/null
    npy nan.npy "(1, 256)" "np.where(np.arange(256) == 5, np.nan, x)"
    if "$loom" run q.loom --input nan.npy > q.txt 2>&1; then fail "the int8 model took NaN"; fi
    grep -q "input 'input' holds 1 NaN or infinite value (the first at element 5: nan)" q.txt || fail "$(cat q.txt)"
    "$loom" run q.loom --input nan.npy --allow-non-finite > allowed.txt || fail "--allow-non-finite: $(cat allowed.txt)"
    "$loom" run f.loom --input nan.npy > f.txt
    grep -q "output 0 'fc3': float32\[1, 10\] \[-*nan" f.txt || fail "the float model did not propagate NaN: $(cat f.txt)"
    echo "FIRST_HOUR_OK"
    ;;
  bad_config_before_calibration)
    # A config that is not JSON is reported before the model is imported or calibrated.
    printf '{"name": "x",\n "batch": 1,,}\n' > bad.json
    start=$(date +%s)
    if "$loom" compile resnet18 --quantize int8 --calibrate 16 --target accel --config bad.json > out.txt 2>&1; then
      fail "compiled with a broken config"
    fi
    cat out.txt
    ! grep -q "quantizing" out.txt || fail "calibration started before the config was read"
    grep -q "accelerator config 'bad.json': not valid JSON" out.txt || fail "no JSON error"
    echo "FIRST_HOUR_OK in $(($(date +%s) - start)) s"
    ;;
  config_check)
    # loom config check: derived sizes and instruction fields; an unknown field with its closest
    # known one; an instruction word overflow with the fields to shrink, and the suggestion works.
    "$loom" config check "$src/accel/configs/default.json" > ok.txt 2>&1 || fail "$(cat ok.txt)"
    grep -q "inp         32768           16     2048          11" ok.txt || fail "$(cat ok.txt)"
    printf '{"name": "t", "batch": 1, "blok_in": 16, "block_out": 16, "inp_bits": 8, "wgt_bits": 8, "acc_bits": 32, "out_bits": 8, "inp_buffer_bytes": 32768, "wgt_buffer_bytes": 262144, "acc_buffer_bytes": 131072, "out_buffer_bytes": 32768, "uop_buffer_bytes": 32768}\n' > typo.json
    "$loom" config check typo.json > typo.txt 2>&1 && fail "a misspelt field passed"
    grep -q "unknown field 'blok_in' (did you mean 'block_in'?)" typo.txt || fail "$(cat typo.txt)"
    big='"inp_buffer_bytes": 4194304, "wgt_buffer_bytes": 262144, "acc_buffer_bytes": 131072, "out_buffer_bytes": 131072, "uop_buffer_bytes": 32768'
    printf '{"name": "big", "batch": 1, "block_in": 16, "block_out": 16, "inp_bits": 8, "wgt_bits": 8, "acc_bits": 32, "out_bits": 8, %s}\n' "$big" > big.json
    "$loom" config check big.json > big.txt 2>&1 && fail "an over-wide config passed: $(cat big.txt)"
    cat big.txt
    grep -q "shrink inp_buffer_bytes to at most [0-9]*" big.txt || fail "no advice"
    fix=$(sed -n 's/.*shrink inp_buffer_bytes to at most \([0-9]*\).*/\1/p' big.txt)
    sed "s/\"inp_buffer_bytes\": 4194304/\"inp_buffer_bytes\": $fix/" big.json > fixed.json
    "$loom" config check fixed.json > fixed.txt 2>&1 || fail "the advised size does not fit: $(cat fixed.txt)"
    grep -q "instructions (bits used of 128)" fixed.txt && echo "FIRST_HOUR_OK: inp_buffer_bytes $fix fits"
    ;;
  quiet_compile)
    # -q: the summary without per-layer lists.
    "$loom" compile mobilenet_v2 --image 32 --quantize int8 --calibrate 2 --target accel -q -o m.loom > out.txt 2>&1
    cat out.txt
    ! grep -q "depthwise_int8 (conv2d): grouped convolution" out.txt || fail "-q printed the layers kept on the CPU"
    ! grep -q "kernel [0-9]*/[0-9]*:" out.txt || fail "-q printed progress"
    grep -q "kept on the CPU (without -q: which and why)" out.txt && echo "FIRST_HOUR_OK"
    ;;
  regress_without_rtl_model)
    # A job on the RTL for a config with no built RTL model: refused before any job runs, and
    # flagged by --list.
    cat > m.json << 'EOF'
{"name": "norl", "configs": {"small": {"inp_buffer_bytes": 16384}},
 "jobs": [{"name": "ops", "workloads": ["op:add,channels=16,size=4"], "configs": ["small"], "backends": ["fsim", "rtl"]}]}
EOF
    if "$loom" regress m.json --out w > run.txt 2>&1; then fail "the run went ahead"; fi
    cat run.txt
    grep -q "1 of the 2 jobs cannot run here, so none ran" run.txt || fail "no refusal"
    grep -q "small/rtl: rtl: no RTL model was built for accelerator config" run.txt || fail "no reason"
    [ ! -e w/jobs ] || fail "jobs ran"
    if "$loom" regress m.json --list > list.txt 2>&1; then fail "--list passed"; fi
    grep -q "small/rtl .*\[cannot run: rtl: no RTL model" list.txt && grep -q "2 jobs, 1 cannot run here" list.txt &&
      echo "FIRST_HOUR_OK"
    ;;
  regress_shares_models)
    # Two jobs of one model and config: one quantizes and compiles, the other loads what it wrote;
    # accuracy is measured on inputs the float model tells apart.
    cat > m.json << 'EOF'
{"name": "share", "jobs": [{"name": "mlp", "workloads": ["model:mlp"], "backends": ["fsim", "perf"], "inputs": 8,
  "expect": {"reference": "cpu", "min_accuracy": 0.5}}]}
EOF
    "$loom" regress m.json --out w -j 2 > run.txt 2>&1 || fail "$(cat run.txt)"
    cat run.txt
    here=$(cat w/jobs/mlp/*/*/*/log.txt | grep -c "model mlp: quantized here" || true)
    shared=$(cat w/jobs/mlp/*/*/*/log.txt | grep -c "model mlp: quantization shared" || true)
    [ "$here" -eq 1 ] && [ "$shared" -eq 1 ] || fail "quantized here $here times, shared $shared times"
    grep -q '"accuracy"' w/results.jsonl && grep -q '"quantization"' w/results.jsonl && echo "FIRST_HOUR_OK"
    ;;
  regress_degenerate_accuracy)
    # Top-1 agreement over one input, or with the float model answering one class, proves nothing:
    # the check fails and says why instead of passing at 1.0.
    cat > m.json << 'EOF'
{"name": "degenerate", "jobs": [{"name": "one", "workloads": ["model:mlp"], "backends": ["fsim"], "inputs": 1,
  "expect": {"reference": "none", "min_accuracy": 0.5}}]}
EOF
    if "$loom" regress m.json --out w > run.txt 2>&1; then fail "passed on one input"; fi
    cat run.txt
    grep -q "min_accuracy: top-1 agreement over one input says nothing about the quantization" run.txt ||
      fail "one input passed"
    # inputs_from: four copies of one input (the float output is the same for each), and four
    # inputs a thousandth apart (one class for all of them).
    mkdir same near
    for k in 0 1 2 3; do
      npy "same/$k.npy" "(1, 256)" "x"
      npy "near/$k.npy" "(1, 256)" "x + $k * 1e-3"
    done
    cat > m.json << 'EOF'
{"name": "degenerate", "jobs": [
  {"name": "same", "workloads": ["model:mlp"], "backends": ["fsim"], "inputs": 4, "inputs_from": "same",
   "expect": {"reference": "none", "min_accuracy": 0.5}},
  {"name": "near", "workloads": ["model:mlp"], "backends": ["fsim"], "inputs": 4, "inputs_from": "near",
   "expect": {"reference": "none", "min_accuracy": 0.5}}]}
EOF
    if "$loom" regress m.json --out w2 > run2.txt 2>&1; then fail "passed on inputs the model does not tell apart"; fi
    cat run2.txt
    grep -q "same/model-mlp/default/fsim: min_accuracy: the float model's output is the same for all 4 inputs" run2.txt ||
      fail "identical inputs passed"
    grep -q "near/model-mlp/default/fsim: min_accuracy: the float model picks class [0-9]* for all 4 inputs" run2.txt &&
      echo "FIRST_HOUR_OK"
    ;;
  progress_not_in_pipes)
    # Into a pipe or a file, no carriage returns or escape codes.
    cat > m.json << 'EOF'
{"name": "quietpipe", "jobs": [{"name": "c", "workloads": ["command:true", "command:echo hi"], "backends": ["fsim"]}]}
EOF
    "$loom" regress m.json --out w 2>&1 | cat > out.txt
    cat out.txt
    if grep -q "$(printf '\033')" out.txt || grep -q "$(printf '\r')" out.txt; then fail "escape codes in a pipe"; fi
    grep -q "2 passed" out.txt && echo "FIRST_HOUR_OK"
    ;;
  *) echo "unknown case $5"; exit 2 ;;
esac
