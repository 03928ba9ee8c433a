// The RPC device under faults, on 127.0.0.1 with short timeouts: wrong version, wrong token,
// config mismatch, a second client, malformed / oversized / truncated messages, a client that
// stalls or disconnects mid-copy, a server that goes away. Each is a clear error on the client,
// and the server keeps serving the next client (whose allocations succeed: the failed client's
// were freed).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "common/error_text.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"
#include "rpc_test_wire.h"

namespace loom {
namespace {

using test::error_text;
using test::Listener;

std::string config_json(const char* name = "default") {
  return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json").to_json();
}

struct Served {
  std::unique_ptr<rpc::Server> server;
  std::string url;
  explicit Served(std::string token = "", std::chrono::milliseconds request_timeout = std::chrono::milliseconds(500)) {
    sim::register_backends();
    rpc::ServerOptions o;
    o.port = 0;
    o.config_json = config_json();
    o.token = std::move(token);
    o.request_timeout = request_timeout;
    server = std::make_unique<rpc::Server>(o);
    server->start();
    url = "rpc://127.0.0.1:" + std::to_string(server->port()) + "/fsim";
  }
  // A well-behaved client: allocates most of the device memory (only possible if earlier
  // clients' allocations were freed), writes, reads back.
  void expect_serving() {
    auto d = make_accel_device(url, config_json());
    uint64_t a = d->alloc(uint64_t(200) << 20, 4096);
    std::vector<uint8_t> in(1 << 20), out(1 << 20);
    for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7);
    d->write(a, in.data(), in.size());
    d->read(a, out.data(), out.size());
    EXPECT_EQ(in, out);
  }
};

// Request fields as the protocol lays them out (docs/rpc.md), written here independently of the
// runtime's writer.
void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k)));
}
void put_bytes(std::vector<uint8_t>& b, const void* p, size_t n) {
  put_u32(b, uint32_t(n));
  put_u32(b, 0);
  b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
void put_str(std::vector<uint8_t>& b, const std::string& s) { put_bytes(b, s.data(), s.size()); }

// HELLO of protocol 2: version, backend, config, the client's 32-byte nonce.
std::vector<uint8_t> hello(uint32_t version, const std::string& backend = "fsim",
                           const std::array<uint8_t, 32>& nonce = {}) {
  std::vector<uint8_t> b{1};
  put_u32(b, version);
  put_str(b, backend);
  put_str(b, "");
  put_bytes(b, nonce.data(), nonce.size());
  return b;
}
// HELLO of protocol 1, which carried the token itself.
std::vector<uint8_t> hello_v1(const std::string& token) {
  std::vector<uint8_t> b{1};
  put_u32(b, 1);
  put_str(b, token);
  put_str(b, "fsim");
  put_str(b, "");
  return b;
}
// The client's proof (docs/rpc.md): HMAC-SHA256 keyed by the token over "loom-rpc-2 client", a
// zero byte, the server's nonce and the client's; computed with OpenSSL here, not by the runtime.
std::array<uint8_t, 32> client_proof(const std::string& token, const uint8_t* server_nonce,
                                     const std::array<uint8_t, 32>& client_nonce) {
  std::string m = std::string("loom-rpc-2 client") + '\0';
  m.append(reinterpret_cast<const char*>(server_nonce), 32);
  m.append(reinterpret_cast<const char*>(client_nonce.data()), 32);
  std::array<uint8_t, 32> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), token.data(), int(token.size()), reinterpret_cast<const unsigned char*>(m.data()), m.size(),
       mac.data(), &len);
  return mac;
}
std::vector<uint8_t> auth(const std::array<uint8_t, 32>& proof) {
  std::vector<uint8_t> b{13};
  put_bytes(b, proof.data(), proof.size());
  return b;
}

