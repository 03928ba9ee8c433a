// The RPC server: exports one device of a registered backend to one client at a time, over plain
// TCP or TLS; each session runs in rpc_session.cc.
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "rpc_session.h"
#include "rpc_tls.h"
#include "rpc_wire.h"

namespace loom::rpc {

namespace asio = boost::asio;
using asio::ip::tcp;
using std::chrono::milliseconds;

namespace {

// What is left of a deadline, at least a millisecond (a timeout of 0 would mean none).
milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
  return std::max(milliseconds(1),
                  std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
}

}  // namespace

struct Server::Impl {
  ServerOptions o;
  std::unique_ptr<asio::ssl::context> tls;  // null: plain TCP
  std::string fingerprint;                  // the TLS certificate's
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
      // Counted before the refusal is sent, so a client that reads it sees the count.
      if (busy) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.refused;
        }
        refuse(sock, peer, "device busy: another client is connected to " + o.backend + " (one client at a time)");
        continue;
      }
      if (session_thread.joinable()) session_thread.join();  // its failed handshake is counted by now
      if (int64_t left = lockout_left(address)) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.locked_out;
        }
        refuse(sock, peer,
               "too many failed handshakes from " + address + ": refused for another " +
                   std::to_string((left + 999) / 1000) + " s");
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
      c.send(error_reply(why), milliseconds(2000));
    } catch (const Error&) {
    }
    c.close();
    note("refused " + peer + ": " + why);
  }

  // The first bytes say whether the client speaks TLS; one that does not speak this server's
  // transport is told so in a frame it can read (a plain client) or its handshake fails (TLS).
  void start_transport(Connection& c, Clock::time_point deadline) {
    uint8_t head[6];
    const bool hello_of_tls = tls::looks_like_client_hello(head, c.peek(head, sizeof head, time_left(deadline)));
    if (tls && !hello_of_tls) {
      c.send(error_reply("this server speaks TLS: connect with rpc+tls://HOST:PORT/" + o.backend +
                         "?fp=" + fingerprint + " (plain rpc:// is for servers on loopback without --tls-cert)"),
             o.request_timeout);
      LOOM_THROW(DeviceError, "a plain-TCP client (rpc://) at this TLS server: refused");
    }
    if (!tls && hello_of_tls) {
      c.send(error_reply("this server speaks plain TCP (rpc://, loopback only), not TLS"), o.request_timeout);
      LOOM_THROW(DeviceError,
                 "a TLS client (rpc+tls://) at this plain-TCP server: refused (start the server with --tls-cert "
                 "and --tls-key for TLS)");
    }
    if (tls) c.start_tls_server(*tls, time_left(deadline));
  }

  void session(int fd, const std::string& peer, const std::string& address) {
    Connection c(peer);
    c.assign(fd);
    {
      std::lock_guard<std::mutex> lock(mu);
      live = &c;
      ++stats.sessions;
    }
    ServerSession client(o, *device);
    note("session " + peer + ": connected");
    std::string why = "disconnected";
    // The whole handshake has one deadline, so a slow client cannot hold the device unproved.
    const Clock::time_point handshake_deadline = Clock::now() + o.handshake_timeout;
    try {
      if (stopping) LOOM_THROW(DeviceError, "the server is stopping");
      start_transport(c, handshake_deadline);
      for (;;) {
        const milliseconds left = time_left(handshake_deadline);
        std::vector<uint8_t> body = client.authenticated()
                                        ? c.receive(o.idle_timeout, o.request_timeout, kMaxMessageBytes)
                                        : c.receive(left, std::min(left, o.request_timeout), kMaxMessageBytes);
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.requests;
        }
        const bool was_authenticated = client.authenticated();
        ServerSession::Reply reply;
        try {
          reply = client.handle(body.data(), body.size());
        } catch (const DeviceError& e) {
          c.send(error_reply(e.what()), o.request_timeout);  // framing can no longer be trusted
          throw;
        }
        if (reply.error) {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.errors;
        }
        if (!was_authenticated && client.proved()) handshake_succeeded(address);
        // The device is free before the last reply, so the client may connect again at once.
        if (reply.last) {
          client.free_all();
          busy = false;
        }
        c.send(reply.body, o.request_timeout);
        if (reply.last) {
          why = reply.why;
          break;
        }
      }
    } catch (const Error& e) {
      why = e.what();
    } catch (const std::exception& e) {  // Asio's or the allocator's: the session ends, not the server
      why = e.what();
    }
    if (!client.authenticated() && !client.proved()) handshake_failed(address);
    client.free_all();
    {
      std::lock_guard<std::mutex> lock(mu);
      live = nullptr;
    }
    c.close();
    busy = false;
    note("session " + peer + ": " + why);
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.o = std::move(options);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(s.o.host, ec);
  if (ec) LOOM_THROW(DeviceError, "rpc server: '", s.o.host, "' is not an IP address");
  if (s.o.tls_cert.empty() != s.o.tls_key.empty())
    LOOM_THROW(DeviceError, "rpc server: --tls-cert and --tls-key go together (the server's certificate and key)");
  if (!s.o.client_ca.empty() && s.o.tls_cert.empty())
    LOOM_THROW(DeviceError, "rpc server: --client-ca needs TLS (--tls-cert and --tls-key)");
  if (!address.is_loopback() && s.o.tls_cert.empty())
    LOOM_THROW(DeviceError, "rpc server: listening on ", s.o.host,
               " (not loopback) needs TLS: --tls-cert and --tls-key (`loom rpc-keygen` writes a pair); plain TCP "
               "is for loopback only");
  if (!address.is_loopback() && s.o.token.empty() && s.o.client_ca.empty())
    LOOM_THROW(DeviceError, "rpc server: listening on ", s.o.host,
               " (not loopback) needs an access token (--token or LOOM_RPC_TOKEN) or client certificates "
               "(--client-ca)");
  if (!s.o.tls_cert.empty()) {
    s.tls = tls::server_context(s.o);
    s.fingerprint = tls::fingerprint(SSL_CTX_get0_certificate(s.tls->native_handle()));  // the one loaded
  }
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

std::string Server::fingerprint() const { return impl_->fingerprint; }

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
