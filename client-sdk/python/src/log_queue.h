// LogQueue: carries libmdcast's log lines to Python's `logging`.
//
// The SDK calls its log handler on its I/O threads (and on the caller's, for a
// line logged inside a request), under the sink's mutex. Calling Python there
// would need the GIL while holding that mutex, and a thread holding the GIL
// that logs would then wait for the mutex: a deadlock. So the handler only
// copies the line into this bounded queue; a Python thread ("mdcast-log") takes
// the lines with the GIL released and hands them to the "mdcast" logger.
// When the queue holds kMaxLines the newest line is dropped and counted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/log.h"

namespace mdcast::python {

class LogQueue {
  public:
    static constexpr size_t kMaxLines = 10000;
    using Line = std::pair<LogLevel, std::string>;

    void push(LogLevel level, std::string_view message);
    // Every line waiting, after waiting up to `timeout` for the first one.
    std::vector<Line> take(std::chrono::milliseconds timeout);
    // Lines dropped because the queue was full, since the last call.
    uint64_t take_dropped();

  private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Line> lines_;
    uint64_t dropped_ = 0;
};

}  // namespace mdcast::python
