// Internal to loom_ops: helpers the fused-kernel schedules of whole models share
// (cpu_model_schedules.cc, cpu_winograd_schedule.cc).
#pragma once
#include <vector>

#include "loom/schedule/schedule.h"

namespace loom::ops::detail {

// Inlines every compute stage without a reduction except `keep`, the outputs, the costly ones
// read several times and those gathered several times.
void inline_injective(schedule::Schedule& s, const std::vector<const ir::Operation*>& keep);
// Parallel over the outer data-parallel axes, vectorized on the innermost one when it divides.
void schedule_loop_nest(schedule::Stage st, int lanes);

}  // namespace loom::ops::detail
