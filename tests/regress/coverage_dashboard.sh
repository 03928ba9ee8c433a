#!/bin/sh
# loom regress --coverage end to end, and its dashboard in a real headless browser (label browser):
#   1. random programs and an operator on the RTL's coverage build: rtl_coverage.dat, annotated
#      sources, coverage.json and report.md merge the jobs' coverage; the fsim job adds none;
#   2. chromium loads coverage.html (this part only where chromium is installed): the script rendered the module table, the heat map, a hole
#      (the ALU bins the manifest's weights leave out) and, with Chart.js inlined, both charts;
#      the page is also drawn to a PNG;
#   3. a second run adds a line to the trend history, its jobs' coverage counted afresh;
#   4. the project's toggle waivers (hw/rtl/coverage_waivers.json) are applied, listed and said;
#      a waiver the run contradicts, or one that names no signal, is flagged;
#   5. a damaged history line, job coverage file or waiver file is a clear error naming the file
#      and the job or the waiver.
#   coverage_dashboard.sh LOOM TESTS_REGRESS_DIR WORK
set -u
loom="$1" src="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "FAILED: $*"
  exit 1
}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
run="$work/run"

# 1. The run's coverage, merged.
"$loom" regress "$src/coverage.json" --coverage --out "$run" -j 2 -q > "$work/out1" 2>&1 ||
  fail "run 1: $(cat "$work/out1")"
[ -s "$run/rtl_coverage.dat" ] || fail "no merged rtl_coverage.dat"
for j in random/random-1 random/random-2 random/random-3 op/op-add-channels-16-size-4; do
  [ -s "$run/jobs/$j/default/rtl/rtl_coverage.dat" ] || fail "job $j has no rtl_coverage.dat"
done
[ -d "$run/jobs/op/op-add-channels-16-size-4/default/fsim" ] || fail "the fsim job did not run"
[ -z "$(find "$run/jobs" -path '*fsim*' -name rtl_coverage.dat)" ] || fail "an fsim job wrote RTL coverage"
[ -f "$run/rtl_annotated/loom_accel.sv" ] || fail "verilator_coverage annotated no sources: $(cat "$work/out1")"
grep -q "## RTL coverage of 4 jobs" "$run/report.md" || fail "report.md: $(tail -30 "$run/report.md")"
grep -q "| loom_dma_rd | " "$run/report.md" || fail "report.md has no per-module row"
grep -q '"rtl"' "$run/coverage.json" || fail "coverage.json has no rtl section"
grep -q "^Toggle figures leave out [0-9]* unhit points that .*coverage_waivers.json" "$run/report.md" ||
  fail "report.md does not say what the waivers leave out: $(grep -n -i waive "$run/report.md")"
grep -q "Waiver contradicted" "$run/report.md" && fail "a waiver is contradicted: $(grep "Waiver contradicted" "$run/report.md")"

# 2. The dashboard in the browser: what its script built from the data.
page="file://$run/coverage.html"
if [ -z "$browser" ]; then
  echo "no chromium: the dashboard is not loaded (Debian: apt-get install chromium; scripts/bootstrap.sh installs it)"
else
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom "$page" > "$work/dom.html" 2> "$work/browser.err" ||
  fail "chromium: $(tail -5 "$work/browser.err")"
grep -q 'data-rendered="true"' "$work/dom.html" || fail "the page's script did not finish: $(tail -5 "$work/browser.err")"
charts=2
grep -q "Chart.js not found" "$work/out1" && charts=0
grep -q "data-charts=\"$charts\"" "$work/dom.html" || fail "expected $charts charts drawn"
grep -q '<tr data-module="loom_fifo">' "$work/dom.html" || fail "no row for loom_fifo in the module table"
grep -q '<table class="heat" id="heat-table">' "$work/dom.html" || fail "no heat map"
grep -q '<li class="hole">alu: ' "$work/dom.html" || fail "the ALU bins the weights leave out are not listed as holes"
grep -q '<li class="hole">load inp: ' "$work/dom.html" && fail "a hit bin (load inp) is listed as a hole"
grep -q '<ul id="toggle-signals"><li>loom_' "$work/dom.html" || fail "toggle holes are not listed by signal"
grep -q '<ul id="waivers"><li class="waiver">loom_' "$work/dom.html" || fail "the waivers are not listed"
grep -q 'without waivers)' "$work/dom.html" || fail "the toggle tile does not give the figure without waivers"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1600 \
  --screenshot="$work/dashboard.png" "$page" > /dev/null 2>&1
