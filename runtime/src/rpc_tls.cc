#include "rpc_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <fstream>

#include "loom/runtime/error.h"

namespace loom::rpc::tls {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;

namespace {

std::string openssl_reason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "no reason given";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

std::string default_known_hosts() {
  if (const char* f = std::getenv("LOOM_RPC_KNOWN_HOSTS")) return f;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.config/loom/rpc_known_hosts";
  return "";
}

// Only TLS 1.3: both ends are Loom with OpenSSL 3, so nothing older needs to be negotiated.
std::unique_ptr<ssl::context> new_context(ssl::context::method method) {
  auto ctx = std::make_unique<ssl::context>(method);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_3_VERSION);
  return ctx;
}

// Loads `cert` and `key` into `ctx`; `what` names them in errors ("--tls-cert", "the URL's cert").
void load_identity(SSL_CTX* ctx, const std::string& cert, const std::string& key, const std::string& what) {
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1)
    LOOM_THROW(DeviceError, what, " certificate '", cert, "' does not load: ", openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1)
    LOOM_THROW(DeviceError, what, " key '", key, "' does not load: ", openssl_reason());
  if (SSL_CTX_check_private_key(ctx) != 1)
    LOOM_THROW(DeviceError, what, " key '", key, "' is not the key of certificate '", cert, "'");
}

// Trust anchors from a PEM file; a certificate in it is trusted as it is, even one that is not a
// CA's (a lab's self-signed certificate).
void load_anchors(SSL_CTX* ctx, const std::string& file, const std::string& what) {
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, file.c_str(), nullptr) != 1)
    LOOM_THROW(DeviceError, what, " '", file, "' does not load: ", openssl_reason());
  X509_STORE_set_flags(SSL_CTX_get_cert_store(ctx), X509_V_FLAG_PARTIAL_CHAIN);
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// The pinned check of the certificate at the verify callback's depth (the server's own at 0).
bool check_pinned(X509_STORE_CTX* c, const ClientTrust& trust, Verdict& verdict);

}  // namespace

ClientTrust client_trust(const Url& url) {
  ClientTrust t;
  t.host_port =
      (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
  t.cert_file = url.cert_file;
  t.key_file = url.key_file;
  if (t.cert_file.empty()) {
    const char* cert = std::getenv("LOOM_RPC_CERT");
    const char* key = std::getenv("LOOM_RPC_KEY");
    if (cert && *cert && key && *key) {
      t.cert_file = cert;
      t.key_file = key;
    } else if ((cert && *cert) || (key && *key)) {
      LOOM_THROW(DeviceError, "LOOM_RPC_CERT and LOOM_RPC_KEY go together (a client certificate)");
    }
  }
  if (!url.fingerprint.empty()) {
    t.fingerprint = url.fingerprint;
    t.pinned_by = "the URL's fp";
    return t;
  }
  if (!url.ca_file.empty()) {
    t.ca_file = url.ca_file;
    return t;
  }
  if (const char* ca = std::getenv("LOOM_RPC_CA"); ca && *ca) {
    t.ca_file = ca;
    return t;
  }
  t.known_hosts = default_known_hosts();
  std::ifstream in(t.known_hosts);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    size_t space = line.find_first_of(" \t", start);
    std::string where = t.known_hosts + " line " + std::to_string(number);
    if (space == std::string::npos) LOOM_THROW(DeviceError, where, ": not 'HOST:PORT sha256:...'");
    if (line.substr(start, space - start) != t.host_port) continue;
    size_t fp = line.find_first_not_of(" \t", space);
    size_t fp_end = fp == std::string::npos ? fp : line.find_first_of(" \t", fp);
    t.fingerprint = normalize_fingerprint(fp == std::string::npos ? "" : line.substr(fp, fp_end - fp), where);
    t.pinned_by = where;
    return t;
  }
  return t;  // nothing pinned: the handshake refuses the certificate and says how to pin it
}

std::unique_ptr<ssl::context> client_context(const ClientTrust& trust) {
  auto ctx = new_context(ssl::context::tls_client);
  if (!trust.ca_file.empty()) load_anchors(ctx->native_handle(), trust.ca_file, "the CA file (ca, LOOM_RPC_CA)");
  if (!trust.cert_file.empty())
    load_identity(ctx->native_handle(), trust.cert_file, trust.key_file, "the client's (cert/key, LOOM_RPC_CERT)");
  return ctx;
}

