// The TLS switches every load tool takes (mdcast-client, mdcast-source), with
// the same names and meaning as the SDK's TlsOptions:
//   --tls  --ca-file FILE  --cert-file FILE  --key-file FILE
//   --server-name NAME  --insecure-skip-verify
#pragma once

#include <memory>
#include <string>

#include "common/config/command_line.h"
#include "common/net/tls_context.h"

namespace mdcast::tools {

struct ToolTlsOptions {
    bool enabled = false;
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    std::string server_name;
    bool insecure_skip_verify = false;
};

void add_tls_options(cli::CommandLine& command_line, ToolTlsOptions& options);

// Null without --tls. Throws std::runtime_error naming the option and file.
std::shared_ptr<const TlsContext> tls_context(const ToolTlsOptions& options);

}  // namespace mdcast::tools
