// The busy-poll idle strategy on a real event loop of both kinds (the
// daemons' precise timers, the SDK's coarse ones): off, it never keeps the
// loop awake; on, work keeps the loop polling without sleeping for the spin
// time after the last work, then the loop sleeps again.
#include "common/net/spin_poll.h"

#include <catch2/catch.hpp>

using namespace mdcast;

namespace {
constexpr EventLoop::Timers kBothKinds[] = {EventLoop::Timers::kPrecise,
                                            EventLoop::Timers::kCoarse};
}  // namespace

namespace {

struct Run {
    uint64_t passes_at_30ms = 0;
    uint64_t passes_at_end = 0;
    bool spinning_at_30ms = true;
};

// Work at 1 ms; a look 30 ms after the work, the end 20 ms after the look
// (each timer started by the one before, so a late loop start cannot merge them).
Run run_with(std::chrono::microseconds spin, EventLoop::Timers timers) {
    EventLoop loop(timers);
    SpinPoll spinner(loop, spin);
    Run run;
    Timer stop(loop, [&] {
        run.passes_at_end = spinner.passes();
        loop.stop();
    });
    Timer look(loop, [&] {
        run.passes_at_30ms = spinner.passes();
        run.spinning_at_30ms = spinner.spinning();
        stop.start_once(std::chrono::milliseconds(20));
    });
    Timer work(loop, [&] {
        spinner.on_work();
        look.start_once(std::chrono::milliseconds(30));
    });
    work.start_once(std::chrono::milliseconds(1));
    loop.run();
    return run;
}

}  // namespace

TEST_CASE("off, work never keeps the loop awake", "[spin_poll]") {
    for (auto timers : kBothKinds) {
        const Run run = run_with(std::chrono::microseconds(0), timers);
        CHECK(run.passes_at_end == 0);
        CHECK_FALSE(run.spinning_at_30ms);
    }
}

TEST_CASE("on, work keeps the loop polling for the spin time, then it sleeps", "[spin_poll]") {
    for (auto timers : kBothKinds) {
        const Run run = run_with(std::chrono::microseconds(2000), timers);
        CHECK(run.passes_at_30ms > 1);  // polled without sleeping after the work
        CHECK_FALSE(run.spinning_at_30ms);
        CHECK(run.passes_at_end == run.passes_at_30ms);  // asleep since: no passes while idle
    }
}

TEST_CASE("on, work while spinning extends the spin", "[spin_poll]") {
    // Work every 100 ms with a 250 ms spin: the loop never sleeps in between
    // (generous margins: the machine running the tests may be loaded).
    EventLoop loop;
    SpinPoll spinner(loop, std::chrono::microseconds(250'000));
    int ticks = 0;
    bool spinning_throughout = true;
    Timer work(loop, [&] {
        // Still spinning from the work before: the loop did not sleep in between.
        if (ticks > 0) spinning_throughout = spinning_throughout && spinner.spinning();
        spinner.on_work();
        if (++ticks == 3) return loop.stop();
        work.start_once(std::chrono::milliseconds(100));
    });
    work.start_once(std::chrono::milliseconds(1));
    loop.run();
    CHECK(ticks == 3);
    CHECK(spinning_throughout);
}
