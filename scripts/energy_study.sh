#!/bin/sh
# The worked study of docs/energy.md: the accelerator's design space for int8-class ResNet-18
# (224x224) and the BERT-style encoder (128 tokens x 256), precision x GEMM shape x scratchpads,
# each point timed by the performance model, its energy per inference by the asic-45nm table and
# its accuracy measured on the CPU; the Pareto-optimal designs that fit the xc7z020.
#
#   scripts/energy_study.sh [BUILD_DIR] [OUT_DIR]      (default: build, energy-study)
set -e
build=${1:-build}
out=${2:-energy-study}
loom="$build/bin/loom"
[ -x "$loom" ] || { echo "no $loom: build Loom first (README)"; exit 1; }
mkdir -p "$out"
sweeps="--sweep precision=w8a8,w4a8,w4a4,w2a8 --sweep block=16,32 --sweep wgt_kib=64,128,256 --sweep acc_kib=32,64,128 --sweep inp_kib=16,32"
# ResNet-18: 4 x 2 x 3 x 3 x 2 = 144 points.
"$loom" dse --model resnet18 $sweeps --objectives energy,cycles,accuracy --fits xc7z020 -q --out "$out/resnet18"
# The encoder: the test models' export (Debian's python with torch) writes it once.
bert="$build/models/bert_encoder.onnx"
if [ ! -f "$bert" ]; then
  /usr/bin/python3 "$(dirname "$0")/export_test_models.py" "$build/models" --only bert_encoder
fi
"$loom" dse --model "$bert" $sweeps --objectives energy,cycles,accuracy --fits xc7z020 -q --out "$out/bert_encoder"
