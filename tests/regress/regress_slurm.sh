#!/bin/sh
# loom regress --slurm on a real single-node Slurm cluster on 127.0.0.1 (scripts/slurm_cluster.sh
# starts slurmctld, slurmd and munged in a folder of this test's own and stops them at the end):
#   1. the CI suite gives the same report.csv, report.md, coverage.json and merged RTL coverage as --local;
#   2. a partition Slurm refuses: a clear error, a report marked incomplete;
#   3. the node drained mid-run: pending tasks wait (the progress line says why), resume, nothing lost;
#      drained for longer than --pending-timeout: the array is cancelled, the report incomplete;
#   4. the runner killed (SIGKILL) and restarted: it waits for the array it left and reruns nothing;
#   5. a worker killed by the node (SIGKILL): the task is lost, resubmitted, reported with Slurm's state;
#   6. Ctrl-C: the array is cancelled (squeue empty), the report incomplete, exit code 130.
#   regress_slurm.sh LOOM TESTS_REGRESS_DIR WORK SLURM_CLUSTER_SH [--coverage]
#   (--coverage where the default config has its RTL coverage build: step 1 merges coverage too)
set -u
loom="$1" src="$2" work="$3" cluster="$4" coverage="${5:-}"
rm -rf "$work"
mkdir -p "$work"
if [ "$(id -u)" -ne 0 ]; then
  # slurmd runs each job as the user who submitted it, which takes root (and so does installing).
  echo "SKIP: the single-node Slurm cluster needs root (slurmd); run the suite as root, as CI does"
  exit 0
fi
# The cluster's folder is short and under /tmp: unix socket paths (munge's) hold at most ~100 bytes,
# and a CI checkout's build folder can be deep.
cdir=$(mktemp -d /tmp/loom-slurm.XXXXXX) && rmdir "$cdir"
stop_cluster() {
  timeout 60 bash "$cluster" stop "$cdir" > /dev/null 2>&1
  rm -rf "$cdir"
}
trap stop_cluster EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}
timeout 180 bash "$cluster" start "$cdir" --cpus 2 || fail "the cluster did not start"
. "$cdir/env"
export SLURM_CONF
node=loomnode
drain() { scontrol update nodename=$node state=drain reason=regress-test; }
resume() { scontrol update nodename=$node state=resume; }

# 1. The same suite on the local cores and on Slurm (three jobs per array task): the same reports.
# With --coverage: the RTL jobs' code coverage, merged from the tasks, equals the local run's.
"$loom" regress "$src/suite.json" $coverage --out "$work/local" -j 2 -q > "$work/local.out" 2>&1
"$loom" regress "$src/suite.json" $coverage --out "$work/slurm" --slurm --pack 3 --poll 0.2 -q > "$work/slurm.out" 2>&1
rc=$?
cat "$work/slurm.out"
[ $rc -eq 1 ] || fail "suite on Slurm: exit code $rc"
diff "$work/local/report.csv" "$work/slurm/report.csv" || fail "report.csv differs between --local and --slurm"
diff "$work/local/report.md" "$work/slurm/report.md" || fail "report.md differs between --local and --slurm"
# The random programs' ISA coverage merged from the Slurm tasks equals the local run's.
diff "$work/local/coverage.json" "$work/slurm/coverage.json" || fail "coverage.json differs between --local and --slurm"
if [ -n "$coverage" ]; then
  diff "$work/local/rtl_coverage.dat" "$work/slurm/rtl_coverage.dat" > /dev/null ||
    fail "rtl_coverage.dat differs between --local and --slurm"
  grep -q '"toggle"' "$work/slurm/coverage.json" || fail "coverage.json from Slurm has no RTL coverage"
fi
[ "$(grep -rl '"SLURM_ARRAY_JOB_ID"' "$work/slurm/jobs" --include=result.json | wc -l)" -eq 22 ] ||
  fail "not every job ran as a Slurm task"

# A design-space sweep is a manifest too: loom dse on Slurm gives the points the in-process sweep gives.
dse="--sweep block=8,16 --sweep dram_bytes_per_cycle=8,16 --layers c4,c10 -q"
"$loom" dse $dse --out "$work/dse_threads" > /dev/null || fail "dse"
"$loom" dse $dse --out "$work/dse_slurm" --executor slurm > "$work/dse.out" 2>&1 || fail "dse on Slurm: $(cat "$work/dse.out")"
diff "$work/dse_threads/points.csv" "$work/dse_slurm/points.csv" || fail "dse: points.csv differs on Slurm"
diff "$work/dse_threads/layers.csv" "$work/dse_slurm/layers.csv" || fail "dse: layers.csv differs on Slurm"

# 2. A partition that does not exist: sbatch refuses; said clearly, the report incomplete (exit 3).
"$loom" regress "$src/suite.json" --out "$work/refused" --slurm --partition nosuch -q --force > "$work/refused.out" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "refused: exit code $rc: $(cat "$work/refused.out")"
grep -q "sbatch refused the job array" "$work/refused.out" || fail "refused: $(cat "$work/refused.out")"
grep -qi "partition" "$work/refused.out" || fail "refused: sbatch's reason is not shown: $(cat "$work/refused.out")"
grep -q "INCOMPLETE" "$work/refused/report.md" || fail "refused: the report does not say it is partial"

