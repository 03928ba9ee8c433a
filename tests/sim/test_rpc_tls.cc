// The RPC device over TLS, on 127.0.0.1: key pairs from the runtime's keygen (their fingerprints
// computed again with OpenSSL here), pinning by fingerprint and by known-hosts file, a CA file,
// mutual TLS, and each way a client and server can disagree — a wrong fingerprint, an unpinned or
// expired certificate, a missing or foreign client certificate, a plain client at a TLS server and
// the reverse. Each is a clear error on the client and a line in the server's log, and the next
// legitimate client is served. A relay's copy of a TLS session holds neither the token nor the
// tensor data sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "common/error_text.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"
#include "rpc_test_wire.h"

namespace loom {
namespace {

using test::error_text;
using ::testing::HasSubstr;

std::string config_json() {
  return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/default.json").to_json();
}

// A folder of key pairs for one test (the test's own folder), removed with it.
struct KeyDir {
  test::TestDir dir;
  std::string key(const std::string& name) const { return dir.file(name + ".key"); }
  std::string cert(const std::string& name) const { return dir.file(name + ".crt"); }
  // A pair valid from now for a year (or the given period), for 127.0.0.1; its fingerprint.
  std::string make(const std::string& name, std::vector<std::string> names = {"127.0.0.1", "localhost"},
                   std::chrono::hours from = std::chrono::hours(0), std::chrono::hours to = std::chrono::hours(8760)) {
    rpc::KeyPairOptions o;
    o.common_name = name;
    o.names = std::move(names);
    o.not_before = std::chrono::system_clock::now() + from;
    o.not_after = std::chrono::system_clock::now() + to;
    return rpc::write_key_pair(key(name), cert(name), o);
  }
};

// SHA-256 over the certificate's DER, with OpenSSL's PEM reader and digest (not the runtime's).
std::string openssl_fingerprint(const std::string& cert_file) {
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (!f) return "<no file>";
  X509* x = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!x) return "<no certificate>";
  unsigned char md[32];
  unsigned int n = 0;
  X509_digest(x, EVP_sha256(), md, &n);
  X509_free(x);
  char hex[65];
  for (unsigned i = 0; i < 32; ++i) std::snprintf(hex + 2 * i, 3, "%02x", md[i]);
  return std::string("sha256:") + hex;
}

// A server on 127.0.0.1 with TLS (unless cert is ""), a log of its lines, and no lockout (the
// tests fail handshakes on purpose).
struct TlsServed {
  std::mutex mu;
  std::vector<std::string> log;
  std::unique_ptr<rpc::Server> server;  // last: destroyed first, its session threads write to log
  TlsServed(const std::string& cert, const std::string& key, const std::string& token = "",
            const std::string& client_ca = "") {
    sim::register_backends();
    rpc::ServerOptions o;
    o.port = 0;
    o.config_json = config_json();
    o.token = token;
    o.tls_cert = cert;
    o.tls_key = key;
    o.client_ca = client_ca;
    o.max_failed_handshakes = 0;
    server = std::make_unique<rpc::Server>(o);
    server->set_log([this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      log.push_back(line);
    });
    server->start();
  }
  std::string url(const std::string& query = "", const std::string& scheme = "rpc+tls") const {
    return scheme + "://127.0.0.1:" + std::to_string(server->port()) + "/fsim" + (query.empty() ? "" : "?" + query);
  }
  // The session log's line about the last session that ended (waits for it, up to 2 s).
  std::string last_session_end() {
    for (int k = 0; k < 200; ++k) {
      {
        std::lock_guard<std::mutex> lock(mu);
        for (auto it = log.rbegin(); it != log.rend(); ++it)
          if (it->find("session ") == 0 && it->find(": connected") == std::string::npos) return *it;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "<no session ended>";
  }
  void clear_log() {
    for (int k = 0; k < 200 && server->busy(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(mu);
    log.clear();
  }
};

// A well-behaved client's work: allocate, write, read back.
void round_trip(const std::string& url) {
  auto d = make_accel_device(url, config_json());
  uint64_t a = d->alloc(1 << 20, 4096);
  std::vector<uint8_t> in(1 << 20), out(1 << 20);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 13 + 5);
  d->write(a, in.data(), in.size());
  d->read(a, out.data(), out.size());
  EXPECT_EQ(in, out);
}

TEST(RpcTls, KeygenWritesAPrivateKeyAndTheCertificatesFingerprint) {
  KeyDir k;
  const std::string fp = k.make("server");
  EXPECT_EQ(fp, openssl_fingerprint(k.cert("server")));
  EXPECT_EQ(fp, rpc::certificate_fingerprint(k.cert("server")));
  struct stat st {};
  ASSERT_EQ(::stat(k.key("server").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // only its owner may read the key
  EXPECT_NE(k.make("other"), fp);
  EXPECT_THAT(error_text<DeviceError>([&] { k.make("bad", {"two words"}); }), HasSubstr("is not a host name"));
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::certificate_fingerprint(k.key("server")); }),
              HasSubstr("holds no PEM certificate"));
}

TEST(RpcTls, UrlsAndFingerprints) {
  const std::string fp(64, 'a');
  rpc::Url u = rpc::parse_url("rpc+tls://board:9090/fsim?fp=" + fp + "&cert=/a%20b.crt&key=k.key");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "board");
  EXPECT_EQ(u.fingerprint, "sha256:" + fp);
  EXPECT_EQ(u.cert_file, "/a b.crt");
  EXPECT_EQ(rpc::normalize_fingerprint("SHA256 Fingerprint=AA:" + std::string(62, 'B'), "x"),
            "sha256:aa" + std::string(62, 'b'));
  EXPECT_EQ(rpc::normalize_fingerprint("sha256 Fingerprint=0A:" + std::string(62, 'c'), "x"),  // OpenSSL 3
            "sha256:0a" + std::string(62, 'c'));
  EXPECT_FALSE(rpc::parse_url("rpc://board:9090/fsim").tls);
  EXPECT_THAT(error_text<DeviceError>([] { rpc::parse_url("rpc://h:1/fsim?fp=aa"); }),
              HasSubstr("belongs to rpc+tls://"));
  EXPECT_THAT(error_text<DeviceError>([] { rpc::parse_url("rpc+tls://h:1/fsim?pin=aa"); }),
              HasSubstr("unknown option 'pin'"));
  EXPECT_THAT(error_text<DeviceError>([] { rpc::parse_url("rpc+tls://h:1/fsim?fp=abc"); }),
              HasSubstr("3 hex digits, not 64"));
  EXPECT_THAT(error_text<DeviceError>([] { rpc::parse_url("rpc+tls://h:1/fsim?cert=c.crt"); }),
              HasSubstr("cert and key go together"));
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::parse_url("rpc+tls://h:1/fsim?ca=c.pem&fp=" + fp); }),
              HasSubstr("fp and ca are two ways to trust the server: give one"));
  EXPECT_THAT(error_text<DeviceError>([] { rpc::parse_url("rpc+tls://h:1/fsim?ca=%zz"); }),
              HasSubstr("not followed by two hex digits"));
}

