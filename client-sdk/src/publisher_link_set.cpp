#include "publisher_link_set.h"

#include <algorithm>
#include <limits>

namespace mdcast::sdk {

PublisherLinkSet::PublisherLinkSet(size_t links) : up_(links), acked_(links), wanted_(links) {}

uint64_t PublisherLinkSet::on_link_up(size_t link) {
    up_[link] = true;
    return advance();
}

uint64_t PublisherLinkSet::on_link_down(size_t link) {
    up_[link] = false;
    wanted_[link].clear();
    return advance();
}

uint64_t PublisherLinkSet::on_flush_ack(size_t link, uint64_t token) {
    acked_[link] = std::max(acked_[link], token);
    return advance();
}

void PublisherLinkSet::on_item_request(size_t link, uint64_t item) {
    wanted_[link].insert(item);
}

bool PublisherLinkSet::on_item_closed(size_t link, uint64_t item) {
    if (wanted_[link].erase(item) == 0) return false;  // not this link's: nothing changes
    return std::none_of(wanted_.begin(), wanted_.end(),
                        [item](const auto& wanted) { return wanted.count(item) > 0; });
}

size_t PublisherLinkSet::links_up() const {
    return static_cast<size_t>(std::count(up_.begin(), up_.end(), true));
}

// The lowest acknowledgement among the links that are up; tokens only grow.
uint64_t PublisherLinkSet::advance() {
    uint64_t lowest = std::numeric_limits<uint64_t>::max();
    for (size_t link = 0; link < up_.size(); ++link) {
        if (up_[link]) lowest = std::min(lowest, acked_[link]);
    }
    if (lowest == std::numeric_limits<uint64_t>::max() || lowest <= acked_by_all_) return 0;
    acked_by_all_ = lowest;
    return lowest;
}

}  // namespace mdcast::sdk
