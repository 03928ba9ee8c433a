#!/usr/bin/env bash
# Generic (technology-independent) yosys synthesis of loom_accel.
#
#   hw/synth/synth.sh PKG_DIR OUT_DIR
#
# PKG_DIR holds loom_accel_pkg.sv (`loom hw-params --config cfg.json --out PKG_DIR/loom_accel_pkg.sv`).
# The scratchpads and FIFOs stay $mem_v2 cells (`memory -nomap`; mapping 3.9 Mbit of SRAM to
# flip-flops would not finish); everything else is mapped to yosys internal gates and flip-flops
# and optimized with `abc -fast`. Writes to OUT_DIR: synth.ys, yosys.log, stat.txt (cells),
# memories.txt (every memory, width x depth), summary.txt. Prints a summary and exits non-zero
# if yosys fails, if the netlist is empty, or if the five scratchpads (inp, wgt, acc, out, uop)
# are not memories of exactly the size the package gives.
# Environment: YOSYS (default: yosys).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 PKG_DIR OUT_DIR" >&2
  exit 2
fi
pkg_dir=$1
out_dir=$2
yosys=${YOSYS:-yosys}
rtl_dir=$(cd "$(dirname "$0")/../rtl" && pwd)
pkg=$pkg_dir/loom_accel_pkg.sv
[ -f "$pkg" ] || { echo "synth: $pkg not found" >&2; exit 2; }
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

# ---- expected scratchpad sizes, from the package ----
param() {
  local v
  v=$(sed -n "s/^[[:space:]]*localparam int $1 = \([0-9][0-9]*\);.*/\1/p" "$pkg")
  [ -n "$v" ] || { echo "synth: parameter $1 not found in $pkg" >&2; exit 2; }
  echo "$v"
}
cfg=$(sed -n "s/.*from accelerator config '\([^']*\)'.*/\1/p" "$pkg" | head -n 1)
declare -A exp_width exp_depth
for sp in INP WGT ACC OUT UOP; do
  bytes=$(param "${sp}_ENTRY_BYTES")
  exp_width[$sp]=$((bytes * 8))
  exp_depth[$sp]=$(param "${sp}_DEPTH")
done

# ---- sources: the package first, then every module (not the package self-check) ----
srcs=("$pkg")
for f in "$rtl_dir"/loom_*.sv; do
  [ "$(basename "$f")" = loom_accel_pkg_check.sv ] || srcs+=("$f")
done

cat >"$out_dir/synth.ys" <<YS
read_verilog -sv -noautowire ${srcs[*]}
hierarchy -check -top loom_accel
# coarse: proc, flatten, opt, fsm, wreduce, alumacc, memory -nomap (-noshare: the SAT-based
# resource sharing pass alone takes ~40 s here)
synth -top loom_accel -flatten -noshare -run begin:fine
check -assert
opt -fast -full
# fine: memories stay \$mem_v2; the rest becomes internal gates, then abc -fast
techmap
abc -fast
opt_clean
tee -q -o $out_dir/stat.txt stat
# list the memories (stat counts only unpacked memories)
memory_unpack
tee -q -o $out_dir/memories.txt dump m:*
tee -q -o $out_dir/memstat.txt stat
YS

start=$(date +%s)
if ! "$yosys" -q -l "$out_dir/yosys.log" "$out_dir/synth.ys" >"$out_dir/yosys.out" 2>&1; then
  echo "synth: yosys failed (log: $out_dir/yosys.log)" >&2
  tail -n 30 "$out_dir/yosys.log" >&2 || true
  exit 1
fi
secs=$(( $(date +%s) - start ))
grep -i 'warning:' "$out_dir/yosys.log" | grep -v '^Warnings:' >&2 || true

# ---- figures ----
cells=$(awk '/Number of cells:/ {print $4; exit}' "$out_dir/stat.txt")
ff_bits=$(awk '$1 ~ /^\$_.*DFF/ {s += $2} END {print s + 0}' "$out_dir/stat.txt")
latches=$(awk '$1 ~ /^\$_.*DLATCH/ {s += $2} END {print s + 0}' "$out_dir/stat.txt")
unmapped=$(awk '$1 ~ /^\$[a-z]/ && $1 != "$mem_v2" {printf " %s", $1}' "$out_dir/stat.txt")
mem_bits=$(awk '/Number of memory bits:/ {print $5; exit}' "$out_dir/memstat.txt")
# memories.txt has a line "memory width W size S \NAME" per memory
fail=0
sp_bits=0
other_bits=0
declare -A seen
while read -r name width depth bits; do
  [ -n "$name" ] || continue
  sp=""
  case "$name" in
    *inp_sram.mem) sp=INP ;;
    *wgt_sram.mem) sp=WGT ;;
    *acc_sram.mem) sp=ACC ;;
    *out_sram.mem) sp=OUT ;;
    *uop_sram.mem) sp=UOP ;;
  esac
  if [ -n "$sp" ]; then
    seen[$sp]=1
    sp_bits=$((sp_bits + bits))
    if [ "$width" -ne "${exp_width[$sp]}" ] || [ "$depth" -ne "${exp_depth[$sp]}" ]; then
      echo "synth: $name is ${width}x${depth}, package says ${exp_width[$sp]}x${exp_depth[$sp]}" >&2
      fail=1
    fi
  else
    other_bits=$((other_bits + bits))
  fi
done <<<"$(awk '$1 == "memory" {print $NF, $3, $5, $3 * $5}' "$out_dir/memories.txt")"

exp_sp_bits=0
for sp in INP WGT ACC OUT UOP; do
  exp_sp_bits=$((exp_sp_bits + exp_width[$sp] * exp_depth[$sp]))
  [ -n "${seen[$sp]:-}" ] || { echo "synth: no memory for the ${sp} scratchpad" >&2; fail=1; }
done

{
  echo "loom_accel generic synthesis (config '$cfg', yosys $("$yosys" -V | awk '{print $2}'), ${secs} s)"
  echo "  cells (gates + flip-flops + memories): $cells"
  echo "  flip-flop bits:                        $ff_bits"
  [ "$latches" -eq 0 ] || echo "  latch bits:                            $latches"
  echo "  memory bits:                           $mem_bits"
  echo "    scratchpads (inp wgt acc out uop):   $sp_bits (expected $exp_sp_bits)"
  echo "    FIFOs (queues, fetch/store buffers): $other_bits"
  echo "  memories (name width depth):"
  awk '$1 == "memory" {printf "    %-32s %5d x %d\n", substr($NF, 2), $3, $5}' "$out_dir/memories.txt" | sort
} | tee "$out_dir/summary.txt"

if [ -z "$cells" ] || [ "$cells" -eq 0 ]; then
  echo "synth: the netlist has no cells" >&2; fail=1
fi
if [ "$ff_bits" -eq 0 ]; then
  echo "synth: the netlist has no flip-flops" >&2; fail=1
fi
if [ -n "$unmapped" ]; then
  echo "synth: cells left unmapped:$unmapped" >&2; fail=1
fi
if [ "$sp_bits" -ne "$exp_sp_bits" ]; then
  echo "synth: scratchpad memory bits $sp_bits != $exp_sp_bits from the package" >&2; fail=1
fi
if [ -z "$mem_bits" ] || [ "$mem_bits" -ne $((sp_bits + other_bits)) ]; then
  echo "synth: yosys counts ${mem_bits:-no} memory bits, the memory list $((sp_bits + other_bits))" >&2; fail=1
fi
exit $fail
