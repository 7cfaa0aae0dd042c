// The Publisher as a whole (public API, its own I/O thread or a shared
// IoContext's, the outbox) against a scripted distributor on loopback:
// announcing, registering, sequences, re-publishing the image after a
// failover, the interactive conversation (requests, closes, requests again),
// the outbox bound, two publishers sharing one IoContext, and the publishing
// thread writing itself (write_from_caller): two threads in order with the
// I/O thread's flushes and pings, partial writes to a slow reader, a failover
// mid-write. The real-distributor cases are in
// tests/integration/test_sdk_publisher.py.
#include "mdcast/publisher.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "scripted_distributor.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/post.pb.h"
#include "wire/publisher.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::bid;
using scripted::fail;
using scripted::kBid;
using scripted::options_for;
using scripted::Script;
using scripted::ScriptedDistributor;
using scripted::wait_for;
using std::chrono::milliseconds;

// Records the callbacks (I/O thread) for the test to read.
class Recorder : public mdcast::PublisherHandler {
  public:
    void on_service(const std::string& service, bool accepted, const std::string&) override {
        add("service " + service + (accepted ? " accepted" : " refused"));
    }
    void on_item_rejected(mdcast::PublishedItem, const mdcast::ItemState& state) override {
        add("rejected " + state.text);
    }
    std::vector<std::string> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

  protected:
    void add(std::string line) {
        std::lock_guard lock(mutex_);
        seen_.push_back(std::move(line));
    }

  private:
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

// One broadcast service SVC with one item A imaged at BID 100, not started.
struct OneItem {
    ScriptedDistributor d;
    Recorder recorder;
    mdcast::Publisher publisher{options_for({&d}), recorder};
    mdcast::PublishedItem item;
    OneItem() {
        publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
        item = publisher.add_item("SVC", "A");
        CHECK(publisher.refresh(item, bid(100)));
    }
};

}  // namespace

TEST_CASE("sequences continue and the image is re-published after a failover", "[publisher]") {
    ScriptedDistributor d1, d2;
    Recorder recorder;
    mdcast::Publisher publisher(options_for({&d1, &d2}), recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    CHECK(publisher.update(item, bid(99)));  // before the first refresh: dropped
    CHECK(publisher.refresh(item, bid(10000)));
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data;
    Script script([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d1.register_one("A", 77, 0);
        data.push_back(d1.next_data());
        phase = 1;
        for (int i = 0; i < 3; ++i) data.push_back(d1.next_data());
        wire::ItemStatus refused;  // the distributor refuses something: the handler hears it
        refused.set_item_id(77);
        refused.mutable_status()->set_code(wire::STATUS_NOT_ENTITLED);
        refused.mutable_status()->set_text("not yours");
        d1.send(FrameType::kItemStatus, refused);
        std::this_thread::sleep_for(milliseconds(50));
        d1.drop();
        phase = 2;
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
        // The reconnect shows the proof of ownership it was last given.
        if (d1.presented_tokens != std::vector<std::string>{""} ||
            d2.presented_tokens != std::vector<std::string>{"token of 5"}) {
            fail("takeover tokens presented: " + d2.presented_tokens.at(0));
        }
        wait_for(phase, 3);           // the updates published while away are in
        d2.register_one("A", 88, 2);  // this distributor saw less than was sent
        data.push_back(d2.next_data());
        phase = 4;
        data.push_back(d2.next_data());
    });
    wait_for(phase, 1);
    for (int64_t b = 10001; b <= 10003; ++b) publisher.update(item, bid(b));
    wait_for(phase, 2);
    std::this_thread::sleep_for(milliseconds(20));
    publisher.update(item, bid(10004));  // disconnected: merged into the image
    publisher.update(item, bid(10005));
    std::this_thread::sleep_for(milliseconds(50));
    phase = 3;
    wait_for(phase, 4);
    publisher.update(item, bid(10006));
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"refresh 77 0 10000", "update 77 1 10001",
                                            "update 77 2 10002",  "update 77 3 10003",
                                            "refresh 88 5 10005", "update 88 6 10006"};
    CHECK(data == expected);
    const auto seen = recorder.seen();
    CHECK(seen == std::vector<std::string>{"service SVC accepted", "rejected not yours",
                                           "service SVC accepted"});
    publisher.stop();
    const auto stats = publisher.stats();
    CHECK(stats.updates_dropped == 1);
    CHECK(stats.updates_held == 2);
    CHECK(stats.connection_losses == 1);
}

