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

// A member's lag in /info: its smoothed update delay, how long ago its last
// update came, and how far its delay is above the active member's (null where
// there is nothing to tell yet).
std::string lag_json(const MemberLag::Lag* lag, const MemberLag::Lag* active, int64_t now_ns) {
    if (lag == nullptr) {
        return "\"update_delay_ms\":null,\"last_update_ms_ago\":null,\"behind_active_ms\":null";
    }
    return fmt::format(
        "\"update_delay_ms\":{:.3f},\"last_update_ms_ago\":{},\"behind_active_ms\":{}",
        lag->delay_ns / 1e6, (now_ns - lag->last_update_ns) / 1'000'000,
        active ? fmt::format("{:.3f}", (lag->delay_ns - active->delay_ns) / 1e6) : "null");
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
    m.gauge_family("redundancy_member_update_delay_seconds",
                   "Per member of a redundancy group (service, distributor): the smoothed delay "
                   "from the publisher's stamp to this server's receipt of its updates; a "
                   "standby above the active member lags it",
                   [this] {
                       MetricsRegistry::Series series;
                       for (const auto& [service, group] : groups_.groups()) {
                           if (!redundant(group)) continue;
                           for (const auto& [source, member] : group.members) {
                               const MemberLag::Lag* lag = member_lag_.find(source, service);
                               if (lag == nullptr) continue;
                               series.push_back(
                                   {{{"service", service}, {"distributor", std::to_string(source)}},
                                    lag->delay_ns / 1e9});
                           }
                       }
                       return series;
                   });
    m.counter("redundancy_items_switched_total",
              "Subscribed items moved to another distributor's item of the same name (at most "
              "one refresh to each subscriber, from the cache)",
              [this] { return switch_counters_.items_switched; });
    m.counter("redundancy_items_unchanged_total",
              "Of the items switched, those sent nothing: the new member's values equal what "
              "their subscribers hold (a failover keeps the item's id and sequence)",
              [this] { return switch_counters_.items_unchanged; });
    m.gauge("redundancy_last_switch_done_timestamp_seconds",
            "When the last switch had moved its last subscribed item (Unix time; 0: none yet)",
            [this] { return switch_counters_.last_done_unix_ns / 1e9; });
    m.counter("redundancy_following_dropped_total",
              "Messages of a failed member's source for an item now following a standby, not "
              "applied (its updates and statuses, and its images until it is active again)",
              [this] { return counters_.following_dropped; });
    m.counter("redundancy_items_without_image_total",
              "Subscribed items the newly active distributor had no current image of at a "
              "switch (told why, or left on the old one when switching back)",
              [this] { return switch_counters_.items_without_image; });
    m.gauge("redundancy_switch_queued_items",
            "Subscribed items a switch has still to move (moved in slices of "
            "redundancy.switch_slice_items, for up to redundancy.switch_slice_us per loop "
            "iteration)",
            [this] { return static_cast<double>(switches_.size()); });
}

// /info's "redundancy": every group with its members, active one and last switch.
std::string Server::redundancy_json() const {
    const int64_t now = monotonic_ns();
    std::string groups;
    for (const auto& [service, group] : groups_.groups()) {
        if (!redundant(group)) continue;
        std::string members;
        const MemberLag::Lag* active_lag =
            group.active ? member_lag_.find(*group.active, service) : nullptr;
        for (const auto& [source, member] : group.members) {
            members += fmt::format(
                "{}{{\"distributor\":{},\"usable\":{},\"usable_for_ms\":{},\"down_reason\":{},{}}}",
                members.empty() ? "" : ",", source, groups_.usable(member),
                groups_.usable(member) ? (now - member.usable_since_ns) / 1'000'000 : 0,
                member.down_reason ? fmt::format("\"{}\"", switch_reason_name(*member.down_reason))
                                   : "null",
                lag_json(member_lag_.find(source, service), active_lag, now));
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
