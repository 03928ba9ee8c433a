// The device backend rpc://HOST:PORT/BACKEND: the device interface over a connection to an RPC
// server, each operation one request (copies over the chunk size in several).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "rpc_wire.h"

namespace loom::rpc {

using std::chrono::milliseconds;

namespace {

// Client-side bound on connecting and on one request's reply (WAIT adds its own timeout):
// LOOM_RPC_TIMEOUT_MS, default 60 s.
milliseconds request_timeout() {
  return milliseconds(runtime::env::integer("LOOM_RPC_TIMEOUT_MS", 1, 86'400'000).value_or(60000));
}

class RpcDevice : public AccelDevice {
 public:
  RpcDevice(const std::string& url, const std::string& config_json)
      : name_(url), url_(parse_url(url)), conn_(std::make_unique<Connection>(url)), timeout_(request_timeout()) {
    conn_->connect(url_.host, url_.port, std::min(timeout_, milliseconds(5000)));
    if (url_.tls) {
      const tls::ClientTrust trust = tls::client_trust(url_);
      tls_context_ = tls::client_context(trust);
      conn_->start_tls_client(*tls_context_, trust, url_.host, std::min(timeout_, milliseconds(10000)));
    } else if (!conn_->peer_is_loopback()) {
      conn_->close();
      LOOM_THROW(DeviceError, name_,
                 ": plain TCP (rpc://) is for loopback only, and this host is not: its tensors would cross the "
                 "network in clear. Use rpc+tls://",
                 url_.host, ":", url_.port, "/", url_.backend, "?fp=... (the fingerprint the server prints)");
    }
    const char* env_token = std::getenv("LOOM_RPC_TOKEN");
    const std::string token = env_token ? env_token : "";
    // HELLO with this side's nonce; the server's comes back; each side proves it holds the token
    // by an HMAC over both (rpc_wire.h), so the token never crosses the wire.
    const Nonce client_nonce = random_nonce();
    Writer hello;
    hello.u8(uint8_t(Op::Hello))
        .u32(kProtocolVersion)
        .str(url_.backend)
        .str(config_json)
        .bytes(client_nonce.data(), client_nonce.size());
    Nonce server_nonce;
    {
      Reader r = call(hello, "HELLO");
      auto [nonce, len] = r.bytes("the server's nonce", kNonceBytes);
      if (len != kNonceBytes) LOOM_THROW(DeviceError, name_, ": HELLO: a ", len, "-byte nonce from the server");
      std::copy(nonce, nonce + kNonceBytes, server_nonce.begin());
    }
    const Proof proof = session_proof(token, "client", server_nonce, client_nonce);
    Writer auth;
    auth.u8(uint8_t(Op::Auth)).bytes(proof.data(), proof.size());
    Reader r = call(auth, "AUTH");
    r.str("the device name", 1 << 20);  // a well-formed reply; the model's config was checked there
    r.str("the server's config", 1 << 20);
    auto [server_proof, len] = r.bytes("the server's proof", kProofBytes);
    if (len != kProofBytes || !same_proof(server_proof, session_proof(token, "server", server_nonce, client_nonce)))
      LOOM_THROW(DeviceError, name_,
                 ": the server's proof does not match LOOM_RPC_TOKEN: it does not hold the token (not the server "
                 "the token is for)");
  }
  ~RpcDevice() override {
    try {
      Writer w;
      w.u8(uint8_t(Op::Goodbye));
      call(w, "GOODBYE", milliseconds(2000));
    } catch (const Error&) {
    }
    conn_->close();
  }

  std::string name() const override { return name_; }

