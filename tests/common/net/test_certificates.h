// A throw-away CA with a server and a client certificate, made by the openssl
// CLI in a temporary directory (removed at the end), for the TLS unit tests.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace mdcast::testing {

class TestCertificates {
  public:
    TestCertificates() {
        char pattern[] = "/tmp/mdcast-tls-test-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        dir_ = pattern;
        run("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out "
            "ca.pem "
            "-days 2 -subj /CN=test-ca -addext basicConstraints=critical,CA:TRUE "
            "-addext keyUsage=critical,keyCertSign,cRLSign");
        issue("server", "DNS:localhost,IP:127.0.0.1", "serverAuth");
        issue("client", "DNS:client", "clientAuth");
        issue("other", "DNS:other", "serverAuth");
    }
    ~TestCertificates() { std::filesystem::remove_all(dir_); }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path(name)) << text;
        return path(name);
    }

  private:
    void run(const std::string& args) {
        const std::string command = "cd " + dir_ + " && openssl " + args + " >/dev/null 2>&1";
        REQUIRE(std::system(command.c_str()) == 0);
    }
    void issue(const std::string& name, const std::string& san, const std::string& usage) {
        write(name + ".ext", "subjectAltName=" + san + "\nextendedKeyUsage=" + usage + "\n");
        run("req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + name +
            ".key -out " + name + ".csr -subj /CN=" + name);
        run("x509 -req -in " + name +
            ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out " + name +
            ".pem -extfile " + name + ".ext");
    }

    std::string dir_;
};

}  // namespace mdcast::testing
