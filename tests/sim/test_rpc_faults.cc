// The RPC device under faults, on 127.0.0.1 with short timeouts: wrong version, wrong token,
// config mismatch, a second client, malformed / oversized / truncated messages, a client that
// stalls or disconnects mid-copy, a server that goes away. Each is a clear error on the client,
// and the server keeps serving the next client (whose allocations succeed: the failed client's
// were freed).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "common/error_text.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"

namespace loom {
namespace {

using test::error_text;

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

// A raw TCP client for sending what a well-behaved client never would.
struct Raw {
  int fd = -1;
  explicit Raw(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
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
  // The error message of the next reply, or "<closed>" if the server closed the connection.
  std::string reply_error() {
    uint8_t len[4];
    if (::recv(fd, len, 4, MSG_WAITALL) != 4) return "<closed>";
    uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | uint32_t(len[3]) << 24;
    std::vector<uint8_t> body(n);
    if (n == 0 || ::recv(fd, body.data(), n, MSG_WAITALL) != ssize_t(n)) return "<closed>";
    if (body[0] == 0) return "<ok>";
    return std::string(body.begin() + 9, body.end());  // status, u64 length, text
  }
};

std::vector<uint8_t> hello(uint32_t version, const std::string& token = "", const std::string& backend = "fsim") {
  std::vector<uint8_t> b{1};
  auto u32 = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k)));
  };
  auto str = [&](const std::string& s) {
    u32(uint32_t(s.size()));
    u32(0);
    b.insert(b.end(), s.begin(), s.end());
  };
  u32(version);
  str(token);
  str(backend);
  str("");
  return b;
}

TEST(RpcFaults, HandshakeRefusals) {
  Served s;
  {
    Raw r(s.server->port());
    r.send_frame(hello(99));
    EXPECT_NE(r.reply_error().find("protocol version 99 (this server speaks version 1)"), std::string::npos);
  }
  {
    Raw r(s.server->port());
    r.send_frame(hello(rpc::kProtocolVersion, "", "rtl"));
    EXPECT_NE(r.reply_error().find("exports backend 'fsim', not 'rtl'"), std::string::npos);
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
  EXPECT_NE(error_text<DeviceError>([&] { make_accel_device(s.url, config_json()); }).find("wrong token"),
            std::string::npos);
  setenv("LOOM_RPC_TOKEN", "s3cret", 1);
  s.expect_serving();
  unsetenv("LOOM_RPC_TOKEN");
  rpc::ServerOptions open;
  open.host = "0.0.0.0";
  open.port = 0;
  open.config_json = config_json();
  EXPECT_NE(error_text<DeviceError>([&] { rpc::Server bad(open); }).find("not loopback) needs an access token"),
            std::string::npos);
  EXPECT_NE(error_text<DeviceError>([&] {
              make_accel_device("rpc://127.0.0.1:99999/fsim", "");
            }).find("the port must be a number from 1 to 65535"),
            std::string::npos);
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
    r.send_frame(hello(rpc::kProtocolVersion));
    EXPECT_EQ(r.reply_error(), "<ok>");
    r.send_frame({0xee, 1, 2});
    EXPECT_NE(r.reply_error().find("unknown operation 238"), std::string::npos);
    EXPECT_EQ(r.reply_error(), "<closed>");
  }
  {
    Raw r(s.server->port());
    r.send_frame(hello(rpc::kProtocolVersion));
    EXPECT_EQ(r.reply_error(), "<ok>");
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
    r.send_frame(hello(rpc::kProtocolVersion));
    EXPECT_EQ(r.reply_error(), "<ok>");
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
    r.send_frame(hello(rpc::kProtocolVersion));
    EXPECT_EQ(r.reply_error(), "<ok>");
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
