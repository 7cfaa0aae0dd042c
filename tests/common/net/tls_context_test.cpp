// TlsContext: what loads, what is refused with which message, and that the
// minimum version and client-certificate policy hold in a real handshake
// (two SSL objects joined by memory BIOs).
#include "common/net/tls_context.h"

#include <openssl/ssl.h>

#include <catch2/catch.hpp>

#include "test_certificates.h"

using namespace mdcast;
using mdcast::testing::TestCertificates;

namespace {

TlsServerSettings server_settings(const TestCertificates& certs) {
    TlsServerSettings s;
    s.cert_file = certs.path("server.pem");
    s.key_file = certs.path("server.key");
    return s;
}

TlsClientSettings client_settings(const TestCertificates& certs) {
    TlsClientSettings s;
    s.ca_file = certs.path("ca.pem");
    return s;
}

std::string error_of(const std::function<void()>& build) {
    try {
        build();
    } catch (const std::runtime_error& error) {
        return error.what();
    }
    return "";
}

// Runs a handshake between a server and a client SSL in memory. True when both finish.
bool handshake(SSL* server, SSL* client) {
    BIO *server_side = nullptr, *client_side = nullptr;
    BIO_new_bio_pair(&server_side, 0, &client_side, 0);
    SSL_set_bio(server, server_side, server_side);
    SSL_set_bio(client, client_side, client_side);
    SSL_set_accept_state(server);
    SSL_set_connect_state(client);
    bool server_done = false, client_done = false;
    for (int round = 0; round < 20 && !(server_done && client_done); ++round) {
        const int c = SSL_do_handshake(client);
        const int s = SSL_do_handshake(server);
        client_done = c == 1;
        server_done = s == 1;
        if ((c <= 0 && SSL_get_error(client, c) == SSL_ERROR_SSL) ||
            (s <= 0 && SSL_get_error(server, s) == SSL_ERROR_SSL)) {
            break;
        }
    }
    // TLS 1.3: the server checks a client certificate after the client is done.
    char byte = 0;
    if (client_done && server_done) {
        SSL_write(client, "x", 1);
        return SSL_read(server, &byte, 1) == 1;
    }
    return false;
}

bool connects(const TlsContext& server, const TlsContext& client,
              const std::string& host = "localhost", int client_max_version = 0) {
    SSL* s = server.new_server_ssl();
    SSL* c = client.new_client_ssl(host);
    if (client_max_version) SSL_set_max_proto_version(c, client_max_version);
    const bool ok = handshake(s, c);
    SSL_free(s);
    SSL_free(c);
    return ok;
}

}  // namespace

TEST_CASE("a matching certificate and key load, the description names the subject",
          "[tls_context]") {
    TestCertificates certs;
    const auto context = TlsContext::server(server_settings(certs));
    CHECK(context->is_server());
    CHECK(context->description().find("CN=server") != std::string::npos);
    CHECK(connects(*context, *TlsContext::client(client_settings(certs))));
    CHECK(connects(*context, *TlsContext::client(client_settings(certs)), "127.0.0.1"));  // IP SAN
}

TEST_CASE("bad files are refused with the setting, the file and the reason", "[tls_context]") {
    TestCertificates certs;
    auto s = server_settings(certs);
    s.cert_file = certs.path("missing.pem");
    auto text = error_of([&] { TlsContext::server(s); });
    CHECK(text.find("tls.cert_file") != std::string::npos);
    CHECK(text.find("missing.pem") != std::string::npos);
    CHECK(text.find("cannot read") != std::string::npos);

    s = server_settings(certs);
    s.cert_file = certs.write("garbage.pem", "not a certificate\n");
    text = error_of([&] { TlsContext::server(s); });
    CHECK(text.find("tls.cert_file (" + s.cert_file + "): not a PEM certificate") !=
          std::string::npos);

    s = server_settings(certs);
    s.key_file = certs.path("other.key");
    text = error_of([&] { TlsContext::server(s); });
    CHECK(text.find("tls.key_file") != std::string::npos);
    CHECK(text.find("does not match the certificate in " + s.cert_file) != std::string::npos);

    s = server_settings(certs);
    s.client_certs = "required";
    CHECK(error_of([&] { TlsContext::server(s); }).find("needs tls.ca_file") != std::string::npos);

    s = server_settings(certs);
    s.min_version = "1.1";
    CHECK(error_of([&] {
              TlsContext::server(s);
          }).find("tls.min_version: '1.1' is not a TLS version") != std::string::npos);
}

TEST_CASE("the minimum version is enforced", "[tls_context]") {
    TestCertificates certs;
    auto s = server_settings(certs);
    s.min_version = "1.3";
    const auto server = TlsContext::server(s);
    const auto client = TlsContext::client(client_settings(certs));
    CHECK(connects(*server, *client));
    CHECK_FALSE(connects(*server, *client, "localhost", TLS1_2_VERSION));  // a 1.2-only client
    s.min_version = "1.2";
    CHECK(connects(*TlsContext::server(s), *client, "localhost", TLS1_2_VERSION));
}

TEST_CASE("the client verifies the CA and the name unless told not to", "[tls_context]") {
    TestCertificates certs;
    const auto server = TlsContext::server(server_settings(certs));
    auto c = client_settings(certs);
    CHECK_FALSE(connects(*server, *TlsContext::client(c), "elsewhere.example"));
    CHECK_FALSE(connects(*server, *TlsContext::client(c), "10.1.2.3"));
    c.ca_file = certs.path("server.pem");  // not the CA that signed it
    CHECK_FALSE(connects(*server, *TlsContext::client(c)));
    c.insecure_skip_verify = true;
    const auto insecure = TlsContext::client(c);
    CHECK_FALSE(insecure->verifies_peer());
    CHECK(connects(*server, *insecure, "elsewhere.example"));
}

TEST_CASE("required client certificates must chain to the CA", "[tls_context]") {
    TestCertificates certs;
    auto s = server_settings(certs);
    s.ca_file = certs.path("ca.pem");
    s.client_certs = "required";
    const auto server = TlsContext::server(s);
    auto c = client_settings(certs);
    CHECK_FALSE(connects(*server, *TlsContext::client(c)));  // no certificate
    c.cert_file = certs.path("client.pem");
    c.key_file = certs.path("client.key");
    CHECK(connects(*server, *TlsContext::client(c)));
    s.client_certs = "optional";
    CHECK(connects(*TlsContext::server(s), *TlsContext::client(client_settings(certs))));
}
