#include "distributor/interest_leases.h"

#include <unordered_map>

namespace mdcast::distributor {

InterestLeases::InterestLeases(const InterestTracker::Settings& settings, ItemRegistry& registry,
                               BackboneOut& backbone, Link& link)
    : tracker_(settings),
      settings_(settings),
      registry_(registry),
      backbone_(backbone),
      link_(link),
      log_(log::get("distributor")) {}

void InterestLeases::on_image_served(const ItemEntry& item, ServerId server, int64_t now) {
    tracker_.renew(item.id, item.service_id, server, now);
}

SourceAsk InterestLeases::ask_source(const ServiceEntry& service, ItemEntry* item,
                                     const std::string& name, ServerId server, int64_t now) {
    SourceAsk ask;
    ask.item = item;
    if (!link_.source_connected(service)) return ask;
    if (!ask.item) ask.item = register_awaiting(service, name, ask.refusal);
    if (ask.item && tracker_.should_request(ask.item->id, service.id, server, now)) {
        link_.request_from_source(service, *ask.item);
        ask.asked = true;
    }
    return ask;
}

ItemEntry* InterestLeases::register_awaiting(const ServiceEntry& service, const std::string& name,
                                             std::string& refusal) {
    auto& awaiting = awaiting_[service.id];
    if (awaiting.size() >= settings_.max_awaiting_per_service ||
        awaiting_count_ >= settings_.max_awaiting_items) {
        prune_awaiting();  // images may have come since the last tick
    }
    if (awaiting.size() >= settings_.max_awaiting_per_service ||
        awaiting_count_ >= settings_.max_awaiting_items) {
        refuse_awaiting(service, refusal);
        return nullptr;
    }
    ItemEntry* item = registry_.register_item(service.id, name);  // refuses an invalid name
    if (item && !item->has_image && awaiting.insert(item->id).second) ++awaiting_count_;
    return item;
}

// Said at the 1st, 2nd, 4th, 8th ... refusal: loud at once, never a flood.
void InterestLeases::refuse_awaiting(const ServiceEntry& service, std::string& refusal) {
    const bool per_service = awaiting_[service.id].size() >= settings_.max_awaiting_per_service;
    refusal = per_service
                  ? "interactive.max_awaiting_per_service (" +
                        std::to_string(settings_.max_awaiting_per_service) + ") names of service " +
                        service.name + " await their source's answer"
                  : "interactive.max_awaiting_items (" +
                        std::to_string(settings_.max_awaiting_items) +
                        ") names await their sources' answers";
    const uint64_t refused = ++awaiting_refused_;
    if ((refused & (refused - 1)) == 0) {
        log_->warn("refused a name of interactive service {}: {} [{} refused so far]",
                   log::escaped(service.name), refusal, refused);
    }
}

void InterestLeases::prune_awaiting() {
    for (auto& [service_id, ids] : awaiting_) {
        std::erase_if(ids, [&](uint64_t id) {
            const ItemEntry* item = registry_.item(id);
            const bool done = !item || item->has_image;
            if (done) --awaiting_count_;
            return done;
        });
    }
}

void InterestLeases::on_interest(const wire::Interest& interest, ServerId server, int64_t now) {
    if (interest.epoch() != backbone_.epoch()) {
        ++other_epoch_;
        return;
    }
    for (uint64_t id : interest.released_item_ids()) tracker_.release(id, server, now);
    for (uint64_t id : interest.held_item_ids()) renew(id, server, now);
}

// A renewal for an item nobody wanted (dropped meanwhile: every renewal of
// its server lost for a lease time) is new interest: its source is asked again.
void InterestLeases::renew(uint64_t item_id, ServerId server, int64_t now) {
    const ItemEntry* item = registry_.item(item_id);
    if (!item) return;
    const ServiceEntry* service = registry_.service(item->service_id);
    if (!service || service->mode != wire::SERVICE_INTERACTIVE) return;
    if (tracker_.renew(item_id, service->id, server, now))
        link_.request_from_source(*service, *item);
}

void InterestLeases::on_service_announced(const ServiceEntry& service, int64_t now) {
    if (service.mode != wire::SERVICE_INTERACTIVE) return;
    for (uint64_t id : tracker_.rerequest_service(service.id, now)) {
        if (const ItemEntry* item = registry_.item(id)) link_.request_from_source(service, *item);
    }
}

void InterestLeases::tick(int64_t now) {
    prune_awaiting();
    std::unordered_map<uint64_t, std::vector<uint64_t>> by_owner;
    for (const auto& dropped : tracker_.expire(now)) {
        ItemEntry* item = registry_.item(dropped.item_id);
        const ServiceEntry* service = registry_.service(dropped.service_id);
        if (!item || !service) continue;
        if (!item->has_image) {
            // Never answered, or closed by its source: nobody wants it and no
            // server holds its image, so the name and its slot go.
            if (!item->closed) by_owner[service->owner_session].push_back(item->id);
            if (awaiting_[service->id].erase(item->id) > 0) --awaiting_count_;
            registry_.release_item(item->id);
            ++released_;
            continue;
        }
        item->unwanted = true;
        item->data_state = wire::DATA_SUSPECT;
        item->status_code = wire::STATUS_RECOVERING;
        item->status_text = "no subscriber left: not published; a new subscription asks the source";
        by_owner[service->owner_session].push_back(item->id);
        tell_servers_unwanted(*item, *service);
    }
    for (const auto& [session, ids] : by_owner) {
        if (!link_.unsubscribe_at_source(session, ids)) continue;  // gone: nothing to stop
        unsubscribes_sent_ += ids.size();
        log_->info("publisher connection {}: {} item(s) no server wants any more, unsubscribed",
                   session, ids.size());
    }
}

// Servers caching the item must not present its image as current any more.
void InterestLeases::tell_servers_unwanted(const ItemEntry& item, const ServiceEntry& service) {
    wire::ItemStatus status;
    status.set_item_id(item.id);
    status.set_service_id(service.id);
    status.set_service_name(service.name);
    status.set_item_name(item.name);
    auto* s = status.mutable_status();
    s->set_stream_state(wire::STREAM_OPEN);
    s->set_data_state(wire::DATA_SUSPECT);
    s->set_code(item.status_code);
    s->set_text(item.status_text);
    backbone_.send(proto::FrameType::kItemStatus, status);
}

void InterestLeases::register_metrics(MetricsRegistry& m) const {
    const auto& i = tracker_.counters();
    m.gauge("interest_items", "Items of interactive services some server wants (or held)",
            [this] { return tracker_.size(); });
    m.gauge("interest_leases", "Interest leases held by servers on interactive items",
            [this] { return tracker_.lease_count(); });
    m.counter("interest_renewals_total", "Item interest renewed or started by a server's Interest",
              [&i] { return i.renewals; });
    m.counter("interest_released_total",
              "Item interest released by a server (last subscriber left)",
              [&i] { return i.releases; });
    m.counter("interest_leases_expired_total",
              "Item interest leases not renewed within interactive.interest_lease_ms",
              [&i] { return i.leases_expired; });
    m.counter("interest_refused_total",
              "Item interest refused: the item already has the most servers a lease is kept for",
              [&i] { return i.refused; });
    m.counter("interest_other_epoch_total", "Interest messages for another epoch, ignored",
              [this] { return other_epoch_; });
    m.gauge("interest_awaiting_items",
            "Names of interactive services asked for and not yet answered with an image",
            [this] { return awaiting_count_; });
    m.counter("interest_awaiting_refused_total",
              "Names refused over interactive.max_awaiting_per_service or max_awaiting_items",
              [this] { return awaiting_refused_; });
    m.counter("interest_items_released_total",
              "Items of interactive services released from the registry: nobody wanted them "
              "and their source never gave an image",
              [this] { return released_; });
    m.counter("unsubscribes_sent_total",
              "Items no server wants any more, unsubscribed at their interactive source",
              [this] { return unsubscribes_sent_; });
}

}  // namespace mdcast::distributor
