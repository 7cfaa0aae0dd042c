// The consumer's and publisher's options: checked once in their
// constructors, so a mistake is reported where it was made rather than as a
// connection that never works; and turned into the settings of their links.
#pragma once

#include <string>

#include "mdcast/consumer.h"
#include "mdcast/publisher.h"
#include "reconnect_policy.h"
#include "server_link.h"

namespace mdcast::sdk {

// Throw std::invalid_argument naming the option and the value.
void validate(const ConsumerOptions& options);
void validate(const PublisherOptions& options);

// The TLS context of options.tls (null when off), built once: the files are
// read here. Throws std::invalid_argument naming the option and the file.
std::shared_ptr<const TlsContext> tls_context(const ConnectionOptions& options);

LinkSettings link_settings(const ConnectionOptions& options, const ServerAddress& server,
                           uint32_t max_frame_bytes, uint64_t max_output_bytes,
                           std::shared_ptr<const TlsContext> tls);
ReconnectSettings reconnect_settings(const ConnectionOptions& options, size_t server_count);

// Throws std::invalid_argument when `name` (a service or item name, `what`) is
// longer than the protocol's `max_bytes` (proto/limits.h): the peer would
// refuse it, and a name too long for a frame would get the connection closed
// on every reconnect. Refused to the caller instead, and nothing is sent.
void require_name_fits(const std::string& name, size_t max_bytes, const char* what);

}  // namespace mdcast::sdk
