// The subscribed items of a redundancy switch not yet moved to the new active
// member (docs/operations.md, "Redundancy": how the switch is paced).
//
// Moving an item costs a look at its image and its standby's, and a refresh
// when they differ; a switch of 100,000 items done in one pass blocks every
// other client of the server's single loop for that long. The server instead
// queues the items here and works them off in bounded slices, one slice per
// loop iteration, serving other clients in between. Each item moves in one
// step (its subscribers get the new member's values and from then on its
// updates), so an item is never delivered twice or out of order however the
// slices fall. An item waiting here is shown nothing: no status, no stale
// mark; it is still the old member's, until its turn.
//
// A second switch of the same service while items wait (the new member failed
// too, or the old one came back) takes over the job: the items keep their
// place, move to the newest target, and the new member's items are added. An
// item met twice is moved once: the step skips what already is where the
// switch goes.
// Pure bookkeeping over items (pointers for the server, ids in the tests);
// the server does the moving.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "server/redundancy/service_groups.h"

namespace mdcast::server {

enum class SwitchOutcome { kMoved, kUnchanged, kWaiting, kSkipped };

template <class Item>
class BasicSwitchQueue {
  public:
    using Outcome = SwitchOutcome;
    struct Job {
        GroupSwitch change;       // the newest switch of the service
        std::vector<Item> items;  // in order; those before `next` are done
        size_t next = 0;          // the next item to move
        int64_t start_ns = 0;     // when the first switch of this job came
        size_t moved = 0;         // moved with a refresh
        size_t unchanged = 0;     // moved with nothing sent (the same values there)
        size_t waiting = 0;       // the new member had no current image: told why
        size_t slices = 0;        // loop passes it took

        void count(Outcome outcome) {
            if (outcome == Outcome::kMoved) ++moved;
            if (outcome == Outcome::kUnchanged) ++unchanged;
            if (outcome == Outcome::kWaiting) ++waiting;
        }
        size_t left() const { return items.size() - next; }
    };
    // Moves one item for `change`, counting what became of it (and of any
    // other item it stands for) in `job`.
    using Step = std::function<void(const GroupSwitch& change, Item item, Job& job)>;
    // Told of an item a few steps ahead, to fetch what its step will read:
    // first (stage 0) eight steps ahead, then (stage 1) four.
    using Ahead = std::function<void(Item item, int stage)>;

    // Queues `items` (subscribed items of change.from's service) behind those
    // already waiting.
    void add(const GroupSwitch& change, std::vector<Item> items, int64_t now_ns) {
        Job* job = nullptr;
        for (Job& j : jobs_) {
            if (j.change.service == change.service) job = &j;
        }
        if (!job) {
            job = &jobs_.emplace_back();
            job->start_ns = now_ns;
        }
        job->change = change;  // the items waiting go to the newest target
        size_ += items.size();
        if (job->items.empty()) {
            job->items = std::move(items);
        } else {
            job->items.insert(job->items.end(), items.begin(), items.end());
        }
    }

    // Works off up to `limit` items, the oldest switch first, and returns the
    // jobs that finished in this slice. `limit` 0: all of them.
    std::vector<Job> run(size_t limit, const Step& step, const Ahead& ahead = {}) {
        constexpr size_t kAhead = 8;
        std::vector<Job> finished;
        size_t done = 0;
        while (!jobs_.empty() && (limit == 0 || done < limit)) {
            Job& job = jobs_.front();
            ++job.slices;
            while (job.next < job.items.size() && (limit == 0 || done < limit)) {
                if (ahead && job.next + kAhead < job.items.size()) {
                    ahead(job.items[job.next + kAhead], 0);
                    ahead(job.items[job.next + kAhead / 2], 1);
                }
                const Item item = job.items[job.next++];
                --size_;
                ++done;
                step(job.change, item, job);
            }
            if (job.next < job.items.size()) break;
            finished.push_back(std::move(job));
            jobs_.pop_front();
        }
        return finished;
    }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

  private:
    std::deque<Job> jobs_;  // at most one per service, oldest first
    size_t size_ = 0;       // items waiting in all of them
};

struct CachedItem;
using SwitchQueue = BasicSwitchQueue<CachedItem*>;

}  // namespace mdcast::server
