// EventChannel: the bounded hand-over of consumer events from the SDK's I/O
// thread to Python.
//
// The I/O thread push()es each event into the batch that is filling; Python
// take()s the whole batch at once (a swap under the lock), so each side holds
// the lock only to append or to swap. An eventfd is readable exactly while
// events are waiting, so an asyncio loop can watch it instead of a thread.
//
// BOUNDS: at most max_events wait. When full, push() blocks the I/O thread
// until take() makes room (the SDK then stops reading and the server sees the
// back-pressure), except after close(), when nothing waits any more.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "event_batch.h"

namespace mdcast::python {

class EventChannel {
  public:
    // Throws std::system_error when no eventfd can be made.
    EventChannel(size_t max_events, std::shared_ptr<const Dictionary> dictionary);
    ~EventChannel();
    EventChannel(const EventChannel&) = delete;
    EventChannel& operator=(const EventChannel&) = delete;

    // I/O thread. Events of cancelled handles are not kept.
    void push(const Event& event);
    // Everything waiting, after waiting up to `timeout` for the first event
    // (none when closed and empty). The batch may be empty.
    std::shared_ptr<EventBatch> take(std::chrono::milliseconds timeout);
    // Nothing of `handle` is handed over from now on, also not what waits.
    void cancel(uint64_t handle);
    // From now on push() never blocks and take() does not wait.
    void close();
    bool closed() const;

    int fd() const { return fd_; }
    size_t waiting() const;
    uint64_t full_waits() const;

  private:
    std::shared_ptr<EventBatch> spare_batch();

    const size_t max_events_;
    const std::shared_ptr<const Dictionary> dictionary_;
    int fd_ = -1;
    mutable std::mutex mutex_;
    std::condition_variable not_empty_;
    std::condition_variable not_full_;
    std::shared_ptr<EventBatch> filling_;
    // Batches handed to Python; one nobody else holds any more is reused.
    std::vector<std::shared_ptr<EventBatch>> pool_;
    std::unordered_set<uint64_t> cancelled_;
    bool closed_ = false;
    uint64_t full_waits_ = 0;
};

}  // namespace mdcast::python
