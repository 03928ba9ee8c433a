// Which build of a program is running, told from the GNU build-ids the linker writes into every
// executable and library (a hash of the linked contents: a rebuild that changes code changes it).
// The kernel cache keys its entries by the code generator's and LLVM's; `loom regress` names a
// Loom build by its executable's and libraries'.
#pragma once
#include <string>
#include <vector>

namespace loom::runtime {

// The build-id (hex) of the loaded object that holds `address`, or "" when it has none.
std::string loaded_build_id(const void* address);

struct LoadedObject {
  std::string path;      // the executable's path for the program itself
  std::string build_id;  // "" when it has none
};
// The program and every object loaded now whose file name contains `name_part`, by path.
std::vector<LoadedObject> loaded_objects(const std::string& name_part);

}  // namespace loom::runtime
