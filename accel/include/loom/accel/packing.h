// The accelerator's packed narrow elements (runtime/packed_elements.h: the runtime packs and
// unpacks an accelerator image's narrow values too), under the accelerator's namespace.
#pragma once
#include "loom/runtime/packed_elements.h"

namespace loom::accel {

using runtime::pack_elements;
using runtime::pack_from_container;
using runtime::packed_element;
using runtime::set_packed_element;
using runtime::unpack_elements;
using runtime::unpack_to_container;

}  // namespace loom::accel