namespace {

// Answers interactive requests the way an application would.
class Source final : public Recorder {
  public:
    explicit Source(mdcast::Publisher*& publisher) : publisher_(publisher) {}
    void on_item_request(mdcast::PublishedItem item, const std::string&,
                         const std::string& name) override {
        add("request " + name);
        if (name != "X") {
            publisher_->status(item, {mdcast::StreamState::kClosed, mdcast::DataState::kSuspect,
                                      mdcast::StatusCode::kNotFound, "no such item"});
            return;
        }
        x = item.id;
        publisher_->refresh(item, bid(500));
    }
    void on_item_closed(mdcast::PublishedItem, const std::string&,
                        const std::string& name) override {
        add("closed " + name);
        closed = true;
    }
    std::atomic<bool> closed{false};
    std::atomic<uint64_t> x{0};  // written on the I/O thread, read by the test

  private:
    mdcast::Publisher*& publisher_;
};

}  // namespace

TEST_CASE("a new publisher shows the operator's takeover secret until it is given a token",
          "[publisher]") {
    ScriptedDistributor d1, d2;
    Recorder recorder;
    auto options = options_for({&d1, &d2});
    options.takeover_secret = "the operator's takeover secret";
    mdcast::Publisher publisher(options, recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    publisher.start();
    Script script([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d1.drop();
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
    });
    CHECK(script.join().empty());
    publisher.stop();
    CHECK(d1.presented_tokens == std::vector<std::string>{"the operator's takeover secret"});
    CHECK(d2.presented_tokens == std::vector<std::string>{"token of 5"});
}

TEST_CASE("interactive items are published while requested", "[publisher]") {
    ScriptedDistributor d;
    mdcast::Publisher* publisher_ptr = nullptr;
    Source source(publisher_ptr);
    mdcast::Publisher publisher(options_for({&d}), source);
    publisher_ptr = &publisher;
    publisher.add_service("ODM", mdcast::ServiceMode::kInteractive);
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data;
    Script script([&] {
        d.accept_publisher("ODM", 3, wire::SERVICE_INTERACTIVE);
        d.request(3, "ODM", "X", 50);
        data.push_back(d.next_data());
        d.request(3, "ODM", "NOPE", 51);
        data.push_back(d.next_data());
        phase = 1;
        data.push_back(d.next_data());
        wire::Unsubscribe close;  // nobody wants X any more
        close.add_item_ids(50);
        d.send(FrameType::kUnsubscribe, close);
        wait_for(phase, 2);
        d.request(3, "ODM", "X", 50);  // wanted again
        data.push_back(d.next_data());
    });
    wait_for(phase, 1);
    publisher.update(mdcast::PublishedItem{source.x}, bid(501));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!source.closed && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    publisher.update(mdcast::PublishedItem{source.x},
                     bid(502));  // closed: kept in the image, not sent
    std::this_thread::sleep_for(milliseconds(50));
    phase = 2;
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"refresh 50 0 500", "status 51 STATUS_NOT_FOUND",
                                            "update 50 1 501", "refresh 50 2 500"};
    CHECK(data == expected);
    CHECK(source.seen() == std::vector<std::string>{"service ODM accepted", "request X",
                                                    "request NOPE", "closed X", "request X"});
    publisher.stop();
    CHECK(publisher.stats().item_requests == 3);
    CHECK(publisher.stats().item_closes == 1);
    CHECK(publisher.stats().updates_held == 1);
}

