// Standby publishers on this distributor (publisher_group.h): who joins, when
// the group switches, and what operators see of it (docs/operations.md,
// "Redundancy").
#include <fmt/format.h>

#include "common/clock.h"
#include "distributor/distributor.h"
#include "distributor/standby_switch.h"
#include "proto/field_values.h"

namespace mdcast::distributor {

namespace {

constexpr GroupSwitchReason kReasons[] = {GroupSwitchReason::kPublisherGone,
                                          GroupSwitchReason::kPreferred};

GroupMember member_of(const PublisherSession& session) {
    GroupMember member;
    member.session = session.connection().id();
    member.rank = session.standby_rank();
    member.label = session.label();
    member.joined_ns = monotonic_ns();
    return member;
}

}  // namespace

TakeoverVerdict Distributor::join_as_standby(PublisherSession& claimant,
                                             const ServiceEntry& service,
                                             std::string_view presented_token) {
    if (service.mode != wire::SERVICE_BROADCAST) return TakeoverVerdict::kNotBroadcast;
    PublisherSession* owner = nullptr;
    const auto verdict = judge_claim(claimant, service, presented_token, judge_standby, owner);
    if (verdict != TakeoverVerdict::kAllowed) return verdict;
    auto [it, created] = groups_.try_emplace(service.id, service.id, member_of(*owner));
    if (it->second.member(claimant.connection().id())) return verdict;  // announced again
    it->second.join(member_of(claimant));
    log_->info(
        "service {}: publisher {} joined as a standby (rank {}) of {} (rank {}); {} standby(s)",
        log::escaped(service.name), claimant.label(), claimant.standby_rank(), owner->label(),
        it->second.member(owner->connection().id())->rank, it->second.standby_count());
    return verdict;
}

GroupMember* Distributor::standby_of(uint32_t service_id, uint64_t session) {
    const auto it = groups_.find(service_id);
    if (it == groups_.end() || it->second.active() == session) return nullptr;
    return it->second.member(session);
}

// A proven reconnect of the active publisher keeps its place: the group stays
// as it is, with the new connection active (no switch to a standby and back).
void Distributor::hand_place_to(PublisherSession& claimant, ServiceEntry& service) {
    const auto it = groups_.find(service.id);
    if (it == groups_.end() || it->second.active() != service.owner_session) return;
    GroupMember replacement = member_of(claimant);
    replacement.rank = it->second.member(service.owner_session)->rank;
    it->second.replace_active(std::move(replacement));
    service.owner_session = claimant.connection().id();
}

// `session` went: it leaves every group; where it was active, the best
// standby takes over at once.
void Distributor::leave_groups(uint64_t session, const std::string& why) {
    // Shutting down closes every publisher: no switch to one closed next.
    if (sessions_.shutting_down()) return groups_.clear();
    for (auto it = groups_.begin(); it != groups_.end();) {
        PublisherGroup& group = it->second;
        GroupMember* member = group.member(session);
        if (member) {
            const std::string label = member->label;
            retired_images_.retire(member->items);
            if (const auto next = group.leave(session)) {
                switch_group(group, *next, GroupSwitchReason::kPublisherGone, label, why);
            } else {
                log_->info("service {}: standby publisher {} left ({}); {} standby(s)",
                           log::escaped(registry_.service(group.service_id())->name), label, why,
                           group.standby_count());
            }
        }
        it = group.members().empty() ? groups_.erase(it) : std::next(it);
    }
}

// Once a second: a better-ranked publisher connected for the hold-down takes over.
void Distributor::check_preferred(int64_t now) {
    const int64_t hold_down_ns = int64_t{config_.publishers_standby_hold_down_ms} * 1'000'000;
    for (auto& [service_id, group] : groups_) {
        const auto preferred = group.preferred(now, hold_down_ns);
        if (!preferred) continue;
        GroupMember* active = group.member(group.active());
        if (active) keep_as_standby(registry_, service_id, *active);
        switch_group(group, *preferred, GroupSwitchReason::kPreferred,
                     active ? active->label : "none", "a better rank, connected for the hold-down");
    }
}

void Distributor::switch_group(PublisherGroup& group, uint64_t to, GroupSwitchReason reason,
                               const std::string& from_label, const std::string& why) {
    ServiceEntry* service = registry_.service(group.service_id());
    GroupMember* target = group.member(to);
    GroupSwitch done{.from = group.active(),
                     .to = to,
                     .from_label = from_label,
                     .to_label = target->label,
                     .reason = reason,
                     .at_ns = monotonic_ns()};
    const std::string text =
        fmt::format("service {} switched from publisher {} to {} ({}: {})", service->name,
                    from_label, target->label, group_switch_reason_name(reason), why);
    switch_items(registry_, *backbone_, *service, *target, text, done);
    retired_images_.retire(target->items);  // active: its values are the registry's now
    service->owner_session = to;
    service->takeover_token = new_takeover_token();
    done.took_ns = monotonic_ns() - done.at_ns;
    group.set_active(done);
    ++switch_totals_[static_cast<size_t>(reason)];
    items_refreshed_ += done.items_refreshed;
    items_equal_ += done.items_equal;
    items_missing_ += done.items_missing;
    log_->warn("{}: {} items refreshed, {} unchanged, {} without an image there ({:.1f} ms)",
               log::escaped(text), done.items_refreshed, done.items_equal, done.items_missing,
               static_cast<double>(done.took_ns) / 1e6);
}

void Distributor::register_group_metrics() {
    auto& m = metrics_;
    const auto per_group = [this](auto value) {
        return [this, value] {
            MetricsRegistry::Series series;
            for (const auto& [id, group] : groups_) {
                series.push_back({{{"service", registry_.service(id)->name}}, value(group)});
            }
            return series;
        };
    };
    m.gauge_family("standby_publishers",
                   "Per service that has had standby publishers here: how many now (0: one more "
                   "failure makes the service stale)",
                   per_group([](const PublisherGroup& g) { return double(g.standby_count()); }));
    m.gauge_family("standby_active_publisher",
                   "Per service with standby publishers here: the active publisher's connection id",
                   per_group([](const PublisherGroup& g) { return double(g.active()); }));
    for (GroupSwitchReason reason : kReasons) {
        m.counter("standby_switches_total",
                  "Services whose active publisher changed to a standby here, by reason",
                  {{"reason", std::string(group_switch_reason_name(reason))}},
                  [this, reason] { return switch_totals_[static_cast<size_t>(reason)]; });
    }
    m.gauge("standby_images_to_free",
            "Images of standby publishers that became active or left, not freed yet (freed in "
            "slices after the switch, so its packets leave first)",
            [this] { return double(retired_images_.waiting()); });
    m.counter("standby_items_refreshed_total",
              "Items a standby switch sent one refresh for (the new publisher's values differed)",
              [this] { return items_refreshed_; });
    m.counter("standby_items_unchanged_total",
              "Items a standby switch sent nothing for (equal values; the sequence carried on)",
              [this] { return items_equal_; });
    m.counter("standby_items_without_image_total",
              "Items the new active publisher had no image of at a switch (a suspect status "
              "naming why)",
              [this] { return items_missing_; });
    const auto& p = publisher_counters_;
    m.counter("standby_messages_total",
              "Refreshes, updates and statuses of standby publishers (kept here, not sent)",
              [&p] { return p.standby_messages; });
    m.counter("resequenced_updates_total",
              "Updates renumbered onto their item's sequence after a standby switch",
              [&p] { return p.resequenced; });
}

std::string Distributor::groups_json() const {
    using proto::json_escape;
    const int64_t now = monotonic_ns();
    std::string out;
    for (const auto& [id, group] : groups_) {
        std::string members;
        for (const auto& m : group.members()) {
            members += fmt::format(
                "{}{{\"connection\":{},\"publisher\":\"{}\",\"rank\":{},\"active\":{},"
                "\"member_for_ms\":{},\"items\":{}}}",
                members.empty() ? "" : ",", m.session, json_escape(m.label), m.rank,
                m.session == group.active(), (now - m.joined_ns) / 1'000'000, m.items.size());
        }
        std::string last = "null";
        if (const auto& s = group.last_switch()) {
            last = fmt::format(
                "{{\"from\":\"{}\",\"to\":\"{}\",\"reason\":\"{}\",\"ago_ms\":{},"
                "\"items_refreshed\":{},\"items_unchanged\":{},\"items_without_image\":{},"
                "\"took_ms\":{:.3f}}}",
                json_escape(s->from_label), json_escape(s->to_label),
                group_switch_reason_name(s->reason), (now - s->at_ns) / 1'000'000,
                s->items_refreshed, s->items_equal, s->items_missing, double(s->took_ns) / 1e6);
        }
        out += fmt::format(
            "{}{{\"service\":\"{}\",\"active\":{},\"standbys\":{},\"switches\":{},"
            "\"last_switch\":{},\"members\":[{}]}}",
            out.empty() ? "" : ",", json_escape(registry_.service(id)->name), group.active(),
            group.standby_count(),
            group.switches(GroupSwitchReason::kPublisherGone) +
                group.switches(GroupSwitchReason::kPreferred),
            last, members);
    }
    return fmt::format("{{\"hold_down_ms\":{},\"groups\":[{}]}}",
                       config_.publishers_standby_hold_down_ms, out);
}

}  // namespace mdcast::distributor
