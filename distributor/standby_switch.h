// Moving a service's items from its active publisher to a standby (or back)
// on one distributor, so that subscribers see no gap, no repeat and no
// suspect status (docs/operations.md, "Redundancy"):
//  - an item whose values on the backbone equal the new active publisher's
//    gets nothing: its next update continues the item's sequence;
//  - an item whose values differ gets one unsolicited refresh with the new
//    publisher's values, at the item's next sequence;
//  - an item the new publisher has no image of gets a status naming why (open,
//    suspect); its first refresh from the new publisher continues the sequence.
// The backbone's per-item sequence is the distributor's: from then on every
// message of the new publisher is renumbered by the item's seq_shift.
#pragma once

#include <cstdint>
#include <string>

#include "distributor/backbone_out.h"
#include "distributor/item_registry.h"
#include "distributor/publisher_group.h"

namespace mdcast::distributor {

enum class ItemHandover { kEqual, kRefresh, kMissing, kNone };

// Moves `item` (its backbone state) to `standby`'s view (nullptr: the new
// publisher has none): the image, sequence, shift and state the backbone has
// from now on. kNone: the item had no image and the standby has none either.
ItemHandover hand_over_item(ItemEntry& item, const StandbyItem* standby);

// hand_over_item for every item of `service`, sending what it decided; fills
// the counts of `done`. `why` names the switch in the statuses of items
// the new publisher lacks.
void switch_items(ItemRegistry& registry, BackboneOut& backbone, const ServiceEntry& service,
                  const GroupMember& to, const std::string& why, GroupSwitch& done);

// The registry's view of `service`'s items, as the demoted active publisher's
// own (its sequence without the shift): it stays a hot standby.
void keep_as_standby(ItemRegistry& registry, uint32_t service_id, GroupMember& demoted);

}  // namespace mdcast::distributor