cat > "$work/slow.json" << EOF
{"name": "slow", "jobs": [{"name": "s", "backends": ["fsim"],
  "workloads": ["command:sleep 0.5 # 1", "command:sleep 0.5 # 2", "command:sleep 0.5 # 3", "command:sleep 0.5 # 4",
                "command:sleep 0.5 # 5", "command:sleep 0.5 # 6"]}]}
EOF
# Runs COMMAND until it succeeds (every 0.2 s, at most 60 s); its last status is the result.
wait_until() {
  i=0
  while ! "$@" 2> /dev/null && [ $i -lt 300 ]; do
    sleep 0.2
    i=$((i + 1))
  done
  "$@" 2> /dev/null
}
# Waits until FILE exists.
wait_for() { wait_until test -e "$1" || fail "timed out waiting for $1"; }

# 3. Drained mid-run: nothing is lost once the node resumes.
"$loom" regress "$work/slow.json" --out "$work/drain" --slurm --max-running 1 --poll 0.2 > "$work/drain.out" 2>&1 &
runner=$!
wait_for "$work/drain/jobs/s/command-sleep-0.5---1/default/fsim/log.txt"
drain
wait_until grep -q "no node can run them" "$work/drain.out" ||
  fail "drain: the progress line does not say why: $(cat "$work/drain.out")"
kill -0 $runner 2> /dev/null || fail "drain: the runner gave up: $(cat "$work/drain.out")"
resume
wait $runner
rc=$?
[ $rc -eq 0 ] || fail "drain: exit code $rc: $(cat "$work/drain.out")"
grep -q "6 passed" "$work/drain.out" || fail "drain: $(cat "$work/drain.out")"
# Drained for good: --pending-timeout gives up, cancels the array, and says so.
drain
"$loom" regress "$work/slow.json" --out "$work/drained" --slurm --pending-timeout 3 --poll 0.2 -q > "$work/drained.out" 2>&1
rc=$?
resume
[ $rc -eq 3 ] || fail "drained: exit code $rc: $(cat "$work/drained.out")"
grep -q "pended for .* with no node to run them" "$work/drained.out" || fail "drained: $(cat "$work/drained.out")"
[ "$(grep -c ',not_run,' "$work/drained/report.csv")" -eq 6 ] || fail "drained: the jobs are not reported as not run"

# 4. The runner killed after submitting (two arrays: --max-array 4); restarted, it waits for them
#    and submits nothing new.
"$loom" regress "$work/slow.json" --out "$work/kill" --slurm --max-running 2 --max-array 4 --poll 0.2 -q > "$work/kill1.out" 2>&1 &
runner=$!
wait_for "$work/kill/slurm/state.json"
sleep 1
kill -9 $runner
wait $runner 2> /dev/null
"$loom" regress "$work/slow.json" --out "$work/kill" --slurm --poll 0.2 > "$work/kill2.out" 2>&1 || fail "restart: $(cat "$work/kill2.out")"
grep -q "resuming: waiting for the previous runner's job array [0-9]* [0-9]*$" "$work/kill2.out" || fail "restart did not resume: $(cat "$work/kill2.out")"
grep -q "6 passed" "$work/kill2.out" || fail "restart: $(cat "$work/kill2.out")"
grep -q "submitted job array" "$work/kill2.out" && fail "restart submitted the jobs again: $(cat "$work/kill2.out")"
[ "$(cat "$work"/kill/jobs/s/*/default/fsim/result.json | grep -c '"attempt": 1')" -eq 6 ] || fail "restart: a job ran twice"

# 5. A worker killed under its job (as a failing node would): lost, resubmitted once, reported with Slurm's view.
cat > "$work/lost.json" << 'EOF'
{"name": "lost", "retries": 1, "jobs": [{"name": "l", "backends": ["fsim"],
  "workloads": [{"name": "killed", "workload": "command:kill -KILL $(ps -o ppid= -p $PPID)"}, "op:dense"]}]}
EOF
"$loom" regress "$work/lost.json" --out "$work/lost" --slurm --poll 0.2 -q > "$work/lost.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "lost: exit code $rc: $(cat "$work/lost.out")"
grep -q "lost: l/killed/default/fsim: the job ended without a result: Slurm task [0-9]*_0 ended" "$work/lost.out" ||
  fail "lost: $(cat "$work/lost.out")"
grep -q '"attempt": 2' "$work/lost/jobs/l/killed/default/fsim/result.json" || fail "lost: not resubmitted"
grep -q "l/op-dense/default/fsim,l,op:dense,default,fsim,pass" "$work/lost/report.csv" || fail "lost: the other job"

# 6. Ctrl-C while the array runs: cancelled, nothing left in the queue, the report incomplete.
"$loom" regress "$work/slow.json" --out "$work/int" --slurm --max-running 1 --poll 0.2 -q --force > "$work/int.out" 2>&1 &
runner=$!
wait_for "$work/int/slurm/state.json"
array=$(sed 's/.*"id":"\([0-9]*\)".*/\1/' "$work/int/slurm/state.json")
sleep 1
kill -INT $runner
wait $runner
rc=$?
[ $rc -eq 130 ] || fail "Ctrl-C: exit code $rc: $(cat "$work/int.out")"
[ -z "$(squeue -h -j "$array" 2> /dev/null)" ] || fail "Ctrl-C: array $array is still queued"
grep -q "INCOMPLETE: interrupted (Ctrl-C): job array $array was cancelled" "$work/int/report.md" ||
  fail "Ctrl-C: $(head -5 "$work/int/report.md")"
echo "REGRESS_SLURM_OK"
