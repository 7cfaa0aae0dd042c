#include "server/redundancy/switch_queue.h"

#include <algorithm>

namespace mdcast::server {

void SwitchQueue::add(const GroupSwitch& change, const std::vector<uint64_t>& items,
                      int64_t now_ns) {
    auto job = std::find_if(jobs_.begin(), jobs_.end(),
                            [&](const Job& j) { return j.change.service == change.service; });
    if (job == jobs_.end()) {
        job = jobs_.insert(jobs_.end(), Job{change, {}, now_ns, 0, 0, 0, 0});
    } else {
        job->change = change;  // the items waiting go to the newest target
    }
    waiting_.reserve(waiting_.size() + items.size());
    for (uint64_t id : items) {
        if (waiting_.insert(id).second) job->items.push_back(id);
    }
}

std::vector<SwitchQueue::Job> SwitchQueue::run(size_t limit, const Step& step) {
    std::vector<Job> finished;
    size_t done = 0;
    while (!jobs_.empty() && (limit == 0 || done < limit)) {
        Job& job = jobs_.front();
        ++job.slices;
        while (!job.items.empty() && (limit == 0 || done < limit)) {
            const uint64_t id = job.items.front();
            job.items.pop_front();
            waiting_.erase(id);
            ++done;
            switch (step(job.change, id)) {
                case Outcome::kMoved:
                    ++job.moved;
                    break;
                case Outcome::kUnchanged:
                    ++job.unchanged;
                    break;
                case Outcome::kWaiting:
                    ++job.waiting;
                    break;
                case Outcome::kSkipped:
                    break;
            }
        }
        if (!job.items.empty()) break;
        finished.push_back(std::move(job));
        jobs_.pop_front();
    }
    return finished;
}

}  // namespace mdcast::server
