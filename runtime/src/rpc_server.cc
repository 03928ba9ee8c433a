// The RPC server: exports one device of a registered backend to one client at a time.
#include <atomic>
#include <mutex>
#include <set>
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

constexpr uint64_t kMaxString = 1 << 20;  // tokens, names, configs

// One request, its fields checked (byte strings are views into the body).
struct Request {
  Op op = Op::Count;
  uint32_t version = 0, offset = 0, value = 0;
  std::string token, backend, config;
  uint64_t address = 0, size = 0;
  const uint8_t* data = nullptr;
};

Request parse(const uint8_t* body, size_t n) {
  Reader r(body, n);
  Request q;
  uint8_t op = r.u8("the operation");
  if (op == 0 || op >= uint8_t(Op::Count)) LOOM_THROW(DeviceError, "malformed message: unknown operation ", int(op));
  q.op = Op(op);
  switch (q.op) {
    case Op::Hello:
      q.version = r.u32("the protocol version");
      q.token = r.str("the token", kMaxString);
      q.backend = r.str("the backend", kMaxString);
      q.config = r.str("the config", kMaxString);
      break;
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
      std::string peer = "client";
      boost::system::error_code pe;
      auto ep = sock.remote_endpoint(pe);
      if (!pe) peer = ep.address().to_string() + ":" + std::to_string(ep.port());
      // A session that is ending (its client just left) gets a moment to finish.
      for (int k = 0; k < 50 && busy; ++k) std::this_thread::sleep_for(milliseconds(10));
      if (busy) {
        refuse(sock, peer);
        continue;
      }
      if (session_thread.joinable()) session_thread.join();
      busy = true;
      int fd = sock.release();
      session_thread = std::thread([this, fd, peer] { session(fd, peer); });
    }
    if (session_thread.joinable()) session_thread.join();
  }

  void refuse(tcp::socket& sock, const std::string& peer) {
    Connection c(peer);
    c.assign(sock.release());
    try {
      c.send(error("device busy: another client is connected to " + o.backend + " (one client at a time)"),
             milliseconds(2000));
    } catch (const Error&) {
    }
    c.close();
    std::lock_guard<std::mutex> lock(mu);
    ++stats.refused;
  }

  void session(int fd, const std::string& peer) {
    Connection c(peer);
    c.assign(fd);
    {
      std::lock_guard<std::mutex> lock(mu);
      live = &c;
      ++stats.sessions;
    }
    std::set<uint64_t> allocations;
    note("session " + peer + ": connected");
    std::string why = "disconnected";
    try {
      if (stopping) LOOM_THROW(DeviceError, "the server is stopping");
      bool hello = false;
      for (;;) {
        std::vector<uint8_t> body =
            c.receive(hello ? o.idle_timeout : o.request_timeout, o.request_timeout, kMaxMessageBytes);
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
        if (!hello && q.op != Op::Hello) {
          c.send(error("the first message must be HELLO, got " + std::string(to_string(q.op))), o.request_timeout);
          LOOM_THROW(DeviceError, "no HELLO");
        }
        std::vector<uint8_t> reply;
        try {
          reply = execute(q, allocations, hello);
        } catch (const Error& e) {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.errors;
          reply = error(e.what());
        }
        // GOODBYE, or a refused HELLO, ends the session; the device is free before the reply, so
        // the client may connect again at once.
        bool last = q.op == Op::Goodbye || !hello;
        if (last) {
          free_all(allocations);
          busy = false;
        }
        c.send(reply, o.request_timeout);
        if (last) {
          why = q.op == Op::Goodbye ? "said goodbye" : "refused at HELLO";
          break;
        }
      }
    } catch (const Error& e) {
      why = e.what();
    }
    free_all(allocations);
    {
      std::lock_guard<std::mutex> lock(mu);
      live = nullptr;
    }
    c.close();
    busy = false;
    note("session " + peer + ": " + why);
  }

  void free_all(std::set<uint64_t>& allocations) {
    for (uint64_t a : allocations) {
      try {
        device->free(a);
      } catch (const Error&) {
      }
    }
    allocations.clear();
  }

  std::vector<uint8_t> execute(const Request& q, std::set<uint64_t>& allocations, bool& hello) {
    AccelDevice& d = *device;
    Writer w;
    w.u8(0);  // ok; the results follow
    switch (q.op) {
      case Op::Hello: {
        if (q.version != kProtocolVersion)
          LOOM_THROW(DeviceError, "protocol version ", q.version, " (this server speaks version ", kProtocolVersion,
                     ")");
        if (q.token != o.token)
          LOOM_THROW(DeviceError, o.token.empty() ? "this server takes no token" : "wrong token (set LOOM_RPC_TOKEN)");
        if (q.backend != o.backend)
          LOOM_THROW(DeviceError, "this server exports backend '", o.backend, "', not '", q.backend, "'");
        if (!q.config.empty()) check_same_config(q.config, o.config_json);
        hello = true;
        w.str(d.name()).str(o.config_json);
        break;
      }
      case Op::Alloc: {
        uint64_t a = d.alloc(q.size, q.address);
        allocations.insert(a);
        w.u64(a);
        break;
      }
      case Op::AllocAt:
        d.alloc_at(q.address, q.size);
        allocations.insert(q.address);
        break;
      case Op::Free:
        d.free(q.address);
        allocations.erase(q.address);
        break;
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
