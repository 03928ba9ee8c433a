#include "coverage_report.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "loom/regress/job.h"
#include "loom/regress/job_kind.h"
#include "loom/regress/process.h"
#include "loom/runtime/error.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;
using sim::RtlCoverageKind;

namespace {

constexpr RtlCoverageKind kCodeKinds[] = {RtlCoverageKind::Line, RtlCoverageKind::Branch, RtlCoverageKind::Toggle,
                                          RtlCoverageKind::CoverProperty};

json figure_json(const sim::RtlCoverageFigure& f) {
  json j = {{"hit", f.hit}, {"points", f.points}, {"percent", std::round(f.percent() * 100) / 100}};
  if (f.waived) {
    j["waived"] = f.waived;
    j["raw_percent"] = std::round(f.raw_percent() * 100) / 100;
  }
  return j;
}

// The waivers a run applied, with what each matched: {"source", "structural", "bounded" (points
// waived per class), "contradicted", "unmatched", "listed": [...]}.
json waivers_json(const sim::RtlCoverage& rtl) {
  const auto& toggles = rtl.waivers().toggles();
  const std::vector<sim::RtlWaiverUse> uses = rtl.waiver_uses();
  json list = json::array();
  size_t per_class[2] = {0, 0}, contradicted = 0, unmatched = 0;
  for (size_t i = 0; i < toggles.size(); ++i) {
    const sim::RtlToggleWaiver& t = toggles[i];
    per_class[t.waiver_class == sim::RtlWaiverClass::Bounded] += uses[i].waived;
    contradicted += uses[i].hit > 0;
    unmatched += uses[i].waived + uses[i].hit == 0;
    list.push_back({{"module", t.module},
                    {"signal", t.signal},
                    {"bits", t.bits},
                    {"class", to_string(t.waiver_class)},
                    {"reason", t.reason},
                    {"waived", uses[i].waived},
                    {"hit", uses[i].hit}});
  }
  return {{"source", rtl.waivers().source()}, {"structural", per_class[0]}, {"bounded", per_class[1]},
          {"contradicted", contradicted},     {"unmatched", unmatched},     {"listed", list}};
}

std::string percent_text(const sim::RtlCoverageFigure& f) {
  if (!f.points) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << f.percent() << "% (" << f.hit << "/" << f.points << ")";
  return os.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  if (!f || !(f << text)) LOOM_THROW(RuntimeError, "cannot write '", p.string(), "'");
}

}  // namespace

RunCoverage collect_coverage(const fs::path& dir, const std::vector<ReportRow>& rows, bool rtl,
                             const std::string& waivers) {
  RunCoverage c;
  if (!waivers.empty()) c.rtl.set_waivers(sim::RtlWaivers::load(waivers));
  for (const ReportRow& r : rows) {
    if (r.result.contains("metrics") && r.result["metrics"].contains("isa_coverage")) {
      ++c.isa_jobs;
      for (auto& [id, hits] : r.result["metrics"]["isa_coverage"].items())
        c.isa.add(id, hits.get<uint64_t>(), "job '" + r.name + "'");
    }
    const fs::path file = dir / "jobs" / r.name / kRtlCoverageFile;
    if (!rtl) continue;
    if (!fs::exists(file)) {
      if (declares_coverage(r.backend)) c.rtl_missing.push_back(r.name);
      continue;
    }
    try {
      c.rtl.merge(sim::RtlCoverage::load(file.string()));
    } catch (const Error& e) {
      LOOM_THROW(Error, "job '", r.name, "': ", e.what());
    }
    ++c.rtl_jobs;
  }
  return c;
}

