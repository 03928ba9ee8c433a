#include "rpc_server.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "accel_backend.h"
#include "loom/accel/config.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"

namespace loom::tools {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

}  // namespace

int rpc_server_command(const std::vector<std::string>& args, const std::string& program) {
  CLI::App app(
      "Exports an accelerator device over TCP: run models on it from another machine with "
      "`loom run model.loom --backend rpc://HOST:PORT/BACKEND`",
      program);
  sim::register_backends();
  rpc::ServerOptions o;
  std::string config_file;
  double idle_s = 600, exit_after_s = 0, lockout_s = 60, session_s = 86400;
  uint64_t client_mib = 0;
  uint64_t max_sessions = 0;
  bool quiet = false;
  app.add_option("--host", o.host, "address to listen on (anything but loopback needs TLS and --token or --client-ca)")
      ->capture_default_str();
  number_option(app, "--port", o.port, "TCP port (0: any free port, printed)", 0, 65535)->capture_default_str();
  add_config_option(app, config_file);
  app.add_option("--token", o.token, "access token clients must prove they hold (default: $LOOM_RPC_TOKEN)");
  app.add_option("--tls-cert", o.tls_cert, "TLS: this server's certificate (PEM; `loom rpc-keygen` writes one)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "TLS: this server's private key (PEM)")->check(CLI::ExistingFile);
  app.add_option("--client-ca", o.client_ca,
                 "mutual TLS: clients must present a certificate that chains to one in this PEM file")
      ->check(CLI::ExistingFile);
  number_option(app, "--idle-timeout", idle_s, "drop a client silent for this many seconds", 1.0, 86400.0)
      ->capture_default_str();
  number_option(app, "--sessions", max_sessions, "exit after this many client sessions (default: serve until stopped)",
                1, UINT64_MAX);
  number_option(app, "--exit-after", exit_after_s, "exit after this many seconds (default: serve until stopped)", 0.1,
                1e7);
  number_option(app, "--max-failed-handshakes", o.max_failed_handshakes,
                "refuse an address for --lockout seconds after this many failed handshakes within a minute (0: never)",
                0, 1000000)
      ->capture_default_str();
  number_option(app, "--lockout", lockout_s, "seconds an address with too many failed handshakes is refused", 0.1,
                86400.0)
      ->capture_default_str();
  number_option(app, "--max-client-mib", client_mib,
                "device memory one client may hold, in MiB (default: all of the device's)", 1, UINT64_MAX >> 20);
  number_option(app, "--max-session-s", session_s, "end a session this many seconds after its handshake", 1.0, 1e7)
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "no log of sessions");
  BackendOptions bopt;
  add_backend_options(app, bopt);
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (rpc::is_url(bopt.backend)) LOOM_THROW(Error, "--backend: a server exports a local backend, not ", bopt.backend);
  if (o.token.empty())
    if (const char* t = std::getenv("LOOM_RPC_TOKEN")) o.token = t;
  accel::AccelConfig cfg = load_config(config_file);
  o.backend = bopt.backend;
  o.config_json = backend_config_json(bopt, cfg);
  o.idle_timeout = std::chrono::milliseconds(int64_t(idle_s * 1000));
  o.lockout = std::chrono::milliseconds(int64_t(lockout_s * 1000));
  o.max_session = std::chrono::milliseconds(int64_t(session_s * 1000));
  o.max_client_bytes = client_mib << 20;
  rpc::Server server(o);
  if (!quiet) server.set_log([](const std::string& line) { std::cerr << "rpc-server: " << line << std::endl; });
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::cout << "serving " << o.backend << " (config '" << cfg.name << "', " << runtime::this_cpu_arch() << ") on "
            << o.host << ":" << server.port() << (o.token.empty() ? "" : " (token required)")
            << (o.client_ca.empty() ? "" : " (client certificates required)") << std::endl;
  if (!server.fingerprint().empty())
    std::cout << "TLS certificate " << server.fingerprint() << ": clients connect to rpc+tls://HOST:" << server.port()
              << "/" << o.backend << "?fp=" << server.fingerprint() << std::endl;
  server.start();
  auto t0 = std::chrono::steady_clock::now();
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rpc::ServerStats st = server.stats();
    if (max_sessions && st.sessions >= max_sessions && !server.busy()) break;
    if (exit_after_s > 0 && std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(exit_after_s)) break;
  }
  server.stop();
  rpc::ServerStats st = server.stats();
  std::cout << "served " << st.sessions << " sessions, " << st.requests << " requests (" << st.errors << " errors, "
            << st.refused << " clients refused while busy, " << st.failed_handshakes << " failed handshakes, "
            << st.locked_out << " connections refused after them)" << std::endl;
  return 0;
}

int rpc_keygen_command(const std::vector<std::string>& args, const std::string& program) {
  CLI::App app(
      "Writes a self-signed key pair for an RPC server's TLS (or a client's certificate): NAME.key (only its "
      "owner may read it) and NAME.crt, and prints the certificate's fingerprint for clients to pin",
      program);
  std::string dir = ".", name = "loom-rpc";
  std::vector<std::string> hosts;
  double days = 365;
  bool force = false;
  app.add_option("-o,--out", dir, "folder to write NAME.key and NAME.crt into")->capture_default_str();
  app.add_option("--name", name, "file names and the certificate's common name")->capture_default_str();
  app.add_option("--host", hosts,
                 "a DNS name or IP address clients reach the server by (repeatable; default: this machine's host "
                 "name, localhost and 127.0.0.1); what a CA-checking client compares");
  number_option(app, "--days", days, "days the certificate is valid", 1.0, 36500.0)->capture_default_str();
  app.add_flag("--force", force, "replace an existing key pair");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (name.empty() || name.find('/') != std::string::npos)
    LOOM_THROW(Error, "--name: '", name, "' must be a file name without '/'");
  std::filesystem::create_directories(dir);
  const std::string key = dir + "/" + name + ".key", cert = dir + "/" + name + ".crt";
  if (!force && (std::filesystem::exists(key) || std::filesystem::exists(cert)))
    LOOM_THROW(Error, key, " or ", cert, " exists: pass --force to replace the key pair (clients pinned to it ",
               "must pin the new fingerprint)");
  rpc::KeyPairOptions o;
  o.common_name = name;
  o.names = hosts;
  if (o.names.empty()) {
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) == 0 && *h) o.names.push_back(h);
    o.names.push_back("localhost");
    o.names.push_back("127.0.0.1");
  }
  o.not_after = o.not_before + std::chrono::seconds(int64_t(days * 86400));
  const std::string fp = rpc::write_key_pair(key, cert, o);
  std::cout << "wrote " << key << " and " << cert << "\nfingerprint " << fp << std::endl;
  return 0;
}

}  // namespace loom::tools
