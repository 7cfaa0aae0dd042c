#include "server/backbone/interest_reporter.h"

#include "proto/limits.h"
#include "proto/source_ids.h"

namespace mdcast::server {

bool InterestReporter::renewal_due(int64_t now_ns) {
    if (now_ns - last_renewal_ns_ < int64_t{proto::kInterestRenewMs} * 1'000'000) return false;
    last_renewal_ns_ = now_ns;
    return true;
}

void InterestReporter::release(uint64_t item_id) {
    if (releases_.insert(item_id).second) ++counters_.released;
}

void InterestReporter::flush(const std::function<bool(uint64_t)>& held) {
    std::vector<uint64_t> ids;
    for (uint64_t id : holds_) {
        if (held(id)) ids.push_back(id);
    }
    holds_.clear();
    send(ids, false);
    ids.clear();
    for (uint64_t id : releases_) {
        if (held(id)) {
            --counters_.released;  // subscribed again before it went out
        } else {
            ids.push_back(id);
        }
    }
    releases_.clear();
    send(ids, true);
}

// Ids grouped by their distributor, at most kMaxInterestIdsPerMessage a
// message so each fits one control datagram.
void InterestReporter::send(const std::vector<uint64_t>& ids, bool released) {
    std::map<uint16_t, ::mdcast::wire::v1::Interest> pending;
    const auto put = [&](uint16_t source, ::mdcast::wire::v1::Interest& interest) {
        ++counters_.messages;
        if (!link_.send_interest(source, interest)) ++counters_.unsent;
        interest.Clear();
    };
    for (uint64_t id : ids) {
        const uint16_t source = proto::item_source(id);
        ::mdcast::wire::v1::Interest& interest = pending[source];
        auto* list =
            released ? interest.mutable_released_item_ids() : interest.mutable_held_item_ids();
        list->Add(id);
        if (!released) ++counters_.renewed;
        if (static_cast<size_t>(list->size()) >= proto::kMaxInterestIdsPerMessage) {
            put(source, interest);
        }
    }
    for (auto& [source, interest] : pending) {
        if (interest.held_item_ids_size() + interest.released_item_ids_size() > 0) {
            put(source, interest);
        }
    }
}

}  // namespace mdcast::server
