#!/usr/bin/env bash
# Formal check of one harness in hw/formal/: yosys reads it with the RTL, abc's PDR engine
# proves its assertions for every reachable state (no bound), and a failure is replayed by
# yosys-smtbmc, which names the assertion and writes the counterexample as a VCD.
#
#   hw/formal/run.sh HARNESS PKG_DIR OUT_DIR [SECONDS]
#
# HARNESS is a module (and file) name, e.g. loom_fifo_formal; PKG_DIR holds loom_accel_pkg.sv
# (`loom hw-params --out`). Sources are read with `read_verilog -sv -formal -defer -DSYNTHESIS` (the
# harness's immediate assert/assume; the RTL's simulation-only assertions stay out, as in
# synthesis), flattened, memories mapped to registers, undefined values (an out-of-range part
# select) left free, written as AIGER (registers start at
# zero; each harness assumes reset in its first cycle) and checked by `yosys-abc ... pdr`.
# PDR gets SECONDS (default 120); if it decides nothing in that time, `bmc3` checks 30 cycles
# from reset instead and the result says it is bounded; the replay also gets SECONDS. Exit 0
# when the assertions hold.
# Environment: YOSYS, YOSYS_ABC, YOSYS_SMTBMC, SOLVER (for the replay; default z3).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 HARNESS PKG_DIR OUT_DIR [SECONDS]" >&2
  exit 2
fi
harness=$1 pkg_dir=$2 out_dir=$3 seconds=${4:-120}
yosys=${YOSYS:-yosys}
abc=${YOSYS_ABC:-yosys-abc}
smtbmc=${YOSYS_SMTBMC:-yosys-smtbmc}
solver=${SOLVER:-z3}
here=$(cd "$(dirname "$0")" && pwd)
rtl_dir=$(cd "$here/../rtl" && pwd)
pkg=$pkg_dir/loom_accel_pkg.sv
[ -f "$pkg" ] || { echo "formal: $pkg not found" >&2; exit 2; }
[ -f "$here/$harness.sv" ] || { echo "formal: no harness $here/$harness.sv" >&2; exit 2; }
for tool in "$yosys" "$abc"; do
  command -v "$tool" >/dev/null || { echo "formal: '$tool' not found; Debian: apt-get install yosys" >&2; exit 2; }
done
mkdir -p "$out_dir"

srcs=("$pkg")
for f in "$rtl_dir"/loom_*.sv; do
  [ "$(basename "$f")" = loom_accel_pkg_check.sv ] || srcs+=("$f")
done
srcs+=("$here/$harness.sv")
cat >"$out_dir/$harness.ys" <<YS
read_verilog -sv -formal -defer -DSYNTHESIS ${srcs[*]}
prep -flatten -top $harness
memory_map
opt -fast
async2sync
dffunmap
setundef -anyseq
write_smt2 -wires $out_dir/$harness.smt2
opt -keepdc -fast
techmap
opt -fast
setundef -anyseq
dffunmap
aigmap
clean
write_aiger -zinit -map $out_dir/$harness.aim $out_dir/$harness.aig
YS
if ! "$yosys" -q -l "$out_dir/yosys.log" "$out_dir/$harness.ys" >/dev/null 2>&1; then
  echo "formal: yosys failed on $harness (log: $out_dir/yosys.log)" >&2
  grep -E "ERROR|Error" "$out_dir/yosys.log" | head -n 5 >&2
  exit 1
fi

start=$(date +%s.%N)
"$abc" -c "read_aiger $out_dir/$harness.aig; fold; strash; pdr -T $seconds" >"$out_dir/abc.log" 2>&1 || true
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if grep -q "Property proved" "$out_dir/abc.log"; then
  echo "formal: $harness proved for every reachable state (abc pdr, $took s)"
  exit 0
fi
frame=$(sed -n 's/.*was asserted in frame \([0-9]*\).*/\1/p' "$out_dir/abc.log" | head -n 1)
if [ -z "$frame" ]; then
  # PDR ran out of time: a bounded check instead
  "$abc" -c "read_aiger $out_dir/$harness.aig; fold; strash; bmc3 -F 30 -T $seconds" >"$out_dir/abc_bmc.log" 2>&1 || true
  frame=$(sed -n 's/.*was asserted in frame \([0-9]*\).*/\1/p' "$out_dir/abc_bmc.log" | head -n 1)
  if [ -z "$frame" ] && grep -q "No output asserted in" "$out_dir/abc_bmc.log"; then
    echo "formal: $harness holds for 30 cycles from reset (abc bmc3; pdr undecided in $seconds s)"
    exit 0
  fi
  if [ -z "$frame" ]; then
    echo "formal: $harness: abc decided nothing (logs: $out_dir/abc.log, abc_bmc.log)" >&2
    exit 1
  fi
fi
echo "formal: $harness FAILS: an assertion is violated $frame cycles after reset (abc, $took s)" >&2
if command -v "$smtbmc" >/dev/null && command -v "$solver" >/dev/null; then
  timeout "$seconds" "$smtbmc" -s "$solver" -t $((frame + 2)) --dump-vcd "$out_dir/trace.vcd" \
    "$out_dir/$harness.smt2" >"$out_dir/smtbmc.log" 2>&1 || true
  grep -E "Assert failed" "$out_dir/smtbmc.log" | head -n 5 >&2 || true
  echo "formal: counterexample: $out_dir/trace.vcd" >&2
fi
exit 1