json coverage_json(const RunCoverage& c, size_t max_holes) {
  json j = json::object();
  if (c.isa_jobs) {
    j["isa"] = json::parse(c.isa.to_json());
    j["isa"]["jobs"] = c.isa_jobs;
  }
  if (!c.rtl_jobs) return j;
  json r = {{"jobs", c.rtl_jobs}};
  for (RtlCoverageKind k : kCodeKinds) r[to_string(k)] = figure_json(c.rtl.total(k));
  json modules = json::object();
  for (const auto& [module, kinds] : c.rtl.by_module())
    for (const auto& [k, f] : kinds) modules[module][to_string(k)] = figure_json(f);
  r["modules"] = modules;
  json props = json::array();
  for (const sim::RtlCoverProperty& p : c.rtl.cover_properties())
    props.push_back({{"instance", p.instance},
                     {"file", fs::path(p.file).filename().string()},
                     {"line", p.line},
                     {"hits", p.count}});
  r["cover_properties"] = props;
  json holes = json::object();
  for (RtlCoverageKind k : {RtlCoverageKind::Line, RtlCoverageKind::Branch, RtlCoverageKind::Toggle}) {
    std::vector<sim::RtlCoverageHole> h = c.rtl.holes(k);
    json list = json::array();
    for (size_t i = 0; i < h.size() && i < max_holes; ++i)
      list.push_back({{"module", h[i].module},
                      {"file", fs::path(h[i].file).filename().string()},
                      {"line", h[i].line},
                      {"what", h[i].what}});
    holes[to_string(k)] = {{"count", h.size()}, {"listed", list}};
  }
  r["holes"] = holes;
  json by_signal = json::array();
  const std::vector<sim::RtlToggleHoles> t = c.rtl.toggle_holes_by_signal();
  for (size_t i = 0; i < t.size() && i < max_holes; ++i)
    by_signal.push_back({{"module", t[i].module},
                         {"signal", t[i].signal},
                         {"bits", t[i].bits},
                         {"unhit", t[i].unhit},
                         {"points", t[i].points}});
  r["toggle_holes_by_signal"] = {{"count", t.size()}, {"listed", by_signal}};
  if (!c.rtl.waivers().empty()) r["waivers"] = waivers_json(c.rtl);
  j["rtl"] = r;
  return j;
}

std::string coverage_markdown(const RunCoverage& c) {
  std::ostringstream md;
  if (c.isa_jobs) md << "\n## ISA coverage of " << c.isa_jobs << " jobs\n\n```\n" << c.isa.report() << "```\n";
  if (!c.rtl_jobs) return md.str();
  md << "\n## RTL coverage of " << c.rtl_jobs
     << " jobs\n\n| module | line | branch | toggle | cover |\n|---|---:|---:|---:|---:|\n";
  auto row = [&](const std::string& name, const std::map<RtlCoverageKind, sim::RtlCoverageFigure>& kinds) {
    md << "| " << name;
    for (RtlCoverageKind k : kCodeKinds) {
      auto it = kinds.find(k);
      md << " | " << (it == kinds.end() ? "-" : percent_text(it->second));
    }
    md << " |\n";
  };
  std::map<RtlCoverageKind, sim::RtlCoverageFigure> totals;
  for (RtlCoverageKind k : kCodeKinds) totals[k] = c.rtl.total(k);
  row("**all**", totals);
  for (const auto& [module, kinds] : c.rtl.by_module()) row(module, kinds);
  if (!c.rtl.waivers().empty()) {
    const json w = waivers_json(c.rtl);
    const sim::RtlCoverageFigure& t = totals[RtlCoverageKind::Toggle];
    md << "\nToggle figures leave out " << t.waived << " unhit points that `" << c.rtl.waivers().source()
       << "` waives (" << w["structural"].get<size_t>() << " structural, " << w["bounded"].get<size_t>()
       << " bounded; each waiver gives its reason); without the waivers, toggle is " << std::fixed
       << std::setprecision(1) << t.raw_percent() << "%.\n";
    for (const json& e : w["listed"]) {
      const std::string what = "`" + e["module"].get<std::string>() + "." + e["signal"].get<std::string>() +
                               e["bits"].get<std::string>() + "`";
      if (e["hit"].get<size_t>())
        md << "\n**Waiver contradicted:** " << what << " is waived (" << e["class"].get<std::string>() << ": "
           << e["reason"].get<std::string>() << ") but " << e["hit"].get<size_t>()
           << " of its bits toggled; they count as hit. Fix the waiver.\n";
      else if (!e["waived"].get<size_t>())
        md << "\n**Waiver matches nothing:** " << what << " names no toggle point of this RTL.\n";
    }
  }
  if (!c.rtl_missing.empty()) {
    md << "\n**" << c.rtl_missing.size()
       << " jobs on an RTL backend left no coverage** (they crashed, timed out, or "
          "could not write it; their counts are missing above):";
    for (const std::string& n : c.rtl_missing) md << " `" << n << "`";
    md << "\n";
  }
  md << "\nCover properties not reached:";
  size_t missed = 0;
  for (const sim::RtlCoverProperty& p : c.rtl.cover_properties())
    if (!p.count) md << (missed++ ? ", " : " ") << "`" << p.instance << "`";
  md << (missed ? "" : " none") << ".\n";
  const std::vector<sim::RtlToggleHoles> t = c.rtl.toggle_holes_by_signal();
  if (!t.empty()) {
    constexpr size_t kListed = 40;
    md << "\nToggle holes by signal (" << std::min(t.size(), kListed) << " of " << t.size()
       << " signals, most unhit bits first; coverage.json lists more):\n\n| module | signal | bits never toggled | "
          "of |\n|---|---|---|---:|\n";
    for (size_t i = 0; i < t.size() && i < kListed; ++i)
      md << "| " << t[i].module << " | `" << t[i].signal << "` | " << (t[i].bits.empty() ? "-" : t[i].bits) << " | "
         << t[i].points << " |\n";
  }
  return md.str();
}