std::unique_ptr<ssl::context> server_context(const ServerOptions& o) {
  auto ctx = new_context(ssl::context::tls_server);
  load_identity(ctx->native_handle(), o.tls_cert, o.tls_key, "rpc server: --tls-cert/--tls-key:");
  if (!o.client_ca.empty()) {
    load_anchors(ctx->native_handle(), o.client_ca, "rpc server: --client-ca");
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

void prepare_client(ssl::stream<asio::ip::tcp::socket&>& stream, const ClientTrust& trust, const std::string& host,
                    std::shared_ptr<Verdict> verdict) {
  SSL* s = stream.native_handle();
  if (!is_ip_address(host)) SSL_set_tlsext_host_name(s, host.c_str());
  stream.set_verify_mode(ssl::verify_peer);
  if (!trust.ca_file.empty()) {
    // The certificate must chain to the CA file and name the host (a DNS name or an IP address).
    // Names only from the subject alternative names, never the common name; a host the check
    // cannot be set for is an error, not a check skipped.
    X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(s), X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    const std::string bare = host.substr(0, host.find('%'));  // an IPv6 scope is no part of the address
    const bool set = is_ip_address(host) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), bare.c_str()) == 1
                                         : SSL_set1_host(s, host.c_str()) == 1;
    if (!set) LOOM_THROW(DeviceError, "rpc: cannot check the server's certificate names host '", host, "'");
    stream.set_verify_callback([verdict, ca = trust.ca_file](bool preverified, ssl::verify_context& vc) {
      X509_STORE_CTX* c = vc.native_handle();
      if (!preverified && verdict->refusal.empty()) try {
          X509* cert = X509_STORE_CTX_get_current_cert(c);
          char subject[256] = "?";
          if (cert) X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
          verdict->refusal = std::string("the server's certificate (") + subject + ", " +
                             (cert ? fingerprint(cert) : std::string("?")) + ") does not pass the CA file '" + ca +
                             "': " + X509_verify_cert_error_string(X509_STORE_CTX_get_error(c));
        } catch (...) {  // nothing may unwind through OpenSSL's frames
        }
      return preverified;
    });
    return;
  }
  // Pinned: the server's own certificate (depth 0) must have the fingerprint and be within its
  // validity period; whatever signed it does not matter.
  stream.set_verify_callback([verdict, trust](bool, ssl::verify_context& vc) {
    try {
      return check_pinned(vc.native_handle(), trust, *verdict);
    } catch (...) {  // nothing may unwind through OpenSSL's frames
      return false;
    }
  });
}

namespace {

bool check_pinned(X509_STORE_CTX* c, const ClientTrust& trust, Verdict& verdict) {
  if (X509_STORE_CTX_get_error_depth(c) != 0) return true;
  X509* cert = X509_STORE_CTX_get_current_cert(c);
  const std::string fp = cert ? fingerprint(cert) : "?";
  std::string refusal;
  int error = X509_V_ERR_CERT_REJECTED;
  if (trust.fingerprint.empty()) {
    refusal = "the server's certificate is not pinned: its fingerprint is " + fp +
              ". If the server printed that fingerprint (loom-rpc-server prints it when it starts; `loom "
              "rpc-keygen` when it wrote the certificate), add ?fp=" +
              fp + " to the URL or the line '" + trust.host_port + " " + fp + "' to " +
              (trust.known_hosts.empty() ? std::string("$LOOM_RPC_KNOWN_HOSTS") : trust.known_hosts) +
              "; or give a CA (?ca=FILE, LOOM_RPC_CA)";
    error = X509_V_ERR_CERT_UNTRUSTED;
  } else if (fp != trust.fingerprint) {
    refusal = "the server's certificate has fingerprint " + fp + ", not " + trust.fingerprint + " (" + trust.pinned_by +
              "): another server, or its certificate was replaced";
  } else if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    refusal = "the server's certificate (" + fp + ") has expired: make a new one (loom rpc-keygen) and pin it";
    error = X509_V_ERR_CERT_HAS_EXPIRED;
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    refusal = "the server's certificate (" + fp + ") is not valid yet: check the clocks of both machines";
    error = X509_V_ERR_CERT_NOT_YET_VALID;
  }
  if (refusal.empty()) return true;
  if (verdict.refusal.empty()) verdict.refusal = refusal;
  X509_STORE_CTX_set_error(c, error);  // the alert the server receives says why
  return false;
}

}  // namespace

std::string fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &len) != 1) LOOM_THROW(DeviceError, "rpc: cannot hash a certificate");
  static const char* hex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 15]);
  }
  return out;
}

std::string explain(const boost::system::error_code& ec, bool client) {
  std::string m = ec.message();
  if (ec.category() != asio::error::get_ssl_category()) return m;
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_HTTP_REQUEST)
    return m + (client ? ": the server did not answer in TLS (a server without --tls-cert speaks plain TCP: "
                         "rpc://, loopback only)"
                       : ": the client does not speak TLS");
  if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED || reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
    return m + (client ? ": the server requires a client certificate (cert=...&key=... in the URL, or "
                         "LOOM_RPC_CERT and LOOM_RPC_KEY)"
                       : ": the client presented no certificate (this server has --client-ca)");
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && !client)
    return m + ": the client's certificate does not chain to --client-ca";
  if (!client && (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED ||
                  reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN))
    return m +
           ": the client refused this server's certificate (not pinned there, pinned to another fingerprint, "
           "expired, or not signed by its CA)";
  if (client && (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
                 reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED))
    return m + ": the server refused this client's certificate (it must chain to the server's --client-ca)";
  return m;
}

bool looks_like_client_hello(const uint8_t* b, size_t n) {
  // Record header: type 22 (handshake), version 3.x, a 2-byte length; then handshake type 1. A Loom
  // frame starts with its body's length and the operation; HELLO's protocol version (2) sits where
  // the handshake type would.
  return n >= 6 && b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04 && b[5] == 0x01;
}

bool may_be_client_hello(const uint8_t* b, size_t n) {
  return (n < 1 || b[0] == 0x16) && (n < 2 || b[1] == 0x03) && (n < 3 || b[2] <= 0x04) && (n < 6 || b[5] == 0x01);
}

}  // namespace loom::rpc::tls
