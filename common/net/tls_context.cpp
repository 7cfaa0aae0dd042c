#include "common/net/tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mdcast {

std::string tls_error_text(const std::string& fallback) {
    std::string text;
    while (const unsigned long code = ERR_get_error()) {
        char buffer[256];
        ERR_error_string_n(code, buffer, sizeof buffer);
        if (!text.empty()) text += "; ";
        text += buffer;
    }
    return text.empty() ? fallback : text;
}

namespace {

[[noreturn]] void fail(const std::string& setting, const std::string& file,
                       const std::string& what) {
    throw std::runtime_error(setting + " (" + file + "): " + what);
}

// Gives "cannot read FILE: No such file or directory" before OpenSSL's less
// readable "system lib" errors.
void check_readable(const std::string& setting, const std::string& file) {
    if (file.empty()) throw std::runtime_error(setting + ": a file is needed");
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (!f) fail(setting, file, std::string("cannot read: ") + std::strerror(errno));
    std::fclose(f);
}

int protocol_version(const std::string& setting, const std::string& name) {
    if (name == "1.2") return TLS1_2_VERSION;
    if (name == "1.3") return TLS1_3_VERSION;
    throw std::runtime_error(setting + ": '" + name + "' is not a TLS version (1.2 or 1.3)");
}

struct CtxDeleter {
    void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxDeleter>;

CtxPtr new_ctx(const SSL_METHOD* method, const std::string& prefix,
               const std::string& min_version) {
    ERR_clear_error();
    CtxPtr ctx(SSL_CTX_new(method));
    if (!ctx) throw std::runtime_error("cannot create a TLS context: " + tls_error_text());
    SSL_CTX_set_min_proto_version(ctx.get(), protocol_version(prefix + "min_version", min_version));
    // Frames are small and latency matters: no compression, no renegotiation.
    // A peer that closes TCP without a close_notify ends the stream; every
    // frame is whole, so no truncation can go unnoticed.
    SSL_CTX_set_options(
        ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
    return ctx;
}

// Certificate chain and key, and that they belong together.
void load_identity(SSL_CTX* ctx, const std::string& prefix, const std::string& cert_file,
                   const std::string& key_file) {
    check_readable(prefix + "cert_file", cert_file);
    check_readable(prefix + "key_file", key_file);
    // Key first: a certificate loaded after a key it does not match replaces
    // it quietly, and the check below names the mismatch.
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        fail(prefix + "key_file", key_file, "not a PEM private key: " + tls_error_text());
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
        fail(prefix + "cert_file", cert_file, "not a PEM certificate: " + tls_error_text());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        fail(prefix + "key_file", key_file,
             "does not match the certificate in " + cert_file + ": " + tls_error_text());
    }
}

void load_ca(SSL_CTX* ctx, const std::string& setting, const std::string& ca_file) {
    check_readable(setting, ca_file);
    if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
        fail(setting, ca_file, "no PEM CA certificate: " + tls_error_text());
    }
}

std::string describe_certificate(SSL_CTX* ctx) {
    X509* cert = SSL_CTX_get0_certificate(ctx);
    if (!cert) return "no certificate";
    char subject[256] = "?";
    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
    std::string expiry = "?";
    if (BIO* bio = BIO_new(BIO_s_mem())) {
        if (ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
            char* data = nullptr;
            const long length = BIO_get_mem_data(bio, &data);
            expiry.assign(data, static_cast<size_t>(length));
        }
        BIO_free(bio);
    }
    return std::string("subject ") + subject + ", expires " + expiry;
}

bool is_ip_literal(const std::string& host) {
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
           inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

TlsContext::TlsContext(SSL_CTX* ctx, bool server, bool verify)
    : ctx_(ctx), server_(server), verify_(verify), description_(describe_certificate(ctx)) {}

TlsContext::~TlsContext() {
    SSL_CTX_free(ctx_);
}

std::shared_ptr<const TlsContext> TlsContext::server(const TlsServerSettings& s) {
    const std::string& p = s.key_prefix;
    CtxPtr ctx = new_ctx(TLS_server_method(), p, s.min_version);
    load_identity(ctx.get(), p, s.cert_file, s.key_file);
    bool verify = false;
    if (s.client_certs == "optional" || s.client_certs == "required") {
        if (s.ca_file.empty()) {
            throw std::runtime_error(p + "client_certs: " + s.client_certs + " needs " + p +
                                     "ca_file");
        }
        load_ca(ctx.get(), p + "ca_file", s.ca_file);
        // Tells clients which CAs are accepted, so they pick the right certificate.
        SSL_CTX_set_client_CA_list(ctx.get(), SSL_load_client_CA_file(s.ca_file.c_str()));
        SSL_CTX_set_verify(
            ctx.get(),
            SSL_VERIFY_PEER | (s.client_certs == "required" ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
            nullptr);
        verify = true;
    } else if (s.client_certs != "none") {
        throw std::runtime_error(p + "client_certs: '" + s.client_certs +
                                 "' is not none, optional or required");
    }
    // Resumed sessions skip the certificate exchange: cheap reconnects after a failover.
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
    static const unsigned char kSessionContext[] = "mdcast";
    SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
    return std::shared_ptr<const TlsContext>(new TlsContext(ctx.release(), true, verify));
}

std::shared_ptr<const TlsContext> TlsContext::client(const TlsClientSettings& s) {
    const std::string& p = s.key_prefix;
    CtxPtr ctx = new_ctx(TLS_client_method(), p, s.min_version);
    if (!s.cert_file.empty() || !s.key_file.empty())
        load_identity(ctx.get(), p, s.cert_file, s.key_file);
    if (!s.insecure_skip_verify) {
        if (!s.ca_file.empty()) {
            load_ca(ctx.get(), p + "ca_file", s.ca_file);
        } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
            throw std::runtime_error(
                p +
                "ca_file: empty and the system trust store cannot be loaded: " + tls_error_text());
        }
        SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    }
    return std::shared_ptr<const TlsContext>(
        new TlsContext(ctx.release(), false, !s.insecure_skip_verify));
}

SSL* TlsContext::new_server_ssl() const {
    return SSL_new(ctx_);
}

// The certificate must name `host`: a DNS name is checked against its
// subjectAltName DNS entries (and sent as SNI), an IP literal against its IP entries.
SSL* TlsContext::new_client_ssl(const std::string& host) const {
    SSL* ssl = SSL_new(ctx_);
    if (!ssl) return nullptr;
    const bool ip = is_ip_literal(host);
    if (!ip && !host.empty()) SSL_set_tlsext_host_name(ssl, host.c_str());
    if (verify_ && !host.empty()) {
        const bool ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1
                           : SSL_set1_host(ssl, host.c_str()) == 1;
        if (!ok) {
            SSL_free(ssl);
            return nullptr;
        }
    }
    return ssl;
}

}  // namespace mdcast