// Over TLS, with the fingerprint pinned: the session works, and a copy of every byte holds neither
// the token nor any of the data written and read. The same session in plain TCP through the same
// relay shows the data (what the check looks for is there to be found).
TEST(RpcTls, PinnedSessionCarriesNothingInClear) {
  KeyDir k;
  const std::string fp = k.make("server");
  const std::string token = "tok-" + std::to_string(std::rand()) + "-5f8d1c0e9a7b";
  TlsServed tls_server(k.cert("server"), k.key("server"), token);
  TlsServed plain_server("", "", token);
  test::ScopedEnv env("LOOM_RPC_TOKEN", token.c_str());
  std::string pattern = "LOOM-TENSOR-";  // a recognisable payload, unlike anything TLS sends
  while (pattern.size() < 4096) pattern += pattern;
  for (bool tls : {true, false}) {
    TlsServed& s = tls ? tls_server : plain_server;
    test::Relay relay(s.server->port());
    {
      auto d = make_accel_device((tls ? "rpc+tls" : "rpc") + std::string("://127.0.0.1:") +
                                     std::to_string(relay.port()) + "/fsim" + (tls ? "?fp=" + fp : ""),
                                 config_json());
      uint64_t a = d->alloc(pattern.size(), 4096);
      d->write(a, pattern.data(), pattern.size());
      std::string back(pattern.size(), '\0');
      d->read(a, back.data(), back.size());
      EXPECT_EQ(back, pattern);
    }
    relay.join();
    const std::string& wire = relay.wire();
    EXPECT_GT(wire.size(), 2 * pattern.size()) << "the session went through the relay";
    EXPECT_EQ(wire.find(token), std::string::npos);
    EXPECT_EQ(wire.find(pattern.substr(0, 24)) != std::string::npos, !tls) << (tls ? "TLS" : "plain TCP");
  }
}

