// What operators see of the redundancy groups (docs/operations.md,
// "Redundancy"): per service its active distributor and usable standbys in
// /metrics (the alert "no standby" reads them), switches by reason, and the
// whole state of every group in /info.
#include <fmt/format.h>

#include "common/clock.h"
#include "proto/field_image.h"  // before field_values.h, whose `wire` alias would hide its own
#include "proto/field_values.h"
#include "server/server.h"

namespace mdcast::server {

namespace {

constexpr SwitchReason kReasons[] = {SwitchReason::kServiceDown, SwitchReason::kSourceSilent,
                                     SwitchReason::kSourceReset, SwitchReason::kPreferred};

// A service is a group once a second distributor has listed it.
bool redundant(const ServiceGroups::Group& group) {
    return group.members.size() >= 2;
}

}  // namespace

void Server::register_redundancy_metrics() {
    auto& m = metrics_;
    const auto per_group = [this](auto value) {
        return [this, value] {
            MetricsRegistry::Series series;
            for (const auto& [service, group] : groups_.groups()) {
                if (redundant(group)) series.push_back({{{"service", service}}, value(group)});
            }
            return series;
        };
    };
    m.gauge_family("redundancy_active_source",
                   "Per redundancy group (a service two or more distributors list): the "
                   "distributor.id whose items subscribers are served (0: none chosen yet)",
                   per_group([](const ServiceGroups::Group& g) {
                       return static_cast<double>(g.active.value_or(0));
                   }));
    m.gauge_family("redundancy_standby_sources",
                   "Per redundancy group: usable standbys (up and heard) besides the active "
                   "distributor; 0 means one more failure makes the service stale",
                   per_group([this](const ServiceGroups::Group& g) {
                       return static_cast<double>(groups_.standby_count(g));
                   }));
    for (SwitchReason reason : kReasons) {
        m.counter("redundancy_switches_total",
                  "Redundancy groups that switched their active distributor, by reason",
                  {{"reason", switch_reason_name(reason)}},
                  [this, reason] { return groups_.switches(reason); });
    }
    m.counter("redundancy_items_switched_total",
              "Subscribed items moved to another distributor's item of the same name (one "
              "refresh to each subscriber, from the cache)",
              [this] { return switch_counters_.items_switched; });
    m.counter("redundancy_items_without_image_total",
              "Subscribed items the newly active distributor had no current image of at a "
              "switch (told why, or left on the old one when switching back)",
              [this] { return switch_counters_.items_without_image; });
    m.gauge("redundancy_switch_queued_items",
            "Subscribed items a switch has still to move (moved in slices of "
            "redundancy.switch_slice_items per loop iteration)",
            [this] { return static_cast<double>(switches_.size()); });
}

// /info's "redundancy": every group with its members, active one and last switch.
std::string Server::redundancy_json() const {
    const int64_t now = monotonic_ns();
    std::string groups;
    for (const auto& [service, group] : groups_.groups()) {
        if (!redundant(group)) continue;
        std::string members;
        for (const auto& [source, member] : group.members) {
            members += fmt::format(
                "{}{{\"distributor\":{},\"usable\":{},\"usable_for_ms\":{},\"down_reason\":{}}}",
                members.empty() ? "" : ",", source, groups_.usable(member),
                groups_.usable(member) ? (now - member.usable_since_ns) / 1'000'000 : 0,
                member.down_reason ? fmt::format("\"{}\"", switch_reason_name(*member.down_reason))
                                   : "null");
        }
        std::string last = "null";
        if (group.last_switch) {
            last = fmt::format("{{\"from\":{},\"to\":{},\"reason\":\"{}\",\"ago_ms\":{}}}",
                               group.last_switch->from, group.last_switch->to,
                               switch_reason_name(group.last_switch->reason),
                               (now - group.last_switch_ns) / 1'000'000);
        }
        groups += fmt::format(
            "{}{{\"service\":\"{}\",\"active\":{},\"standbys\":{},\"switches\":{},"
            "\"last_switch\":{},\"members\":[{}]}}",
            groups.empty() ? "" : ",", proto::json_escape(service), group.active.value_or(0),
            groups_.standby_count(group), group.switches, last, members);
    }
    std::string rank;
    for (const auto& id : config_.redundancy_source_rank) rank += (rank.empty() ? "" : ",") + id;
    return fmt::format("{{\"hold_down_ms\":{},\"source_rank\":[{}],\"groups\":[{}]}}",
                       config_.redundancy_hold_down_ms, rank, groups);
}

}  // namespace mdcast::server
