// Internal to loom_ops: helpers the fused-kernel schedules of whole models share
// (cpu_model_schedules.cc, cpu_winograd_schedule.cc).
#pragma once
#include <vector>

#include "loom/schedule/schedule.h"

namespace loom::ops::detail {

bool has_reduction(const schedule::Stage& st);
// The constant extent of a loop variable's domain, 0 if it is not constant.
int64_t extent_of(const ir::IterVar& v);
// Inlines every compute stage without a reduction except `keep`, the outputs, the costly ones
// read several times and those gathered several times.
void inline_injective(schedule::Schedule& s, const std::vector<const ir::Operation*>& keep);
// Parallel over the outer data-parallel axes, vectorized on the innermost one when it divides.
void schedule_loop_nest(schedule::Stage st, int lanes);
// Largest divisor of n that is at most `limit`.
int divisor_at_most(int64_t n, int limit);

}  // namespace loom::ops::detail
