// The accelerator's public tiling choosers on shapes that once failed and on a seeded sample of
// legal shapes: each operator is compiled with the chosen tiling, run on the functional simulator
// and compared with this program's own loops.
#pragma once

#include <string>

#include "loom/accel/config.h"

// Returns the number of shapes whose result differs (or that failed to compile or run); prints
// one line per shape.
int check_accel_shapes(const loom::accel::AccelConfig& config, unsigned sample_seed, int sample_size);
