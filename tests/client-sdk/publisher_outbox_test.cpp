// Tests for client-sdk/src/publisher_outbox.h (and the public FieldList it
// copies from): order, strings surviving buffer growth, the byte bound, the
// wake-up rule, and several publishing threads.
#include "publisher_outbox.h"

#include <catch2/catch.hpp>
#include <thread>

#include "mdcast/field_list.h"
#include "proto/field_image.h"
#include "wire/common.pb.h"

namespace {

using mdcast::FieldKind;
using mdcast::FieldList;
using mdcast::sdk::OutboxBatch;
using mdcast::sdk::OutboxRecord;
using mdcast::sdk::PublisherOutbox;
constexpr auto kNow = PublisherOutbox::Wake::kNow;
constexpr auto kDeferred = PublisherOutbox::Wake::kDeferred;

OutboxRecord update_record(uint64_t item, uint64_t stamp = 0) {
    OutboxRecord r;
    r.kind = OutboxRecord::Kind::kUpdate;
    r.item = item;
    r.stamp = stamp;
    return r;
}

}  // namespace

TEST_CASE("a field list keeps its string values valid while it grows and when copied",
          "[field_list]") {
    FieldList list;
    list.add_string(3, "first");
    for (int i = 0; i < 100; ++i)
        list.add_string(100 + static_cast<uint32_t>(i), std::string(50, 'a' + i % 26));
    list.add_decimal(22, 10125, -2)
        .add_int(30, 7)
        .add_double(3404, 1.5)
        .add_time(16, 99)
        .add_blank(6);
    CHECK(list.values()[0].text == "first");
    CHECK(list.values()[100].text == std::string(50, 'a' + 99 % 26));
    const FieldList copy = list;
    list.clear();
    list.add_string(3, "overwritten");
    CHECK(copy.values()[0].text == "first");
    CHECK(copy.size() == 106);
    CHECK(copy.values()[101].kind == FieldKind::kDecimal);
    CHECK(copy.values()[105].kind == FieldKind::kBlank);
    FieldList assigned;
    assigned = copy;
    CHECK(assigned.values()[50].text == copy.values()[50].text);
    CHECK(assigned.values()[50].text.data() != copy.values()[50].text.data());
}

TEST_CASE("records come out in order with their fields and texts", "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 20);
    bool wake = false;
    OutboxRecord add;
    add.kind = OutboxRecord::Kind::kAddItem;
    add.item = 1;
    REQUIRE(outbox.push(add, {}, "SVC", "ITEM.A", false, kNow, wake));
    CHECK(wake);  // was empty: the I/O thread must be woken
    FieldList fields;
    for (int i = 0; i < 50; ++i) {
        fields.clear();
        fields.add_int(30, i).add_string(3, "value " + std::to_string(i) + std::string(40, '.'));
        REQUIRE(outbox.push(update_record(1, static_cast<uint64_t>(i)), fields.values(), {}, {},
                            true, kNow, wake));
        CHECK_FALSE(wake);  // a wake-up is already on its way
    }
    OutboxBatch batch;
    outbox.take(batch);
    CHECK(outbox.empty());
    REQUIRE(batch.records.size() == 51);
    CHECK(batch.text1(batch.records[0]) == "SVC");
    CHECK(batch.text2(batch.records[0]) == "ITEM.A");
    for (int i = 0; i < 50; ++i) {
        const auto& r = batch.records[static_cast<size_t>(i) + 1];
        CHECK(r.stamp == static_cast<uint64_t>(i));
        const auto f = batch.fields_of(r);
        REQUIRE(f.size() == 2);
        CHECK(f[0].integer == i);
        CHECK(f[1].kind == mdcast::proto::FieldKind::kString);
        CHECK(f[1].text == "value " + std::to_string(i) + std::string(40, '.'));
    }
    REQUIRE(outbox.push(update_record(2), {}, {}, {}, true, kNow, wake));
    CHECK_FALSE(wake);  // the I/O thread took something: it comes back without one
    outbox.take(batch);
    CHECK(batch.records.size() == 1);
    outbox.take(batch);  // found nothing: the I/O thread goes to sleep
    CHECK(batch.records.empty());
    REQUIRE(outbox.push(update_record(3), {}, {}, {}, true, kNow, wake));
    CHECK(wake);
}

