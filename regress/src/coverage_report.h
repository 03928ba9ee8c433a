// What a regression run has exercised: the ISA bins its random programs reached (their jobs'
// metrics, accel/isa_coverage.h) and the RTL's code coverage and cover properties, merged from the
// jobs' rtl_coverage.dat (`loom regress --coverage`, sim/rtl_coverage.h). Written into the run's
// folder as coverage.json, rtl_coverage.dat, rtl_annotated/ (sources annotated by
// verilator_coverage), coverage.html (the dashboard) and one line per run in
// coverage_history.jsonl (the dashboard's trends); summarized in report.md.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/accel/isa_coverage.h"
#include "loom/regress/report.h"
#include "loom/sim/rtl_coverage.h"

namespace loom::regress {

struct RunCoverage {
  accel::IsaCoverage isa;
  size_t isa_jobs = 0;  // jobs that reported ISA coverage
  sim::RtlCoverage rtl;
  size_t rtl_jobs = 0;                   // jobs whose folder holds RTL coverage
  std::vector<std::string> rtl_missing;  // jobs on an RTL backend that left none (crashed, timed out, unwritable)
  bool any() const { return isa_jobs || rtl_jobs; }
};

// Merges the coverage of `rows` (jobs of the run in `dir`); `rtl`: read the jobs' RTL coverage
// files (a run with --coverage); `waivers`: the toggle waivers to apply ("" none). A damaged file
// is an Error naming the job (or the waivers file).
RunCoverage collect_coverage(const std::filesystem::path& dir, const std::vector<ReportRow>& rows, bool rtl,
                             const std::string& waivers = "");

// The run's coverage as JSON: {"isa": {...}, "rtl": {"line": {"hit", "points", "percent"}, ...,
// "modules": {...}, "cover_properties": [...], "holes": {...}, "toggle_holes_by_signal": {...}}}. Holes
// (and signals with toggle holes) are at most `max_holes` per kind.
nlohmann::json coverage_json(const RunCoverage& c, size_t max_holes = 200);
// The Markdown section of report.md ("" when there is no coverage).
std::string coverage_markdown(const RunCoverage& c);

// Writes the files named above into `dir`; `suite` and `when` (ISO time) label the dashboard and
// the history line. Returns the notes to show the user (verilator_coverage missing, ...).
std::vector<std::string> write_coverage_files(const std::filesystem::path& dir, const std::string& suite,
                                              const std::string& when, const RunCoverage& c);

// The dashboard: a static page (no server; opens from disk) with the per-module code coverage, the
// functional bins as a heat map, the holes and the trends over `history` (lines of
// coverage_history.jsonl). Its charts use Chart.js, inlined from `chart_js` (the library's UMD
// build; "" leaves the charts out and says so on the page).
std::string coverage_dashboard_html(const std::string& suite, const nlohmann::json& coverage,
                                    const std::vector<nlohmann::json>& history, const std::string& chart_js);
// The Chart.js build the dashboard inlines: $LOOM_CHARTJS, else the one the bootstrap installed
// into the build folder; "" when neither exists.
std::string chart_js_path();

// Reads a dashboard's history file: one JSON object per line; Error naming the file and line.
std::vector<nlohmann::json> load_coverage_history(const std::filesystem::path& path);

}  // namespace loom::regress