TEST_CASE_METHOD(
    OneItem,
    "updates before the first registration follow the refresh in order, flush waits for "
    "the distributor's acknowledgement",
    "[publisher]") {
    CHECK(publisher.update(item, bid(101)));  // not registered yet: kept, in order
    CHECK(publisher.update(item, bid(102)));
    publisher.start();
    std::atomic<bool> flushed{false};
    std::vector<std::string> data;
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d.register_one("A", 77, 0);
        for (int i = 0; i < 3; ++i) data.push_back(d.next_data());
        const auto flush = d.expect<wire::Flush>(FrameType::kFlush);
        std::this_thread::sleep_for(milliseconds(50));
        if (flushed) fail("flush() returned before the acknowledgement");
        wire::FlushAck ack;
        ack.set_token(flush.token());
        d.send(FrameType::kFlushAck, ack);
        d.expect<wire::Flush>(FrameType::kFlush);  // the second flush is never answered
    });
    CHECK(publisher.flush(std::chrono::seconds(5)));
    flushed = true;
    CHECK_FALSE(publisher.flush(milliseconds(100)));
    CHECK(script.join().empty());
    CHECK(data ==
          std::vector<std::string>{"refresh 77 0 100", "update 77 1 101", "update 77 2 102"});
    publisher.stop();
    CHECK(publisher.stats().updates_held == 0);
    CHECK(publisher.stats().updates_sent == 2);
}

TEST_CASE_METHOD(
    OneItem,
    "a batch is corked until its outermost end, another thread's update is not held back by it",
    "[publisher]") {
    publisher.start();
    std::vector<std::string> data;
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d.register_one("A", 77, 0);
        for (int i = 0; i < 8; ++i) data.push_back(d.next_data());
    });
    auto sent_reaches = [&](uint64_t n) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (publisher.stats().updates_sent < n && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(milliseconds(1));
        return publisher.stats().updates_sent == n;
    };
    CHECK(publisher.update(item, bid(101)));  // alone: sent at once
    REQUIRE(sent_reaches(1));
    {
        mdcast::Publisher::Batch batch(publisher);
        CHECK(publisher.update(item, bid(102)));
        {
            mdcast::Publisher::Batch inner(publisher);
            CHECK(publisher.update(item, bid(103)));
        }  // an inner end does not uncork
        CHECK(publisher.update(item, bid(104)));
        std::this_thread::sleep_for(milliseconds(100));
        CHECK(publisher.stats().updates_sent == 1);  // the I/O thread was left asleep
    }
    CHECK(sent_reaches(4));
    {
        mdcast::Publisher::Batch batch(publisher);
        CHECK(publisher.update(item, bid(105)));
        std::thread other([&] { CHECK(publisher.update(item, bid(106))); });
        other.join();
        CHECK(sent_reaches(6));  // the other thread's call woke the I/O thread for both
        CHECK(publisher.update(item, bid(107)));
    }
    CHECK(sent_reaches(7));
    CHECK(script.join().empty());
    CHECK(data == std::vector<std::string>{"refresh 77 0 100", "update 77 1 101", "update 77 2 102",
                                           "update 77 3 103", "update 77 4 104", "update 77 5 105",
                                           "update 77 6 106", "update 77 7 107"});
    publisher.stop();
}