[ -s "$work/dashboard.png" ] || fail "no screenshot"
fi

# 3. Trends: a second run (every job again) adds to the history the page plots; a job run again
#    starts its coverage afresh, so the merged counts are the first run's.
cp "$run/rtl_coverage.dat" "$work/first.dat"
"$loom" regress "$src/coverage.json" --coverage --force --out "$run" -j 2 -q > "$work/out2" 2>&1 ||
  fail "run 2: $(cat "$work/out2")"
[ "$(wc -l < "$run/coverage_history.jsonl")" -eq 2 ] || fail "the history has not two lines"
cmp -s "$work/first.dat" "$run/rtl_coverage.dat" || fail "the jobs run again added to their earlier coverage"

# 4. Waivers that a run contradicts or that name nothing are flagged (the jobs are not run again).
sed 's|"coverage_waivers": "[^"]*"|"coverage_waivers": "contra_waivers.json"|' "$src/coverage.json" > "$work/contra.json"
cat > "$work/contra_waivers.json" << 'EOF'
{"toggle": [{"signals": ["loom_ctrl.start_o"], "class": "structural", "reason": "wrong on purpose"},
            {"signals": ["loom_ctrl.no_such_q"], "bits": "[3:0]", "class": "bounded", "reason": "gone"}]}
EOF
"$loom" regress "$work/contra.json" --coverage --out "$run" -q > "$work/out_contra" 2>&1 || fail "contra: $(cat "$work/out_contra")"
grep -q '^\*\*Waiver contradicted:\*\* `loom_ctrl.start_o` is waived (structural: wrong on purpose)' "$run/report.md" ||
  fail "a contradicted waiver is not flagged: $(grep -n -i waive "$run/report.md")"
grep -q '^\*\*Waiver matches nothing:\*\* `loom_ctrl.no_such_q\[3:0\]`' "$run/report.md" ||
  fail "a waiver of no signal is not flagged: $(grep -n -i waive "$run/report.md")"
grep -q '"contradicted": 1' "$run/coverage.json" || fail "coverage.json does not count the contradiction"
if [ -n "$browser" ]; then
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom "file://$run/coverage.html" > "$work/dom2.html" 2>&1
  grep -q '<ul id="waivers"><li class="contradicted">loom_ctrl start_o' "$work/dom2.html" ||
    fail "the dashboard does not list the contradicted waiver first"
fi

# 5. Damaged files: errors naming them.
echo '{"time": ' >> "$run/coverage_history.jsonl"
"$loom" regress "$src/coverage.json" --coverage --out "$run" -q > "$work/out3" 2>&1 && fail "a damaged history was accepted"
grep -q "coverage_history.jsonl:4: not a coverage history line" "$work/out3" || fail "history: $(cat "$work/out3")"
head -n 3 "$run/coverage_history.jsonl" > "$work/h" && mv "$work/h" "$run/coverage_history.jsonl"
bad="$run/jobs/random/random-2/default/rtl/rtl_coverage.dat"
echo "not coverage" > "$bad"
"$loom" regress "$src/coverage.json" --coverage --out "$run" -q > "$work/out4" 2>&1 && fail "a damaged job file was accepted"
grep -q "job 'random/random-2.*rtl_coverage.dat:1: not Verilator coverage data" "$work/out4" || fail "job file: $(cat "$work/out4")"
sed 's|"coverage_waivers": "[^"]*"|"coverage_waivers": "bad_waivers.json"|' "$src/coverage.json" > "$work/bad_manifest.json"
echo '{"toggle": [{"signals": ["loom_ctrl.s"], "class": "maybe", "reason": "r"}]}' > "$work/bad_waivers.json"
"$loom" regress "$work/bad_manifest.json" --coverage --out "$work/run5" -q > "$work/out5" 2>&1 && fail "a bad waiver file was accepted"
grep -q "coverage_waivers.*bad_waivers.json' toggle\[0\]: class 'maybe'" "$work/out5" || fail "waivers: $(cat "$work/out5")"
[ -d "$work/run5/jobs" ] && fail "jobs ran before the waivers were checked"
echo "REGRESS_COVERAGE_OK"
