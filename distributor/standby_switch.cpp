#include "distributor/standby_switch.h"

namespace mdcast::distributor {

namespace {

wire::Refresh switch_refresh(const ItemEntry& item, const ServiceEntry& service) {
    wire::Refresh refresh;
    refresh.set_item_id(item.id);
    refresh.set_item_seq(item.item_seq);
    refresh.set_clear_cache(true);
    refresh.set_service_id(service.id);
    refresh.set_service_name(service.name);
    refresh.set_item_name(item.name);
    auto& status = *refresh.mutable_status();
    status.set_stream_state(wire::STREAM_OPEN);
    status.set_data_state(item.data_state);
    status.set_code(item.status_code);
    status.set_text(item.status_text);
    item.image.to_field_list(*refresh.mutable_fields());
    return refresh;
}

wire::ItemStatus missing_status(const ItemEntry& item, const ServiceEntry& service) {
    wire::ItemStatus status;
    status.set_item_id(item.id);
    status.set_service_id(service.id);
    status.set_service_name(service.name);
    status.set_item_name(item.name);
    auto& s = *status.mutable_status();
    s.set_stream_state(wire::STREAM_OPEN);
    s.set_data_state(wire::DATA_SUSPECT);
    s.set_code(item.status_code);
    s.set_text(item.status_text);
    return status;
}

}  // namespace

ItemHandover hand_over_item(ItemEntry& item, const StandbyItem* standby) {
    if (!standby || !standby->has_image || standby->closed) {
        item.realign_seq = true;
        if (!item.has_image) return ItemHandover::kNone;
        item.data_state = wire::DATA_SUSPECT;
        item.status_code = wire::STATUS_SOURCE_DOWN;
        return ItemHandover::kMissing;
    }
    item.realign_seq = false;
    const bool equal = item.has_image && !item.closed && item.data_state == standby->data_state &&
                       item.status_code == standby->status_code &&
                       proto::same_values(item.image, standby->image);
    if (!equal) {
        item.image = standby->image;
        ++item.item_seq;
        item.data_state = standby->data_state;
        item.status_code = standby->status_code;
        item.status_text = standby->status_text;
        item.has_image = true;
        item.closed = false;
        item.closed_text.clear();
    }
    item.seq_shift = item.item_seq - standby->item_seq;  // mod 2^64, as it is applied
    return equal ? ItemHandover::kEqual : ItemHandover::kRefresh;
}

void switch_items(ItemRegistry& registry, BackboneOut& backbone, const ServiceEntry& service,
                  const GroupMember& to, const std::string& why, GroupSwitch& done) {
    registry.for_each_item_of(service.id, [&](ItemEntry& item) {
        const auto found = to.items.find(item.id);
        const StandbyItem* standby = found == to.items.end() ? nullptr : &found->second;
        switch (hand_over_item(item, standby)) {
            case ItemHandover::kEqual:
                ++done.items_equal;
                break;
            case ItemHandover::kRefresh:
                ++done.items_refreshed;
                backbone.send(proto::FrameType::kRefresh, switch_refresh(item, service));
                break;
            case ItemHandover::kMissing:
                ++done.items_missing;
                item.status_text = why + (standby ? ", which has no current image of this item"
                                                  : ", which does not publish this item");
                backbone.send(proto::FrameType::kItemStatus, missing_status(item, service));
                break;
            case ItemHandover::kNone:
                break;
        }
    });
}

void keep_as_standby(ItemRegistry& registry, uint32_t service_id, GroupMember& demoted) {
    demoted.items.clear();
    registry.for_each_item_of(service_id, [&](ItemEntry& item) {
        if (item.realign_seq) return;  // it never gave this item an image
        StandbyItem& own = demoted.items[item.id];
        own.image = item.image;
        own.item_seq = item.item_seq - item.seq_shift;
        own.has_image = item.has_image;
        own.closed = item.closed;
        own.data_state = item.data_state;
        own.status_code = item.status_code;
        own.status_text = item.status_text;
    });
}

}  // namespace mdcast::distributor