TEST(RpcTls, WrongFingerprintIsRefusedOnBothSides) {
  KeyDir k;
  const std::string fp = k.make("server");
  const std::string other = k.make("impostor");
  TlsServed s(k.cert("server"), k.key("server"));
  const std::string e = error_text<DeviceError>([&] { make_accel_device(s.url("fp=" + other), config_json()); });
  EXPECT_THAT(e, HasSubstr("the server's certificate has fingerprint " + fp + ", not " + other));
  EXPECT_THAT(s.last_session_end(), HasSubstr("the client refused this server's certificate"));
  round_trip(s.url("fp=" + fp));
}

// Self-signed and pinned nowhere: refused, naming its fingerprint and where to pin it; a
// known-hosts line pins it; a line with another fingerprint is refused naming the file and line.
TEST(RpcTls, UnpinnedCertificateAndKnownHosts) {
  KeyDir k;
  const std::string fp = k.make("server");
  TlsServed s(k.cert("server"), k.key("server"));
  const std::string known = k.dir.file("known_hosts");
  test::ScopedEnv env("LOOM_RPC_KNOWN_HOSTS", known.c_str());
  std::ofstream(known) << "# lab boards\n";
  const std::string e = error_text<DeviceError>([&] { make_accel_device(s.url(), config_json()); });
  EXPECT_THAT(e, HasSubstr("is not pinned: its fingerprint is " + fp));
  EXPECT_THAT(e, HasSubstr("127.0.0.1:" + std::to_string(s.server->port()) + " " + fp));
  EXPECT_THAT(s.last_session_end(), HasSubstr("the client refused this server's certificate"));
  std::ofstream(known) << "# lab boards\n127.0.0.1:" << s.server->port() << " " << k.make("impostor") << "\n";
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url(), config_json()); }),
              HasSubstr("(" + known + " line 2)"));
  std::ofstream(known) << "127.0.0.1:" << s.server->port() << " " << fp << "\n";
  round_trip(s.url());
  std::ofstream(known) << "127.0.0.1:" << s.server->port() << " not-a-fingerprint\n";
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url(), config_json()); }),
              HasSubstr(known + " line 1: 'not-a-fingerprint' is not a SHA-256 fingerprint"));
}

TEST(RpcTls, ExpiredCertificateIsRefusedPinnedOrByCa) {
  KeyDir k;
  const std::string fp = k.make("old", {"127.0.0.1"}, -std::chrono::hours(240), -std::chrono::hours(24));
  k.make("server");
  TlsServed s(k.cert("old"), k.key("old"));
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url("fp=" + fp), config_json()); }),
              HasSubstr("the server's certificate (" + fp + ") has expired"));
  EXPECT_THAT(s.last_session_end(), HasSubstr("the client refused this server's certificate"));
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url("ca=" + k.cert("old")), config_json()); }),
              HasSubstr("certificate has expired"));
  TlsServed fresh(k.cert("server"), k.key("server"));
  round_trip(fresh.url("fp=" + rpc::certificate_fingerprint(k.cert("server"))));
}

// A CA file: the certificate must chain to it and name the host the client connected to.
TEST(RpcTls, CaFileChecksTheChainAndTheHost) {
  KeyDir k;
  k.make("server");
  k.make("elsewhere", {"board.lab.example"});
  k.make("stranger");
  TlsServed s(k.cert("server"), k.key("server"));
  round_trip(s.url("ca=" + k.cert("server")));
  {
    test::ScopedEnv env("LOOM_RPC_CA", k.cert("server").c_str());
    round_trip(s.url());
  }
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url("ca=" + k.cert("stranger")), config_json()); }),
              HasSubstr("does not pass the CA file"));
  TlsServed named(k.cert("elsewhere"), k.key("elsewhere"));
  EXPECT_THAT(
      error_text<DeviceError>([&] { make_accel_device(named.url("ca=" + k.cert("elsewhere")), config_json()); }),
      HasSubstr("IP address mismatch"));
  // By name: the certificate's DNS names are what a client connecting to "localhost" checks.
  auto by_name = [](TlsServed& t, const std::string& ca) {
    return "rpc+tls://localhost:" + std::to_string(t.server->port()) + "/fsim?ca=" + ca;
  };
  round_trip(by_name(s, k.cert("server")));
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(by_name(named, k.cert("elsewhere")), config_json()); }),
              HasSubstr("hostname mismatch"));
  round_trip(s.url("ca=" + k.cert("server")));
}

