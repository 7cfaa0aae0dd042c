// The shaping of one direction of mdcast-linkshim, on a fake clock.
#include "link_schedule.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using mdcast::linkshim::DropReason;
using mdcast::linkshim::LinkSchedule;
using mdcast::linkshim::LinkShape;

namespace {

constexpr int64_t kMs = 1'000'000;

std::vector<uint8_t> frame(size_t size, uint8_t tag = 0) {
    return std::vector<uint8_t>(size, tag);
}

uint64_t dropped(const LinkSchedule& s, DropReason reason) {
    return s.counters().dropped[static_cast<size_t>(reason)];
}

std::vector<std::vector<uint8_t>> take(LinkSchedule& s, int64_t now) {
    std::vector<std::vector<uint8_t>> out;
    s.take_due(now, out);
    for (const auto& f : out) s.count_sent(f.size());
    return out;
}

}  // namespace

TEST_CASE("an unshaped link passes every frame at once, in order, bytes unchanged") {
    LinkSchedule s(LinkShape{}, 1);
    for (uint8_t i = 0; i < 5; ++i) REQUIRE(s.offer(frame(60, i), 10 * kMs));
    CHECK(s.next_due_ns() == 10 * kMs);
    const auto out = take(s, 10 * kMs);
    REQUIRE(out.size() == 5);
    for (uint8_t i = 0; i < 5; ++i) CHECK(out[i] == frame(60, i));
    CHECK(s.next_due_ns() == INT64_MAX);
    CHECK(s.counters().frames_out == 5);
    CHECK(s.counters().bytes_out == 300);
}

TEST_CASE("the delay holds each frame for exactly the one-way delay") {
    LinkShape shape;
    shape.delay_us = 25'000;
    LinkSchedule s(shape, 1);
    REQUIRE(s.offer(frame(100, 1), 0));
    REQUIRE(s.offer(frame(100, 2), 3 * kMs));
    CHECK(take(s, 25 * kMs - 1).empty());
    CHECK(take(s, 25 * kMs).size() == 1);
    CHECK(s.next_due_ns() == 28 * kMs);
    CHECK(take(s, 28 * kMs).size() == 1);
}

TEST_CASE("the rate limit spaces frames by their serialisation time, then adds the delay") {
    LinkShape shape;
    shape.rate_bps = 8'000'000;  // 1 byte per microsecond
    shape.delay_us = 1'000;
    LinkSchedule s(shape, 1);
    REQUIRE(s.offer(frame(1000), 0));  // on the wire 0..1 ms, due at 2 ms
    REQUIRE(s.offer(frame(1000), 0));  // waits: 1..2 ms, due at 3 ms
    CHECK(s.queued_bytes(0) == 2000);
    CHECK(s.queued_bytes(kMs / 2) == 1500);
    CHECK(s.next_due_ns() == 2 * kMs);
    CHECK(take(s, 2 * kMs).size() == 1);
    CHECK(s.next_due_ns() == 3 * kMs);
    // The link idle again: a new frame starts at once.
    REQUIRE(s.offer(frame(500), 10 * kMs));
    CHECK(s.queued_bytes(10 * kMs) == 500);
    take(s, 3 * kMs);
    CHECK(s.next_due_ns() == 10 * kMs + kMs / 2 + kMs);
}

TEST_CASE("a full queue behind the rate limit tail-drops, and drains at the rate") {
    LinkShape shape;
    shape.rate_bps = 8'000'000;
    shape.queue_bytes = 3000;
    LinkSchedule s(shape, 1);
    REQUIRE(s.offer(frame(1000), 0));
    REQUIRE(s.offer(frame(1000), 0));
    REQUIRE(s.offer(frame(1000), 0));
    CHECK_FALSE(s.offer(frame(1000), 0));
    CHECK(dropped(s, DropReason::kQueueFull) == 1);
    // One frame's time later there is room for one more.
    CHECK(s.offer(frame(1000), kMs));
    CHECK_FALSE(s.offer(frame(100), kMs));
    CHECK(dropped(s, DropReason::kQueueFull) == 2);
    CHECK(s.counters().frames_in == 6);
}

