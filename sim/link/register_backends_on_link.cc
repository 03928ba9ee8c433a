// Compiled into every target that links loom_sim (Loom::sim, Loom::simulators): it is an
// INTERFACE source of that target. It registers the simulator backends before main, and its call
// into loom_sim keeps the library linked under --as-needed (a library nothing references is
// dropped, and with it any registration in its own static initializers). So linking the target
// is all a program does to get make_accel_device("fsim") and "rtl". Internal linkage: a program
// that compiles this file in several of its targets registers more than once, which is harmless.
#include "loom/sim/backends.h"

namespace {

const bool loom_sim_backends_registered = (loom::sim::register_backends(), true);

}  // namespace
