#include "server/redundancy/redundancy_config.h"

#include <charconv>
#include <optional>
#include <set>

#include "server/server_config.h"

namespace mdcast::server {

namespace {

std::optional<uint16_t> distributor_id(const std::string& text) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value < 1 || value > 65535)
        return std::nullopt;
    return static_cast<uint16_t>(value);
}

void check_source_rank(const ServerConfig& c, config::Problems& problems) {
    std::set<uint16_t> seen;
    for (const auto& entry : c.redundancy_source_rank) {
        const auto id = distributor_id(entry);
        if (!id) {
            problems.push_back(
                {"redundancy.source_rank", "'" + entry + "' is not a distributor id (1..65535)"});
        } else if (!seen.insert(*id).second) {
            problems.push_back({"redundancy.source_rank", entry + " is listed twice"});
        }
    }
}

}  // namespace

void add_redundancy_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.string_list("redundancy.source_rank", &C::redundancy_source_rank, {},
                  "Distributor ids, most preferred first: of the distributors publishing one "
                  "service (a redundancy group), the best-ranked one that is up serves the "
                  "subscribers, the others are hot standbys. Ids not listed rank after, lowest "
                  "id first (empty: the lowest id is active).")
        .reloads();
    s.integer<uint32_t>("redundancy.hold_down_ms", &C::redundancy_hold_down_ms, 5000, 0, 3600000,
                        "A better-ranked distributor that comes back takes over again only once "
                        "its service has stayed up and heard this long; every flap starts the "
                        "wait again, so a flapping source causes no switch storm. Failing over "
                        "away from a source that went never waits.")
        .reloads();
    s.integer<uint32_t>("redundancy.switch_slice_items", &C::redundancy_switch_slice_items, 1000, 1,
                        10000000,
                        "At a switch, subscribed items moved to the new member at a time (a "
                        "slice); the others wait their turn, untouched, while the server serves "
                        "its clients in between. Bounds how long a switch of many items blocks "
                        "the server.")
        .reloads();
    s.integer<uint32_t>("redundancy.switch_slice_us", &C::redundancy_switch_slice_us, 1000, 0,
                        1000000,
                        "At a switch, further slices run in the same loop iteration until this "
                        "long has passed (0: one slice per iteration): a failover that sends "
                        "nothing for most items takes about 0.1 us an item, and a loop "
                        "iteration per 1,000 of them would cost more than the items.")
        .reloads();
    s.rule(check_source_rank);
}

std::vector<uint16_t> source_rank(const std::vector<std::string>& entries) {
    std::vector<uint16_t> rank;
    for (const auto& entry : entries) {
        if (const auto id = distributor_id(entry)) rank.push_back(*id);
    }
    return rank;
}

}  // namespace mdcast::server
