#include "rpc_session.h"

#include <algorithm>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "rpc_config.h"

namespace loom::rpc {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMaxString = 1 << 20;     // tokens, names, configs
constexpr size_t kMaxAllocations = 1 << 20;  // a session's live allocations (each costs the server bookkeeping)

uint64_t round_up(uint64_t v, uint64_t to) { return v > UINT64_MAX - to ? v : (v + to - 1) / to * to; }

}  // namespace

// One request, its fields checked (byte strings are views into the body).
struct Request {
  Op op = Op::Count;
  uint32_t version = 0, offset = 0, value = 0;
  std::string backend, config;
  uint64_t address = 0, size = 0;
  const uint8_t* data = nullptr;  // WRITE: the data; HELLO: the client's nonce; AUTH: its proof
};

namespace {

Request parse(const uint8_t* body, size_t n) {
  Reader r(body, n);
  Request q;
  uint8_t op = r.u8("the operation");
  if (op == 0 || op >= uint8_t(Op::Count)) LOOM_THROW(DeviceError, "malformed message: unknown operation ", int(op));
  q.op = Op(op);
  switch (q.op) {
    case Op::Hello: {
      q.version = r.u32("the protocol version");
      if (q.version != kProtocolVersion) return q;  // another version's fields: refused by its number
      q.backend = r.str("the backend", kMaxString);
      q.config = r.str("the config", kMaxString);
      auto [nonce, len] = r.bytes("the client's nonce", kNonceBytes);
      if (len != kNonceBytes) LOOM_THROW(DeviceError, "malformed message: a ", len, "-byte nonce (", kNonceBytes, ")");
      q.data = nonce;
      break;
    }
    case Op::Auth: {
      auto [proof, len] = r.bytes("the client's proof", kProofBytes);
      if (len != kProofBytes) LOOM_THROW(DeviceError, "malformed message: a ", len, "-byte proof (", kProofBytes, ")");
      q.data = proof;
      break;
    }
    case Op::Alloc:
      q.size = r.u64("the size");
      q.address = r.u64("the alignment");  // alignment travels in `address`
      break;
    case Op::AllocAt:
      q.address = r.u64("the address");
      q.size = r.u64("the size");
      break;
    case Op::Free:
      q.address = r.u64("the address");
      break;
    case Op::Write: {
      q.address = r.u64("the address");
      auto [p, len] = r.bytes("the data", kMaxMessageBytes);
      q.data = p;
      q.size = len;
      break;
    }
    case Op::Read:
      q.address = r.u64("the address");
      q.size = r.u64("the size");
      if (q.size > kCopyChunkBytes)
        LOOM_THROW(DeviceError, "malformed message: a READ of ", q.size, " bytes (at most ", kCopyChunkBytes,
                   " per message)");
      break;
    case Op::WriteReg:
      q.offset = r.u32("the register");
      q.value = r.u32("the value");
      break;
    case Op::ReadRegs:
      q.offset = r.u32("the first register");
      q.value = r.u32("the register count");
      if (q.value > 4096)
        LOOM_THROW(DeviceError, "malformed message: READ_REGS of ", q.value, " registers (at most 4096)");
      break;
    case Op::Launch:
      q.address = r.u64("the instruction address");
      q.value = r.u32("the instruction count");
      break;
    case Op::Wait:
      q.size = r.u64("the timeout");
      break;
    case Op::ErrorMessage:
    case Op::Goodbye:
    case Op::Count:
      break;
  }
  r.end(to_string(q.op));
  return q;
}

}  // namespace

std::vector<uint8_t> error_reply(const std::string& message) {
  Writer w;
  w.u8(1).str(message);
  return w.body();
}

std::string check_request(const uint8_t* body, size_t size) { return to_string(parse(body, size).op); }

ServerSession::ServerSession(const ServerOptions& options, AccelDevice& device) : o_(options), device_(device) {}

ServerSession::~ServerSession() { free_all(); }

void ServerSession::free_all() {
  for (auto [a, bytes] : allocations_) {
    try {
      device_.free(a);
    } catch (const Error&) {
    }
  }
  allocations_.clear();
  bytes_ = 0;
}

ServerSession::Reply ServerSession::handle(const uint8_t* body, size_t size) {
  const Request q = parse(body, size);
  Reply r;
  const Op expected = challenged_ ? Op::Auth : Op::Hello;
  if (!authenticated_ && q.op != expected) {
    r.body = error_reply("the handshake expects " + std::string(to_string(expected)) + ", got " +
                         std::string(to_string(q.op)));
    r.error = r.last = true;
    r.why = std::string("no ") + to_string(expected);
    return r;
  }
  const bool was_authenticated = authenticated_;
  const bool expired = authenticated_ && Clock::now() - start_ > o_.max_session;
  try {
    if (expired)
      LOOM_THROW(DeviceError, "the session passed the server's limit of ", double(o_.max_session.count()) / 1000,
                 " s (--max-session-s): its allocations are freed; connect again");
    r.body = execute(q);
  } catch (const Error& e) {
    r.error = true;
    r.body = error_reply(e.what());
  }
  if (!was_authenticated && authenticated_) start_ = Clock::now();
  // GOODBYE, a refused handshake or an expired session ends it.
  r.last = q.op == Op::Goodbye || (!authenticated_ && !challenged_) || expired;
  if (r.last)
    r.why = q.op == Op::Goodbye ? "said goodbye" : expired ? "session time limit" : "refused at the handshake";
  return r;
}