TEST_CASE("the held bound covers the delay line too") {
    LinkShape shape;
    shape.delay_us = 1'000'000;
    shape.held_bytes = 2500;
    LinkSchedule s(shape, 1);
    REQUIRE(s.offer(frame(1000), 0));
    REQUIRE(s.offer(frame(1000), 0));
    CHECK_FALSE(s.offer(frame(1000), 0));
    CHECK(dropped(s, DropReason::kHeldFull) == 1);
    take(s, 1000 * kMs);
    CHECK(s.offer(frame(1000), 1000 * kMs));
}

TEST_CASE("random loss drops about the share asked, reproducibly for a seed") {
    LinkShape shape;
    shape.loss_percent = 10;
    LinkSchedule first(shape, 7), second(shape, 7);
    std::vector<bool> kept_first, kept_second;
    for (int i = 0; i < 10'000; ++i) {
        kept_first.push_back(first.offer(frame(60), i));
        kept_second.push_back(second.offer(frame(60), i));
    }
    CHECK(kept_first == kept_second);
    const uint64_t lost = dropped(first, DropReason::kLoss);
    CHECK(lost > 800);
    CHECK(lost < 1200);
    CHECK(first.counters().dropped_total() == lost);
}

TEST_CASE("no loss asked, none happens, all of it asked, everything is lost") {
    LinkShape none, all;
    all.loss_percent = 100;
    LinkSchedule keep(none, 3), lose(all, 3);
    for (int i = 0; i < 1000; ++i) {
        CHECK(keep.offer(frame(60), i));
        CHECK_FALSE(lose.offer(frame(60), i));
    }
}

TEST_CASE("a cut drops what is held and everything offered until restored") {
    LinkShape shape;
    shape.delay_us = 10'000;
    LinkSchedule s(shape, 1);
    REQUIRE(s.offer(frame(100), 0));
    REQUIRE(s.offer(frame(100), 0));
    s.set_cut(true);
    CHECK(s.next_due_ns() == INT64_MAX);
    CHECK_FALSE(s.offer(frame(100), kMs));
    CHECK(dropped(s, DropReason::kCut) == 3);
    CHECK(take(s, 100 * kMs).empty());
    s.set_cut(false);
    REQUIRE(s.offer(frame(100), 200 * kMs));
    CHECK(take(s, 210 * kMs).size() == 1);
}

TEST_CASE("frames are validated by size: shorter than a header, or larger than the limit") {
    LinkShape shape;
    shape.max_frame_bytes = 1514;
    LinkSchedule s(shape, 1);
    CHECK_FALSE(s.offer(frame(13), 0));
    CHECK(s.offer(frame(14), 0));
    CHECK(s.offer(frame(1514), 0));
    CHECK_FALSE(s.offer(frame(1515), 0));
    s.reject_oversize(70000);
    s.count_overrun(3);
    CHECK(dropped(s, DropReason::kOverrun) == 3);
    CHECK(dropped(s, DropReason::kRunt) == 1);
    CHECK(dropped(s, DropReason::kOversize) == 2);
    CHECK(s.counters().frames_in == 8);
    CHECK(s.counters().bytes_in == 13 + 14 + 1514 + 1515 + 70000);
}

TEST_CASE("the summary names every counter") {
    LinkSchedule s(LinkShape{}, 1);
    s.offer(frame(100), 0);
    take(s, 0);
    s.count_send_error();
    CHECK(s.counters().summary() ==
          "in=1 in_bytes=100 out=1 out_bytes=100 dropped: loss=0 queue_full=0 held_full=0 cut=0 "
          "oversize=0 runt=0 send_error=1 overrun=0");
}
