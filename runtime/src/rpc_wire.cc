#include "rpc_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::rpc {

namespace asio = boost::asio;
using asio::ip::tcp;

const char* to_string(Op op) {
  static const char* names[] = {"?",         "HELLO",     "ALLOC",  "ALLOC_AT", "FREE",          "WRITE",   "READ",
                                "WRITE_REG", "READ_REGS", "LAUNCH", "WAIT",     "ERROR_MESSAGE", "GOODBYE", "AUTH"};
  return op < Op::Count ? names[size_t(op)] : "?";
}

Nonce random_nonce() {
  Nonce n;
  if (RAND_bytes(n.data(), int(n.size())) != 1)
    LOOM_THROW(DeviceError, "rpc: the system's random generator failed (OpenSSL RAND_bytes)");
  return n;
}

Proof session_proof(const std::string& token, const char* role, const Nonce& server, const Nonce& client) {
  std::string message = std::string("loom-rpc-") + std::to_string(kProtocolVersion) + " " + role;
  message.push_back('\0');
  message.append(reinterpret_cast<const char*>(server.data()), server.size());
  message.append(reinterpret_cast<const char*>(client.data()), client.size());
  Proof p;
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), token.data(), int(token.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), p.data(), &len) ||
      len != p.size())
    LOOM_THROW(DeviceError, "rpc: HMAC-SHA256 failed (OpenSSL)");
  return p;
}

bool same_proof(const uint8_t* a, const Proof& b) { return CRYPTO_memcmp(a, b.data(), b.size()) == 0; }

Writer& Writer::u8(uint8_t v) {
  b_.push_back(v);
  return *this;
}
Writer& Writer::u32(uint32_t v) {
  for (int k = 0; k < 4; ++k) b_.push_back(uint8_t(v >> (8 * k)));
  return *this;
}
Writer& Writer::u64(uint64_t v) {
  for (int k = 0; k < 8; ++k) b_.push_back(uint8_t(v >> (8 * k)));
  return *this;
}
Writer& Writer::bytes(const void* p, uint64_t n) {
  u64(n);
  const auto* c = static_cast<const uint8_t*>(p);
  b_.insert(b_.end(), c, c + n);
  return *this;
}

uint8_t* Writer::bytes_in_place(uint64_t n) {
  u64(n);
  size_t at = b_.size();
  b_.resize(at + n);
  return b_.data() + at;
}

void Reader::need(uint64_t k, const char* what) {
  if (k > n_ - at_)
    LOOM_THROW(DeviceError, "malformed message: ", what, " needs ", k, " bytes at byte ", at_, " of a ", n_,
               "-byte message");
}
uint8_t Reader::u8(const char* what) {
  need(1, what);
  return p_[at_++];
}
uint32_t Reader::u32(const char* what) {
  need(4, what);
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= uint32_t(p_[at_ + k]) << (8 * k);
  at_ += 4;
  return v;
}
uint64_t Reader::u64(const char* what) {
  need(8, what);
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= uint64_t(p_[at_ + k]) << (8 * k);
  at_ += 8;
  return v;
}
std::pair<const uint8_t*, uint64_t> Reader::bytes(const char* what, uint64_t max) {
  uint64_t n = u64(what);
  if (n > max) LOOM_THROW(DeviceError, "malformed message: ", what, " of ", n, " bytes (at most ", max, ")");
  need(n, what);
  const uint8_t* p = p_ + at_;
  at_ += n;
  return {p, n};
}
std::string Reader::str(const char* what, uint64_t max) {
  auto [p, n] = bytes(what, max);
  return std::string(reinterpret_cast<const char*>(p), n);
}
void Reader::end(const char* message) {
  if (at_ != n_)
    LOOM_THROW(DeviceError, "malformed message: ", n_ - at_, " bytes left over after the fields of ", message);
}

Connection::Connection(std::string peer) : peer_(std::move(peer)) {}

// Starts one asynchronous operation and runs it to completion or to the deadline; on the deadline
// the socket closes (the operation is cancelled) and the caller gets a DeviceError.
template <typename Start>
void Connection::run(const char* what, std::chrono::milliseconds timeout, Start start) {
  boost::system::error_code ec = asio::error::would_block;
  start(ec);
  io_.restart();
  io_.run_for(timeout);
  if (ec == asio::error::would_block) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    io_.restart();
    io_.run();  // let the cancelled operation finish
    LOOM_THROW(DeviceError, peer_, ": ", what, " timed out after ", timeout.count(), " ms");
  }
  if (ec) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
        ec == asio::ssl::error::stream_truncated)
      LOOM_THROW(DeviceError, peer_, ": the connection was closed by the other side (", what, ")");
    LOOM_THROW(DeviceError, peer_, ": ", what, " failed: ", tls::explain(ec, client_));
  }
}

void Connection::connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  boost::system::error_code rec;
  auto address = asio::ip::make_address(host, rec);
  std::vector<tcp::endpoint> endpoints;
  if (!rec) {
    endpoints.emplace_back(address, port);
  } else {
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(host, std::to_string(port), rec);
    if (rec) LOOM_THROW(DeviceError, peer_, ": cannot resolve host '", host, "': ", rec.message());
    for (auto& r : results) endpoints.push_back(r.endpoint());
  }
  run("connecting", timeout, [&](boost::system::error_code& ec) {
    asio::async_connect(socket_, endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) { ec = e; });
  });
  socket_.set_option(tcp::no_delay(true));
  client_ = true;
}

void Connection::assign(int fd) {
  socket_.assign(tcp::v4(), fd);
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
}

