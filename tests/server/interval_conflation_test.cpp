// Tests for server/interval_conflation.h: a conflate_ms subscription's slot
// sends an update at once when quiet, merges the ones within the interval
// (latest value of each field, latest sequence and stamp), hands them over
// as one conflated update when asked, forgets them on an image; the queue
// gives due entries earliest first. A trade is never merged: it goes out on
// its own, after what is owed; a conflated update counts what it stands for.
#include "server/interval_conflation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "proto/frame.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::PacedQueue;
using mdcast::server::PacedSlot;

constexpr int64_t kMs = 1'000'000;
constexpr auto kSend = PacedSlot::Admit::kSend;
constexpr auto kHeld = PacedSlot::Admit::kHeld;
constexpr auto kAfterOwed = PacedSlot::Admit::kAfterOwed;

proto::UpdateView trade(uint64_t seq, uint32_t id, int64_t value) {
    proto::UpdateView u;
    u.item_id = 7;
    u.item_seq = seq;
    u.publish_time_ns = seq * 1000;
    u.trade = true;
    u.fields.push_back(proto::FieldEntry{id, proto::FieldKind::kInt, 0, value, 0, {}});
    return u;
}

proto::UpdateView update(uint64_t seq, std::vector<std::pair<uint32_t, int64_t>> fields) {
    proto::UpdateView u;
    u.item_id = 7;
    u.item_seq = seq;
    u.publish_time_ns = seq * 1000;
    for (const auto& [id, value] : fields) {
        u.fields.push_back(proto::FieldEntry{id, proto::FieldKind::kInt, 0, value, 0, {}});
    }
    return u;
}

proto::UpdateView decode(const std::string& frame) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(frame.data());
    proto::UpdateView out;
    REQUIRE(frame.size() > proto::kFrameHeaderBytes);
    REQUIRE(proto::decode_update(
        {bytes + proto::kFrameHeaderBytes, frame.size() - proto::kFrameHeaderBytes}, out));
    return out;
}

}  // namespace

TEST_CASE("a quiet slot sends at once and merges the updates within the interval", "[conflation]") {
    PacedSlot slot;
    slot.interval_ms = 100;
    CHECK(slot.admit(update(1, {{22, 1}, {30, 10}}), 1000 * kMs) == kSend);
    CHECK_FALSE(slot.owed);
    CHECK(slot.admit(update(2, {{22, 2}}), 1010 * kMs) == kHeld);
    CHECK(slot.admit(update(3, {{32, 300}}), 1050 * kMs) == kHeld);
    CHECK(slot.admit(update(4, {{22, 4}}), 1099 * kMs) == kHeld);
    CHECK(slot.owed);
    CHECK(slot.quiet_from_ns == 1100 * kMs);

    std::string frame;
    REQUIRE(slot.take(frame, 7, {}, 1100 * kMs));
    const auto sent = decode(frame);
    CHECK(sent.item_id == 7);
    CHECK(sent.item_seq == 4);  // the latest sequence and stamp
    CHECK(sent.publish_time_ns == 4000);
    CHECK(sent.conflated);
    CHECK(sent.stands_for == 3);  // updates 2, 3 and 4, stamped 2000 to 4000
    CHECK(sent.first_publish_time_ns == 2000);
    REQUIRE(sent.fields.size() == 2);  // the fields owed, each at its latest value
    CHECK(sent.fields[0].id == 22);
    CHECK(sent.fields[0].integer == 4);
    CHECK(sent.fields[1].id == 32);
    CHECK(sent.fields[1].integer == 300);
    CHECK_FALSE(slot.owed);

    // The interval starts again at the take: nothing goes out at once before it ends.
    CHECK(slot.quiet_from_ns == 1200 * kMs);
    CHECK(slot.admit(update(5, {{22, 5}}), 1150 * kMs) == kHeld);
    frame.clear();
    CHECK(slot.take(frame, 7, {}, 1200 * kMs));
    CHECK(slot.admit(update(6, {{22, 6}}), 1300 * kMs) == kSend);
}

TEST_CASE("a view keeps only its fields and an image drops what was owed", "[conflation]") {
    PacedSlot slot;
    slot.interval_ms = 50;
    CHECK(slot.admit(update(1, {{22, 1}}), 0) == kSend);
    CHECK(slot.admit(update(2, {{22, 2}, {30, 20}, {32, 200}}), 10 * kMs) == kHeld);
    std::string frame;
    REQUIRE(slot.take(frame, 7, {22, 32}, 50 * kMs));
    const auto sent = decode(frame);
    REQUIRE(sent.fields.size() == 2);
    CHECK(sent.fields[0].id == 22);
    CHECK(sent.fields[1].id == 32);

    CHECK(slot.admit(update(3, {{22, 3}}), 60 * kMs) == kHeld);
    slot.on_image();
    CHECK_FALSE(slot.owed);
    frame.clear();
    CHECK_FALSE(slot.take(frame, 7, {}, 100 * kMs));
    CHECK(frame.empty());
}