TEST_CASE("a full outbox refuses what does not fit, misuse is refused", "[publisher]") {
    ScriptedDistributor d;  // never answers: nothing drains before start()
    Recorder recorder;
    auto options = options_for({&d});
    options.max_queued_bytes = 4096;
    mdcast::Publisher publisher(options, recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    int taken = 0;
    while (publisher.update(item, bid(taken)) && taken < 1000) ++taken;
    CHECK(taken > 10);
    CHECK(taken < 1000);
    CHECK(publisher.stats().outbox_full == 1);
    CHECK_FALSE(publisher.update(mdcast::PublishedItem{12345}, bid(1)));  // not a handle of ours
    CHECK_THROWS_AS(publisher.add_item("NOT_ADDED", "A"), std::invalid_argument);
    CHECK_THROWS_AS(publisher.add_service("SVC", mdcast::ServiceMode::kInteractive),
                    std::invalid_argument);
    CHECK(publisher.add_item("SVC", "A") == item);  // the same handle again
    publisher.stop();                               // never started: nothing to do
    CHECK_THROWS_AS(mdcast::Publisher(mdcast::PublisherOptions{}, recorder), std::invalid_argument);
}

TEST_CASE("a value that is not UTF-8 is refused at the call, the image keeps its last value",
          "[publisher]") {
    // Sent, it would be refused by the distributor and every consumer, and kept
    // in the image it would be re-sent after every reconnect.
    ScriptedDistributor d;
    Recorder recorder;
    mdcast::Publisher publisher(options_for({&d}), recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    mdcast::FieldList bad;
    bad.add_string(kBid, std::string("\xff\xfe", 2));
    CHECK_THROWS_AS(publisher.update(item, bad), std::invalid_argument);
    CHECK_THROWS_AS(publisher.refresh(item, bad), std::invalid_argument);
    mdcast::ItemState state;
    state.text = "\xc0\xaf";  // an overlong '/'
    CHECK_THROWS_AS(publisher.status(item, state), std::invalid_argument);
    CHECK_THROWS_AS(publisher.add_item("SVC", std::string("\xed\xa0\x80", 3)),  // a surrogate
                    std::invalid_argument);
    mdcast::FieldList good;
    good.add_string(kBid, "caf\xc3\xa9");  // valid two-byte UTF-8
    CHECK(publisher.update(item, good));
    publisher.stop();
}

namespace {

// on_service tries to stop another publisher: on a shared IoContext's thread
// that must be refused, not wait for ever.
class StopTrying final : public Recorder {
  public:
    void on_service(const std::string& service, bool accepted, const std::string& text) override {
        Recorder::on_service(service, accepted, text);
        try {
            if (target) target->stop();
        } catch (const std::logic_error& error) {
            add(std::string("refused: ") + error.what());
        }
    }
    mdcast::Publisher* target = nullptr;
};

// Item A of broadcast service SVC imaged at BID `image`, before start().
mdcast::PublishedItem image_a(mdcast::Publisher& publisher, int64_t image) {
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(item, bid(image)));
    return item;
}

}  // namespace

TEST_CASE(
    "publishers on one IoContext: each reaches its distributor, one stops and drains, "
    "the other publishes on, stop() from a callback there is refused",
    "[publisher][io_context]") {
    auto io = std::make_shared<mdcast::IoContext>();
    ScriptedDistributor d1, d2;
    Recorder r1;
    StopTrying r2;
    auto options1 = options_for({&d1}), options2 = options_for({&d2});
    options1.io_context = options2.io_context = io;
    mdcast::Publisher p1(options1, r1), p2(options2, r2);
    r2.target = &p1;
    const auto a1 = image_a(p1, 100), a2 = image_a(p2, 200);
    p1.start();  // before p2: p1 is running when p2's on_service tries to stop it
    p2.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data1, data2;
    Script script([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
        d1.register_one("A", 77, 0);
        d2.register_one("A", 78, 0);
        data1.push_back(d1.next_data());
        data2.push_back(d2.next_data());
        phase = 1;
        data1.push_back(d1.next_data());
        data2.push_back(d2.next_data());
        phase = 2;
        wait_for(phase, 3);
        data1.push_back(d1.next_data());  // published just before stop(): drained
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (d1.read(milliseconds(200))) {  // then p1 closes its connection
            if (std::chrono::steady_clock::now() > deadline) fail("p1 kept its connection");
        }
        data2.push_back(d2.next_data());
    });
    wait_for(phase, 1);
    CHECK(p1.update(a1, bid(101)));
    CHECK(p2.update(a2, bid(201)));
    wait_for(phase, 2);
    CHECK(io->publishers() == 2);
    CHECK(p1.update(a1, bid(102)));
    p1.stop();
    CHECK(io->publishers() == 1);
    phase = 3;
    CHECK(p2.update(a2, bid(202)));
    CHECK(script.join().empty());
    CHECK(data1 ==
          std::vector<std::string>{"refresh 77 0 100", "update 77 1 101", "update 77 2 102"});
    CHECK(data2 ==
          std::vector<std::string>{"refresh 78 0 200", "update 78 1 201", "update 78 2 202"});
    const auto seen = r2.seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].find("refused: stop() cannot be called from a handler or callback: this "
                       "Publisher runs on a shared IoContext") == 0);
    p2.stop();
    CHECK(io->publishers() == 0);
}

// ---- the publishing thread writes (PublisherOptions::write_from_caller) ----------------------

