// The RPC server's session state machine and TLS transport (runtime/src/rpc_session.h,
// rpc_tls.h), driven as a client would drive them. The first byte picks the path:
// - even: a session. The rest is frames — a flag byte, a 2-byte little-endian length, the body —
//   handed to ServerSession in order. A frame whose flag has bit 0 set and which follows an
//   answered HELLO is replaced by AUTH with the right proof (HMAC of the fuzz token over that
//   HELLO's nonces), so inputs reach past the handshake into the device operations.
// - odd: a TLS client's bytes. They go to a server-side TLS stream of the server's own context
//   (a certificate from the runtime's keygen), in memory, after the check of what the client speaks.
// The device is a small in-memory one: the real simulators are not part of the fuzz build, and the
// session, not the device, is what is fuzzed.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "rpc_session.h"
#include "rpc_tls.h"

namespace {

using namespace loom;

constexpr uint64_t kMemoryBase = 0x1000, kMemoryBytes = 1 << 20;

class MemoryDevice : public AccelDevice {
 public:
  std::string name() const override { return "fuzz-memory"; }
  uint64_t alloc(uint64_t bytes, uint64_t alignment) override { return heap_.alloc(bytes, alignment, name()); }
  void alloc_at(uint64_t addr, uint64_t bytes) override { heap_.alloc_at(addr, bytes, name()); }
  void free(uint64_t addr) override { heap_.free(addr, name()); }
  void write(uint64_t addr, const void* src, uint64_t bytes) override { std::memcpy(at(addr, bytes), src, bytes); }
  void read(uint64_t addr, void* dst, uint64_t bytes) override { std::memcpy(dst, at(addr, bytes), bytes); }
  void write_reg(uint32_t offset, uint32_t value) override { regs_[(offset / 4) % 1024] = value; }
  uint32_t read_reg(uint32_t offset) override { return regs_[(offset / 4) % 1024]; }
  std::string error_message() const override { return "no error"; }
  void launch(uint64_t, uint32_t) override {}
  void wait(std::chrono::milliseconds) override {}

 private:
  uint8_t* at(uint64_t addr, uint64_t bytes) {
    if (!heap_.contains(addr, bytes)) LOOM_THROW(DeviceError, "outside every allocation");
    return memory_.data() + (addr - kMemoryBase);
  }
  DeviceMemoryAllocator heap_{kMemoryBase, kMemoryBytes};
  std::vector<uint8_t> memory_ = std::vector<uint8_t>(kMemoryBytes);
  uint32_t regs_[1024] = {};
};

const char* kToken = "fuzz-token";

// The session's options (the fuzz token, a memory bound) and the TLS context of a key pair made
// once by the runtime's keygen (its files removed once loaded).
struct Fixture {
  rpc::ServerOptions options;
  std::unique_ptr<boost::asio::ssl::context> tls;
  Fixture() {
    options.token = kToken;
    options.backend = "fsim";
    options.max_client_bytes = kMemoryBytes / 2;
    const auto dir = std::filesystem::temp_directory_path() / ("loom_fuzz_rpc_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    options.tls_cert = (dir / "server.crt").string();
    options.tls_key = (dir / "server.key").string();
    rpc::write_key_pair(options.tls_key, options.tls_cert, {});
    tls = rpc::tls::server_context(options);
    std::filesystem::remove_all(dir);
  }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}

void run_session(const uint8_t* data, size_t size) {
  static MemoryDevice device;
  rpc::ServerSession session(fixture().options, device);
  rpc::Nonce client{}, server{};
  bool challenged = false;
  for (size_t at = 0; at + 3 <= size;) {
    const uint8_t flag = data[at];
    const size_t n = std::min<size_t>(data[at + 1] | size_t(data[at + 2]) << 8, size - at - 3);
    std::vector<uint8_t> body(data + at + 3, data + at + 3 + n);
    at += 3 + n;
    if ((flag & 1) && challenged) {  // AUTH with the right proof
      const rpc::Proof proof = rpc::session_proof(kToken, "client", server, client);
      rpc::Writer w;
      w.u8(uint8_t(rpc::Op::Auth)).bytes(proof.data(), proof.size());
      body = w.take();
    }
    if (!body.empty() && body[0] == uint8_t(rpc::Op::Hello) && body.size() >= rpc::kNonceBytes)
      std::copy(body.end() - rpc::kNonceBytes, body.end(), client.begin());
    rpc::ServerSession::Reply reply;
    try {
      reply = session.handle(body.data(), body.size());
    } catch (const Error&) {
      return;  // malformed: the server ends the session
    }
    // An answered HELLO: status 0, the nonce as a byte string.
    if (!reply.error && body[0] == uint8_t(rpc::Op::Hello) && reply.body.size() == 1 + 8 + rpc::kNonceBytes) {
      std::copy(reply.body.end() - rpc::kNonceBytes, reply.body.end(), server.begin());
      challenged = true;
    }
    if (reply.last) return;
  }
}

void run_tls(const uint8_t* data, size_t size) {
  rpc::tls::looks_like_client_hello(data, size);
  SSL* ssl = SSL_new(fixture().tls->native_handle());
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_accept_state(ssl);
  BIO_write(in, data, int(size));
  for (int k = 0; k < 4 && SSL_do_handshake(ssl) != 1; ++k) {
    int e = SSL_get_error(ssl, -1);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) break;
  }
  char buf[256];
  SSL_read(ssl, buf, sizeof buf);
  SSL_free(ssl);
  ERR_clear_error();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] & 1)
      run_tls(data + 1, size - 1);
    else
      run_session(data + 1, size - 1);
  } catch (const loom::Error&) {
  }
  return 0;
}
