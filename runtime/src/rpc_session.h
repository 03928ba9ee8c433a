// Internal to the RPC server: one client's session as the server runs it, apart from the
// connection (what rpc_server.cc feeds from the socket and the fuzz target from its input). The
// handshake (HELLO with the client's nonce, the server's nonce back, AUTH with the client's proof,
// the server's proof back), then device operations within the client's own allocations, its
// memory bound and its session time.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/runtime/rpc.h"
#include "rpc_wire.h"

namespace loom {
class AccelDevice;
}

namespace loom::rpc {

struct Request;  // one request body's fields, checked (rpc_session.cc)

// An error reply's body: status 1 and the message.
std::vector<uint8_t> error_reply(const std::string& message);

class ServerSession {
 public:
  // `options` (the token, the exported backend and config, the limits) and `device` outlive it.
  ServerSession(const ServerOptions& options, AccelDevice& device);
  ~ServerSession();  // frees what the client still holds
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  struct Reply {
    std::vector<uint8_t> body;
    bool error = false;  // an error reply
    bool last = false;   // the session ends after it: GOODBYE, a refused handshake, the time limit
    std::string why;     // for the log, when last
  };
  // The reply to one request body. DeviceError when the body is malformed: its framing can no
  // longer be trusted, so the caller sends error_reply(what()) and ends the session.
  Reply handle(const uint8_t* body, size_t size);

  bool authenticated() const { return authenticated_; }  // the handshake was accepted
  // The client's proof matched (a backend or config refused after it is no failed handshake).
  bool proved() const { return proved_; }
  void free_all();  // the client's allocations, freed on the device

 private:
  std::vector<uint8_t> execute(const Request& q);
  void check_room(uint64_t bytes, const char* op) const;

  const ServerOptions& o_;
  AccelDevice& device_;
  bool challenged_ = false;  // HELLO answered with the server's nonce; AUTH comes next
  bool proved_ = false;
  bool authenticated_ = false;
  Nonce server_nonce_{}, client_nonce_{};
  std::string backend_, config_;
  std::map<uint64_t, uint64_t> allocations_;  // address -> bytes charged
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point start_;  // of the accepted handshake
};

}  // namespace loom::rpc
