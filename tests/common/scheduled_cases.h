// The workload x schedule matrix shared by the lowering tests (run through the interpreter) and
// the CPU backend tests (compiled with LLVM): every case is checked against the naive reference.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/workloads.h"
#include "loom/schedule/schedule.h"

namespace loom::test {

struct ScheduledCase {
  Workload workload;
  std::unique_ptr<schedule::Schedule> schedule;
};

struct CaseInfo {
  std::string name;
  std::function<ScheduledCase()> build;
};

const std::vector<CaseInfo>& scheduled_cases();

}  // namespace loom::test