  uint64_t alloc(uint64_t bytes, uint64_t alignment) override {
    Writer w;
    w.u8(uint8_t(Op::Alloc)).u64(bytes).u64(alignment);
    return call(w, "ALLOC").u64("the address");
  }
  void alloc_at(uint64_t addr, uint64_t bytes) override {
    Writer w;
    w.u8(uint8_t(Op::AllocAt)).u64(addr).u64(bytes);
    call(w, "ALLOC_AT");
  }
  void free(uint64_t addr) override {
    Writer w;
    w.u8(uint8_t(Op::Free)).u64(addr);
    call(w, "FREE");
  }
  void write(uint64_t addr, const void* src, uint64_t bytes) override {
    const auto* p = static_cast<const uint8_t*>(src);
    for (uint64_t done = 0; done < bytes; done += kCopyChunkBytes) {
      uint64_t n = std::min<uint64_t>(kCopyChunkBytes, bytes - done);
      Writer w;
      w.u8(uint8_t(Op::Write)).u64(addr + done).u64(n);  // the data's length; the data follows as is
      call(w, "WRITE", {}, p + done, n);
    }
  }
  void read(uint64_t addr, void* dst, uint64_t bytes) override {
    auto* p = static_cast<uint8_t*>(dst);
    for (uint64_t done = 0; done < bytes; done += kCopyChunkBytes) {
      uint64_t n = std::min<uint64_t>(kCopyChunkBytes, bytes - done);
      Writer w;
      w.u8(uint8_t(Op::Read)).u64(addr + done).u64(n);
      Reader r = call(w, "READ");
      auto [data, len] = r.bytes("the data", n);
      if (len != n) LOOM_THROW(DeviceError, name_, ": READ returned ", len, " bytes, not ", n);
      std::memcpy(p + done, data, n);
    }
  }
  void write_reg(uint32_t offset, uint32_t value) override {
    Writer w;
    w.u8(uint8_t(Op::WriteReg)).u32(offset).u32(value);
    call(w, "WRITE_REG");
  }
  uint32_t read_reg(uint32_t offset) override { return read_regs(offset, 1)[0]; }
  std::vector<uint32_t> read_regs(uint32_t first, uint32_t count) override {
    Writer w;
    w.u8(uint8_t(Op::ReadRegs)).u32(first).u32(count);
    Reader r = call(w, "READ_REGS");
    std::vector<uint32_t> v(count);
    for (uint32_t& x : v) x = r.u32("a register");
    return v;
  }
  void launch(uint64_t insn_addr, uint32_t count) override {
    Writer w;
    w.u8(uint8_t(Op::Launch)).u64(insn_addr).u32(count);
    call(w, "LAUNCH");
  }
  void wait(milliseconds timeout) override {
    Writer w;
    w.u8(uint8_t(Op::Wait)).u64(uint64_t(timeout.count()));
    call(w, "WAIT", timeout + timeout_);
  }
  std::string error_message() const override {
    Writer w;
    w.u8(uint8_t(Op::ErrorMessage));
    try {
      return call(w, "ERROR_MESSAGE").str("the message", 1 << 20);
    } catch (const Error& e) {
      return e.what();
    }
  }

 private:
  // Sends one request and returns a reader over the reply's result fields; an error reply is a
  // DeviceError with the server's message.
  // The reply stays in reply_ until the next call.
  Reader call(const Writer& w, const char* op, milliseconds timeout = {}, const void* tail = nullptr,
              uint64_t tail_bytes = 0) const {
    if (timeout.count() == 0) timeout = timeout_;
    conn_->send(w.body(), timeout_, tail, tail_bytes);
    reply_ = conn_->receive(timeout, timeout_, kMaxMessageBytes);
    const std::vector<uint8_t>& reply = reply_;
    Reader r(reply.data(), reply.size());
    uint8_t status = r.u8("the status");
    if (status != 0) LOOM_THROW(DeviceError, name_, ": ", op, ": ", r.str("the error message", kMaxMessageBytes));
    return Reader(reply.data() + 1, reply.size() - 1);
  }

  std::string name_;
  Url url_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;  // outlives the connection's TLS stream
  std::unique_ptr<Connection> conn_;
  milliseconds timeout_;
  mutable std::vector<uint8_t> reply_;
};

}  // namespace

std::unique_ptr<AccelDevice> make_rpc_device(const std::string& url, const std::string& config_json) {
  return std::make_unique<RpcDevice>(url, config_json);
}

}  // namespace loom::rpc
