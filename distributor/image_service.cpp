#include "distributor/image_service.h"

#include "proto/book_image.h"
#include "proto/limits.h"

namespace mdcast::distributor {

namespace {

// No image to give: why, with the names so servers can match it.
wire::ItemStatus no_image_status(const wire::ImageRequest& request, const ServiceEntry* service,
                                 const ItemEntry* item) {
    wire::ItemStatus status;
    status.set_item_id(item ? item->id : 0);
    status.set_service_id(service ? service->id : 0);
    status.set_service_name(service ? service->name : request.service_name());
    status.set_item_name(item ? item->name : request.item_name());
    auto* s = status.mutable_status();
    if (!item) {
        s->set_stream_state(wire::STREAM_CLOSED);
        s->set_data_state(wire::DATA_SUSPECT);
        s->set_code(wire::STATUS_NOT_FOUND);
        s->set_text(service ? "no such item" : "no such service");
    } else if (item->closed) {
        s->set_stream_state(wire::STREAM_CLOSED);
        s->set_data_state(wire::DATA_SUSPECT);
        if (!item->closed_text.empty()) {
            s->set_code(wire::STATUS_LIMIT_REACHED);
            s->set_text(item->closed_text);
        } else {  // as its source said it (an SDK publisher drops an item too large for it so)
            s->set_code(item->status_code);
            s->set_text(item->status_text.empty() ? "the item's stream was closed by its source"
                                                  : item->status_text);
        }
    } else {
        s->set_stream_state(wire::STREAM_OPEN);
        s->set_data_state(wire::DATA_SUSPECT);
        s->set_code(wire::STATUS_RECOVERING);
        s->set_text("waiting for an image from the source");
    }
    status.set_service_name(status.service_name().substr(0, proto::kMaxServiceNameBytes));
    status.set_item_name(status.item_name().substr(0, proto::kMaxItemNameBytes));
    return status;
}

// A cached image's state, with the code and text that made it suspect: a
// subscriber told only "suspect" could not tell a source gone from a gap.
void set_image_status(wire::Status& status, const ItemEntry& item, const ServiceEntry& service) {
    status.set_stream_state(wire::STREAM_OPEN);
    if (service.state != wire::SERVICE_UP && item.data_state == wire::DATA_OK) {
        status.set_data_state(wire::DATA_SUSPECT);
        status.set_code(wire::STATUS_SOURCE_DOWN);
        status.set_text(source_down_text(service.name));
        return;
    }
    status.set_data_state(item.data_state);
    status.set_code(item.status_code);
    status.set_text(item.status_text);
}

}  // namespace

std::optional<wire::ItemStatus> ImageService::on_image_request(const wire::ImageRequest& request,
                                                               ServerId from) {
    const ServiceEntry* service = request.service_id() != 0
                                      ? registry_.service(request.service_id())
                                      : registry_.service(request.service_name());
    ItemEntry* item = nullptr;
    if (request.item_id() != 0) {
        item = registry_.item(request.item_id());
    } else if (service) {
        item = registry_.find_item(service->id, request.item_name());
    }
    const bool interactive = service && service->mode == wire::SERVICE_INTERACTIVE;
    if (item && item->has_image && !item->unwanted) {
        service = registry_.service(item->service_id);
        if (interactive) link_.on_image_served(*item, from);
        if (send_image(*item, *service)) return std::nullopt;
    }
    if (interactive) return ask_source(request, *service, item, from);
    wire::ItemStatus status = no_image_status(request, service, item);
    if (!item) return status;
    backbone_.send(proto::FrameType::kItemStatus, status);
    return std::nullopt;
}

// An interactive item without an image to give. A refusal or "no such item"
// goes to the asking server alone; the item's status goes on the backbone
// only when it is closed or its source was asked just now, so retries of
// many servers cost one status per source request, not one per retry.
std::optional<wire::ItemStatus> ImageService::ask_source(const wire::ImageRequest& request,
                                                         const ServiceEntry& service,
                                                         ItemEntry* item, ServerId from) {
    const auto ask = link_.ask_source(service, item, request.item_name(), from);
    wire::ItemStatus status = no_image_status(request, &service, ask.item);
    if (!ask.refusal.empty()) {
        status.mutable_status()->set_code(wire::STATUS_LIMIT_REACHED);
        status.mutable_status()->set_text(ask.refusal);
        return status;
    }
    if (!ask.item) return status;
    if (ask.asked || ask.item->closed) backbone_.send(proto::FrameType::kItemStatus, status);
    return std::nullopt;
}

// A solicited Refresh from the cache; false when it does not fit a message.
bool ImageService::send_image(const ItemEntry& item, const ServiceEntry& service) {
    wire::Refresh refresh;
    refresh.set_item_id(item.id);
    refresh.set_item_seq(item.item_seq);
    refresh.set_clear_cache(true);
    refresh.set_solicited(true);
    refresh.set_service_id(service.id);
    refresh.set_service_name(service.name);
    refresh.set_item_name(item.name);
    set_image_status(*refresh.mutable_status(), item, service);
    item.image.to_field_list(*refresh.mutable_fields());
    proto::book_into_refresh(item.image, refresh);
    return backbone_.send(proto::FrameType::kRefresh, refresh);
}

}  // namespace mdcast::distributor