// A raw TCP client for sending what a well-behaved client never would.
struct Raw {
  int fd = -1;
  explicit Raw(uint16_t port) {  // port 0: not connected (the test assigns fd)
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (port == 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Raw() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  void send_bytes(const std::vector<uint8_t>& b) {
    ASSERT_EQ(::send(fd, b.data(), b.size(), MSG_NOSIGNAL), ssize_t(b.size()));
  }
  void send_frame(const std::vector<uint8_t>& body, uint32_t claimed = 0) {
    uint32_t n = claimed ? claimed : uint32_t(body.size());
    std::vector<uint8_t> f{uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
    f.insert(f.end(), body.begin(), body.end());
    send_bytes(f);
  }
  // The next reply's body; empty if the server closed the connection.
  std::vector<uint8_t> reply() {
    uint8_t len[4];
    if (::recv(fd, len, 4, MSG_WAITALL) != 4) return {};
    uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | uint32_t(len[3]) << 24;
    std::vector<uint8_t> body(n);
    if (n == 0 || ::recv(fd, body.data(), n, MSG_WAITALL) != ssize_t(n)) return {};
    return body;
  }
  // The error message of the next reply, "<ok>", or "<closed>" if the server closed the connection.
  std::string reply_error() {
    std::vector<uint8_t> body = reply();
    if (body.empty()) return "<closed>";
    if (body[0] == 0) return "<ok>";
    return std::string(body.begin() + 9, body.end());  // status, u64 length, text
  }
  // HELLO and AUTH with `token`; the AUTH reply's error, or "<ok>". `sent` collects the frames.
  std::string handshake(const std::string& token = "", const std::string& backend = "fsim",
                        std::vector<std::vector<uint8_t>>* sent = nullptr) {
    std::array<uint8_t, 32> nonce;
    for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = uint8_t(std::rand());
    std::vector<uint8_t> h = hello(rpc::kProtocolVersion, backend, nonce);
    send_frame(h);
    std::vector<uint8_t> r = reply();
    if (r.size() != 1 + 8 + 32 || r[0] != 0) return "<no challenge>";
    std::vector<uint8_t> a = auth(client_proof(token, r.data() + 9, nonce));
    send_frame(a);
    if (sent) *sent = {h, a};
    return reply_error();
  }
};

TEST(RpcFaults, HandshakeRefusals) {
  Served s;
  {
    Raw r(s.server->port());
    r.send_frame(hello(99));
    EXPECT_NE(r.reply_error().find("protocol version 99 (this server speaks version 2)"), std::string::npos);
  }
  {
    Raw r(s.server->port());
    r.send_frame(hello_v1(""));
    EXPECT_NE(r.reply_error().find("protocol version 1 (this server speaks version 2, where the token never crosses "
                                   "the wire): upgrade the client"),
              std::string::npos);
  }
  {
    Raw r(s.server->port());
    EXPECT_NE(r.handshake("", "rtl").find("exports backend 'fsim', not 'rtl'"), std::string::npos);
  }
  std::string e = error_text<DeviceError>([&] { make_accel_device(s.url, config_json("1x32x32")); });
  EXPECT_NE(e.find("compiled for accelerator config '1x32x32', the server's device is 'default'"), std::string::npos)
      << e;
  EXPECT_NE(e.find("acc_buffer_bytes is 262144 in the model's and 131072 in the server's"), std::string::npos) << e;
  s.expect_serving();
}

TEST(RpcFaults, TokenAndLoopback) {
  Served s("s3cret");
  unsetenv("LOOM_RPC_TOKEN");
  EXPECT_NE(error_text<DeviceError>([&] {
              make_accel_device(s.url, config_json());
            }).find("authentication failed: the client's proof does not match this server's token"),
            std::string::npos);
  setenv("LOOM_RPC_TOKEN", "s3cret", 1);
  s.expect_serving();
  unsetenv("LOOM_RPC_TOKEN");
  rpc::ServerOptions open;
  open.host = "0.0.0.0";
  open.port = 0;
  open.config_json = config_json();
  EXPECT_NE(error_text<DeviceError>([&] { rpc::Server bad(open); }).find("not loopback) needs TLS"), std::string::npos);
  EXPECT_NE(error_text<DeviceError>([&] {
              make_accel_device("rpc://127.0.0.1:99999/fsim", "");
            }).find("the port must be a number from 1 to 65535"),
            std::string::npos);
}

// An address whose handshakes keep failing is refused for the lockout, even with the right
// token, and logged; after it, the legitimate client is served, and its success clears the count.
TEST(RpcFaults, FailedHandshakesLockAnAddressOut) {
  sim::register_backends();
  rpc::ServerOptions o;
  o.port = 0;
  o.config_json = config_json();
  o.token = "s3cret";
  o.max_failed_handshakes = 3;
  o.lockout = std::chrono::milliseconds(800);
  std::vector<std::string> log;  // before the server: its session threads write to it until it stops
  std::mutex log_mu;
  rpc::Server server(o);
  server.set_log([&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.push_back(line);
  });
  server.start();
  const std::string url = "rpc://127.0.0.1:" + std::to_string(server.port()) + "/fsim";
  auto connect = [&](const char* token) {
    setenv("LOOM_RPC_TOKEN", token, 1);
    std::string e = error_text<DeviceError>([&] { make_accel_device(url, config_json()); });
    unsetenv("LOOM_RPC_TOKEN");
    return e;
  };
  for (int k = 0; k < 3; ++k)
    EXPECT_NE(connect("guess").find("authentication failed: the client's proof does not match this server's token"),
              std::string::npos);
  std::string e = connect("s3cret");
  EXPECT_NE(e.find("too many failed handshakes from 127.0.0.1: refused for another 1 s"), std::string::npos) << e;
  EXPECT_EQ(server.stats().failed_handshakes, 3u);
  EXPECT_EQ(server.stats().locked_out, 1u);
  {
    std::lock_guard<std::mutex> lock(log_mu);
    EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
      return l == "127.0.0.1: 3 failed handshakes within 60 s: refused for 0.8 s";
    })) << testing::PrintToString(log);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_EQ(connect("s3cret"), "<no error>");
  // Two failures, a success, two more: the success cleared the count, so no lockout.
  EXPECT_NE(connect("guess").find("authentication failed: the client's proof does not match this server's token"),
            std::string::npos);
  EXPECT_NE(connect("guess").find("authentication failed: the client's proof does not match this server's token"),
            std::string::npos);
  EXPECT_EQ(connect("s3cret"), "<no error>");
  EXPECT_NE(connect("guess").find("authentication failed: the client's proof does not match this server's token"),
            std::string::npos);
  EXPECT_NE(connect("guess").find("authentication failed: the client's proof does not match this server's token"),
            std::string::npos);
  EXPECT_EQ(connect("s3cret"), "<no error>");
  EXPECT_EQ(server.stats().locked_out, 1u);
  // The right token for another backend is a mistake, not a guess: no failed handshake.
  const uint64_t failed = server.stats().failed_handshakes;
  setenv("LOOM_RPC_TOKEN", "s3cret", 1);
  for (int k = 0; k < 4; ++k)
    EXPECT_NE(error_text<DeviceError>([&] {
                make_accel_device("rpc://127.0.0.1:" + std::to_string(server.port()) + "/rtl", config_json());
              }).find("exports backend 'fsim', not 'rtl'"),
              std::string::npos);
  unsetenv("LOOM_RPC_TOKEN");
  EXPECT_EQ(server.stats().failed_handshakes, failed);
  EXPECT_EQ(connect("s3cret"), "<no error>");
}

// HELLO and AUTH have one deadline together: a client that stops after HELLO holds the device
// for that long, not for the request timeout per message.
TEST(RpcFaults, HandshakeHasOneDeadline) {
  sim::register_backends();
  rpc::ServerOptions o;
  o.port = 0;
  o.config_json = config_json();
  o.handshake_timeout = std::chrono::milliseconds(400);
  rpc::Server server(o);
  server.start();
  Raw r(server.port());
  auto t0 = std::chrono::steady_clock::now();
  r.send_frame(hello(rpc::kProtocolVersion));
  EXPECT_EQ(r.reply().size(), size_t(1 + 8 + 32));  // the challenge; then silence
  EXPECT_EQ(r.reply_error(), "<closed>");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));  // not the 30 s request timeout
  // (The session counts its failure as it ends, just after the connection closes.)
  for (int k = 0; k < 100 && server.stats().failed_handshakes == 0; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server.stats().failed_handshakes, 1u);
  EXPECT_NO_THROW(make_accel_device("rpc://127.0.0.1:" + std::to_string(server.port()) + "/fsim", config_json()));
}

