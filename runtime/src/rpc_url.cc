// rpc://HOST:PORT/BACKEND names, parsed without the network code (also in builds without Boost).
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::rpc {

bool is_url(const std::string& name) { return name.rfind("rpc://", 0) == 0; }

Url parse_url(const std::string& url) {
  auto bad = [&](const char* why) -> Url {
    LOOM_THROW(DeviceError, "'", url, "' is not an RPC device (rpc://HOST:PORT/BACKEND): ", why);
  };
  if (!is_url(url)) return bad("it does not start with rpc://");
  std::string rest = url.substr(6);
  size_t slash = rest.find('/');
  if (slash == std::string::npos || slash + 1 >= rest.size()) return bad("no backend after the port");
  std::string hostport = rest.substr(0, slash);
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("no HOST:PORT");
  Url u;
  u.host = hostport.substr(0, colon);
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
  std::string port = hostport.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) == 0 || std::stoul(port) > 65535)
    return bad("the port must be a number from 1 to 65535");
  u.port = uint16_t(std::stoul(port));
  u.backend = rest.substr(slash + 1);
  return u;
}

}  // namespace loom::rpc