TEST_CASE(
    "string values stay right when the batch text grows for names and status texts, "
    "and when a short one moves with the swap",
    "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 24);
    OutboxBatch batch;
    bool wake = false;
    for (int round = 0; round < 3; ++round) {
        FieldList fields;
        fields.add_string(3, "ab");  // short: the batch text starts inside the string
        REQUIRE(outbox.push(update_record(1, 1), fields.values(), {}, {}, true, kNow, wake));
        for (int i = 0; i < 20; ++i) {
            fields.clear();
            fields.add_string(3, std::to_string(i) + "-value").add_int(30, i);
            REQUIRE(outbox.push(update_record(1, static_cast<uint64_t>(i + 2)), fields.values(), {},
                                {}, true, kNow, wake));
            OutboxRecord status;  // a status text that makes the batch text grow
            status.kind = OutboxRecord::Kind::kStatus;
            REQUIRE(outbox.push(status, {}, std::string(100 * (i + 1), 's'), {}, true, kNow, wake));
        }
        outbox.take(batch);
        REQUIRE(batch.records.size() == 41);
        CHECK(batch.fields_of(batch.records[0])[0].text == "ab");
        for (int i = 0; i < 20; ++i) {
            const auto& update = batch.records[static_cast<size_t>(1 + 2 * i)];
            CHECK(batch.fields_of(update)[0].text == std::to_string(i) + "-value");
            CHECK(batch.text1(batch.records[static_cast<size_t>(2 + 2 * i)]).size() ==
                  static_cast<size_t>(100 * (i + 1)));
        }
        outbox.take(batch);  // empty: the next round starts from swapped buffers
    }
}

TEST_CASE("a deferring batch wakes the I/O thread once, at its end, others still wake it",
          "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 20);
    bool wake = true;
    CHECK_FALSE(outbox.wake_owed());  // nothing queued: nothing owed
    for (uint64_t i = 1; i <= 10; ++i) {
        REQUIRE(outbox.push(update_record(1, i), {}, {}, {}, true, kDeferred, wake));
        CHECK_FALSE(wake);  // corked: the I/O thread is left asleep
    }
    CHECK(outbox.wake_owed());        // the batch's end wakes it, once
    CHECK_FALSE(outbox.wake_owed());  // already on its way
    REQUIRE(outbox.push(update_record(1, 11), {}, {}, {}, true, kNow, wake));
    CHECK_FALSE(wake);  // the batch's wake-up covers it
    OutboxBatch batch;
    outbox.take(batch);
    CHECK(batch.records.size() == 11);
    outbox.take(batch);  // nothing more: the I/O thread sleeps again
    CHECK(batch.records.empty());

    // Another thread publishing while a batch is open is not held back by it:
    // its push wakes the I/O thread for everything queued, the batch's too.
    REQUIRE(outbox.push(update_record(1, 12), {}, {}, {}, true, kDeferred, wake));
    CHECK_FALSE(wake);
    REQUIRE(outbox.push(update_record(2, 1), {}, {}, {}, true, kNow, wake));
    CHECK(wake);
    CHECK_FALSE(outbox.wake_owed());  // the batch's end owes nothing more
    outbox.take(batch);
    CHECK(batch.records.size() == 2);
    CHECK_FALSE(outbox.wake_owed());  // empty
}

TEST_CASE("no wake-up while the I/O thread is draining, one once it found the outbox empty",
          "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 20);
    OutboxBatch batch;
    bool wake = false;
    REQUIRE(outbox.push(update_record(1, 1), {}, {}, {}, true, kNow, wake));
    CHECK(wake);
    // The I/O thread takes and works through the batch; a publisher that does
    // not batch keeps pushing meanwhile: none of it wakes the I/O thread, and
    // nothing is owed at a batch's end either.
    for (uint64_t round = 0; round < 3; ++round) {
        outbox.take(batch);
        CHECK(batch.records.size() == (round == 0 ? 1u : 5u));
        for (uint64_t i = 0; i < 5; ++i) {
            REQUIRE(outbox.push(update_record(1, 10 * round + i), {}, {}, {}, true, kNow, wake));
            CHECK_FALSE(wake);
        }
        CHECK_FALSE(outbox.wake_owed());
    }
    outbox.take(batch);
    CHECK(batch.records.size() == 5);
    outbox.take(batch);
    CHECK(batch.records.empty());
    CHECK_FALSE(outbox.wake_owed());  // nothing queued
    REQUIRE(outbox.push(update_record(1, 99), {}, {}, {}, true, kDeferred, wake));
    CHECK_FALSE(wake);
    CHECK(outbox.wake_owed());  // asleep now: the batch's end must wake it
}

