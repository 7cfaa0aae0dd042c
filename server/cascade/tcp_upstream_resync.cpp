// The resync after a login to a parent (docs/cascade.md): every
// name subscribed here is asked again, paced by ResyncPacer, with the sequence of
// the image held here so that an unchanged item comes back without its image.
#include <map>

#include "common/clock.h"
#include "server/cascade/tcp_upstream.h"

namespace mdcast::server {

void TcpUpstream::start_resync() {
    std::vector<ResyncPacer::Entry> entries;
    size_t held = 0;
    const int64_t now = monotonic_ns();
    for (const auto& [service, names] : subscriptions_.by_service()) {
        for (const auto& name : names) {
            subscriptions_.asked(service, name, now);  // by the pacer, in turn
            ResyncPacer::Entry entry{service, name};
            const uint64_t id = subscriptions_.id_of(service, name);
            const auto seq = id == 0 ? std::nullopt : handler_.held_sequence(id);
            if (seq) {
                entry.item_id = id;
                entry.item_seq = *seq;
                ++held;
            }
            entries.push_back(std::move(entry));
        }
    }
    if (entries.empty()) return;
    log_->info("resync with parent {}: {} item(s) to ask again, {} with an image held here",
               parent_, entries.size(), held);
    resync_started_ns_ = monotonic_ns();
    resync_base_ = counters_;
    resync_.start(std::move(entries));
    send_resync();
}

void TcpUpstream::send_resync() {
    if (parent_.empty()) return;
    std::map<std::string, std::vector<ResyncPacer::Entry>> by_service;
    for (auto& entry : resync_.take()) by_service[entry.service].push_back(std::move(entry));
    for (const auto& [service, entries] : by_service) send_subscribes(service, entries);
}

void TcpUpstream::on_resync_answer(const std::string& service, const std::string& name,
                                   bool unchanged) {
    subscriptions_.answered(service, name);
    if (!resync_.answered(service, name)) return;
    ++(unchanged ? counters_.resync_unchanged : counters_.resync_images);
    if (resync_.active()) return resync_more_.fire();
    log_->info("resync with parent {} done in {} ms: {} image(s), {} unchanged", parent_,
               (monotonic_ns() - resync_started_ns_) / 1'000'000,
               counters_.resync_images - resync_base_.resync_images,
               counters_.resync_unchanged - resync_base_.resync_unchanged);
}

}  // namespace mdcast::server
