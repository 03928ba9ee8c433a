#include "loom/sim/backends.h"

#include "loom/sim/board.h"
#include "loom/sim/functional_sim.h"
#include "loom/sim/perf_model.h"
#include "loom/sim/systemc_sim.h"
#ifdef LOOM_HAVE_RTL
#include "loom/sim/rtl_sim.h"
#endif

namespace loom::sim {

void register_backends() {
  register_functional_sim();
  register_perf_sim();
#ifdef LOOM_HAVE_RTL
  register_rtl_sim();
#endif
  register_systemc_sim();
  register_board_backends();  // after the simulators it wraps
  register_zynq_backends();
}

}  // namespace loom::sim
