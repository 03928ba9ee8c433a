// The merged report of a regression run: JUnit XML (what CI systems show), CSV and a Markdown
// summary with failures first. The CSV and Markdown hold only what the jobs determine (no times,
// hosts or executor), so a run on Slurm and one on the local cores give the same files.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::regress {

// One job's line of the report: its spec's names and its result.json.
struct ReportRow {
  std::string name, group, workload, config, backend;
  nlohmann::json result;  // status, message, metrics, checks, seconds, attempts, log
};

struct ReportSummary {
  size_t pass = 0, fail = 0, error = 0, crash = 0, timeout = 0, lost = 0, not_run = 0;
  size_t failures() const { return fail + error + crash + timeout + lost + not_run; }
  std::vector<std::string> coverage_notes;  // what the coverage files lack (no verilator_coverage, no Chart.js)
};

// Writes report.xml, report.csv and report.md into `dir`. With jobs that report coverage (random
// programs' ISA bins; with `rtl_coverage`, the jobs' RTL coverage files), also the merged coverage
// files (coverage.json, rtl_coverage.dat, rtl_annotated/, coverage.html, coverage_history.jsonl),
// summarized in report.md. `incomplete`: why the run stopped before every job ran ("" when it did
// not): said at the top of every report, never a partial report presented as complete.
ReportSummary write_reports(const std::filesystem::path& dir, const std::string& suite, std::vector<ReportRow> rows,
                            const std::string& incomplete, bool rtl_coverage = false,
                            const std::string& coverage_waivers = "");

}  // namespace loom::regress
