// Remote accelerator devices over TCP (TVM RPC's role for VTA boards): an RpcServer exports one
// device of a registered backend; the device backends `rpc://HOST:PORT/BACKEND` (plain TCP, loopback
// only) and `rpc+tls://HOST:PORT/BACKEND?fp=...` (TLS) implement the device interface by talking to
// it, so the driver, compiled operators and compiled models run unchanged on a device in another
// process or on a board. Protocol: docs/rpc.md.
//
// Safety: loopback by default; a server bound to another address needs TLS (its certificate, which
// clients pin by fingerprint or check against a CA) and a token or client certificates. Each side
// proves it holds the token without sending it (an HMAC over both sides' nonces); every message is
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

// rpc://HOST:PORT/BACKEND, or rpc+tls://HOST:PORT/BACKEND[?fp=..&ca=..&cert=..&key=..] (the
// query's values percent-decoded). Throws DeviceError naming the URL when it is not one.
struct Url {
  std::string host;
  uint16_t port = 0;
  std::string backend;
  bool tls = false;
  std::string fingerprint;  // fp: the server certificate's SHA-256 ("sha256:" and 64 hex digits)
  std::string ca_file;      // ca: PEM certificates the server's must chain to (instead of fp)
  std::string cert_file;    // cert, key: this client's certificate and key (servers with --client-ca)
  std::string key_file;
};
Url parse_url(const std::string& url);
bool is_url(const std::string& name);  // starts with "rpc://" or "rpc+tls://"
// "sha256:" and 64 lower-case hex digits, from the same with or without the prefix, colons or upper
// case (as `openssl x509 -fingerprint -sha256` prints it); DeviceError naming `where` otherwise.
std::string normalize_fingerprint(const std::string& text, const std::string& where);

struct ServerOptions {
  std::string host = "127.0.0.1";  // where to listen; anything but loopback needs a token
  uint16_t port = kDefaultPort;    // 0: any free port (see RpcServer::port)
  std::string backend = "fsim";    // the exported device: a registered backend's name
  std::string config_json;         // its accelerator config (also what clients' models must match)
  std::string token;               // clients must prove they hold it ("" = none)
  // TLS: the server's certificate chain and private key (PEM files); both or neither. Without
  // them the server speaks plain TCP, which only a loopback address may.
  std::string tls_cert, tls_key;
  std::string client_ca;  // PEM certificates a client's certificate must chain to (mutual TLS)
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
  // Creates the device and binds. DeviceError for an unknown backend, an address in use, a
  // certificate or key that does not load, or a non-loopback address without TLS, or without a
  // token or client CA.
  explicit Server(ServerOptions options);
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;  // the bound port (useful with port 0)
  // The TLS certificate's fingerprint (normalize_fingerprint's form), "" for plain TCP.
  std::string fingerprint() const;
  void start();  // serves on a background thread
  void serve();  // serves on this thread until stop()
  void stop();
  ServerStats stats() const;
  bool busy() const;  // a client is connected
  // One line per event (session opened/closed, errors) for the server's log; default: none.
  void set_log(std::function<void(const std::string&)> log);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The client device for `url` (what make_accel_device returns for rpc://...): connects (over TLS
// for rpc+tls://, checking the server's certificate), proves it holds LOOM_RPC_TOKEN (and checks
// the server does), and presents `config_json` (the model's config; "" to accept the server's).
// A TLS URL without fp or ca takes them from $LOOM_RPC_CA or the known-hosts file
// ($LOOM_RPC_KNOWN_HOSTS, default ~/.config/loom/rpc_known_hosts: lines "HOST:PORT sha256:..."),
// and cert/key from $LOOM_RPC_CERT and $LOOM_RPC_KEY.
std::unique_ptr<AccelDevice> make_rpc_device(const std::string& url, const std::string& config_json);

// A self-signed key pair for a server or client (`loom rpc-keygen`): an ECDSA P-256 key and an
// X.509 certificate for `names` (DNS names or IP addresses, its subject alternative names).
struct KeyPairOptions {
  std::string common_name = "loom-rpc";
  std::vector<std::string> names;
  std::chrono::system_clock::time_point not_before = std::chrono::system_clock::now();
  std::chrono::system_clock::time_point not_after = not_before + std::chrono::hours(24 * 365);
};
// Writes the key (PEM, mode 0600) and certificate (PEM); returns the certificate's fingerprint.
// DeviceError naming the file when one cannot be written.
std::string write_key_pair(const std::string& key_file, const std::string& cert_file, const KeyPairOptions& options);
// The fingerprint of the first certificate in a PEM file.
std::string certificate_fingerprint(const std::string& cert_file);

// Checks a request body the way the server does before executing it (for the fuzz target);
// returns the operation's name, throws DeviceError naming what is malformed.
std::string check_request(const uint8_t* body, size_t size);

}  // namespace loom::rpc