TEST(RpcTls, MutualTlsNeedsTheClientsCertificate) {
  KeyDir k;
  const std::string fp = k.make("server");
  k.make("client");
  k.make("stranger");
  TlsServed s(k.cert("server"), k.key("server"), "", k.cert("client"));
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(s.url("fp=" + fp), config_json()); }),
              HasSubstr("the server requires a client certificate"));
  EXPECT_THAT(s.last_session_end(), HasSubstr("the client presented no certificate"));
  s.clear_log();
  EXPECT_THAT(error_text<DeviceError>([&] {
                make_accel_device(s.url("fp=" + fp + "&cert=" + k.cert("stranger") + "&key=" + k.key("stranger")),
                                  config_json());
              }),
              HasSubstr("the server refused this client's certificate"));
  EXPECT_THAT(s.last_session_end(), HasSubstr("does not chain to --client-ca"));
  EXPECT_THAT(error_text<DeviceError>([&] {
                make_accel_device(s.url("fp=" + fp + "&cert=" + k.cert("client") + "&key=" + k.key("stranger")),
                                  config_json());
              }),
              HasSubstr("the client's (cert/key, LOOM_RPC_CERT) key '" + k.key("stranger") + "'"));
  round_trip(s.url("fp=" + fp + "&cert=" + k.cert("client") + "&key=" + k.key("client")));
  test::ScopedEnv cert("LOOM_RPC_CERT", k.cert("client").c_str()), key("LOOM_RPC_KEY", k.key("client").c_str());
  round_trip(s.url("fp=" + fp));
}

TEST(RpcTls, PlainClientAtATlsServerAndTheReverse) {
  KeyDir k;
  const std::string fp = k.make("server");
  TlsServed tls(k.cert("server"), k.key("server"));
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(tls.url("", "rpc"), config_json()); }),
              HasSubstr("this server speaks TLS: connect with rpc+tls://HOST:PORT/fsim?fp=" + fp));
  EXPECT_THAT(tls.last_session_end(), HasSubstr("a plain-TCP client (rpc://) at this TLS server"));
  round_trip(tls.url("fp=" + fp));
  TlsServed plain("", "");
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device(plain.url("fp=" + fp), config_json()); }),
              HasSubstr("the server did not answer in TLS"));
  EXPECT_THAT(plain.last_session_end(), HasSubstr("a TLS client (rpc+tls://) at this plain-TCP server"));
  round_trip(plain.url("", "rpc"));
}

// A non-loopback address of this machine, or "" if it has none.
std::string non_loopback_address() {
  ifaddrs* list = nullptr;
  std::string found;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next)
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      if (std::string(text).rfind("127.", 0) != 0) found = text;
    }
  freeifaddrs(list);
  return found;
}

// Off loopback: the server needs TLS and a token or client CA; a plain client refuses to send
// anything to a non-loopback address; a TLS client reaches it there.
TEST(RpcTls, PlainTcpIsForLoopbackOnly) {
  KeyDir k;
  const std::string fp = k.make("server", {"127.0.0.1"});
  sim::register_backends();
  rpc::ServerOptions o;
  o.host = "0.0.0.0";
  o.port = 0;
  o.config_json = config_json();
  o.token = "s3cret";
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::Server bad(o); }), HasSubstr("(not loopback) needs TLS"));
  o.tls_cert = k.cert("server");
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::Server bad(o); }), HasSubstr("--tls-cert and --tls-key go together"));
  o.tls_key = k.key("server");
  o.token.clear();
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::Server bad(o); }), HasSubstr("needs an access token"));
  o.tls_key = k.cert("server");
  o.token = "s3cret";
  EXPECT_THAT(error_text<DeviceError>([&] { rpc::Server bad(o); }), HasSubstr("does not load"));
  o.tls_key = k.key("server");
  rpc::Server open(o);
  open.start();
  EXPECT_EQ(open.fingerprint(), fp);
  const std::string host = non_loopback_address();
  if (host.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address";
  const std::string at = host + ":" + std::to_string(open.port()) + "/fsim";
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("rpc://" + at, config_json()); }),
              HasSubstr("plain TCP (rpc://) is for loopback only"));
  test::ScopedEnv token("LOOM_RPC_TOKEN", "s3cret");
  round_trip("rpc+tls://" + at + "?fp=" + fp);
}

}  // namespace
}  // namespace loom
