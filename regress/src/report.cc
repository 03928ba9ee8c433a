#include "loom/regress/report.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "coverage_report.h"
#include "loom/runtime/error.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 (a crashed job's log may hold any byte).
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          o += '?';
        else
          o += c;
    }
  }
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return o + "\"";
}

std::string md_cell(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

// A metric as text: whole numbers exactly, fractions to 4 significant digits, "" when absent.
std::string metric(const json& r, const char* key) {
  if (!r.contains("metrics") || !r["metrics"].contains(key)) return "";
  const json& v = r["metrics"][key];
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (!v.is_number()) return "";
  std::ostringstream os;
  os << std::setprecision(4) << v.get<double>();
  return os.str();
}

// The last lines of a job's log (for the JUnit failure's text).
std::string log_tail(const fs::path& p, size_t lines) {
  std::ifstream f(p);
  std::vector<std::string> all;
  for (std::string l; std::getline(f, l);) all.push_back(l);
  std::string o;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) o += all[i] + "\n";
  return o;
}

// "2026-12-01T09:30:00Z": when the run's coverage was written (the dashboard's trend axis).
std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int rank(const std::string& status) {  // failures first, the worst first
  static const std::vector<std::string> order = {"crash", "timeout", "lost", "error", "fail", "not_run", "pass"};
  auto it = std::find(order.begin(), order.end(), status);
  return int(it - order.begin());
}

}  // namespace

ReportSummary write_reports(const fs::path& dir, const std::string& suite, std::vector<ReportRow> rows,
                            const std::string& incomplete, bool rtl_coverage, const std::string& coverage_waivers) {
  std::stable_sort(rows.begin(), rows.end(), [](const ReportRow& a, const ReportRow& b) {
    int ra = rank(a.result.value("status", "")), rb = rank(b.result.value("status", ""));
    return ra != rb ? ra < rb : a.name < b.name;
  });
  ReportSummary s;
  for (const ReportRow& r : rows) {
    std::string st = r.result.value("status", "");
    if (st == "pass")
      ++s.pass;
    else if (st == "fail")
      ++s.fail;
    else if (st == "crash")
      ++s.crash;
    else if (st == "timeout")
      ++s.timeout;
    else if (st == "not_run")
      ++s.not_run;
    else
      ++s.error;  // error, lost
  }

  // JUnit XML: one testsuite per group; a failing job's message and the tail of its log.
  std::ostringstream xml;
  double total_s = 0;
  for (const ReportRow& r : rows) total_s += r.result.value("seconds", 0.0);
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" << xml_escape(suite) << "\" tests=\""
      << rows.size() << "\" failures=\"" << s.fail << "\" errors=\"" << s.failures() - s.fail << "\" time=\"" << total_s
      << "\">\n";
  std::vector<std::string> groups;
  for (const ReportRow& r : rows)
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
  std::sort(groups.begin(), groups.end());
  for (const std::string& g : groups) {
    size_t n = 0, f = 0, e = 0;
    for (const ReportRow& r : rows)
      if (r.group == g) {
        ++n;
        std::string st = r.result.value("status", "");
        f += st == "fail";
        e += st != "fail" && st != "pass";
      }
    xml << " <testsuite name=\"" << xml_escape(g) << "\" tests=\"" << n << "\" failures=\"" << f << "\" errors=\"" << e
        << "\">\n";
    if (!incomplete.empty())
      xml << "  <properties><property name=\"incomplete\" value=\"" << xml_escape(incomplete) << "\"/></properties>\n";
    for (const ReportRow& r : rows) {
      if (r.group != g) continue;
      std::string st = r.result.value("status", ""), msg = r.result.value("message", "");
      xml << "  <testcase classname=\"" << xml_escape(g) << "\" name=\"" << xml_escape(r.name.substr(g.size() + 1))
          << "\" time=\"" << r.result.value("seconds", 0.0) << "\"";
      if (st == "pass") {
        xml << "/>\n";
        continue;
      }
      xml << ">\n   <" << (st == "fail" ? "failure" : "error") << " type=\"" << st << "\" message=\"" << xml_escape(msg)
          << "\">" << xml_escape(log_tail(dir / r.result.value("log", "none"), 40)) << "</"
          << (st == "fail" ? "failure" : "error") << ">\n  </testcase>\n";
    }
    xml << " </testsuite>\n";
  }
  xml << "</testsuites>\n";

  // CSV: one row per job, failures first; only what the jobs determine.
  std::ostringstream csv;
  csv << "job,group,workload,config,backend,status,cycles,utilization,mismatches,accuracy,instructions,message,log\n";
  for (const ReportRow& r : rows)
    csv << csv_field(r.name) << "," << csv_field(r.group) << "," << csv_field(r.workload) << "," << csv_field(r.config)
        << "," << csv_field(r.backend) << "," << r.result.value("status", "") << "," << metric(r.result, "cycles")
        << "," << metric(r.result, "utilization") << "," << metric(r.result, "mismatches") << ","
        << metric(r.result, "accuracy") << "," << metric(r.result, "instructions") << ","
        << csv_field(r.result.value("message", "")) << "," << csv_field(r.result.value("log", "")) << "\n";

  // Markdown: the verdict, the failures with their logs, then every job.
  std::ostringstream md;
  md << "# Regression report: " << md_cell(suite) << "\n\n";
  if (!incomplete.empty())
    md << "**INCOMPLETE: " << md_cell(incomplete) << ".** " << s.not_run << " of " << rows.size()
       << " jobs did not run; this report is partial.\n\n";
  md << (s.failures() ? "**FAILED**: " : "**PASSED**: ") << s.pass << " passed, " << s.fail << " failed, " << s.error
     << " errors, " << s.crash << " crashed, " << s.timeout << " timed out, " << s.lost << " lost, " << s.not_run
     << " not run, of " << rows.size() << " jobs.\n\n";
  if (s.failures()) {
    md << "## Failures\n\n| job | status | message | log |\n|---|---|---|---|\n";
    for (const ReportRow& r : rows)
      if (r.result.value("status", "") != "pass")
        md << "| " << md_cell(r.name) << " | " << r.result.value("status", "") << " | "
           << md_cell(r.result.value("message", "")) << " | " << md_cell(r.result.value("log", "")) << " |\n";
    md << "\n";
  }
  md << "## Jobs\n\n| job | status | cycles | GEMM utilization | mismatches | accuracy "
        "|\n|---|---|---:|---:|---:|---:|\n";
  for (const ReportRow& r : rows)
    md << "| " << md_cell(r.name) << " | " << r.result.value("status", "") << " | " << metric(r.result, "cycles")
       << " | " << metric(r.result, "utilization") << " | " << metric(r.result, "mismatches") << " | "
       << metric(r.result, "accuracy") << " |\n";

  // What the jobs exercised (random programs' ISA bins, RTL coverage files), merged: a section of
  // the Markdown and the coverage files (coverage_report.h).
  const RunCoverage coverage = collect_coverage(dir, rows, rtl_coverage, coverage_waivers);
  md << coverage_markdown(coverage);
  if (coverage.any()) s.coverage_notes = write_coverage_files(dir, suite, utc_now(), coverage);

  for (auto& [name, text] : {std::pair<const char*, std::string>{"report.xml", xml.str()},
                             {"report.csv", csv.str()},
                             {"report.md", md.str()}}) {
    std::ofstream f(dir / name);
    if (!f || !(f << text)) LOOM_THROW(RuntimeError, "cannot write '", (dir / name).string(), "'");
  }
  return s;
}

}  // namespace loom::regress
