// Internal to loom_ops: helpers the fused-kernel schedules of whole models share
// (cpu_model_schedules.cc, cpu_winograd_schedule.cc).
#pragma once
#include <vector>

#include "loom/schedule/schedule.h"

namespace loom::ops::detail {

// Inlines every compute stage without a reduction except `keep`, the outputs, the costly ones
// read several times and those gathered several times.
void inline_injective(schedule::Schedule& s, const std::vector<const ir::Operation*>& keep);
// Parallel over the outer data-parallel axes, vectorized on the innermost one when it divides;
// with `join_rows`, the last two axes of an element-wise stage whose rows are no whole number of
// vectors run as one.
void schedule_loop_nest(schedule::Stage st, int lanes, bool join_rows = false);
// Whether every element an element-wise stage reads (through the stages inlined into it) is a
// constant step from the one before as its last two axes advance together (contiguous_rows.cc).
bool rows_read_contiguously(const schedule::Schedule& s, const schedule::Stage& st);

}  // namespace loom::ops::detail
