// Built instead of rpc_client.cc, rpc_server.cc and rpc_wire.cc when Boost.Asio is absent (a
// runtime-only build on a machine without libboost-dev): rpc:// devices and the server say so.
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::rpc {

namespace {
[[noreturn]] void no_rpc(const std::string& what) {
  LOOM_THROW(DeviceError, what,
             ": this Loom runtime was built without Boost.Asio, so it has no RPC (install libboost-dev and "
             "reconfigure)");
}
}  // namespace

struct Server::Impl {};

Server::Server(ServerOptions) { no_rpc("the RPC server"); }
Server::~Server() = default;
uint16_t Server::port() const { return 0; }
void Server::start() { no_rpc("the RPC server"); }
void Server::serve() { no_rpc("the RPC server"); }
void Server::stop() {}
ServerStats Server::stats() const { return {}; }
bool Server::busy() const { return false; }
void Server::set_log(std::function<void(const std::string&)>) {}

std::unique_ptr<AccelDevice> make_rpc_device(const std::string& url, const std::string&) {
  parse_url(url);
  no_rpc("device '" + url + "'");
}

std::string check_request(const uint8_t*, size_t) { no_rpc("checking an RPC request"); }

}  // namespace loom::rpc
