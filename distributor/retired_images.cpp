#include "distributor/retired_images.h"

#include <utility>

namespace mdcast::distributor {

RetiredImages::RetiredImages(EventLoop& loop, size_t per_slice, std::chrono::microseconds pause)
    : per_slice_(per_slice == 0 ? 1 : per_slice),
      pause_(pause),
      timer_(loop, [this] { free_slice(); }) {}

void RetiredImages::retire(Items& items) {
    if (items.empty()) return;
    waiting_ += items.size();
    queue_.push_back(std::exchange(items, {}));
    // A timer, not a Trigger: its first pass comes after this pass's flush point.
    if (!timer_.pending()) timer_.start_once(pause_);
}

void RetiredImages::free_slice() {
    size_t budget = per_slice_;
    while (budget > 0 && !queue_.empty()) {
        Items& front = queue_.front();
        auto it = front.begin();
        for (; budget > 0 && it != front.end(); --budget, --waiting_) it = front.erase(it);
        if (front.empty()) queue_.pop_front();
    }
    if (!queue_.empty()) timer_.start_once(pause_);
}

}  // namespace mdcast::distributor
