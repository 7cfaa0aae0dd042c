// Tests for client-sdk/src/event_queue.h: order, the bound (the producer waits
// for room), cancelled handles, and one producer and one dispatching thread
// racing (run under ThreadSanitizer with MDCAST_SANITIZE_THREAD=ON).
#include "event_queue.h"

#include <catch2/catch.hpp>
#include <thread>

#include "event_writer.h"

namespace {

using mdcast::Event;
using mdcast::ItemHandle;
using mdcast::ItemState;
using mdcast::detail::EventWriter;
using mdcast::sdk::EventQueue;
using std::chrono::milliseconds;

const std::string kService = "SVC";

// Produces one status event for `handle` whose text carries `n`.
bool produce(EventQueue& queue, uint64_t handle, uint64_t n) {
    const std::string item = "I" + std::to_string(handle);
    Event* event = queue.acquire(ItemHandle{handle});
    if (!event) return false;
    EventWriter::status(*event, EventWriter::ItemRef{ItemHandle{handle}, kService, item, nullptr},
                        ItemState{mdcast::StreamState::kOpen, mdcast::DataState::kOk,
                                  mdcast::StatusCode::kNone, std::to_string(n)},
                        n);
    queue.commit();
    return true;
}

std::vector<std::pair<uint64_t, uint64_t>> drain(EventQueue& queue, size_t max = 1000) {
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    queue.dispatch(milliseconds(0), max, [&](const Event& e) {
        seen.emplace_back(e.handle().id, std::stoull(e.state().text));
    });
    return seen;
}

}  // namespace

TEST_CASE("events come out in the order they went in", "[event_queue]") {
    EventQueue queue(8);
    for (uint64_t n = 1; n <= 5; ++n) REQUIRE(produce(queue, n % 2 + 1, n));
    CHECK(queue.size() == 5);
    const auto seen = drain(queue, 3);
    CHECK(seen == std::vector<std::pair<uint64_t, uint64_t>>{{2, 1}, {1, 2}, {2, 3}});
    CHECK(drain(queue) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 4}, {2, 5}});
    CHECK(queue.size() == 0);
}

TEST_CASE("dispatch waits up to the timeout for a first event", "[event_queue]") {
    EventQueue queue(4);
    const auto start = std::chrono::steady_clock::now();
    CHECK(queue.dispatch(milliseconds(30), 10, [](const Event&) {}) == 0);
    CHECK(std::chrono::steady_clock::now() - start >= milliseconds(25));
    std::thread producer([&] {
        std::this_thread::sleep_for(milliseconds(20));
        produce(queue, 1, 1);
    });
    CHECK(queue.dispatch(milliseconds(5000), 10, [](const Event&) {}) == 1);
    producer.join();
}

TEST_CASE("a full queue makes the producer wait for room", "[event_queue]") {
    EventQueue queue(2);
    REQUIRE(produce(queue, 1, 1));
    REQUIRE(produce(queue, 1, 2));
    std::atomic<bool> third_in{false};
    std::thread producer([&] {
        produce(queue, 1, 3);
        third_in = true;
    });
    // Until the producer is seen waiting (a loaded machine may start it late); bounded.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (queue.full_waits() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    CHECK(queue.full_waits() == 1);
    CHECK_FALSE(third_in.load());
    CHECK(drain(queue, 1).size() == 1);
    producer.join();
    CHECK(third_in.load());
    CHECK(drain(queue) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 2}, {1, 3}});
}

TEST_CASE("released waiters drop what does not fit instead of waiting", "[event_queue]") {
    EventQueue queue(1);
    REQUIRE(produce(queue, 1, 1));
    std::atomic<bool> taken{true};
    std::thread producer(
        [&] { taken = produce(queue, 1, 2); });  // no Catch macros off the main thread
    std::this_thread::sleep_for(milliseconds(20));
    queue.release_waiters();
    producer.join();
    CHECK_FALSE(taken.load());
    CHECK_FALSE(produce(queue, 1, 3));
    CHECK(drain(queue).size() == 1);
    CHECK(produce(queue, 1, 4));  // room again: taken
}

