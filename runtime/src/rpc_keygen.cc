// Self-signed key pairs for RPC servers and clients (`loom rpc-keygen`), with OpenSSL.
#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "rpc_tls.h"

namespace loom::rpc {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Extension = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using Number = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

[[noreturn]] void failed(const std::string& what) {
  char buf[256] = "no reason given";
  if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  LOOM_THROW(DeviceError, "rpc-keygen: ", what, ": ", buf);
}

bool is_ip(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

void add_extension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Extension ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) failed("the extension '" + value + "'");
}

// Writes a PEM file from a memory BIO; the key's file is created with mode 0600 (only its owner
// may read it), replacing one that was there.
void write_file(const std::string& path, BIO* pem, mode_t mode) {
  char* data = nullptr;
  long n = BIO_get_mem_data(pem, &data);
  // O_NOFOLLOW: a link planted at the key's path is not followed to write the key elsewhere.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) LOOM_THROW(DeviceError, "rpc-keygen: cannot write '", path, "': ", std::strerror(errno));
  int error = ::fchmod(fd, mode) == 0 ? 0 : errno;
  for (long done = 0; !error && done < n;) {
    ssize_t k = ::write(fd, data + done, size_t(n - done));
    if (k <= 0) error = k < 0 ? errno : EIO;
    done += k > 0 ? k : 0;
  }
  if (::close(fd) != 0 && !error) error = errno;
  if (error) LOOM_THROW(DeviceError, "rpc-keygen: cannot write '", path, "': ", std::strerror(error));
}

time_t to_time(std::chrono::system_clock::time_point t) { return std::chrono::system_clock::to_time_t(t); }

}  // namespace

std::string write_key_pair(const std::string& key_file, const std::string& cert_file, const KeyPairOptions& o) {
  if (o.not_after <= o.not_before) LOOM_THROW(DeviceError, "rpc-keygen: the certificate would end before it starts");
  Key key(EVP_EC_gen("P-256"));
  if (!key) failed("generating an ECDSA P-256 key");
  Cert cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) failed("a certificate");
  // A random 127-bit serial number: two certificates of the same lab never share one.
  Number serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    failed("a serial number");
  if (!ASN1_TIME_set(X509_getm_notBefore(cert.get()), to_time(o.not_before)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), to_time(o.not_after)))
    failed("the validity period");
  if (X509_set_pubkey(cert.get(), key.get()) != 1) failed("the public key");
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(o.common_name.c_str()), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1)
    failed("the name '" + o.common_name + "'");
  std::string alt;
  for (const std::string& n : o.names) {
    if (n.empty() || n.find_first_of(", \t") != std::string::npos)
      LOOM_THROW(DeviceError, "rpc-keygen: '", n, "' is not a host name or IP address");
    if (!alt.empty()) alt += ',';
    alt += is_ip(n) ? "IP:" : "DNS:";
    alt += n;
  }
  add_extension(cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  add_extension(cert.get(), NID_subject_key_identifier, "hash");
  if (!alt.empty()) add_extension(cert.get(), NID_subject_alt_name, alt);
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) failed("signing the certificate");

  Bio key_pem(BIO_new(BIO_s_mem())), cert_pem(BIO_new(BIO_s_mem()));
  if (!key_pem || PEM_write_bio_PrivateKey(key_pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    failed("encoding the key");
  if (!cert_pem || PEM_write_bio_X509(cert_pem.get(), cert.get()) != 1) failed("encoding the certificate");
  write_file(key_file, key_pem.get(), 0600);
  write_file(cert_file, cert_pem.get(), 0644);
  return tls::fingerprint(cert.get());
}

std::string certificate_fingerprint(const std::string& cert_file) {
  Bio in(BIO_new_file(cert_file.c_str(), "r"));
  if (!in) LOOM_THROW(DeviceError, "cannot read the certificate '", cert_file, "'");
  Cert cert(PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!cert) LOOM_THROW(DeviceError, "'", cert_file, "' holds no PEM certificate");
  return tls::fingerprint(cert.get());
}

}  // namespace loom::rpc
