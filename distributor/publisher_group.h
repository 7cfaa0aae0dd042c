// Standby publishers on one distributor (docs/operations.md, "Redundancy"):
// two or more publishers of one broadcast service form the service's group.
// One is active (the registry's owner: its updates go onto the backbone), the
// others are standbys whose refreshes, updates and statuses only keep their
// own images here current (hot), so a switch needs nothing from them.
//
// A group lasts from its first standby's joining until its last member goes.
// This is the group's bookkeeping alone: who is a member, with what rank,
// who should be active, and the switches made. Moving the items over is
// standby_switch.h's; the distributor decides when (distributor_groups.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/field_image.h"
#include "wire/common.pb.h"

namespace mdcast::distributor {

namespace wire = mdcast::wire::v1;

// A standby's own view of one item, kept current by its own messages.
struct StandbyItem {
    proto::FieldImage image;
    uint64_t item_seq = 0;  // the standby's own sequence
    bool has_image = false;
    bool closed = false;
    wire::DataState data_state = wire::DATA_SUSPECT;
    wire::StatusCode status_code = wire::STATUS_NONE;
    std::string status_text;
};

enum class GroupSwitchReason { kPublisherGone, kPreferred };
std::string_view group_switch_reason_name(GroupSwitchReason reason);

struct GroupMember {
    uint64_t session = 0;
    uint32_t rank = 0;  // lower is preferred; 0 (none stated) is the most preferred
    std::string label;  // "connection N (user U, application A, position P)"
    int64_t joined_ns = 0;
    // A standby's items by id; empty while the member is active (its values
    // are then the registry's).
    std::unordered_map<uint64_t, StandbyItem> items;
};

struct GroupSwitch {
    uint64_t from = 0;  // sessions
    uint64_t to = 0;
    std::string from_label;
    std::string to_label;
    GroupSwitchReason reason = GroupSwitchReason::kPublisherGone;
    int64_t at_ns = 0;
    uint64_t items_refreshed = 0;  // values differed: one refresh each
    uint64_t items_equal = 0;      // the same values: nothing sent, sequence carried on
    uint64_t items_missing = 0;    // the standby had no image: a status naming why
    int64_t took_ns = 0;
};

class PublisherGroup {
  public:
    // The active member, the first of the group.
    PublisherGroup(uint32_t service_id, GroupMember active);

    uint32_t service_id() const { return service_id_; }
    uint64_t active() const { return active_; }
    GroupMember* member(uint64_t session);
    const std::vector<GroupMember>& members() const { return members_; }
    size_t standby_count() const { return members_.empty() ? 0 : members_.size() - 1; }

    void join(GroupMember member) { members_.push_back(std::move(member)); }
    // The active member's proven reconnect (takeover_rule.h) takes its place.
    void replace_active(GroupMember replacement);
    // Removes `session`. When it was the active one, returns the member that
    // should take over (best rank, longest in the group), if any; the caller
    // switches to it with set_active().
    std::optional<uint64_t> leave(uint64_t session);
    // A member ranked better than the active one that has been in the group
    // for `hold_down_ns` (a member that comes back joins anew: each flap starts
    // the wait again), the best of them; nullopt when the active one is best.
    std::optional<uint64_t> preferred(int64_t now_ns, int64_t hold_down_ns) const;
    // Makes `session` (a member) active and records the switch.
    void set_active(const GroupSwitch& done);

    uint64_t switches(GroupSwitchReason reason) const;
    const std::optional<GroupSwitch>& last_switch() const { return last_switch_; }

  private:
    uint32_t service_id_;
    uint64_t active_;
    std::vector<GroupMember> members_;
    std::map<GroupSwitchReason, uint64_t> switches_;
    std::optional<GroupSwitch> last_switch_;
};

}  // namespace mdcast::distributor
