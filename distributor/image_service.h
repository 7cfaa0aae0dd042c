// The image service of the distributor: answers a server's ImageRequest.
//
// Rules:
//  - an item with a current image (the distributor's cache: a refresh merged
//    with every update since) is answered with a solicited Refresh on the
//    backbone, so every server caching the item gains from one send; its data
//    state is suspect while the service is down;
//  - an item of an interactive service without an image is asked of its source
//    (through the Link: interest leases decide whether to ask now), and the
//    servers are told it is recovering until the image arrives;
//  - a name nothing is known by is answered NOT_FOUND to the asking server
//    alone (returned to the backbone, which knows where that server is): one
//    client's unknown names must not cost the other servers anything
//    (docs/hardening.md). Names in answers are cut to the wire limits.
#pragma once

#include <optional>
#include <string>

#include "distributor/backbone_out.h"
#include "distributor/item_registry.h"

namespace mdcast::distributor {

class ImageService {
  public:
    // Interest in interactive items, as the image service sees it.
    class Link {
      public:
        // `server` was sent the image of an interactive item.
        virtual void on_image_served(const ItemEntry& item, ServerId server) = 0;
        // `server` wants an interactive item there is no image of: its source
        // is asked (interest_leases.h).
        virtual SourceAsk ask_source(const ServiceEntry& service, ItemEntry* item,
                                     const std::string& name, ServerId server) = 0;

      protected:
        virtual ~Link() = default;
    };

    ImageService(ItemRegistry& registry, BackboneOut& backbone, Link& link)
        : registry_(registry), backbone_(backbone), link_(link) {}

    // Answers on the backbone; returns the answer meant for the asker alone.
    std::optional<wire::ItemStatus> on_image_request(const wire::ImageRequest& request,
                                                     ServerId from);

  private:
    bool send_image(const ItemEntry& item, const ServiceEntry& service);
    std::optional<wire::ItemStatus> ask_source(const wire::ImageRequest& request,
                                               const ServiceEntry& service, ItemEntry* item,
                                               ServerId from);

    ItemRegistry& registry_;
    BackboneOut& backbone_;
    Link& link_;
};

}  // namespace mdcast::distributor