namespace {

// What a distributor saw of one item: every frame's sequence and BID, in order.
struct ItemLog {
    std::vector<std::pair<uint64_t, int64_t>> frames;  // (seq, BID); refreshes have seq 0 here
    std::vector<std::string> errors;
};

// A distributor that registers every item of one ItemRegister (ids from
// `first_id`, in order), answers flushes and pings the publisher now and then
// (the I/O thread answers), and logs each item's updates and refreshes.
class LoggingDistributor : public ScriptedDistributor {
  public:
    // The service's items, registered: their ids by name.
    std::map<std::string, uint64_t> register_all(uint64_t first_id) {
        const auto request = expect<wire::ItemRegister>(FrameType::kItemRegister);
        wire::ItemRegistered response;
        response.set_service_id(request.service_id());
        std::map<std::string, uint64_t> ids;
        for (int i = 0; i < request.items_size(); ++i) {
            auto* entry = response.add_items();
            entry->set_ref(request.items(i).ref());
            entry->set_item_id(first_id + static_cast<uint64_t>(i));
            ids[request.items(i).name()] = first_id + static_cast<uint64_t>(i);
        }
        send(FrameType::kItemRegistered, response);
        return ids;
    }
    // Reads until `done` says so (for at most 30 s): updates and refreshes go
    // to `log` by item id; a Flush is acknowledged; every 200 frames a Ping
    // goes to the publisher.
    void serve(std::map<uint64_t, ItemLog>& log, const std::function<bool()>& done) {
        uint64_t frames = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) fail("the publisher went quiet");
            auto frame = read(milliseconds(20));
            if (!frame) continue;
            if (++frames % 200 == 0) send(FrameType::kPing, wire::Ping());
            if (frame->first == FrameType::kUpdate) {
                wire::Update u;
                if (!u.ParseFromString(frame->second)) fail("malformed update");
                log[u.item_id()].frames.emplace_back(
                    u.item_seq(), u.fields().fields(0).decimal_value().mantissa());
            } else if (frame->first == FrameType::kRefresh) {
                wire::Refresh r;
                if (!r.ParseFromString(frame->second)) fail("malformed refresh");
                log[r.item_id()].frames.emplace_back(
                    r.item_seq(), r.fields().fields(0).decimal_value().mantissa());
            } else if (frame->first == FrameType::kFlush) {
                wire::Flush f;
                f.ParseFromString(frame->second);
                wire::FlushAck ack;
                ack.set_token(f.token());
                send(FrameType::kFlushAck, ack);
            }
        }
    }
};

// Every frame of the item carries BID == its sequence number, and the
// sequence numbers run on without a gap or a repeat: nothing lost, nothing
// reordered, nothing sent twice.
void check_in_order(const ItemLog& log, uint64_t first_seq) {
    uint64_t expected = first_seq;
    for (const auto& [seq, value] : log.frames) {
        INFO("seq " << seq << " BID " << value << " expected seq " << expected);
        REQUIRE(seq == expected);
        REQUIRE(value == static_cast<int64_t>(seq));
        ++expected;
    }
}

uint64_t last_seq(std::map<uint64_t, ItemLog>& log, uint64_t id) {
    auto& frames = log[id].frames;
    return frames.empty() ? 0 : frames.back().first;
}

}  // namespace