std::vector<std::string> write_coverage_files(const fs::path& dir, const std::string& suite, const std::string& when,
                                              const RunCoverage& c) {
  std::vector<std::string> notes;
  if (!c.rtl_missing.empty())
    notes.push_back(std::to_string(c.rtl_missing.size()) + " jobs on an RTL backend left no coverage (first: " +
                    c.rtl_missing.front() + "); report.md lists them");
  json j = coverage_json(c);
  write_text(dir / "coverage.json", j.dump(1) + "\n");
  if (c.rtl_jobs) {
    c.rtl.save((dir / kRtlCoverageFile).string());
    // Annotated sources: verilator_coverage's own view of the merged file (each line's count).
    const fs::path annotated = dir / "rtl_annotated";
    fs::remove_all(annotated);
    std::string out;
    ChildStatus st = run_command({"verilator_coverage", "--annotate", annotated.string(), "--annotate-min", "1",
                                  (dir / kRtlCoverageFile).string()},
                                 &out, 120);
    if (st.kind != ChildStatus::Exited || st.code != 0)
      notes.push_back("sources not annotated (verilator_coverage: " +
                      (st.code == 127 ? std::string("not found") : st.describe() + ": " + out.substr(0, 200)) + ")");
  }
  json line = {{"time", when}, {"suite", suite}};
  if (j.contains("isa")) line["isa"] = {{"hit", j["isa"]["hit"]}, {"total", j["isa"]["total"]}};
  if (j.contains("rtl"))
    for (RtlCoverageKind k : kCodeKinds) line[to_string(k)] = j["rtl"][to_string(k)]["percent"];
  if (j.contains("rtl") && j["rtl"]["toggle"].contains("raw_percent"))
    line["toggle_raw"] = j["rtl"]["toggle"]["raw_percent"];
  {
    std::ofstream h(dir / "coverage_history.jsonl", std::ios::app);
    if (!h || !(h << line.dump() << "\n"))
      LOOM_THROW(RuntimeError, "cannot write '", (dir / "coverage_history.jsonl").string(), "'");
  }
  std::string chart_js;
  if (const std::string lib = chart_js_path(); !lib.empty()) {
    std::ifstream f(lib, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    chart_js = ss.str();
  } else {
    const char* e = std::getenv("LOOM_CHARTJS");
    notes.push_back(e && *e ? "the dashboard has no charts: LOOM_CHARTJS names no file ('" + std::string(e) + "')"
                            : std::string("the dashboard has no charts: Chart.js not found (scripts/bootstrap.sh "
                                          "installs it; or set LOOM_CHARTJS)"));
  }
  write_text(dir / "coverage.html",
             coverage_dashboard_html(suite, j, load_coverage_history(dir / "coverage_history.jsonl"), chart_js));
  return notes;
}

std::vector<json> load_coverage_history(const fs::path& path) {
  std::vector<json> v;
  std::ifstream f(path);
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    ++n;
    if (line.empty()) continue;
    try {
      v.push_back(json::parse(line));
    } catch (const json::exception& e) {
      LOOM_THROW(Error, path.string(), ":", n, ": not a coverage history line: ", e.what());
    }
    if (!v.back().is_object() || !v.back().contains("time") || !v.back()["time"].is_string())
      LOOM_THROW(Error, path.string(), ":", n, ": not a coverage history line (an object with a \"time\")");
  }
  return v;
}

std::string chart_js_path() {
  if (const char* e = std::getenv("LOOM_CHARTJS"); e && *e) return fs::exists(e) ? e : "";
#ifdef LOOM_CHARTJS_DEFAULT
  if (fs::exists(LOOM_CHARTJS_DEFAULT)) return LOOM_CHARTJS_DEFAULT;
#endif
  return "";
}

}  // namespace loom::regress