TEST_CASE("an update is encoded on the publishing thread: its bytes hold its stamp and fields",
          "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 20);
    FieldList fields;
    fields.add_int(30, -7)
        .add_decimal(22, -10125, -2)
        .add_double(3404, 101.125)
        .add_string(3, "VOD.L \xE2\x82\xAC")
        .add_time(5, 1'790'000'000'123'456'789)
        .add_blank(6);
    bool wake = false;
    REQUIRE(outbox.push(update_record(9, 1234), fields.values(), {}, {}, true, kNow, wake));
    OutboxRecord status;
    status.kind = OutboxRecord::Kind::kStatus;
    REQUIRE(outbox.push(status, {}, "text", {}, true, kNow, wake));  // not encoded: no bytes
    OutboxBatch batch;
    outbox.take(batch);
    REQUIRE(batch.records.size() == 2);
    CHECK(batch.wire_of(batch.records[1]).empty());
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update(batch.wire_of(batch.records[0]), view));
    CHECK(view.item_id == 0);  // the I/O thread adds id and sequence
    CHECK(view.item_seq == 0);
    CHECK(view.publish_time_ns == 1234);
    const auto kept = batch.fields_of(batch.records[0]);
    REQUIRE(view.fields.size() == kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
        CHECK(view.fields[i].id == kept[i].id);
        CHECK(view.fields[i].kind == kept[i].kind);
        CHECK(view.fields[i].integer == kept[i].integer);
        CHECK(view.fields[i].exponent == kept[i].exponent);
        CHECK(view.fields[i].real == kept[i].real);
        CHECK(view.fields[i].text == kept[i].text);
    }
    CHECK(kept[3].text == "VOD.L \xE2\x82\xAC");
    CHECK(kept[0].text.empty());  // only strings carry text
    using ProtoKind = mdcast::proto::FieldKind;
    const ProtoKind kinds[] = {ProtoKind::kInt,    ProtoKind::kDecimal, ProtoKind::kDouble,
                               ProtoKind::kString, ProtoKind::kTime,    ProtoKind::kBlank};
    for (size_t i = 0; i < kept.size(); ++i) CHECK(kept[i].kind == kinds[i]);
}

TEST_CASE("the byte bound refuses bounded records only", "[publisher_outbox]") {
    // An update's 1,000-byte string counts twice: kept for the image merge and
    // in the encoded bytes.
    PublisherOutbox outbox(8192);
    FieldList fields;
    fields.add_string(3, std::string(1000, 'x'));
    bool wake = false;
    int taken = 0;
    while (outbox.push(update_record(1), fields.values(), {}, {}, true, kNow, wake)) ++taken;
    CHECK(taken >= 3);
    CHECK(taken <= 4);
    OutboxRecord announce;
    announce.kind = OutboxRecord::Kind::kAnnounce;
    CHECK(outbox.push(announce, {}, "SVC", {}, false, kNow, wake));  // control records always fit
    OutboxBatch batch;
    outbox.take(batch);
    CHECK(batch.records.size() == static_cast<size_t>(taken) + 1);
    CHECK(outbox.push(update_record(1), fields.values(), {}, {}, true, kNow, wake));  // room again
}

TEST_CASE("a frame that could pass the distributor's limit is refused, nothing kept",
          "[publisher_outbox]") {
    PublisherOutbox outbox(1 << 20);
    CHECK(outbox.max_frame_bytes() == 1u << 20);  // before any distributor announced one
    outbox.set_max_frame_bytes(4096);
    bool wake = false;
    FieldList small;
    small.add_int(30, 1);
    REQUIRE(outbox.push(update_record(1, 1), small.values(), {}, {}, true, kNow, wake));
    FieldList big;
    big.add_string(3, std::string(5000, 'x'));
    OutboxRecord refresh;
    refresh.kind = OutboxRecord::Kind::kRefresh;
    OutboxRecord status;
    status.kind = OutboxRecord::Kind::kStatus;
    using Refusal = PublisherOutbox::Pushed::Refusal;
    const auto update = outbox.push(update_record(1, 2), big.values(), {}, {}, true, kNow, wake);
    CHECK(update.refusal == Refusal::kTooLarge);
    CHECK(update.frame_bytes > 5000);
    CHECK(outbox.push(refresh, big.values(), {}, {}, true, kNow, wake).refusal ==
          Refusal::kTooLarge);
    CHECK(outbox.push(status, {}, std::string(5000, 's'), {}, true, kNow, wake).refusal ==
          Refusal::kTooLarge);
    const std::vector<uint8_t> map(5000, 0);
    OutboxRecord book = refresh;
    book.book = true;
    CHECK(outbox.push(book, small.values(), {}, {}, true, kNow, wake, map).refusal ==
          Refusal::kTooLarge);
    REQUIRE(outbox.push(update_record(1, 3), small.values(), {}, {}, true, kNow, wake));
    // Only the two small updates are there, their bytes and fields whole.
    OutboxBatch batch;
    outbox.take(batch);
    REQUIRE(batch.records.size() == 2);
    CHECK(batch.fields.size() == 2);
    CHECK(batch.text.empty());
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update(batch.wire_of(batch.records[1]), view));
    CHECK(view.publish_time_ns == 3);
    CHECK(batch.wire.size() == batch.records[1].wire_offset + batch.records[1].wire_size);
}

