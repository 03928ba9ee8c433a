// Remote accelerator devices over TCP (TVM RPC's role for VTA boards): an RpcServer exports one
// device of a registered backend; the device backend `rpc://HOST:PORT/BACKEND` (make_accel_device)
// implements the device interface by talking to it, so the driver, compiled operators and compiled
// models run unchanged on a device in another process or on a board. Protocol: docs/rpc.md.
//
// Safety: loopback by default; a server bound to another address needs a token, which each side
// proves it holds without sending it (an HMAC over both sides' nonces); every message is
// length-prefixed with a maximum size and every request bounded in time; one client at a time
// (others are told "device busy"); a client's errors and disconnects never stop the server, and
// its allocations are freed when it goes. An address whose handshakes keep failing is refused for
// a while; a client's device memory and session time are bounded.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace loom {
class AccelDevice;
}

namespace loom::rpc {

// 2: the token is proved by HMAC-SHA256 over both sides' nonces, never sent (1 sent it in HELLO).
inline constexpr uint32_t kProtocolVersion = 2;
// Largest message body either side accepts; bigger copies are split into chunks by the client.
inline constexpr uint32_t kMaxMessageBytes = (64u << 20) + 4096;
inline constexpr uint64_t kCopyChunkBytes = 16u << 20;
inline constexpr uint16_t kDefaultPort = 9090;

// rpc://HOST:PORT/BACKEND. Throws DeviceError naming the URL when it is not one.
struct Url {
  std::string host;
  uint16_t port = 0;
  std::string backend;
};
Url parse_url(const std::string& url);
bool is_url(const std::string& name);  // starts with "rpc://"

struct ServerOptions {
  std::string host = "127.0.0.1";  // where to listen; anything but loopback needs a token
  uint16_t port = kDefaultPort;    // 0: any free port (see RpcServer::port)
  std::string backend = "fsim";    // the exported device: a registered backend's name
  std::string config_json;         // its accelerator config (also what clients' models must match)
  std::string token;               // clients must present it ("" = none; loopback only)
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};  // a client silent this long is dropped
  std::chrono::milliseconds request_timeout{30000};                  // a message must arrive whole within this
  std::chrono::milliseconds max_wait{std::chrono::hours(1)};         // cap on a client's WAIT
  std::chrono::milliseconds handshake_timeout{10000};                // HELLO and AUTH must be done within this
  // An address with this many failed handshakes (refused or broken off before a HELLO was
  // accepted) within failure_window is refused for `lockout`, each refusal logged; a successful
  // handshake clears its count. 0: no limit.
  int max_failed_handshakes = 10;
  std::chrono::milliseconds failure_window{std::chrono::minutes(1)};
  std::chrono::milliseconds lockout{std::chrono::minutes(1)};
  uint64_t max_client_bytes = 0;  // device memory one session may hold (0: the device's)
  std::chrono::milliseconds max_session{std::chrono::hours(24)};  // a session's length, from its HELLO
};

struct ServerStats {
  uint64_t sessions = 0, requests = 0, errors = 0, refused = 0;
  uint64_t failed_handshakes = 0, locked_out = 0;  // handshakes refused; connections refused for an address's failures
};

class Server {
 public:
  // Creates the device and binds. DeviceError for an unknown backend, an address in use, or a
  // non-loopback address without a token.
  explicit Server(ServerOptions options);
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;  // the bound port (useful with port 0)
  void start();           // serves on a background thread
  void serve();           // serves on this thread until stop()
  void stop();
  ServerStats stats() const;
  bool busy() const;  // a client is connected
  // One line per event (session opened/closed, errors) for the server's log; default: none.
  void set_log(std::function<void(const std::string&)> log);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The client device for `url` (what make_accel_device returns for rpc://...): connects, proves it
// holds LOOM_RPC_TOKEN (and checks the server does), and presents `config_json` (the model's
// config; "" to accept the server's).
std::unique_ptr<AccelDevice> make_rpc_device(const std::string& url, const std::string& config_json);

// Checks a request body the way the server does before executing it (for the fuzz target);
// returns the operation's name, throws DeviceError naming what is malformed.
std::string check_request(const uint8_t* body, size_t size);

}  // namespace loom::rpc
