// The image service and the interest leases wired as the distributor wires
// them (the image service's Link forwards to the leases), over a real item
// registry and a real multicast backbone on loopback whose messages a tap
// reads back. The leases' Link is the publishers' side: the fixture records
// which sources were asked for which items and told to stop which.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backbone_tap.h"
#include "common/net/event_loop.h"
#include "distributor/image_service.h"
#include "distributor/interest_leases.h"
#include "distributor/multicast_backbone.h"

namespace mdcast::distributor::testing {

constexpr int64_t kMs = 1'000'000;

class RoomsFixture : public NoServersAsk, public ImageService::Link, public InterestLeases::Link {
  public:
    static constexpr uint64_t kPublisher = 5;  // the connection that owns the services

    // Bounds on names awaiting their source (interest_leases.h) as given.
    explicit RoomsFixture(uint32_t max_awaiting_per_service = 50000,
                          uint64_t max_awaiting_items = 200000)
        : config_(loopback_config("239.255.77.23")),
          tap_(config_),
          registry_(1, 10, 100),
          backbone_(loop_, config_, 11, *this),
          leases_(
              {1000 * kMs, 10'000 * kMs, 500 * kMs, max_awaiting_per_service, max_awaiting_items},
              registry_, backbone_, *this),
          images_(registry_, backbone_, *this) {}

    // A service owned by kPublisher.
    ServiceEntry& service(const std::string& name, wire::ServiceMode mode) {
        ServiceEntry* entry = nullptr;
        REQUIRE(registry_.announce(name, mode, kPublisher, entry) ==
                ItemRegistry::AnnounceResult::kAccepted);
        return *entry;
    }
    // An item with an image (as a refresh from its publisher leaves it).
    ItemEntry& imaged_item(const ServiceEntry& service, const std::string& name) {
        ItemEntry* item = registry_.register_item(service.id, name);
        REQUIRE(item);
        item->has_image = true;
        item->data_state = wire::DATA_OK;
        item->item_seq = 3;
        return *item;
    }

    // What the backbone carried since the last call.
    std::vector<BackboneMessage> backbone_messages() {
        backbone_.flush();
        return tap_.messages();
    }

    ItemRegistry& registry() { return registry_; }
    BackboneOut& backbone() { return backbone_; }
    InterestLeases& leases() { return leases_; }
    ImageService& images() { return images_; }
    int64_t now = 1000 * kMs;

    // The publishers' side.
    bool source_up = true;
    std::vector<std::string> asked;                   // item names asked of the source
    std::vector<std::vector<uint64_t>> unsubscribed;  // item ids told to stop

    bool source_connected(const ServiceEntry& service) override {
        return source_up && service.owner_session == kPublisher;
    }
    void request_from_source(const ServiceEntry&, const ItemEntry& item) override {
        if (source_up) asked.push_back(item.name);
    }
    bool unsubscribe_at_source(uint64_t session, const std::vector<uint64_t>& ids) override {
        if (!source_up || session != kPublisher) return false;
        unsubscribed.push_back(ids);
        return true;
    }

    // As the distributor forwards them.
    void on_image_served(const ItemEntry& item, ServerId server) override {
        leases_.on_image_served(item, server, now);
    }
    SourceAsk ask_source(const ServiceEntry& service, ItemEntry* item, const std::string& name,
                         ServerId server) override {
        return leases_.ask_source(service, item, name, server, now);
    }

  private:
    EventLoop loop_;
    DistributorConfig config_;
    BackboneTap tap_;
    ItemRegistry registry_;
    MulticastBackbone backbone_;
    InterestLeases leases_;
    ImageService images_;
};

}  // namespace mdcast::distributor::testing
