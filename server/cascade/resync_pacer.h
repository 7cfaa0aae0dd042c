// After a reconnect an edge asks its parent again for every item it holds
// (server/cascade/tcp_upstream.h). Paced: at most max_outstanding names are
// asked and not yet answered, so a link back after an outage is not flooded
// with a burst of requests and images ahead of the live updates. Each entry
// carries the image the edge still holds (item id and sequence), so the parent
// answers "unchanged" for the items that did not change (Subscribe.known_seqs).
//
// An answer is any refresh or status for the name. A parent that stays silent
// on some names (it waits for an image itself) must not stall the rest:
// on_stall() (the owner calls it when a heartbeat interval passed without any
// answer) opens the window again; those names stay asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mdcast::server {

class ResyncPacer {
  public:
    struct Entry {
        std::string service;
        std::string name;
        uint64_t item_id = 0;   // the id of the image held (0: none held)
        uint64_t item_seq = 0;  // its sequence
    };

    explicit ResyncPacer(size_t max_outstanding) : max_outstanding_(max_outstanding) {}

    // A new resync: whatever one was under way is dropped.
    void start(std::vector<Entry> entries);
    // The link is lost: nothing is waited for any more.
    void stop();
    // The entries to ask now, in order: none while more than half of the window
    // is outstanding, else as many as fill it.
    std::vector<Entry> take();
    // A refresh or status for the name arrived. True when this resync had asked
    // for it and was waiting (the window then has room for one more).
    bool answered(const std::string& service, const std::string& name);
    // True when an answer arrived since the last call.
    bool progressed();
    // No answer for a while: the names asked are no longer counted against the
    // window (their answers, when they come, still count as answers).
    void on_stall();

    // Some names not yet answered (queued, asked, or overdue).
    bool active() const { return !queue_.empty() || !outstanding_.empty() || !overdue_.empty(); }
    size_t waiting() const { return queue_.size(); }
    size_t outstanding() const { return outstanding_.size() + overdue_.size(); }

  private:
    using Name = std::pair<std::string, std::string>;
    size_t max_outstanding_;
    std::deque<Entry> queue_;
    std::set<Name> outstanding_;
    std::set<Name> overdue_;  // asked, unanswered at a stall: out of the window
    bool progressed_ = false;
};

}  // namespace mdcast::server
