// The one flush point of every connection (STYLE.md habit 3).
//
// Writers enqueue output and ask to be flushed. With a zero interval the flush
// runs once per loop iteration, after all I/O that was ready (natural batching:
// low latency when idle, many messages per write when busy). With an interval
// > 0 (timed writes, the seed's timedWrites/flushInterval) output is coalesced
// and flushed on a timer instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/net/event_loop.h"

namespace mdcast {

class Flushable {
  public:
    virtual void flush() = 0;

  protected:
    virtual ~Flushable() = default;

  private:
    friend class FlushScheduler;
    bool flush_scheduled_ = false;
};

class FlushScheduler {
  public:
    FlushScheduler(EventLoop& loop, std::chrono::microseconds interval);

    void schedule(Flushable& writer);
    // Must be called before a scheduled writer is destroyed.
    void cancel(Flushable& writer);

    uint64_t flush_rounds() const { return rounds_; }

  private:
    void run();

    std::chrono::microseconds interval_;
    Trigger trigger_;
    Timer timer_;
    std::vector<Flushable*> pending_;
    std::vector<Flushable*> running_;
    uint64_t rounds_ = 0;
};

}  // namespace mdcast