// A client's device memory and session time are bounded; past either it gets an error naming the
// limit, and the next client is served.
TEST(RpcFaults, ClientMemoryAndSessionTimeAreBounded) {
  sim::register_backends();
  rpc::ServerOptions o;
  o.port = 0;
  o.config_json = config_json();
  o.max_client_bytes = uint64_t(64) << 20;
  o.max_session = std::chrono::milliseconds(400);
  rpc::Server server(o);
  server.start();
  const std::string url = "rpc://127.0.0.1:" + std::to_string(server.port()) + "/fsim";
  {
    auto d = make_accel_device(url, config_json());
    uint64_t a = d->alloc(uint64_t(48) << 20, 4096);
    std::string e = error_text<DeviceError>([&] { d->alloc(uint64_t(32) << 20, 4096); });
    EXPECT_NE(e.find("this session holds 50331648 bytes of device memory: ALLOC of 33554432 more would pass the "
                     "server's limit of 67108864 bytes a client"),
              std::string::npos)
        << e;
    d->free(a);
    d->free(d->alloc(uint64_t(64) << 20, 4096));  // freed memory counts no more
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    e = error_text<DeviceError>([&] { d->alloc(4096, 4096); });
    EXPECT_NE(e.find("the session passed the server's limit of 0.4 s (--max-session-s)"), std::string::npos) << e;
  }
  auto d = make_accel_device(url, config_json());
  EXPECT_NO_THROW(d->free(d->alloc(uint64_t(32) << 20, 4096)));
}

