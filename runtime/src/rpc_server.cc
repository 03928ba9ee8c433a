// The RPC server: exports one device of a registered backend to one client at a time.
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "rpc_config.h"
#include "rpc_wire.h"

namespace loom::rpc {

namespace asio = boost::asio;
using asio::ip::tcp;
using std::chrono::milliseconds;

namespace {

constexpr uint64_t kMaxString = 1 << 20;     // tokens, names, configs
constexpr size_t kMaxAllocations = 1 << 20;  // a session's live allocations (each costs the server bookkeeping)

uint64_t round_up(uint64_t v, uint64_t to) { return v > UINT64_MAX - to ? v : (v + to - 1) / to * to; }

// One request, its fields checked (byte strings are views into the body).
struct Request {
  Op op = Op::Count;
  uint32_t version = 0, offset = 0, value = 0;
  std::string backend, config;
  uint64_t address = 0, size = 0;
  const uint8_t* data = nullptr;  // WRITE: the data; HELLO: the client's nonce; AUTH: its proof
};

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

std::vector<uint8_t> error(const std::string& message) {
  Writer w;
  w.u8(1).str(message);
  return w.body();
}

}  // namespace

std::string check_request(const uint8_t* body, size_t size) { return to_string(parse(body, size).op); }

struct Server::Impl {
  ServerOptions o;
  std::unique_ptr<AccelDevice> device;
  asio::io_context accept_io;
  tcp::acceptor acceptor{accept_io};
  std::atomic<bool> stopping{false}, busy{false};
  std::thread serve_thread, session_thread;
  std::mutex mu;  // stats, log, the live session's connection
  ServerStats stats;
  std::function<void(const std::string&)> log;
  Connection* live = nullptr;
  // Failed handshakes by address (guarded by mu): when, within the window, and a lockout's end.
  using Clock = std::chrono::steady_clock;
  struct Failures {
    std::deque<Clock::time_point> times;
    Clock::time_point locked_until{};
  };
  std::map<std::string, Failures> failures;

  // Milliseconds `address` stays refused (0: it may connect).
  int64_t lockout_left(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = failures.find(address);
    if (it == failures.end()) return 0;
    auto left = std::chrono::duration_cast<milliseconds>(it->second.locked_until - Clock::now()).count();
    return left > 0 ? left : 0;
  }

  void handshake_failed(const std::string& address) {
    std::string line;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.failed_handshakes;
      if (o.max_failed_handshakes <= 0) return;
      const Clock::time_point now = Clock::now();
      if (failures.size() > 4096)  // forget addresses with nothing recent and no lockout
        for (auto it = failures.begin(); it != failures.end();)
          it = it->second.locked_until < now &&
                       (it->second.times.empty() || now - it->second.times.back() > o.failure_window)
                   ? failures.erase(it)
                   : std::next(it);
      Failures& f = failures[address];
      f.times.push_back(now);
      while (!f.times.empty() && now - f.times.front() > o.failure_window) f.times.pop_front();
      if (int(f.times.size()) >= o.max_failed_handshakes) {
        f.locked_until = now + o.lockout;
        f.times.clear();
        std::ostringstream l;
        l << address << ": " << o.max_failed_handshakes << " failed handshakes within "
          << double(o.failure_window.count()) / 1000 << " s: refused for " << double(o.lockout.count()) / 1000 << " s";
        line = l.str();
      }
    }
    if (!line.empty()) note(line);
  }