TEST_CASE(
    "two threads publishing (one in batches, one call by call) while the I/O thread sends "
    "flushes and answers pings: every update arrives once, in order",
    "[publisher][write_from_caller]") {
    const bool from_caller = GENERATE(true, false);
    LoggingDistributor d;
    Recorder recorder;
    auto options = options_for({&d});
    options.write_from_caller = from_caller;
    mdcast::Publisher publisher(options, recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto a = publisher.add_item("SVC", "A");
    const auto b = publisher.add_item("SVC", "B");
    CHECK(publisher.refresh(a, bid(0)));
    CHECK(publisher.refresh(b, bid(0)));
    constexpr int kUpdates = 20000;
    std::map<uint64_t, ItemLog> log;
    std::atomic<bool> registered{false}, finished{false};
    std::atomic<int> b_last{kUpdates};  // B's probes (below) follow its kUpdates
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        const auto ids = d.register_all(70);
        registered = true;
        d.serve(log, [&] {
            return finished && last_seq(log, ids.at("A")) >= kUpdates &&
                   last_seq(log, ids.at("B")) >= static_cast<uint64_t>(b_last.load());
        });
    });
    publisher.start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!registered && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    std::atomic<int> refused{0};  // Catch's macros belong to the main thread
    std::thread batches([&] {
        for (int i = 1; i <= kUpdates;) {
            mdcast::Publisher::Batch batch(publisher);
            for (int n = 0; n < 25 && i <= kUpdates; ++n, ++i) {
                if (!publisher.update(a, bid(i))) ++refused;
            }
        }
    });
    std::thread calls([&] {
        for (int i = 1; i <= kUpdates; ++i) {
            if (!publisher.update(b, bid(i))) ++refused;
        }
    });
    // Meanwhile the I/O thread's own work: flushes (acknowledged) and statuses.
    int flushed = 0;
    for (int i = 0; i < 5; ++i) {
        flushed += publisher.flush(std::chrono::seconds(5)) ? 1 : 0;
        std::this_thread::sleep_for(milliseconds(2));
    }
    batches.join();
    calls.join();
    CHECK(publisher.flush(std::chrono::seconds(5)));
    // Whether the racing threads ever found the I/O thread's lock free is up
    // to the scheduler. Once everything is acknowledged the I/O thread idles,
    // so a single update must then go out from the caller (a few probes: it
    // may still be finishing the flush's acknowledgement).
    const auto before = publisher.stats().caller_writes;
    for (int probe = 0; probe < 100 && publisher.stats().caller_writes == before; ++probe) {
        CHECK(publisher.update(b, bid(b_last + 1)));
        ++b_last;
        std::this_thread::sleep_for(milliseconds(from_caller ? 5 : 0));
        if (!from_caller) break;
    }
    CHECK(publisher.flush(std::chrono::seconds(5)));
    finished = true;
    CHECK(flushed == 5);
    CHECK(refused == 0);
    CHECK(script.join().empty());
    REQUIRE(log.size() == 2);
    std::multiset<size_t> frames;  // A's refresh and updates, B's (with the probes)
    for (const auto& [id, item] : log) {
        frames.insert(item.frames.size());
        check_in_order(item, 0);  // the refresh (seq 0, BID 0), then updates 1, 2, ...
    }
    CHECK(frames == std::multiset<size_t>{kUpdates + 1, static_cast<size_t>(b_last) + 1});
    const auto stats = publisher.stats();
    CHECK(stats.updates_sent == static_cast<uint64_t>(kUpdates + b_last));
    if (from_caller) {
        CHECK(stats.caller_writes > before);
    } else {
        CHECK(stats.caller_writes == 0);
    }
    publisher.stop();
}

TEST_CASE(
    "a distributor that reads slowly: the publishing thread's partial writes and the I/O "
    "thread's finishing them keep every byte in order",
    "[publisher][write_from_caller]") {
    LoggingDistributor d;
    d.set_receive_buffer(2048);
    Recorder recorder;
    mdcast::Publisher publisher(options_for({&d}), recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto a = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(a, bid(0)));
    constexpr int kUpdates = 200000;  // megabytes: far more than the socket buffers hold
    std::map<uint64_t, ItemLog> log;
    std::atomic<bool> registered{false}, published{false}, finished{false};
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        const auto ids = d.register_all(70);
        registered = true;
        // Not reading while the publisher writes: its socket fills up.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!published && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(milliseconds(1));
        }
        d.serve(log, [&] { return finished && last_seq(log, ids.at("A")) >= kUpdates; });
    });
    publisher.start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!registered && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    for (int i = 1; i <= kUpdates;) {
        mdcast::Publisher::Batch batch(publisher);
        for (int n = 0; n < 50 && i <= kUpdates; ++n, ++i) REQUIRE(publisher.update(a, bid(i)));
    }
    published = true;
    CHECK(publisher.flush(std::chrono::seconds(20)));
    finished = true;
    CHECK(script.join().empty());
    REQUIRE(log.size() == 1);
    CHECK(log.begin()->second.frames.size() == kUpdates + 1);
    check_in_order(log.begin()->second, 0);
    CHECK(publisher.stats().caller_writes > 0);
    publisher.stop();
}

