// The one place a backbone implementation is chosen: a second one is added
// here (and named in the config), nowhere else in the distributor.
#include "distributor/backbone_out.h"

#include "distributor/multicast_backbone.h"

namespace mdcast::distributor {

std::unique_ptr<BackboneOut> make_backbone_out(EventLoop& loop, const DistributorConfig& config,
                                               uint64_t epoch, BackboneOut::Handler& handler) {
    return std::make_unique<MulticastBackbone>(loop, config, epoch, handler);
}

}  // namespace mdcast::distributor
