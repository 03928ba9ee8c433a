#!/bin/sh
# loom dse --run-job against the sweep that wrote the job: the same cycles as the sweep's row for a
# legal point, "illegal" with the same reason for an illegal one.   dse_run_job.sh LOOM DIR
set -e
loom="$1" dir="$2"
rm -rf "$dir"
"$loom" dse --sweep block=8,16 --layers c4,c10 -q --out "$dir" > /dev/null
column=$(head -1 "$dir/points.csv" | tr , '\n' | grep -nx cycles | cut -d: -f1)
want=$(sed -n 3p "$dir/points.csv" | cut -d, -f"$column")  # point 1 (block 16): its cycles
"$loom" dse --run-job "$dir/points.jsonl" --line 2 > "$dir/legal.json"
grep -q "\"cycles\":$want," "$dir/legal.json" || { echo "cycles differ: sweep $want, job $(cat "$dir/legal.json")"; exit 1; }
reason=$(sed -n 2p "$dir/points.csv" | sed 's/.*,"\(.*\)"$/\1/')  # point 0 (block 8): illegal
"$loom" dse --run-job "$dir/points.jsonl" --line 1 > "$dir/illegal.json"
grep -q '"status":"illegal"' "$dir/illegal.json" || { echo "not illegal: $(cat "$dir/illegal.json")"; exit 1; }
grep -qF "$reason" "$dir/illegal.json" || { echo "reasons differ: sweep '$reason', job $(cat "$dir/illegal.json")"; exit 1; }
# An edited description no longer matches its id: refused, not run as something else.
sed -n 2p "$dir/points.jsonl" | sed 's/"block_in":16/"block_in":32/' > "$dir/edited.jsonl"
if "$loom" dse --run-job "$dir/edited.jsonl" > "$dir/edited.out" 2>&1; then echo "edited job ran"; exit 1; fi
grep -q "the job was edited" "$dir/edited.out" || { echo "no clear error: $(cat "$dir/edited.out")"; exit 1; }
echo "JOB_SAME cycles $want"