bool Connection::peer_is_loopback() const {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  return !ec && ep.address().is_loopback();
}

void Connection::start_tls_client(asio::ssl::context& ctx, const tls::ClientTrust& trust, const std::string& host,
                                  std::chrono::milliseconds timeout) {
  tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(socket_, ctx);
  auto verdict = std::make_shared<tls::Verdict>();
  tls::prepare_client(*tls_, trust, host, verdict);
  try {
    run("the TLS handshake", timeout, [&](boost::system::error_code& ec) {
      tls_->async_handshake(asio::ssl::stream_base::client, [&](const boost::system::error_code& e) { ec = e; });
    });
  } catch (const DeviceError&) {
    if (!verdict->refusal.empty()) LOOM_THROW(DeviceError, peer_, ": ", verdict->refusal);
    throw;
  }
}

void Connection::start_tls_server(asio::ssl::context& ctx, std::chrono::milliseconds timeout) {
  tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(socket_, ctx);
  try {
    run("the TLS handshake", timeout, [&](boost::system::error_code& ec) {
      tls_->async_handshake(asio::ssl::stream_base::server, [&](const boost::system::error_code& e) { ec = e; });
    });
  } catch (const DeviceError& e) {
    // Why a client's certificate was refused (expired, another CA, not for clients), when it was.
    const long verify = SSL_get_verify_result(tls_->native_handle());
    if (verify == X509_V_OK) throw;
    LOOM_THROW(DeviceError, e.what(), " (", X509_verify_cert_error_string(verify), ")");
  }
}

size_t Connection::peek(uint8_t* buf, size_t n, std::chrono::milliseconds timeout) {
  auto look = [&](bool wait) -> size_t {
    if (wait)
      run("waiting for a message", timeout, [&](boost::system::error_code& ec) {
        socket_.async_wait(tcp::socket::wait_read, [&](const boost::system::error_code& e) { ec = e; });
      });
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    size_t got = socket_.receive(asio::buffer(buf, n), tcp::socket::message_peek, ec);
    socket_.non_blocking(false, ec);
    return got;
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t got = look(true);
  if (got == 0) LOOM_THROW(DeviceError, peer_, ": the connection was closed by the other side (waiting for a message)");
  // The rest of the first bytes, as they come, while they may still be a TLS ClientHello (a frame
  // is told apart by its first bytes; a short one is answered at once).
  while (got < n && tls::may_be_client_hello(buf, got) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    got = std::max(got, look(false));
  }
  return got;
}

void Connection::send(const std::vector<uint8_t>& body, std::chrono::milliseconds timeout, const void* tail,
                      uint64_t tail_bytes) {
  if (!socket_.is_open()) LOOM_THROW(DeviceError, peer_, ": the connection is closed");
  uint8_t len[4];
  uint32_t total = uint32_t(body.size() + tail_bytes);
  for (int k = 0; k < 4; ++k) len[k] = uint8_t(total >> (8 * k));
  std::vector<asio::const_buffer> bufs{asio::buffer(len, 4), asio::buffer(body)};
  if (tail_bytes) bufs.push_back(asio::buffer(tail, tail_bytes));
  // TLS writes one buffer at a time, each its own record and send: a small frame goes as one
  // buffer (its length, body and a tail of up to 64 KiB copied together), a large tail apart.
  std::vector<uint8_t> joined;
  if (tls_) {
    const uint64_t joined_tail = tail_bytes <= (64u << 10) ? tail_bytes : 0;
    joined.reserve(4 + body.size() + joined_tail);
    joined.insert(joined.end(), len, len + 4);
    joined.insert(joined.end(), body.begin(), body.end());
    if (joined_tail)
      joined.insert(joined.end(), static_cast<const uint8_t*>(tail), static_cast<const uint8_t*>(tail) + joined_tail);
    bufs = {asio::buffer(joined)};
    if (tail_bytes && !joined_tail) bufs.push_back(asio::buffer(tail, tail_bytes));
  }
  through([&](auto& stream) {
    run("sending", timeout, [&](boost::system::error_code& ec) {
      asio::async_write(stream, bufs, [&](const boost::system::error_code& e, size_t) { ec = e; });
    });
  });
}

std::vector<uint8_t> Connection::receive(std::chrono::milliseconds first_timeout,
                                         std::chrono::milliseconds rest_timeout, uint32_t max_bytes) {
  if (!socket_.is_open()) LOOM_THROW(DeviceError, peer_, ": the connection is closed");
  uint8_t len[4];
  through([&](auto& stream) {
    run("waiting for a message", first_timeout, [&](boost::system::error_code& ec) {
      asio::async_read(stream, asio::buffer(len, 4), [&](const boost::system::error_code& e, size_t) { ec = e; });
    });
  });
  uint32_t n = 0;
  for (int k = 0; k < 4; ++k) n |= uint32_t(len[k]) << (8 * k);
  if (n == 0 || n > max_bytes) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    LOOM_THROW(DeviceError, peer_, ": a message of ", n, " bytes (must be 1 to ", max_bytes, ")");
  }
  std::vector<uint8_t> body(n);
  through([&](auto& stream) {
    run("receiving a message", rest_timeout, [&](boost::system::error_code& ec) {
      asio::async_read(stream, asio::buffer(body), [&](const boost::system::error_code& e, size_t) { ec = e; });
    });
  });
  return body;
}

void Connection::interrupt() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    socket_.close(ignored);
  });
}

void Connection::close() {
  boost::system::error_code ignored;
  // No TLS close_notify: frames carry their length and GOODBYE ends a session, so a truncated
  // stream is detected without it, and waiting for the other side's would delay every close.
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace loom::rpc