TEST_CASE("a cancelled handle's queued and later events are skipped", "[event_queue]") {
    EventQueue queue(16);
    produce(queue, 1, 1);
    produce(queue, 2, 2);
    produce(queue, 1, 3);
    queue.cancel(ItemHandle{1});
    CHECK_FALSE(produce(queue, 1, 4));
    CHECK(produce(queue, 2, 5));
    CHECK(drain(queue) == std::vector<std::pair<uint64_t, uint64_t>>{{2, 2}, {2, 5}});
    queue.forget(ItemHandle{1});
    CHECK(produce(queue, 1, 6));
    CHECK(drain(queue) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 6}});
}

TEST_CASE("cancelling from inside the handler stops the rest of the batch", "[event_queue]") {
    EventQueue queue(16);
    for (uint64_t n = 1; n <= 6; ++n) produce(queue, 1 + n % 2, n);
    std::vector<uint64_t> seen;
    queue.dispatch(milliseconds(0), 100, [&](const Event& e) {
        seen.push_back(std::stoull(e.state().text));
        if (seen.size() == 2) queue.cancel(ItemHandle{1});
    });
    CHECK(seen == std::vector<uint64_t>{1, 2, 3, 5});  // handle 1 had 2, 4, 6
}

TEST_CASE("a handler that throws consumes its event, the exception reaches dispatch's caller",
          "[event_queue]") {
    EventQueue queue(4);
    produce(queue, 1, 1);
    produce(queue, 1, 2);
    CHECK_THROWS_AS(queue.dispatch(milliseconds(0), 10,
                                   [](const Event&) { throw std::runtime_error("app bug"); }),
                    std::runtime_error);
    CHECK(drain(queue) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 2}});
}

TEST_CASE("one producer and one dispatcher: everything once and in order", "[event_queue]") {
    EventQueue queue(64);  // small, so the producer waits often
    constexpr uint64_t kEvents = 20000;
    std::atomic<uint64_t> refused{0};
    std::thread producer([&] {
        for (uint64_t n = 1; n <= kEvents; ++n) {
            if (!produce(queue, n % 7 + 1, n)) ++refused;
        }
    });
    uint64_t expected = 1;
    bool in_order = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (expected <= kEvents && std::chrono::steady_clock::now() < deadline) {
        queue.dispatch(milliseconds(100), 50, [&](const Event& e) {
            in_order = in_order && std::stoull(e.state().text) == expected &&
                       e.handle().id == expected % 7 + 1 &&
                       e.item() == "I" + std::to_string(e.handle().id);
            ++expected;
        });
    }
    producer.join();
    CHECK(refused == 0);
    CHECK(in_order);
    CHECK(queue.size() == 0);
}

TEST_CASE("cancel from a third thread while events flow", "[event_queue]") {
    EventQueue queue(32);
    std::atomic<bool> done{false};
    std::atomic<bool> cancelled{false};
    std::thread producer([&] {
        for (uint64_t n = 1; n <= 5000; ++n) produce(queue, n % 2 + 1, n);
        done = true;
    });
    std::thread canceller([&] {
        std::this_thread::sleep_for(milliseconds(2));
        queue.cancel(ItemHandle{2});
        cancelled = true;
    });
    uint64_t after_cancel_seen_for_2 = 0;
    bool checking = false;
    while (!done || queue.size() > 0) {
        queue.dispatch(milliseconds(10), 10, [&](const Event& e) {
            if (checking && e.handle().id == 2) ++after_cancel_seen_for_2;
        });
        // Everything dispatched after cancel() has returned must skip handle 2.
        checking = cancelled.load();
    }
    producer.join();
    canceller.join();
    CHECK(after_cancel_seen_for_2 == 0);
}
