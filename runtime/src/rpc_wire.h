// Internal to the RPC device (rpc_client.cc, rpc_server.cc): messages and a TCP connection whose
// every transfer has a deadline. A frame is a little-endian u32 body length, then the body: the
// operation (u8), then its fields (u8/u32/u64 little-endian; byte strings as a u64 length and the
// bytes). A response body is a status byte (0 ok, 1 error) and the result fields or the error
// message.
#pragma once
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpc_tls.h"

namespace loom::rpc {

enum class Op : uint8_t {
  Hello = 1,     // u32 version, str backend, str config json, bytes client nonce -> bytes server nonce
  Alloc,         // u64 bytes, u64 alignment -> u64 address
  AllocAt,       // u64 address, u64 bytes
  Free,          // u64 address
  Write,         // u64 address, bytes data
  Read,          // u64 address, u64 bytes -> bytes
  WriteReg,      // u32 offset, u32 value
  ReadRegs,      // u32 first, u32 count -> count x u32
  Launch,        // u64 instruction address, u32 count
  Wait,          // u64 timeout ms (the server waits; its DeviceError is the error response)
  ErrorMessage,  // -> str
  Goodbye,       // ends the session (allocations freed) before the response
  Auth,          // bytes client proof -> str device name, str config json, bytes server proof
  Count
};
const char* to_string(Op op);

// The handshake (protocol 2): each side proves it holds the token by an HMAC-SHA256, keyed by the
// token, over both sides' fresh nonces, so the token never crosses the wire and a recorded
// handshake does not pass in another session. OpenSSL's libcrypto computes it.
inline constexpr size_t kNonceBytes = 32, kProofBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;
Nonce random_nonce();  // from the system's generator; DeviceError if it fails
// What `role` ("client" or "server") sends to prove it holds `token` in the session of the nonces.
Proof session_proof(const std::string& token, const char* role, const Nonce& server, const Nonce& client);
bool same_proof(const uint8_t* a, const Proof& b);  // in constant time

class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& bytes(const void* p, uint64_t n);
  Writer& str(const std::string& s) { return bytes(s.data(), s.size()); }
  // A byte string of n bytes to be filled in place (no copy through a temporary).
  uint8_t* bytes_in_place(uint64_t n);
  const std::vector<uint8_t>& body() const { return b_; }
  std::vector<uint8_t> take() { return std::move(b_); }

 private:
  std::vector<uint8_t> b_;
};

// Reads fields of one body; every read is bounds-checked (DeviceError naming the field, where it
// was expected and the body's size).
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8(const char* what);
  uint32_t u32(const char* what);
  uint64_t u64(const char* what);
  // A byte string of at most `max` bytes, as a view into the body.
  std::pair<const uint8_t*, uint64_t> bytes(const char* what, uint64_t max);
  std::string str(const char* what, uint64_t max);
  void end(const char* message);  // DeviceError if bytes are left over

 private:
  void need(uint64_t k, const char* what);
  const uint8_t* p_;
  size_t n_, at_ = 0;
};

// A TCP stream, plain or TLS, whose sends and receives each finish within a deadline, or close
// the connection and throw DeviceError ("<peer>: ... timed out after N ms").
class Connection {
 public:
  explicit Connection(std::string peer);
  void connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
  void assign(int fd);  // an accepted socket
  bool peer_is_loopback() const;
  // TLS from here on: the client's handshake, checking the server's certificate as `trust` says
  // (DeviceError with the reason when it is refused), or the server's.
  void start_tls_client(boost::asio::ssl::context& ctx, const tls::ClientTrust& trust, const std::string& host,
                        std::chrono::milliseconds timeout);
  void start_tls_server(boost::asio::ssl::context& ctx, std::chrono::milliseconds timeout);
  bool secure() const { return tls_ != nullptr; }
  // Up to n of the first bytes that arrived, left unread: whatever is there once something is,
  // waiting within `timeout` for all n while they may be a TLS ClientHello (a server's look at
  // what a client speaks).
  size_t peek(uint8_t* buf, size_t n, std::chrono::milliseconds timeout);
  // Sends one frame: `body` followed by `tail_bytes` bytes at `tail` (a copy's data, sent from
  // where it lies).
  void send(const std::vector<uint8_t>& body, std::chrono::milliseconds timeout, const void* tail = nullptr,
            uint64_t tail_bytes = 0);
  // The next body: its length within `first_timeout` (idle time), the rest within `rest_timeout`;
  // bodies over `max_bytes` are refused (DeviceError) without reading them.
  std::vector<uint8_t> receive(std::chrono::milliseconds first_timeout, std::chrono::milliseconds rest_timeout,
                               uint32_t max_bytes);
  void close();
  // Closes the socket from another thread (queued onto the connection's own; ends a pending receive).
  void interrupt();
  bool open() const { return socket_.is_open(); }
  const std::string& peer() const { return peer_; }

 private:
  template <typename Start>
  void run(const char* what, std::chrono::milliseconds timeout, Start start);
  // Calls f with the stream the session's bytes go through: TLS over the socket, or the socket.
  template <typename F>
  void through(F f) {
    if (tls_)
      f(*tls_);
    else
      f(socket_);
  }
  std::string peer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_{io_};
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  bool client_ = false;  // which side's messages explain TLS errors
};

}  // namespace loom::rpc
