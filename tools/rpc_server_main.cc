// loom-rpc-server: the board-side program. It links only the runtime, the accelerator library and
// the device backends (no compiler, no LLVM), so it fits a board next to the runtime.
#include <iostream>

#include "loom/runtime/error.h"
#include "rpc_server.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    // `loom-rpc-server keygen ...`: the key pair made on the board, so its key never leaves it.
    if (!args.empty() && args[0] == "keygen")
      return loom::tools::rpc_keygen_command({args.begin() + 1, args.end()}, "loom-rpc-server keygen");
    return loom::tools::rpc_server_command(args, "loom-rpc-server");
  } catch (const std::exception& e) {
    std::cerr << "loom-rpc-server: error: " << e.what() << "\n";
    return 1;
  }
}
