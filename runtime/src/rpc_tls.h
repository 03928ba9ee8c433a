// Internal to the RPC device: TLS for the transport (Boost.Asio's SSL layer over OpenSSL). The
// server presents a certificate; a client pins it by fingerprint (the URL's fp, or its line in the
// known-hosts file) or checks it against a CA, and may present its own (mutual TLS). Both sides use
// TLS 1.3 only.
#pragma once
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>
#include <string>

#include "loom/runtime/rpc.h"

namespace loom::rpc::tls {

// How a client decides whether to trust the server's certificate, from its URL and environment.
struct ClientTrust {
  std::string fingerprint;          // pinned: the certificate must have this SHA-256 fingerprint
  std::string pinned_by;            // where the pin came from, for messages ("the URL's fp", "FILE line N")
  std::string ca_file;              // or: the certificate must chain to one in this file
  std::string cert_file, key_file;  // this client's certificate (mutual TLS)
  std::string known_hosts;          // the known-hosts file consulted (for the unpinned message)
  std::string host_port;            // "HOST:PORT" as the URL writes it
};
// DeviceError naming the known-hosts file and line when it is malformed.
ClientTrust client_trust(const Url& url);

// What the client's certificate check decided, for the error message when it refused.
struct Verdict {
  std::string refusal;  // "" while nothing was refused
};

// Client and server contexts: TLS 1.3, the certificates and keys loaded (DeviceError naming the
// file and OpenSSL's reason when one does not load).
std::unique_ptr<boost::asio::ssl::context> client_context(const ClientTrust& trust);
std::unique_ptr<boost::asio::ssl::context> server_context(const ServerOptions& options);

// Prepares a client stream: the certificate check (pinned or CA, with the host name), its verdict
// left in `verdict`, and SNI.
void prepare_client(boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>& stream, const ClientTrust& trust,
                    const std::string& host, std::shared_ptr<Verdict> verdict);

// "sha256:..." of a certificate (its DER encoding).
std::string fingerprint(X509* cert);

// OpenSSL's reason for a failed TLS operation, with what it usually means for a Loom connection.
std::string explain(const boost::system::error_code& ec, bool client);

// Whether the first bytes a server received are a TLS ClientHello (a record of type handshake,
// version 3.x, whose first message is a ClientHello) rather than a Loom frame.
bool looks_like_client_hello(const uint8_t* bytes, size_t n);
// Whether the first n bytes are still consistent with a ClientHello (more may make it one).
bool may_be_client_hello(const uint8_t* bytes, size_t n);

}  // namespace loom::rpc::tls
