#include "server/cascade/resync_pacer.h"

#include <algorithm>

namespace mdcast::server {

void ResyncPacer::start(std::vector<Entry> entries) {
    stop();
    for (auto& entry : entries) queue_.push_back(std::move(entry));
}

void ResyncPacer::stop() {
    queue_.clear();
    outstanding_.clear();
    overdue_.clear();
    progressed_ = false;
}

void ResyncPacer::on_stall() {
    overdue_.merge(outstanding_);
    outstanding_.clear();
}

std::vector<ResyncPacer::Entry> ResyncPacer::take() {
    std::vector<Entry> out;
    // Refilled once half of the window is answered: requests of many names
    // each, not one request per answer.
    if (outstanding_.size() > max_outstanding_ / 2) return out;
    const size_t room =
        max_outstanding_ > outstanding_.size() ? max_outstanding_ - outstanding_.size() : 0;
    const size_t count = std::min(room, queue_.size());
    out.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        outstanding_.insert({queue_.front().service, queue_.front().name});
        out.push_back(std::move(queue_.front()));
        queue_.pop_front();
    }
    return out;
}

bool ResyncPacer::answered(const std::string& service, const std::string& name) {
    if (outstanding_.empty() && overdue_.empty()) return false;
    const Name key{service, name};
    if (outstanding_.erase(key) == 0 && overdue_.erase(key) == 0) return false;
    progressed_ = true;
    return true;
}

bool ResyncPacer::progressed() {
    return std::exchange(progressed_, false);
}

}  // namespace mdcast::server
