// The distributor's idle strategy on a real event loop: off, it never keeps
// the loop awake; on, work keeps the loop polling without sleeping for the
// spin time after the last work, then the loop sleeps again.
#include "distributor/idle_spinner.h"

#include <catch2/catch.hpp>

using namespace mdcast;
using mdcast::distributor::IdleSpinner;

namespace {

struct Run {
    uint64_t passes_at_30ms = 0;
    uint64_t passes_at_end = 0;
    bool spinning_at_30ms = true;
};

// Work at 1 ms; a look 30 ms after the work, the end 20 ms after the look
// (each timer started by the one before, so a late loop start cannot merge them).
Run run_with(std::chrono::microseconds spin) {
    EventLoop loop;
    IdleSpinner spinner(loop, spin);
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

TEST_CASE("off, work never keeps the loop awake", "[idle_spinner]") {
    const Run run = run_with(std::chrono::microseconds(0));
    CHECK(run.passes_at_end == 0);
    CHECK_FALSE(run.spinning_at_30ms);
}

TEST_CASE("on, work keeps the loop polling for the spin time, then it sleeps", "[idle_spinner]") {
    const Run run = run_with(std::chrono::microseconds(2000));
    CHECK(run.passes_at_30ms > 1);  // polled without sleeping after the work
    CHECK_FALSE(run.spinning_at_30ms);
    CHECK(run.passes_at_end == run.passes_at_30ms);  // asleep since: no passes while idle
}

TEST_CASE("on, work while spinning extends the spin", "[idle_spinner]") {
    // Work every 100 ms with a 250 ms spin: the loop never sleeps in between
    // (generous margins: the machine running the tests may be loaded).
    EventLoop loop;
    IdleSpinner spinner(loop, std::chrono::microseconds(250'000));
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