// DeviceError unless the client may hold `bytes` more.
void ServerSession::check_room(uint64_t bytes, const char* op) const {
  if (allocations_.size() >= kMaxAllocations)
    LOOM_THROW(DeviceError, "this session holds ", allocations_.size(), " allocations: ", op,
               " of one more would pass the server's limit of ", kMaxAllocations, " a client");
  if (o_.max_client_bytes && (bytes > o_.max_client_bytes || bytes_ > o_.max_client_bytes - bytes))
    LOOM_THROW(DeviceError, "this session holds ", bytes_, " bytes of device memory: ", op, " of ", bytes,
               " more would pass the server's limit of ", o_.max_client_bytes, " bytes a client (--max-client-mib)");
}

std::vector<uint8_t> ServerSession::execute(const Request& q) {
  if (authenticated_ && (q.op == Op::Hello || q.op == Op::Auth))
    LOOM_THROW(DeviceError, "the session's handshake is done: ", to_string(q.op), " again");
  AccelDevice& d = device_;
  Writer w;
  w.u8(0);  // ok; the results follow
  switch (q.op) {
    case Op::Hello: {
      if (q.version == 1)
        LOOM_THROW(DeviceError, "protocol version 1 (this server speaks version ", kProtocolVersion,
                   ", where the token never crosses the wire): upgrade the client (loom, loom-run) to this release");
      if (q.version != kProtocolVersion)
        LOOM_THROW(DeviceError, "protocol version ", q.version, " (this server speaks version ", kProtocolVersion, ")");
      std::copy(q.data, q.data + kNonceBytes, client_nonce_.begin());
      server_nonce_ = random_nonce();
      backend_ = q.backend;
      config_ = q.config;
      challenged_ = true;
      w.bytes(server_nonce_.data(), kNonceBytes);
      break;
    }
    case Op::Auth: {
      challenged_ = false;  // one proof per challenge
      if (!same_proof(q.data, session_proof(o_.token, "client", server_nonce_, client_nonce_)))
        LOOM_THROW(DeviceError, o_.token.empty()
                                    ? "authentication failed: this server takes no token (unset LOOM_RPC_TOKEN)"
                                    : "authentication failed: the client's proof does not match this server's "
                                      "token (set LOOM_RPC_TOKEN to it)");
      proved_ = true;  // a backend or config refused below is no failed handshake
      if (backend_ != o_.backend)
        LOOM_THROW(DeviceError, "this server exports backend '", o_.backend, "', not '", backend_, "'");
      if (!config_.empty()) check_same_config(config_, o_.config_json);
      authenticated_ = true;
      const Proof server = session_proof(o_.token, "server", server_nonce_, client_nonce_);
      w.str(d.name()).str(o_.config_json).bytes(server.data(), server.size());
      break;
    }
    case Op::Alloc: {
      // Charged at least a byte, rounded up to the alignment: what the device sets aside.
      const uint64_t charged = round_up(std::max<uint64_t>(q.size, 1), std::max<uint64_t>(q.address, 1));
      check_room(charged, "ALLOC");
      uint64_t a = d.alloc(q.size, q.address);
      allocations_[a] = charged;
      bytes_ += charged;
      w.u64(a);
      break;
    }
    case Op::AllocAt:
      check_room(std::max<uint64_t>(q.size, 1), "ALLOC_AT");
      d.alloc_at(q.address, q.size);
      allocations_[q.address] = std::max<uint64_t>(q.size, 1);
      bytes_ += std::max<uint64_t>(q.size, 1);
      break;
    case Op::Free: {
      d.free(q.address);
      auto it = allocations_.find(q.address);
      if (it != allocations_.end()) {
        bytes_ -= it->second;
        allocations_.erase(it);
      }
      break;
    }
    case Op::Write:
      d.write(q.address, q.data, q.size);
      break;
    case Op::Read:
      d.read(q.address, w.bytes_in_place(q.size), q.size);
      break;
    case Op::WriteReg:
      d.write_reg(q.offset, q.value);
      break;
    case Op::ReadRegs:
      for (uint32_t v : d.read_regs(q.offset, q.value)) w.u32(v);
      break;
    case Op::Launch:
      d.launch(q.address, q.value);
      break;
    case Op::Wait:
      d.wait(std::min(milliseconds(q.size), o_.max_wait));
      break;
    case Op::ErrorMessage:
      w.str(d.error_message());
      break;
    case Op::Goodbye:
    case Op::Count:
      break;
  }
  return w.take();
}

}  // namespace loom::rpc
