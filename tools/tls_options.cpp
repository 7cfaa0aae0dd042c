#include "tools/tls_options.h"

namespace mdcast::tools {

void add_tls_options(cli::CommandLine& command_line, ToolTlsOptions& o) {
    command_line
        .flag("tls", &o.enabled, "Connect with TLS (to clients.tls_port / publishers.tls_port)")
        .option("ca-file", &o.ca_file, "FILE",
                "With --tls: CAs the peer's certificate must chain to (default: system store)")
        .option("cert-file", &o.cert_file, "FILE",
                "With --tls: client certificate (PEM) for peers that ask for one")
        .option("key-file", &o.key_file, "FILE", "With --tls: private key (PEM) of --cert-file")
        .option("server-name", &o.server_name, "NAME",
                "With --tls: name the certificate must carry (default: the host given)")
        .flag("insecure-skip-verify", &o.insecure_skip_verify,
              "With --tls: DANGER, accept any certificate and name (tests only)");
}

std::shared_ptr<const TlsContext> tls_context(const ToolTlsOptions& o) {
    if (!o.enabled) return nullptr;
    if (o.cert_file.empty() != o.key_file.empty()) {
        throw std::runtime_error("--cert-file and --key-file go together");
    }
    return TlsContext::client(
        {o.ca_file, o.cert_file, o.key_file, "1.2", o.insecure_skip_verify, "--"});
}

}  // namespace mdcast::tools
