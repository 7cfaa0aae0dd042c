// Redundancy groups of the server: every distributor whose directory lists a
// service by the same name is a member of that service's group; one member is
// active (subscribers are served its items), the others are standbys whose
// images the server keeps current from the backbone (hot standby).
//
// A member is usable while its directory says the service is up and its
// distributor is heard. The active member is the best usable one by rank
// (redundancy.source_rank, then the lowest distributor id), with two rules:
//  - the active one becoming unusable switches at once to the best usable
//    standby (failover: no hold-down, a price must not go stale);
//  - a better-ranked member becoming usable again only takes over once it has
//    stayed usable for redundancy.hold_down_ms (switch back: a flapping source
//    restarts its hold-down at every flap, so it never causes a switch storm).
// Pure logic over ids, names and a clock the caller passes; the server moves
// the subscribers (server/redundancy/source_switch.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mdcast::server {

enum class SwitchReason {
    kServiceDown,   // the active member's directory says the service is down
    kSourceSilent,  // nothing heard from the active member's distributor
    kSourceReset,   // the active member's distributor restarted (its item ids are void)
    kPreferred,     // a better-ranked member stayed usable for the hold-down
};
const char* switch_reason_name(SwitchReason reason);

struct GroupSwitch {
    std::string service;
    uint16_t from = 0;
    uint16_t to = 0;
    SwitchReason reason = SwitchReason::kPreferred;
};

class ServiceGroups {
  public:
    struct Member {
        bool listed_up = false;                   // its directory lists the service up
        int64_t usable_since_ns = 0;              // 0: not usable now
        std::optional<SwitchReason> down_reason;  // why it is not usable (when it was)
    };
    struct Group {
        std::map<uint16_t, Member> members;  // by distributor id
        std::optional<uint16_t> active;
        uint64_t switches = 0;
        std::optional<GroupSwitch> last_switch;
        int64_t last_switch_ns = 0;
    };

    // `rank`: distributor ids, most preferred first (ids not in it rank after,
    // lowest id first). `hold_down_ns`: how long a better member must stay
    // usable before it takes over again.
    void configure(std::vector<uint16_t> rank, int64_t hold_down_ns);

    // A directory entry of `source` for `service`.
    void on_service(const std::string& service, uint16_t source, bool up, int64_t now_ns);
    // The distributor went silent (true) or is heard again (false).
    void on_source_silent(uint16_t source, bool silent, int64_t now_ns);
    // The distributor restarted: no member is usable until its new run's
    // directory lists the service up again.
    void on_source_reset(uint16_t source);

    // The switches due at `now`, applied to the groups (each counted).
    std::vector<GroupSwitch> evaluate(int64_t now_ns);

    std::optional<uint16_t> active(const std::string& service) const;
    bool silent(uint16_t source) const { return silent_.contains(source); }
    // The member's directory lists the service down (or no longer lists it).
    bool listed_down(const std::string& service, uint16_t source) const;
    // Members of the service to serve from, best first: the active one, then
    // the usable standbys by rank, then the rest by rank. Empty: no group.
    std::vector<uint16_t> ranked(const std::string& service) const;
    bool usable(const Member& member) const { return member.usable_since_ns != 0; }
    // Usable members other than the active one.
    size_t standby_count(const Group& group) const;
    const std::map<std::string, Group>& groups() const { return groups_; }
    uint64_t switches(SwitchReason reason) const { return switch_counts_[index(reason)]; }

  private:
    static size_t index(SwitchReason reason) { return static_cast<size_t>(reason); }
    size_t rank_of(uint16_t source) const;
    void refresh_usable(Member& member, bool heard, int64_t now_ns, SwitchReason why);
    std::optional<GroupSwitch> due(const std::string& service, Group& group, int64_t now_ns);
    std::optional<uint16_t> best_usable(const Group& group) const;

    std::vector<uint16_t> rank_;
    int64_t hold_down_ns_ = 0;
    std::set<uint16_t> silent_;
    std::map<std::string, Group> groups_;  // by service name
    uint64_t switch_counts_[4] = {};
};

}  // namespace mdcast::server