// A recorded handshake does not pass in another session: the server's nonce is new each time.
TEST(RpcFaults, ReplayedHandshakeIsRefused) {
  Served s("s3cret");
  std::vector<std::vector<uint8_t>> recorded;
  {
    Raw r(s.server->port());
    ASSERT_EQ(r.handshake("s3cret", "fsim", &recorded), "<ok>");
  }
  {
    Raw r(s.server->port());
    r.send_frame(recorded[0]);                        // the same HELLO, the same client nonce
    EXPECT_EQ(r.reply().size(), size_t(1 + 8 + 32));  // a new challenge
    r.send_frame(recorded[1]);                        // the recorded proof
    EXPECT_NE(r.reply_error().find("authentication failed"), std::string::npos);
  }
  setenv("LOOM_RPC_TOKEN", "s3cret", 1);
  s.expect_serving();
  unsetenv("LOOM_RPC_TOKEN");
}

// Everything a client and the server send each other, through a relay on loopback that keeps a
// copy: the token is in none of it.
TEST(RpcFaults, TokenNeverCrossesTheWire) {
  const std::string token = "tok-" + std::to_string(std::rand()) + "-e3b0c44298fc1c149afbf4c8996fb924";
  Served s(token);
  test::Relay relay(s.server->port());
  setenv("LOOM_RPC_TOKEN", token.c_str(), 1);
  {
    auto d = make_accel_device("rpc://127.0.0.1:" + std::to_string(relay.port()) + "/fsim", config_json());
    uint64_t at = d->alloc(4096, 4096);
    std::vector<uint8_t> data(4096, 7), back(4096);
    d->write(at, data.data(), data.size());
    d->read(at, back.data(), back.size());
    EXPECT_EQ(data, back);
  }
  unsetenv("LOOM_RPC_TOKEN");
  relay.join();
  const std::string& wire = relay.wire();
  EXPECT_GT(wire.size(), 8192u);                   // the session went through the relay
  EXPECT_EQ(wire.find(token), std::string::npos);  // and the token did not
  EXPECT_EQ(wire.find("e3b0c44298fc1c149afbf4c8996fb924"), std::string::npos);
}

// A server that answers the handshake without holding the token (its proof is not the HMAC):
// the client refuses it before sending anything else.
TEST(RpcFaults, ClientRefusesAServerWithoutTheToken) {
  Listener listener;
  std::thread impostor([&] {
    Raw c(0);  // the accepted connection, read and written like a client's
    c.close();
    c.fd = ::accept(listener.fd, nullptr, nullptr);
    timeval tv{5, 0};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::array<uint8_t, 32> nonce{};
    std::vector<uint8_t> challenge{0};
    put_bytes(challenge, nonce.data(), nonce.size());
    if (c.reply().empty()) return;  // HELLO
    c.send_frame(challenge);
    if (c.reply().empty()) return;  // AUTH
    std::vector<uint8_t> welcome{0};
    put_str(welcome, "fsim");
    put_str(welcome, config_json());
    put_bytes(welcome, nonce.data(), nonce.size());  // not the server's proof
    c.send_frame(welcome);
    c.reply();  // whatever comes next (GOODBYE) or the close
  });
  setenv("LOOM_RPC_TOKEN", "s3cret", 1);
  std::string e = error_text<DeviceError>(
      [&] { make_accel_device("rpc://127.0.0.1:" + std::to_string(listener.port) + "/fsim", config_json()); });
  unsetenv("LOOM_RPC_TOKEN");
  impostor.join();
  EXPECT_NE(e.find("the server's proof does not match LOOM_RPC_TOKEN"), std::string::npos) << e;
}

TEST(RpcFaults, SecondClientIsToldTheDeviceIsBusy) {
  Served s;
  auto first = make_accel_device(s.url, config_json());
  std::string e = error_text<DeviceError>([&] { make_accel_device(s.url, config_json()); });
  EXPECT_NE(e.find("device busy: another client is connected"), std::string::npos) << e;
  first.reset();  // goodbye: the next client gets the device at once
  s.expect_serving();
  EXPECT_EQ(s.server->stats().refused, 1u);
}