TEST_CASE(
    "a failover while the publishing thread writes: the new distributor gets the image, then "
    "every later update in order",
    "[publisher][write_from_caller]") {
    LoggingDistributor d1, d2;
    Recorder recorder;
    mdcast::Publisher publisher(options_for({&d1, &d2}), recorder);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto a = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(a, bid(0)));
    std::map<uint64_t, ItemLog> log1, log2;
    Script script([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        const auto id1 = d1.register_all(70).at("A");
        d1.serve(log1, [&] { return last_seq(log1, id1) >= 2000; });
        d1.drop();  // while the publisher writes
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
        const auto id2 = d2.register_all(80).at("A");
        d2.serve(log2, [&] { return log2[id2].frames.size() >= 2000; });
    });
    publisher.start();
    std::atomic<bool> stop{false};
    std::thread publishing([&] {
        for (int64_t i = 1; !stop;) {
            {
                mdcast::Publisher::Batch batch(publisher);
                for (int n = 0; n < 5; ++n, ++i) publisher.update(a, bid(i));
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    const std::string error = script.join();
    stop = true;
    publishing.join();
    CHECK(error.empty());
    REQUIRE(log1.size() == 1);
    REQUIRE(log2.size() == 1);
    check_in_order(log1.begin()->second, 0);
    // After the failover: the image as a refresh (BID and sequence of the last
    // update merged into it), then the updates that follow it.
    const ItemLog& after = log2.begin()->second;
    REQUIRE(!after.frames.empty());
    CHECK(after.frames.front().first >= last_seq(log1, log1.begin()->first));
    check_in_order(after, after.frames.front().first);
    const auto stats = publisher.stats();
    CHECK(stats.connection_losses == 1);
    CHECK(stats.caller_writes > 0);
    publisher.stop();
}

namespace {

// Accepts a post of a positive BID and publishes it as an update; rejects the rest.
class PostTaker : public Recorder {
  public:
    mdcast::Publisher* publisher = nullptr;
    mdcast::PostAnswer on_post(const mdcast::PostRequest& post) override {
        add("post " + post.service + " " + post.item_name + " by " + post.user);
        if (post.fields.size() != 1 || post.fields[0].integer <= 0)
            return mdcast::PostAnswer::reject("BID must be positive");
        publisher->update(post.item, bid(post.fields[0].integer));
        return mdcast::PostAnswer::accept();
    }
};

wire::Post post_of(uint64_t post_id, uint64_t item_id, int64_t mantissa) {
    wire::Post post;
    post.set_post_id(post_id);
    post.set_item_id(item_id);
    post.set_service_name("SVC");
    post.set_item_name("A");
    post.set_user("trader");
    auto* field = post.mutable_fields()->add_fields();
    field->set_id(kBid);
    field->mutable_decimal_value()->set_mantissa(mantissa);
    field->mutable_decimal_value()->set_exponent(-2);
    return post;
}

// "ack ID accepted|rejected TEXT" or the data line, for the next frame.
std::string next_answer(ScriptedDistributor& d) {
    auto frame = d.read();
    if (!frame) fail("nothing from the publisher");
    if (frame->first != FrameType::kPostAck) fail("expected a PostAck");
    wire::PostAck ack;
    ack.ParseFromString(frame->second);
    return "ack " + std::to_string(ack.post_id()) + (ack.accepted() ? " accepted" : " rejected ") +
           ack.text();
}

}  // namespace

TEST_CASE("a post gets the handler's verdict at once, the accepted change is published",
          "[publisher][posts]") {
    ScriptedDistributor d;
    PostTaker taker;
    mdcast::Publisher publisher(options_for({&d}), taker);
    taker.publisher = &publisher;
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const mdcast::PublishedItem item = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(item, bid(100)));
    publisher.start();
    std::vector<std::string> seen;
    Script script([&] {
        d.accept_publisher("SVC", 1, wire::SERVICE_BROADCAST);
        d.register_one("A", 7, 0);
        seen.push_back(d.next_data());
        d.send(FrameType::kPost, post_of(11, 7, 250));
        seen.push_back(next_answer(d));
        seen.push_back(d.next_data());
        d.send(FrameType::kPost, post_of(12, 7, -1));
        seen.push_back(next_answer(d));
    });
    CHECK(script.join().empty());
    CHECK(seen == std::vector<std::string>{"refresh 7 0 100", "ack 11 accepted", "update 7 1 250",
                                           "ack 12 rejected BID must be positive"});
    CHECK(taker.seen() == std::vector<std::string>{"service SVC accepted", "post SVC A by trader",
                                                   "post SVC A by trader"});
    publisher.stop();
    CHECK(publisher.stats().posts_received == 2);
    CHECK(publisher.stats().posts_accepted == 1);
}