TEST_CASE("a refresh's bound is at least its frame, and within a few bytes of it",
          "[publisher_outbox]") {
    // The I/O thread frames the refresh with the item's id and sequence, which
    // the call does not know: the bound takes them at their widest.
    FieldList fields;
    fields.add_decimal(22, 10125, -2).add_string(3, std::string(300, 'n')).add_int(30, -7);
    const std::string text = "closing time";
    OutboxRecord refresh;
    refresh.kind = OutboxRecord::Kind::kRefresh;
    refresh.stream = mdcast::StreamState::kClosed;
    PublisherOutbox outbox(1 << 20);
    bool wake = false;
    REQUIRE(outbox.push(refresh, fields.values(), text, {}, true, kNow, wake));
    OutboxBatch batch;
    outbox.take(batch);
    mdcast::proto::FieldImage image;
    image.apply(batch.fields_of(batch.records[0]));
    mdcast::wire::v1::Refresh framed;
    framed.set_item_id(~uint64_t{0});
    framed.set_item_seq(~uint64_t{0});
    framed.set_clear_cache(true);
    framed.set_solicited(true);
    framed.mutable_status()->set_stream_state(mdcast::wire::v1::STREAM_CLOSED);
    framed.mutable_status()->set_data_state(mdcast::wire::v1::DATA_SUSPECT);
    framed.mutable_status()->set_code(mdcast::wire::v1::STATUS_LIMIT_REACHED);
    framed.mutable_status()->set_text(text);
    image.to_field_list(*framed.mutable_fields());
    const size_t exact = framed.ByteSizeLong();
    const size_t bound =
        mdcast::sdk::refresh_body_bound(batch.fields_of(batch.records[0]), text.size(), 0);
    CHECK(bound >= exact);
    CHECK(bound <= exact + 64);
    // Exactly at the limit it is taken; a byte under, refused.
    outbox.set_max_frame_bytes(static_cast<uint32_t>(bound));
    CHECK(outbox.push(refresh, fields.values(), text, {}, true, kNow, wake));
    outbox.set_max_frame_bytes(static_cast<uint32_t>(bound - 1));
    CHECK_FALSE(outbox.push(refresh, fields.values(), text, {}, true, kNow, wake));
}

TEST_CASE("several publishing threads: each thread's records stay in its order",
          "[publisher_outbox]") {
    PublisherOutbox outbox(64 << 20);
    constexpr int kThreads = 4;
    constexpr uint64_t kPerThread = 5000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            FieldList fields;
            bool wake = false;
            for (uint64_t n = 1; n <= kPerThread; ++n) {
                fields.clear();
                fields.add_string(3, "thread " + std::to_string(t));
                outbox.push(update_record(static_cast<uint64_t>(t), n), fields.values(), {}, {},
                            true, kNow, wake);
            }
        });
    }
    std::vector<uint64_t> last(kThreads, 0);
    uint64_t total = 0;
    bool ordered = true;
    OutboxBatch batch;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (total < kThreads * kPerThread && std::chrono::steady_clock::now() < deadline) {
        outbox.take(batch);
        for (const auto& r : batch.records) {
            ordered = ordered && r.stamp == last[r.item] + 1 &&
                      batch.fields_of(r)[0].text == "thread " + std::to_string(r.item);
            last[r.item] = r.stamp;
            ++total;
        }
    }
    for (auto& thread : threads) thread.join();
    CHECK(ordered);
    CHECK(total == kThreads * kPerThread);
}