TEST(RpcFaults, MalformedOversizedAndTruncatedMessages) {
  Served s;
  {
    Raw r(s.server->port());
    EXPECT_EQ(r.handshake(), "<ok>");
    r.send_frame({0xee, 1, 2});
    EXPECT_NE(r.reply_error().find("unknown operation 238"), std::string::npos);
    EXPECT_EQ(r.reply_error(), "<closed>");
  }
  {
    Raw r(s.server->port());
    EXPECT_EQ(r.handshake(), "<ok>");
    r.send_frame({5, 1, 2, 3});  // WRITE without its fields
    EXPECT_NE(r.reply_error().find("malformed message: the address needs 8 bytes at byte 1 of a 4-byte message"),
              std::string::npos);
  }
  {
    Raw r(s.server->port());
    r.send_frame({}, 0xffffffffu);  // a length over the limit: dropped unread
    EXPECT_EQ(r.reply_error(), "<closed>");
  }
  {
    Raw r(s.server->port());
    EXPECT_EQ(r.handshake(), "<ok>");
    r.send_frame({2, 0, 0, 0, 0}, 17);       // ALLOC: 17 bytes promised, 5 sent, then silence
    EXPECT_EQ(r.reply_error(), "<closed>");  // the request timeout (500 ms) ends it
  }
  s.expect_serving();
  EXPECT_GE(s.server->stats().sessions, 5u);
}

TEST(RpcFaults, ClientVanishingMidCopyLeavesNothingBehind) {
  Served s;
  {
    auto d = make_accel_device(s.url, config_json());
    d->alloc(uint64_t(200) << 20, 4096);  // never freed by the client
    Raw r(s.server->port());              // refused while d is connected
    EXPECT_NE(r.reply_error().find("device busy"), std::string::npos);
  }
  {
    Raw r(s.server->port());
    EXPECT_EQ(r.handshake(), "<ok>");
    std::vector<uint8_t> alloc{2};
    for (uint64_t v : {uint64_t(200) << 20, uint64_t(4096)})
      for (int k = 0; k < 8; ++k) alloc.push_back(uint8_t(v >> (8 * k)));
    r.send_frame(alloc);
    EXPECT_EQ(r.reply_error(), "<ok>");
    std::vector<uint8_t> partial(4096, 0);
    partial[0] = 5;  // WRITE of 1 MiB promised, 4 KiB sent, then the client is gone
    r.send_frame(partial, 1 << 20);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s.expect_serving();  // 200 MiB again: both clients' allocations were freed
}

TEST(RpcFaults, ServerGoneAndSilentServer) {
  auto s = std::make_unique<Served>();
  auto d = make_accel_device(s->url, config_json());
  uint64_t a = d->alloc(4096, 64);
  s.reset();  // the server stops while the client is connected
  std::string e = error_text<DeviceError>([&] { d->write(a, std::vector<uint8_t>(4096).data(), 4096); });
  EXPECT_NE(e.find(" was closed by the other side"), std::string::npos) << e;
  EXPECT_NE(e.find("rpc://127.0.0.1:"), std::string::npos) << e;
  d.reset();

  // A listener that never answers: the client's request timeout.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  setenv("LOOM_RPC_TIMEOUT_MS", "300", 1);
  std::string url = "rpc://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/fsim";
  e = error_text<DeviceError>([&] { make_accel_device(url, config_json()); });
  unsetenv("LOOM_RPC_TIMEOUT_MS");
  ::close(fd);
  EXPECT_NE(e.find("waiting for a message timed out after 300 ms"), std::string::npos) << e;
}

TEST(RpcFaults, RequestCheckerNamesWhatIsWrong) {
  std::vector<uint8_t> h = hello(rpc::kProtocolVersion);
  EXPECT_EQ(rpc::check_request(h.data(), h.size()), "HELLO");
  std::vector<uint8_t> a = auth({});
  EXPECT_EQ(rpc::check_request(a.data(), a.size()), "AUTH");
  a.pop_back();
  EXPECT_NE(error_text<DeviceError>([&] {
              rpc::check_request(a.data(), a.size());
            }).find("the client's proof needs 32 bytes at byte 9 of a 40-byte message"),
            std::string::npos)
      << error_text<DeviceError>([&] { rpc::check_request(a.data(), a.size()); });
  h.push_back(0);
  EXPECT_NE(error_text<DeviceError>([&] {
              rpc::check_request(h.data(), h.size());
            }).find("1 bytes left over after the fields of HELLO"),
            std::string::npos);
  std::vector<uint8_t> read{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};  // READ of 2^56 bytes
  EXPECT_NE(error_text<DeviceError>([&] { rpc::check_request(read.data(), read.size()); }).find("a READ of"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
