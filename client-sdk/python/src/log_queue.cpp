#include "log_queue.h"

namespace mdcast::python {

void LogQueue::push(LogLevel level, std::string_view message) {
    {
        std::lock_guard lock(mutex_);
        if (lines_.size() >= kMaxLines) {
            ++dropped_;
            return;
        }
        lines_.emplace_back(level, std::string(message));
    }
    ready_.notify_one();
}

std::vector<LogQueue::Line> LogQueue::take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [this] { return !lines_.empty(); });
    std::vector<Line> lines(std::make_move_iterator(lines_.begin()),
                            std::make_move_iterator(lines_.end()));
    lines_.clear();
    return lines;
}

uint64_t LogQueue::take_dropped() {
    std::lock_guard lock(mutex_);
    return std::exchange(dropped_, 0);
}

}  // namespace mdcast::python
