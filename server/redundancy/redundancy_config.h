// The redundancy.* keys of the server's schema: which distributor of a
// redundancy group is preferred, and how long a returning one must stay up
// before it is switched back to (server/redundancy/service_groups.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config_schema.h"

namespace mdcast::server {

struct ServerConfig;

void add_redundancy_keys(config::Schema<ServerConfig>& schema);
// redundancy.source_rank as distributor ids (entries the rule refused are skipped).
std::vector<uint16_t> source_rank(const std::vector<std::string>& entries);

}  // namespace mdcast::server