  void handshake_succeeded(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu);
    failures.erase(address);
  }

  void note(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (log) log(line);
  }

  // Accepts until stop(): the first client gets a session; a second one, while the first is
  // connected, is told the device is busy.
  void serve() {
    while (!stopping) {
      tcp::socket sock(accept_io);
      boost::system::error_code ec = asio::error::would_block;
      acceptor.async_accept(sock, [&](const boost::system::error_code& e) { ec = e; });
      accept_io.restart();
      accept_io.run_for(milliseconds(100));
      if (ec == asio::error::would_block) {
        acceptor.cancel();
        accept_io.restart();
        accept_io.run();
        continue;
      }
      if (ec) continue;
      std::string peer = "client", address = "?";
      boost::system::error_code pe;
      auto ep = sock.remote_endpoint(pe);
      if (!pe) {
        address = ep.address().to_string();
        peer = address + ":" + std::to_string(ep.port());
      }
      // A session that is ending (its client just left) gets a moment to finish.
      for (int k = 0; k < 50 && busy; ++k) std::this_thread::sleep_for(milliseconds(10));
      if (busy) {
        refuse(sock, peer, "device busy: another client is connected to " + o.backend + " (one client at a time)");
        std::lock_guard<std::mutex> lock(mu);
        ++stats.refused;
        continue;
      }
      if (session_thread.joinable()) session_thread.join();  // its failed handshake is counted by now
      if (int64_t left = lockout_left(address)) {
        refuse(sock, peer,
               "too many failed handshakes from " + address + ": refused for another " +
                   std::to_string((left + 999) / 1000) + " s");
        std::lock_guard<std::mutex> lock(mu);
        ++stats.locked_out;
        continue;
      }
      busy = true;
      int fd = sock.release();
      session_thread = std::thread([this, fd, peer, address] { session(fd, peer, address); });
    }
    if (session_thread.joinable()) session_thread.join();
  }

  void refuse(tcp::socket& sock, const std::string& peer, const std::string& why) {
    Connection c(peer);
    c.assign(sock.release());
    try {
      c.send(error(why), milliseconds(2000));
    } catch (const Error&) {
    }
    c.close();
    note("refused " + peer + ": " + why);
  }

  // A client's session: the handshake's state, its allocations (address -> bytes) and the time
  // of its handshake.
  struct Session {
    bool challenged = false;  // HELLO answered with the server's nonce; AUTH comes next
    bool proved = false;      // the client's proof matched (a wrong backend or config is no failed handshake)
    Nonce server_nonce{}, client_nonce{};
    std::string backend, config;
    std::map<uint64_t, uint64_t> allocations;
    uint64_t bytes = 0;
    Clock::time_point start;
  };

  void session(int fd, const std::string& peer, const std::string& address) {
    Connection c(peer);
    c.assign(fd);
    {
      std::lock_guard<std::mutex> lock(mu);
      live = &c;
      ++stats.sessions;
    }
    Session client;
    note("session " + peer + ": connected");
    std::string why = "disconnected";
    bool authenticated = false;  // the handshake was accepted
    // The whole handshake has one deadline, so a slow client cannot hold the device unproved.
    const Clock::time_point handshake_deadline = Clock::now() + o.handshake_timeout;
    try {
      if (stopping) LOOM_THROW(DeviceError, "the server is stopping");
      bool& hello = authenticated;
      for (;;) {
        const milliseconds left =
            std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(handshake_deadline - Clock::now()));
        std::vector<uint8_t> body = hello ? c.receive(o.idle_timeout, o.request_timeout, kMaxMessageBytes)
                                          : c.receive(left, std::min(left, o.request_timeout), kMaxMessageBytes);
        Request q;
        try {
          q = parse(body.data(), body.size());
        } catch (const DeviceError& e) {
          c.send(error(e.what()), o.request_timeout);  // framing can no longer be trusted
          throw;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.requests;
        }
        const Op expected = client.challenged ? Op::Auth : Op::Hello;
        if (!hello && q.op != expected) {
          c.send(error("the handshake expects " + std::string(to_string(expected)) + ", got " +
                       std::string(to_string(q.op))),
                 o.request_timeout);
          LOOM_THROW(DeviceError, "no ", to_string(expected));
        }
        std::vector<uint8_t> reply;
        const bool was_authenticated = hello;
        const bool expired = hello && Clock::now() - client.start > o.max_session;
        try {
          if (expired)
            LOOM_THROW(DeviceError, "the session passed the server's limit of ", double(o.max_session.count()) / 1000,
                       " s (--max-session-s): its allocations are freed; connect again");
          reply = execute(q, client, hello);
        } catch (const Error& e) {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.errors;
          reply = error(e.what());
        }
        if (!was_authenticated && client.proved) handshake_succeeded(address);
        if (!was_authenticated && hello) client.start = Clock::now();
        // GOODBYE, a refused handshake or an expired session ends it; the device is free before
        // the reply, so the client may connect again at once.
        bool last = q.op == Op::Goodbye || (!hello && !client.challenged) || expired;
        if (last) {
          free_all(client);
          busy = false;
        }
        c.send(reply, o.request_timeout);
        if (last) {
          why = q.op == Op::Goodbye ? "said goodbye" : expired ? "session time limit" : "refused at the handshake";
          break;
        }
      }
    } catch (const Error& e) {
      why = e.what();
    }
    if (!authenticated && !client.proved) handshake_failed(address);
    free_all(client);
    {
      std::lock_guard<std::mutex> lock(mu);
      live = nullptr;
    }
    c.close();
    busy = false;
    note("session " + peer + ": " + why);
  }

  void free_all(Session& client) {
    for (auto [a, bytes] : client.allocations) {
      try {
        device->free(a);
      } catch (const Error&) {
      }
    }
    client.allocations.clear();
    client.bytes = 0;
  }

  // DeviceError unless `client` may hold `bytes` more.
  void check_room(const Session& client, uint64_t bytes, const char* op) const {
    if (client.allocations.size() >= kMaxAllocations)
      LOOM_THROW(DeviceError, "this session holds ", client.allocations.size(), " allocations: ", op,
                 " of one more would pass the server's limit of ", kMaxAllocations, " a client");
    if (o.max_client_bytes && (bytes > o.max_client_bytes || client.bytes > o.max_client_bytes - bytes))
      LOOM_THROW(DeviceError, "this session holds ", client.bytes, " bytes of device memory: ", op, " of ", bytes,
                 " more would pass the server's limit of ", o.max_client_bytes, " bytes a client (--max-client-mib)");
  }

  std::vector<uint8_t> execute(const Request& q, Session& client, bool& hello) {
    if (hello && (q.op == Op::Hello || q.op == Op::Auth))
      LOOM_THROW(DeviceError, "the session's handshake is done: ", to_string(q.op), " again");
    AccelDevice& d = *device;
    Writer w;
    w.u8(0);  // ok; the results follow
    switch (q.op) {
      case Op::Hello: {
        if (q.version == 1)
          LOOM_THROW(DeviceError, "protocol version 1 (this server speaks version ", kProtocolVersion,
                     ", where the token never crosses the wire): upgrade the client (loom, loom-run) to this release");
        if (q.version != kProtocolVersion)
          LOOM_THROW(DeviceError, "protocol version ", q.version, " (this server speaks version ", kProtocolVersion,
                     ")");
        std::copy(q.data, q.data + kNonceBytes, client.client_nonce.begin());
        client.server_nonce = random_nonce();
        client.backend = q.backend;
        client.config = q.config;
        client.challenged = true;
        w.bytes(client.server_nonce.data(), kNonceBytes);
        break;
      }
      case Op::Auth: {
        client.challenged = false;  // one proof per challenge
        if (!same_proof(q.data, session_proof(o.token, "client", client.server_nonce, client.client_nonce)))
          LOOM_THROW(DeviceError, o.token.empty()
                                      ? "authentication failed: this server takes no token (unset LOOM_RPC_TOKEN)"
                                      : "authentication failed: the client's proof does not match this server's "
                                        "token (set LOOM_RPC_TOKEN to it)");
        client.proved = true;  // a backend or config refused below is no failed handshake
        if (client.backend != o.backend)
          LOOM_THROW(DeviceError, "this server exports backend '", o.backend, "', not '", client.backend, "'");
        if (!client.config.empty()) check_same_config(client.config, o.config_json);
        hello = true;
        const Proof server = session_proof(o.token, "server", client.server_nonce, client.client_nonce);
        w.str(d.name()).str(o.config_json).bytes(server.data(), server.size());
        break;
      }
      case Op::Alloc: {
        // Charged at least a byte, rounded up to the alignment: what the device sets aside.
        const uint64_t charged = round_up(std::max<uint64_t>(q.size, 1), std::max<uint64_t>(q.address, 1));
        check_room(client, charged, "ALLOC");
        uint64_t a = d.alloc(q.size, q.address);
        client.allocations[a] = charged;
        client.bytes += charged;
        w.u64(a);
        break;
      }
      case Op::AllocAt:
        check_room(client, std::max<uint64_t>(q.size, 1), "ALLOC_AT");
        d.alloc_at(q.address, q.size);
        client.allocations[q.address] = std::max<uint64_t>(q.size, 1);
        client.bytes += std::max<uint64_t>(q.size, 1);
        break;
      case Op::Free: {
        d.free(q.address);
        auto it = client.allocations.find(q.address);
        if (it != client.allocations.end()) {
          client.bytes -= it->second;
          client.allocations.erase(it);
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
        d.wait(std::min(milliseconds(q.size), o.max_wait));
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
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.o = std::move(options);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(s.o.host, ec);
  if (ec) LOOM_THROW(DeviceError, "rpc server: '", s.o.host, "' is not an IP address");
  if (!address.is_loopback() && s.o.token.empty())
    LOOM_THROW(DeviceError, "rpc server: listening on ", s.o.host,
               " (not loopback) needs an access token (--token or LOOM_RPC_TOKEN)");
  s.device = make_accel_device(s.o.backend, s.o.config_json);
  tcp::endpoint ep(address, s.o.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) LOOM_THROW(DeviceError, "rpc server: cannot listen on ", s.o.host, ":", s.o.port, ": ", ec.message());
}

Server::~Server() { stop(); }

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::start() {
  if (impl_->serve_thread.joinable()) return;
  impl_->serve_thread = std::thread([this] { impl_->serve(); });
}

void Server::serve() { impl_->serve(); }

void Server::stop() {
  Impl& s = *impl_;
  s.stopping = true;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.live) s.live->interrupt();  // ends the session's pending receive
  }
  if (s.serve_thread.joinable()) s.serve_thread.join();
  if (s.session_thread.joinable()) s.session_thread.join();
}

bool Server::busy() const { return impl_->busy; }

ServerStats Server::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

void Server::set_log(std::function<void(const std::string&)> log) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->log = std::move(log);
}

}  // namespace loom::rpc
