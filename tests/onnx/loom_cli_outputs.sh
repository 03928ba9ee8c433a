#!/bin/sh
# `loom compile` and `loom run` on ONNX node-test models, as a user would: a model with three
# outputs written with -o per output and with --output-dir, each checked against ONNX's reference
# output (--reference, tolerance 0: a split is exact), and a model whose axes are an input fixed
# with --bind. usage: loom_cli_outputs.sh LOOM PYTHON NODE_DATA_DIR WORK_DIR
set -eu
loom=$1 py=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
# The test data (ONNX TensorProto .pb) as .npy files for loom.
pb2npy() { "$py" -c "import sys, onnx, numpy; from onnx import numpy_helper as h
t = onnx.TensorProto(); t.ParseFromString(open(sys.argv[1], 'rb').read()); numpy.save(sys.argv[2], h.to_array(t))" "$1" "$2"; }
split=$data/test_split_equal_parts_1d
for f in input_0 output_0 output_1 output_2; do pb2npy "$split/test_data_set_0/$f.pb" "$work/split_$f.npy"; done
"$loom" compile "$split/model.onnx" -o "$work/split.loom" -q
"$loom" run "$work/split.loom" -i "$work/split_input_0.npy" --output-dir "$work/out" --tolerance 0 \
  --reference "$work/split_output_0.npy" --reference "$work/split_output_1.npy" --reference "$work/split_output_2.npy"
test "$(ls "$work/out" | wc -l)" -eq 3
"$loom" run "$work/split.loom" -i "$work/split_input_0.npy" -o "$work/a.npy" -o "$work/b.npy"
same() { "$py" -c "import numpy, sys; sys.exit(0 if (numpy.load(sys.argv[1]) == numpy.load(sys.argv[2])).all() else 1)" "$1" "$2"; }
# --output-dir names each file after the model's output; -o writes the first outputs in order.
for k in 0 1 2; do
  name=$("$py" -c "import onnx; print(onnx.load('$split/model.onnx').graph.output[$k].name)")
  same "$work/out/$name.npy" "$work/split_output_$k.npy"
done
same "$work/a.npy" "$work/split_output_0.npy"
same "$work/b.npy" "$work/split_output_1.npy"
# More -o files than outputs is an error naming both counts.
if "$loom" run "$work/split.loom" -o "$work/1.npy" -o "$work/2.npy" -o "$work/3.npy" -o "$work/4.npy" 2>"$work/err"; then
  echo "4 -o files for 3 outputs were accepted"; exit 1
fi
grep -q "the model has 3 outputs, 4 -o or --reference files given" "$work/err"
# --bind: ReduceSum's axes are a model input; bound at compile time, they leave one input.
red=$data/test_reduce_sum_keepdims_random
for f in input_0 input_1 output_0; do pb2npy "$red/test_data_set_0/$f.pb" "$work/red_$f.npy"; done
axes=$("$py" -c "import onnx; print(onnx.load('$red/model.onnx').graph.input[1].name)")
"$loom" compile "$red/model.onnx" -o "$work/red.loom" -q --bind "$axes=$work/red_input_1.npy"
"$loom" run "$work/red.loom" -i "$work/red_input_0.npy" --reference "$work/red_output_0.npy" --tolerance 1e-5
if "$loom" compile "$red/model.onnx" -o "$work/red2.loom" -q --bind "nosuch=$work/red_input_1.npy" 2>"$work/err"; then
  echo "--bind of a name that is no input was accepted"; exit 1
fi
grep -q "a value is given for 'nosuch', which is not an input of the model" "$work/err"
echo "loom_cli_outputs: ok"
