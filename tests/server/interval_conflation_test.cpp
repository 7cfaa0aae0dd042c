// Tests for server/interval_conflation.h: a conflate_ms subscription's slot
// sends an update at once when quiet, merges the ones within the interval
// (latest value of each field, latest sequence and stamp), hands them over
// as one conflated update when asked, forgets them on an image; the queue
// gives due entries earliest first.
#include "server/interval_conflation.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "proto/frame.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::PacedQueue;
using mdcast::server::PacedSlot;

constexpr int64_t kMs = 1'000'000;

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
    CHECK(slot.admit(update(1, {{22, 1}, {30, 10}}), 1000 * kMs));
    CHECK_FALSE(slot.owed);
    CHECK_FALSE(slot.admit(update(2, {{22, 2}}), 1010 * kMs));
    CHECK_FALSE(slot.admit(update(3, {{32, 300}}), 1050 * kMs));
    CHECK_FALSE(slot.admit(update(4, {{22, 4}}), 1099 * kMs));
    CHECK(slot.owed);
    CHECK(slot.quiet_from_ns == 1100 * kMs);

    std::string frame;
    REQUIRE(slot.take(frame, 7, {}, 1100 * kMs));
    const auto sent = decode(frame);
    CHECK(sent.item_id == 7);
    CHECK(sent.item_seq == 4);  // the latest sequence and stamp
    CHECK(sent.publish_time_ns == 4000);
    CHECK(sent.conflated);
    REQUIRE(sent.fields.size() == 2);  // the fields owed, each at its latest value
    CHECK(sent.fields[0].id == 22);
    CHECK(sent.fields[0].integer == 4);
    CHECK(sent.fields[1].id == 32);
    CHECK(sent.fields[1].integer == 300);
    CHECK_FALSE(slot.owed);

    // The interval starts again at the take: nothing goes out at once before it ends.
    CHECK(slot.quiet_from_ns == 1200 * kMs);
    CHECK_FALSE(slot.admit(update(5, {{22, 5}}), 1150 * kMs));
    frame.clear();
    CHECK(slot.take(frame, 7, {}, 1200 * kMs));
    CHECK(slot.admit(update(6, {{22, 6}}), 1300 * kMs));
}

TEST_CASE("a view keeps only its fields and an image drops what was owed", "[conflation]") {
    PacedSlot slot;
    slot.interval_ms = 50;
    CHECK(slot.admit(update(1, {{22, 1}}), 0));
    CHECK_FALSE(slot.admit(update(2, {{22, 2}, {30, 20}, {32, 200}}), 10 * kMs));
    std::string frame;
    REQUIRE(slot.take(frame, 7, {22, 32}, 50 * kMs));
    const auto sent = decode(frame);
    REQUIRE(sent.fields.size() == 2);
    CHECK(sent.fields[0].id == 22);
    CHECK(sent.fields[1].id == 32);

    CHECK_FALSE(slot.admit(update(3, {{22, 3}}), 60 * kMs));
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
