#include "common/net/flush_scheduler.h"

#include <algorithm>

namespace mdcast {

FlushScheduler::FlushScheduler(EventLoop& loop, std::chrono::microseconds interval)
    : interval_(interval), trigger_(loop, [this] { run(); }), timer_(loop, [this] { run(); }) {}

void FlushScheduler::schedule(Flushable& writer) {
    if (writer.flush_scheduled_) return;
    writer.flush_scheduled_ = true;
    pending_.push_back(&writer);
    if (interval_.count() == 0) {
        trigger_.fire();
    } else if (!timer_.pending()) {
        timer_.start_once(interval_);
    }
}

void FlushScheduler::cancel(Flushable& writer) {
    if (!writer.flush_scheduled_) return;
    writer.flush_scheduled_ = false;
    std::erase(pending_, &writer);
    std::replace(running_.begin(), running_.end(), &writer, static_cast<Flushable*>(nullptr));
}

void FlushScheduler::run() {
    ++rounds_;
    // Swap first: a flush may schedule the writer again (partial write) or cancel others.
    running_.swap(pending_);
    for (Flushable* writer : running_) {
        if (writer == nullptr) continue;
        writer->flush_scheduled_ = false;
        writer->flush();
    }
    running_.clear();
}

}  // namespace mdcast
