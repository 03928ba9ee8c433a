// Built instead of the RPC sources (rpc_client.cc, rpc_server.cc, rpc_wire.cc, rpc_tls.cc,
// rpc_keygen.cc) when Boost.Asio or OpenSSL is absent (a runtime-only build on a machine without
// libboost-dev or libssl-dev): rpc:// devices and the server say so.
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::rpc {

namespace {
[[noreturn]] void no_rpc(const std::string& what) {
  LOOM_THROW(DeviceError, what,
             ": this Loom runtime was built without Boost.Asio or OpenSSL, so it has no RPC (install libboost-dev "
             "and libssl-dev and reconfigure)");
}
}  // namespace

struct Server::Impl {};

Server::Server(ServerOptions) { no_rpc("the RPC server"); }
Server::~Server() = default;
uint16_t Server::port() const { return 0; }
std::string Server::fingerprint() const { return ""; }
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
std::string write_key_pair(const std::string&, const std::string&, const KeyPairOptions&) {
  no_rpc("writing a key pair");
}
std::string certificate_fingerprint(const std::string&) { no_rpc("reading a certificate"); }

}  // namespace loom::rpc
