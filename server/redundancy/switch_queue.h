// The subscribed items of a redundancy switch not yet moved to the new active
// member (docs/operations.md, "Redundancy": how the switch is paced).
//
// Moving an item costs a refresh encoded and queued for its subscribers; a
// switch of 100,000 items done in one pass blocks every other client of the
// server's single loop for that long. The server instead queues the items here
// and works them off in bounded slices, one slice per loop iteration, serving
// other clients in between. Each item moves in one step (its subscribers get
// the new member's image and from then on its updates), so an item is never
// delivered twice or out of order however the slices fall. An item waiting
// here is shown nothing: no status, no stale mark; it is still the old
// member's, until its turn.
//
// A second switch of the same service while items wait (the new member failed
// too, or the old one came back) takes over the job: the items keep their
// place, move to the newest target, and the new member's items are added.
// Pure bookkeeping over item ids; the server does the moving.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "server/redundancy/service_groups.h"

namespace mdcast::server {

class SwitchQueue {
  public:
    enum class Outcome { kMoved, kUnchanged, kWaiting, kSkipped };
    struct Job {
        GroupSwitch change;          // the newest switch of the service
        std::deque<uint64_t> items;  // not yet moved, first subscribed first
        int64_t start_ns = 0;        // when the first switch of this job came
        size_t moved = 0;            // moved with a refresh
        size_t unchanged = 0;        // moved with nothing sent (the same values there)
        size_t waiting = 0;          // the new member had no current image: told why
        size_t slices = 0;           // loop passes it took
    };
    // Moves one item for `change`; says what became of it.
    using Step = std::function<Outcome(const GroupSwitch& change, uint64_t item_id)>;

    // Queues `items` (subscribed items of change.from's service) behind those
    // already waiting; an item already waiting keeps its place.
    void add(const GroupSwitch& change, const std::vector<uint64_t>& items, int64_t now_ns);

    // Works off up to `limit` items, the oldest switch first, and returns the
    // jobs that finished in this slice. `limit` 0: all of them.
    std::vector<Job> run(size_t limit, const Step& step);

    bool waiting(uint64_t item_id) const { return waiting_.contains(item_id); }
    size_t size() const { return waiting_.size(); }
    bool empty() const { return waiting_.empty(); }

  private:
    std::deque<Job> jobs_;  // at most one per service, oldest first
    std::unordered_set<uint64_t> waiting_;
};

}  // namespace mdcast::server
