// OpenSSL 3 contexts (SSL_CTX) for the TLS listeners of the daemons and for
// the SDK's and tools' TLS connections, built once from files and shared.
//
// A context is immutable once built: a SIGHUP reload builds a new one and new
// connections take it, while every open connection keeps the context its SSL
// object was made from (OpenSSL counts the references). Building throws
// std::runtime_error naming the setting and the file, with OpenSSL's reason,
// so a bad certificate stops the start-up (or is refused by a reload) with a
// message that says which file to fix.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct ssl_ctx_st;
struct ssl_st;

namespace mdcast {

// Lowest protocol version accepted: "1.2" (the floor) or "1.3".
inline const std::vector<std::string> kTlsVersionNames{"1.2", "1.3"};
// Client certificates at a listener: not asked for, verified when sent, or required.
inline const std::vector<std::string> kTlsClientCertModes{"none", "optional", "required"};

struct TlsServerSettings {
    std::string cert_file;  // PEM certificate chain, leaf first
    std::string key_file;   // PEM private key of the leaf
    std::string ca_file;    // PEM CAs that client certificates must chain to
    std::string min_version = "1.2";
    std::string client_certs = "none";
    // Names used in error messages ("tls.cert_file" for a daemon's config keys).
    std::string key_prefix = "tls.";
};

struct TlsClientSettings {
    std::string ca_file;    // PEM CAs the server must chain to; empty: the system's trust store
    std::string cert_file;  // client certificate for listeners that ask; empty: none
    std::string key_file;
    std::string min_version = "1.2";
    // Accept any server certificate and name. Only for tests and debugging:
    // the connection is encrypted but not authenticated.
    bool insecure_skip_verify = false;
    std::string key_prefix = "tls.";
};

class TlsContext {
  public:
    // Throw std::runtime_error naming the setting and the file on any error
    // (unreadable file, bad PEM, key that does not match the certificate,
    // client_certs without ca_file).
    static std::shared_ptr<const TlsContext> server(const TlsServerSettings& settings);
    static std::shared_ptr<const TlsContext> client(const TlsClientSettings& settings);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    // A new SSL object for one connection (owned by the caller), or nullptr
    // when OpenSSL is out of memory. For a client, `host` is the name (or IP
    // literal) the server's certificate must carry; it is also sent as SNI
    // when it is a name.
    ssl_st* new_server_ssl() const;
    ssl_st* new_client_ssl(const std::string& host) const;

    bool is_server() const { return server_; }
    bool verifies_peer() const { return verify_; }
    // "subject CN=..., expires 2026-01-01" of the loaded certificate (or "no certificate").
    const std::string& description() const { return description_; }

  private:
    TlsContext(ssl_ctx_st* ctx, bool server, bool verify);

    ssl_ctx_st* ctx_;
    bool server_;
    bool verify_;
    std::string description_;
};

// OpenSSL's queued errors as one line (and clears the queue); `fallback` when empty.
std::string tls_error_text(const std::string& fallback = "unknown TLS error");

}  // namespace mdcast
