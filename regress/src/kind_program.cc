// program:FILE: an accelerator program on the job's backend, checked against the contents it
// records (cpu) or the checked regions as the reference backend leaves them. The program carries
// its config.
#include <iostream>

#include "builtin_job_kinds.h"
#include "loom/accel/program.h"
#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class ProgramJobKind : public JobKind {
 public:
  std::string name() const override { return "program"; }
  std::string syntax() const override { return "program:FILE"; }
  ResolvedWorkload resolve(const Workload& w, const std::string&, const FileResolver& file) const override {
    ResolvedWorkload r;
    r.text = "program:" + file(w.target);
    r.own_config = true;
    r.default_reference = "cpu";  // the contents the program records
    return r;
  }
  void run(const JobSpec& job, const Workload& w, const fs::path& dir, const fs::path&, JobOutcome& o) const override {
    accel::Program p = accel::Program::load(w.target);
    json cfg = json::parse(p.config.to_json());
    auto read_checks = [&](AccelDevice& dev) {
      std::vector<NDArray> regions;
      for (const auto& c : p.checks) {
        NDArray a = NDArray::empty({int64_t(c.data.size())}, DataType::Int(8));
        dev.read(c.addr, a.raw_data(), c.data.size());
        regions.push_back(a);
      }
      return regions;
    };
    auto dev = open_job_device(job, job.backend, cfg, "the job's");
    accel::ProgramResult r = accel::run_program(p, *dev);
    std::cout << r.report;
    std::vector<NDArray> got = read_checks(*dev);
    for (size_t i = 0; i < got.size(); ++i)
      runtime::write_npy((dir / ("region" + std::to_string(i) + ".npy")).string(), got[i]);
    o.metrics["counters"] = r.counters;
    if (r.cycles) o.metrics["cycles"] = r.cycles;
    o.metrics["mismatches"] = 0;
    if (job.expect.reference == "cpu") {
      o.metrics["mismatches"] = r.mismatched_checks;
      if (r.mismatched_checks)
        o.checks.push_back({"reference cpu", false,
                            std::to_string(r.mismatched_checks) + " of the program's checks differ (see the log)"});
      if (p.checks.empty()) o.checks.push_back({"reference cpu", false, "the program records no expected contents"});
    } else if (job.expect.reference != "none") {
      auto ref_dev = open_job_device(job, job.expect.reference, cfg, "the reference");
      accel::run_program(p, *ref_dev);
      std::vector<NDArray> want = read_checks(*ref_dev);
      for (size_t i = 0; i < got.size(); ++i) compare_into(o, job.expect.reference, got[i], want[i]);
    }
  }
  std::string problem(const JobSpec& job, const Workload& w) const override {
    JobSpec with_config = job;
    with_config.config = json::parse(accel::Program::load(w.target).config.to_json());
    return JobKind::problem(with_config, w);
  }
};

}  // namespace

std::unique_ptr<JobKind> make_program_job_kind() { return std::make_unique<ProgramJobKind>(); }

}  // namespace loom::regress
