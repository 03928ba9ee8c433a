#!/bin/sh
# loom regress on the local process pool: the CI suite's report (passes, a cycle budget missed, a
# crash, a hang, a failing command, each with its log), a re-run that repeats only the failures, a
# changed config file that repeats only its jobs, a runner killed (SIGKILL) and restarted that
# keeps what finished, and Ctrl-C (SIGINT) giving a report marked incomplete.
#   regress_local.sh LOOM TESTS_REGRESS_DIR WORK
set -eu
loom="$1" src="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAILED: $*"; exit 1; }
status_of() { grep "^$1," "$2/report.csv" | cut -d, -f6; }

# 1. The suite: 22 jobs, 18 pass; the failures first in every report, with their logs; the random
#    programs' ISA coverage merged in report.md and coverage.json, a hole listed.
rc=0
"$loom" regress "$src/suite.json" --out "$work/a" -j 2 -q > "$work/a.out" 2>&1 || rc=$?
cat "$work/a.out"
[ $rc -eq 1 ] || fail "exit code $rc, expected 1 (failures)"
grep -q "18 passed, 2 failed, 0 errors, 1 crashed, 1 timed out of 22 jobs" "$work/a.out" || fail "summary"
[ "$(status_of faults/crash/default/fsim "$work/a")" = crash ] || fail "crash not reported"
[ "$(status_of faults/hang/default/fsim "$work/a")" = timeout ] || fail "hang not reported"
[ "$(status_of budget/resnet18-c11/default/perf "$work/a")" = fail ] || fail "budget"
[ "$(status_of model/model-resnet18-32/default/fsim "$work/a")" = pass ] || fail "model"
grep -q "about to crash" "$work/a/jobs/faults/crash/default/fsim/log.txt" || fail "the crashed job's log"
grep -q "about to crash" "$work/a/jobs/faults/crash/default/fsim/log.attempt1.txt" || fail "first attempt's log kept"
grep -q '"attempt": 2' "$work/a/jobs/faults/hang/default/fsim/result.json" || fail "the hang was not retried once"
sed -n 2p "$work/a/report.csv" | grep -q "^faults/crash" || fail "failures first in the CSV"
grep -q '<error type="timeout"' "$work/a/report.xml" || fail "JUnit error for the timeout"
grep -q '<failure type="fail" message="max_cycles: 457366 cycles, budget 1000"' "$work/a/report.xml" || fail "JUnit failure"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$work/a/report.xml" || fail "report.xml is not XML"
fi
grep -q "^## ISA coverage of 3 jobs" "$work/a/report.md" || fail "no ISA coverage in report.md"
grep -q "hole: load inp: no padding" "$work/a/report.md" || fail "the coverage hole is not listed"
grep -q '"total": 93' "$work/a/coverage.json" || fail "coverage.json"
grep "^random/" "$work/a/report.csv" | grep -v ",pass," && fail "a random program parted the RTL from fsim"
# Every pass on the RTL matched fsim bit-exactly within its cycle budget.
grep "^rtl/" "$work/a/report.csv" | grep -v ",pass," && fail "an RTL job failed"
# No process of the hung job is left: no sleep of its duration runs in a job folder of this run (the
# Slurm test runs the same suite, maybe at the same time, in folders of its own).
for pid in $(pgrep -f "sleep 59.2517"); do
  case "$(readlink "/proc/$pid/cwd" 2> /dev/null)" in
    "$work"/*) fail "the hung job's sleep outlived its time limit" ;;
  esac
done

# 2. Again: the 18 passes come from the cache, the 4 failures run again; the same reports.
rc=0
"$loom" regress "$src/suite.json" --out "$work/a" -j 2 -q > "$work/a2.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "second run: exit code $rc"
grep -q "(18 cached)" "$work/a2.out" || fail "second run: $(cat "$work/a2.out")"
cp "$work/a/report.csv" "$work/a2.csv"
# (report.md differs from run 1 only in nothing: it holds no times)
"$loom" regress "$src/suite.json" --out "$work/a" -q --only convs/resnet18-c10 > /dev/null || fail "--only"

# 3. A config file changed: only the jobs that read it run again.
mkdir -p "$work/cfg"
sed 's/"ci-suite"/"cfg-suite"/; s|"../../accel/configs/1x32x32.json"|"b32.json"|' "$src/suite.json" > "$work/cfg/suite.json"
cp "$src/../../accel/configs/1x32x32.json" "$work/cfg/b32.json"
"$loom" regress "$work/cfg/suite.json" --out "$work/c" -q --only convs > /dev/null
sed -i 's/"name": *"[^"]*"/"name": "b32-edited"/' "$work/cfg/b32.json"
"$loom" regress "$work/cfg/suite.json" --out "$work/c" --only convs > "$work/c2.out" 2>&1
grep -q "(6 cached)" "$work/c2.out" || fail "after editing b32.json: $(cat "$work/c2.out")"

# 4. The runner killed while jobs run, then restarted: what finished is kept, the rest runs.
cat > "$work/slow.json" <<EOF
{"name": "slow", "jobs": [{"name": "s", "backends": ["fsim"],
  "workloads": ["command:sleep 1 # 1", "command:sleep 1 # 2", "command:sleep 1 # 3", "command:sleep 1 # 4",
                "command:sleep 1 # 5", "command:sleep 1 # 6"]}]}
EOF
"$loom" regress "$work/slow.json" --out "$work/k" -j 1 -q > "$work/k1.out" 2>&1 &
runner=$!
sleep 2.5
kill -9 $runner
wait $runner 2> /dev/null || true
sleep 0.3
pgrep -f "regress --worker $work/k" > /dev/null && fail "a worker outlived its killed runner"
"$loom" regress "$work/slow.json" --out "$work/k" -j 2 > "$work/k2.out" 2>&1 || fail "restart: $(cat "$work/k2.out")"
cached=$(sed -n 's/.*(\([0-9]*\) cached).*/\1/p' "$work/k2.out" | tail -1)
[ "$cached" -ge 1 ] && [ "$cached" -le 3 ] || fail "restart reused $cached results: $(cat "$work/k2.out")"
grep -q "6 passed" "$work/k2.out" || fail "restart did not finish: $(cat "$work/k2.out")"

# 5. Ctrl-C: the running jobs are killed, the report says it is partial, exit code 130.
rc=0
"$loom" regress "$work/slow.json" --out "$work/i" -j 1 -q --force > "$work/i.out" 2>&1 &
runner=$!
sleep 1.5
kill -INT $runner
wait $runner || rc=$?
[ $rc -eq 130 ] || fail "Ctrl-C: exit code $rc: $(cat "$work/i.out")"
grep -q "INCOMPLETE: interrupted" "$work/i/report.md" || fail "Ctrl-C: the report does not say it is partial"
grep -q ",not_run," "$work/i/report.csv" || fail "Ctrl-C: no job reported as not run"
echo "REGRESS_LOCAL_OK"