TEST_CASE("the queue fires due entries earliest first and keeps the rest", "[conflation]") {
    PacedQueue<int> queue;
    queue.push(30, 3);
    queue.push(10, 1);
    queue.push(20, 2);
    CHECK(queue.next_due_ns() == 10);
    std::vector<int> fired;
    queue.pop_due(25, [&](int key) { fired.push_back(key); });
    CHECK(fired == std::vector<int>{1, 2});
    CHECK(queue.size() == 1);
    CHECK(queue.next_due_ns() == 30);
    queue.pop_due(30, [&](int key) { fired.push_back(key); });
    CHECK(fired == std::vector<int>{1, 2, 3});
    CHECK(queue.empty());
    CHECK(queue.next_due_ns() == 0);
}

TEST_CASE("a trade is never merged: what is owed goes first, then the trade", "[conflation]") {
    PacedSlot slot;
    slot.interval_ms = 100;
    CHECK(slot.admit(update(1, {{22, 1}}), 0) == kSend);
    CHECK(slot.admit(update(2, {{22, 2}}), 10 * kMs) == kHeld);
    CHECK(slot.admit(update(3, {{22, 3}}), 20 * kMs) == kHeld);
    // The trade waits for nothing, but the quotes before it must reach the subscriber first.
    CHECK(slot.admit(trade(4, 6, 99), 30 * kMs) == kAfterOwed);
    CHECK(slot.owed);  // admit leaves what is owed for the caller's take()
    std::string frame;
    REQUIRE(slot.take(frame, 7, {}, 30 * kMs));
    const auto owed = decode(frame);
    CHECK(owed.item_seq == 3);
    CHECK(owed.stands_for == 2);
    CHECK(owed.first_publish_time_ns == 2000);
    CHECK_FALSE(owed.trade);
    CHECK_FALSE(slot.owed);

    // A trade with nothing owed goes out at once, within the interval too, and
    // leaves the quotes' count untouched.
    CHECK(slot.admit(trade(5, 6, 100), 40 * kMs) == kSend);
    CHECK(slot.admit(update(6, {{22, 6}}), 50 * kMs) == kHeld);
    CHECK(slot.admit(trade(7, 6, 101), 60 * kMs) == kAfterOwed);
    frame.clear();
    REQUIRE(slot.take(frame, 7, {}, 60 * kMs));
    CHECK(decode(frame).stands_for == 1);
    CHECK(decode(frame).first_publish_time_ns == 6000);
}

TEST_CASE("the counts of a slot's updates add up to what was published", "[conflation]") {
    // Quotes and trades mixed: every trade is sent on its own, every quote is
    // sent at once or counted once in a conflated update.
    PacedSlot slot;
    slot.interval_ms = 100;
    uint64_t delivered = 0;
    uint64_t trades_sent = 0;
    std::vector<uint64_t> trade_order;
    std::string frame;
    const auto take = [&](int64_t now_ns) {
        frame.clear();
        if (slot.take(frame, 7, {}, now_ns)) delivered += decode(frame).stands_for;
    };
    for (uint64_t seq = 1; seq <= 200; ++seq) {
        const int64_t now_ns = static_cast<int64_t>(seq) * 7 * kMs;
        if (slot.owed && now_ns >= slot.quiet_from_ns) take(now_ns);  // the timer
        const bool is_trade = seq % 9 == 0;
        const auto u = is_trade ? trade(seq, 6, static_cast<int64_t>(seq))
                                : update(seq, {{22, static_cast<int64_t>(seq)}});
        const auto decision = slot.admit(u, now_ns);
        if (decision == kAfterOwed) take(now_ns);
        if (decision != kHeld) {
            ++delivered;
            if (is_trade) {
                ++trades_sent;
                trade_order.push_back(seq);
            }
        }
        CHECK_FALSE((is_trade && decision == kHeld));
    }
    take(10'000 * kMs);
    CHECK(delivered == 200);
    CHECK(trades_sent == 200 / 9);
    CHECK(std::is_sorted(trade_order.begin(), trade_order.end()));
}

TEST_CASE("trade, stands_for and the first stamp survive the codec", "[conflation]") {
    proto::UpdateView u = trade(9, 6, 5);
    u.conflated = true;
    u.stands_for = 300;
    u.first_publish_time_ns = 1234;
    std::string frame;
    proto::append_update_frame(frame, u);
    const auto back = decode(frame);
    CHECK(back.trade);
    CHECK(back.stands_for == 300);
    CHECK(back.first_publish_time_ns == 1234);
    CHECK(back.publish_time_ns == 9000);
}
