// rpc://HOST:PORT/BACKEND and rpc+tls://HOST:PORT/BACKEND?... names, parsed without the network
// code (also in builds without Boost or OpenSSL).
#include <cctype>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::rpc {

namespace {

constexpr const char* kPlain = "rpc://";
constexpr const char* kTls = "rpc+tls://";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = char(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

}  // namespace

bool is_url(const std::string& name) { return name.starts_with(kPlain) || name.starts_with(kTls); }

std::string normalize_fingerprint(const std::string& text, const std::string& where) {
  std::string hex = text;
  for (char& c : hex) c = char(std::tolower(static_cast<unsigned char>(c)));
  // As Loom prints it, or as `openssl x509 -fingerprint -sha256` does ("sha256 Fingerprint=AB:CD:...").
  for (const char* prefix : {"sha256 fingerprint=", "sha256:", "sha256="})
    if (hex.starts_with(prefix)) hex = hex.substr(std::string(prefix).size());
  std::string out = "sha256:";
  for (char c : hex) {
    if (c == ':') continue;
    if (hex_digit(c) < 0)
      LOOM_THROW(DeviceError, where, ": '", text, "' is not a SHA-256 fingerprint (64 hex digits, colons allowed)");
    out.push_back(c);
  }
  if (out.size() != 7 + 64)
    LOOM_THROW(DeviceError, where, ": '", text, "' is not a SHA-256 fingerprint: ", out.size() - 7,
               " hex digits, not 64");
  return out;
}

Url parse_url(const std::string& url) {
  auto bad = [&](const std::string& why) -> Url {
    LOOM_THROW(DeviceError, "'", url,
               "' is not an RPC device (rpc://HOST:PORT/BACKEND or rpc+tls://HOST:PORT/BACKEND?fp=...): ", why);
  };
  if (!is_url(url)) return bad("it does not start with rpc:// or rpc+tls://");
  Url u;
  u.tls = url.starts_with(kTls);
  std::string rest = url.substr(std::string(u.tls ? kTls : kPlain).size());
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    if (!u.tls) return bad("a query (?fp=...) belongs to rpc+tls:// URLs; plain rpc:// has no options");
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  size_t slash = rest.find('/');
  if (slash == std::string::npos || slash + 1 >= rest.size()) return bad("no backend after the port");
  std::string hostport = rest.substr(0, slash);
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("no HOST:PORT");
  u.host = hostport.substr(0, colon);
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
  std::string port = hostport.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) == 0 || std::stoul(port) > 65535)
    return bad("the port must be a number from 1 to 65535");
  u.port = uint16_t(std::stoul(port));
  u.backend = rest.substr(slash + 1);
  // key=value pairs separated by '&', values percent-decoded (paths may hold any byte).
  for (size_t at = 0; at < query.size();) {
    size_t end = query.find('&', at);
    if (end == std::string::npos) end = query.size();
    std::string pair = query.substr(at, end - at);
    at = end + 1;
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    if (eq == std::string::npos) return bad("'" + pair + "' in the query is not KEY=VALUE");
    std::string key = pair.substr(0, eq), value;
    for (size_t i = eq + 1; i < pair.size(); ++i) {
      if (pair[i] != '%') {
        value.push_back(pair[i]);
        continue;
      }
      int hi = i + 2 < pair.size() ? hex_digit(pair[i + 1]) : -1, lo = hi >= 0 ? hex_digit(pair[i + 2]) : -1;
      if (lo < 0) return bad("'" + pair + "': a '%' not followed by two hex digits");
      value.push_back(char(hi * 16 + lo));
      i += 2;
    }
    if (value.empty()) return bad("'" + key + "' has no value");
    std::string* field = key == "fp"     ? &u.fingerprint
                         : key == "ca"   ? &u.ca_file
                         : key == "cert" ? &u.cert_file
                         : key == "key"  ? &u.key_file
                                         : nullptr;
    if (!field) return bad("unknown option '" + key + "' (fp, ca, cert, key)");
    if (!field->empty()) return bad("'" + key + "' given twice");
    *field = value;
  }
  if (!u.fingerprint.empty()) u.fingerprint = normalize_fingerprint(u.fingerprint, "'" + url + "': fp");
  if (u.cert_file.empty() != u.key_file.empty()) return bad("cert and key go together (a client certificate)");
  if (!u.fingerprint.empty() && !u.ca_file.empty()) return bad("fp and ca are two ways to trust the server: give one");
  return u;
}

}  // namespace loom::rpc
