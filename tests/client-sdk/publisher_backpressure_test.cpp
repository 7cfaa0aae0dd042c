// Back-pressure on plain update() calls (no Publisher::Batch), whichever
// thread writes: a distributor that stops reading fills the socket, then the
// connection's queue, then the bounded outbox, and update() refuses; the
// connection is kept (no abort, no re-image), and once the distributor reads
// again every update the publisher took arrives once, in order. The natural
// batching of plain calls (caller_write_gate.h) must never trade this away.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "mdcast/publisher.h"
#include "scripted_peer.h"
#include "wire/publisher.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::fail;
using std::chrono::milliseconds;

constexpr uint32_t kPrice = 22;

mdcast::FieldList price(int64_t mantissa) {
    mdcast::FieldList fields;
    fields.add_decimal(kPrice, mantissa, -2);
    return fields;
}

// A distributor of one broadcast item that can stop reading: the session
// and its one registration, then every refresh and update as (seq, price).
class StallingDistributor : public scripted::Peer {
  public:
    void open_session() {
        accept_login();
        const auto announce = expect<wire::ServiceAnnounce>(FrameType::kServiceAnnounce);
        wire::ServiceAnnounceResponse answer;
        answer.set_name(announce.name());
        answer.set_service_id(9);
        send(FrameType::kServiceAnnounceResponse, answer);
        const auto request = expect<wire::ItemRegister>(FrameType::kItemRegister);
        if (request.items_size() != 1) fail("expected one item registered");
        wire::ItemRegistered registered;
        registered.set_service_id(request.service_id());
        registered.add_items()->set_ref(request.items(0).ref());
        registered.mutable_items(0)->set_item_id(kItemId);
        send(FrameType::kItemRegistered, registered);
    }
    // Reads until `last` is known (not 0), its update has come and a Flush
    // after it (30 s at most).
    void read_until(const std::atomic<uint64_t>& last) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        for (;;) {
            if (std::chrono::steady_clock::now() > deadline) fail("the publisher went quiet");
            auto frame = read(milliseconds(50));
            if (frame && note(*frame) && last != 0 && !frames.empty() &&
                frames.back().first >= last) {
                return;
            }
        }
    }
    static constexpr uint64_t kItemId = 40;
    std::vector<std::pair<uint64_t, int64_t>> frames;  // (seq, price); the refresh's seq is 0
    int refreshes = 0;

  private:
    // True for a Flush (acknowledged).
    bool note(const std::pair<FrameType, std::string>& frame) {
        if (frame.first == FrameType::kFlush) {
            wire::Flush flush;
            flush.ParseFromString(frame.second);
            wire::FlushAck ack;
            ack.set_token(flush.token());
            send(FrameType::kFlushAck, ack);
            return true;
        }
        if (frame.first == FrameType::kRefresh) {
            wire::Refresh r;
            if (!r.ParseFromString(frame.second) || r.item_id() != kItemId) fail("bad refresh");
            ++refreshes;
            frames.emplace_back(r.item_seq(), r.fields().fields(0).decimal_value().mantissa());
        } else if (frame.first == FrameType::kUpdate) {
            wire::Update u;
            if (!u.ParseFromString(frame.second) || u.item_id() != kItemId) fail("bad update");
            frames.emplace_back(u.item_seq(), u.fields().fields(0).decimal_value().mantissa());
        }
        return false;
    }
};

void wait_until(const std::atomic<bool>& flag) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!flag && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
}

}  // namespace

TEST_CASE(
    "plain update() calls to a distributor that stops reading: update() refuses once the "
    "outbox is full, the connection stays, and every update taken arrives once, in order",
    "[publisher][backpressure]") {
    const bool from_caller = GENERATE(true, false);
    StallingDistributor d;
    d.set_receive_buffer(2048);
    mdcast::PublisherOptions options;
    options.distributors.push_back({"127.0.0.1", d.port()});
    options.log_level = "off";
    options.write_from_caller = from_caller;
    options.max_queued_bytes = 256 << 10;
    options.max_output_bytes = 256 << 10;
    mdcast::PublisherHandler handler;
    mdcast::Publisher publisher(options, handler);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    REQUIRE(publisher.refresh(item, price(0)));
    std::atomic<bool> registered{false}, held_back{false};
    std::atomic<uint64_t> last{0};  // the last update published, once known
    scripted::Script script([&] {
        d.open_session();
        registered = true;
        wait_until(held_back);  // not reading meanwhile: the publisher's output backs up
        d.read_until(last);
    });
    publisher.start();
    wait_until(registered);
    // Plain calls, each retried after a refusal, until none has been taken for
    // 100 ms: the stalled distributor has held back the socket, the
    // connection's queue and the outbox, and so the application (20 s at most).
    uint64_t taken = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (auto last_taken = std::chrono::steady_clock::now();;) {
        const auto now = std::chrono::steady_clock::now();
        REQUIRE(now < give_up);
        if (now - last_taken > milliseconds(100)) break;
        if (publisher.update(item, price(static_cast<int64_t>(taken + 1)))) {
            ++taken;
            last_taken = now;
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    const auto stalled = publisher.stats();  // before the distributor reads again
    held_back = true;
    CHECK(stalled.outbox_full > 0);
    CHECK(stalled.updates_sent < taken);  // the rest is held in the outbox and the queue
    // Then more, each retried until taken: the distributor reads again.
    for (int more = 0; more < 50'000; ++more) {
        while (!publisher.update(item, price(static_cast<int64_t>(taken + 1)))) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        ++taken;
    }
    last = taken;
    INFO("write_from_caller " << from_caller);
    CHECK(publisher.flush(std::chrono::seconds(20)));
    CHECK(script.join() == "");
    CHECK(d.refreshes == 1);  // never re-imaged: the connection was kept
    REQUIRE(d.frames.size() == taken + 1);
    for (uint64_t seq = 0; seq <= taken; ++seq) {
        INFO("frame " << seq);
        REQUIRE(d.frames[seq].first == seq);
        REQUIRE(d.frames[seq].second == static_cast<int64_t>(seq));
    }
    const auto stats = publisher.stats();
    CHECK(stats.connections == 1);
    CHECK(stats.connection_losses == 0);
    CHECK(stats.updates_sent == taken);
    CHECK(stats.outbox_full > 0);
    if (!from_caller) CHECK(stats.caller_writes == 0);
    publisher.stop();
}
