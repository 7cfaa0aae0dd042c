// What the Publisher's front end drives on the I/O thread: one PublisherCore
// (one distributor at a time, the failover list) or a PublisherFan (every
// distributor at once, PublisherOptions::publish_to_all). The front end wakes
// it when the outbox has something and stops it once.
#pragma once

#include <cstdint>

namespace mdcast::sdk {

class PublisherWorker {
  public:
    virtual ~PublisherWorker() = default;
    virtual void start() = 0;
    // Sends what is queued (for at most `drain_ms`), then closes and stops the loop.
    virtual void stop(uint32_t drain_ms) = 0;
    // The outbox has something: take it and work through it.
    virtual void on_wake() = 0;
    // The publishing thread's turn instead of a wake-up (PublisherCore's
    // contract); false: the I/O thread must be woken.
    virtual bool work_from_caller(bool coalesce) = 0;
};

}  // namespace mdcast::sdk
