// Where the `loom` tool finds the RTL it ships (hw-report, hw-kernel): beside an installed binary
// (<prefix>/bin/loom reads <prefix>/share/loom, which holds rtl/ and kernel/), else the source
// tree it was built from (hw/). So an install works after the source tree is gone.
#pragma once
#include <string>

namespace loom::tools {

std::string hw_data_dir();

}  // namespace loom::tools
