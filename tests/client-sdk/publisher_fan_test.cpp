// A dual-homed Publisher (PublisherOptions::publish_to_all) against two
// scripted distributors on loopback: both get the same refresh and updates
// with the same sequences; a lost link is reported for its distributor alone,
// re-imaged when it connects again, and the other link goes on; a distributor
// that takes nothing has its link dropped past max_output_bytes while the
// other gets everything and the caller is never refused; interactive requests
// per link; flush() waits for every link that is up; a shared IoContext.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/io_context.h"
#include "mdcast/publisher.h"
#include "scripted_distributor.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::fail;
using scripted::kBid;
using scripted::Script;
using scripted::ScriptedDistributor;
using std::chrono::milliseconds;

// Every connection event as "PORT state [text]", and the item requests and closes.
class Links : public mdcast::PublisherHandler {
  public:
    void on_connection(const mdcast::ConnectionEvent& e) override {
        add(std::to_string(e.server.port) + " " +
            std::string(mdcast::connection_state_name(e.state)) + " " + e.text);
    }
    void on_item_request(mdcast::PublishedItem item, const std::string&,
                         const std::string& name) override {
        add("request " + name);
        if (publisher) publisher->refresh(item, image);
    }
    void on_item_closed(mdcast::PublishedItem, const std::string&,
                        const std::string& name) override {
        add("closed " + name);
    }
    // The events about the distributor on `port` whose state is `state`.
    std::vector<std::string> of(uint16_t port, const std::string& state) {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        const std::string prefix = std::to_string(port) + " " + state;
        for (const auto& line : seen_) {
            if (line.rfind(prefix, 0) == 0) out.push_back(line);
        }
        return out;
    }
    size_t count(const std::string& line) {
        std::lock_guard lock(mutex_);
        return static_cast<size_t>(std::count(seen_.begin(), seen_.end(), line));
    }
    mdcast::Publisher* publisher = nullptr;
    mdcast::FieldList image;

  private:
    void add(std::string line) {
        std::lock_guard lock(mutex_);
        seen_.push_back(std::move(line));
    }
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

mdcast::PublisherOptions to_both(const ScriptedDistributor& d1, const ScriptedDistributor& d2) {
    mdcast::PublisherOptions options;
    options.distributors = {{"127.0.0.1", d1.port()}, {"127.0.0.1", d2.port()}};
    options.publish_to_all = true;
    options.reconnect_delay_min_ms = 20;
    options.reconnect_delay_max_ms = 100;
    options.log_level = "off";
    return options;
}

mdcast::FieldList bid(int64_t mantissa, size_t padding = 0) {
    mdcast::FieldList fields;
    fields.add_decimal(kBid, mantissa, -2);
    if (padding > 0) fields.add_string(3, std::string(padding, 'x'));
    return fields;
}

void wait_for(const std::atomic<int>& phase, int value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (phase.load() < value && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    if (phase.load() < value) fail("phase " + std::to_string(value) + " never came");
}

template <class Predicate>
bool eventually(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
    }
    return done();
}

}  // namespace

TEST_CASE(
    "a dual-homed publisher sends the same sequences to both, a lost link is re-imaged "
    "while the other goes on",
    "[publisher]") {
    ScriptedDistributor d1, d2;
    Links links;
    mdcast::Publisher publisher(to_both(d1, d2), links);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(item, bid(10000)));
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data1, data2;
    Script first([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d1.register_one("A", 77, 0);
        for (int i = 0; i < 3; ++i) data1.push_back(d1.next_data());
        d1.drop();
        phase = 2;
        wait_for(phase, 3);  // published while this link was down
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d1.register_one("A", 78, 0);  // a restarted distributor knows no sequence
        data1.push_back(d1.next_data());
        phase = 4;
        data1.push_back(d1.next_data());
    });
    Script second([&] {
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
        d2.register_one("A", 88, 0);
        for (int i = 0; i < 6; ++i) data2.push_back(d2.next_data());
    });
    REQUIRE(eventually([&] { return publisher.stats().refreshes_sent == 2; }));
    publisher.update(item, bid(10001));
    publisher.update(item, bid(10002));
    wait_for(phase, 2);
    REQUIRE(eventually([&] { return !links.of(d1.port(), "down").empty(); }));
    publisher.update(item, bid(10003));
    publisher.update(item, bid(10004));
    REQUIRE(eventually([&] { return publisher.stats().updates_held == 2; }));
    phase = 3;
    wait_for(phase, 4);
    publisher.update(item, bid(10005));
    CHECK(first.join().empty());
    CHECK(second.join().empty());
    CHECK(data1 == std::vector<std::string>{"refresh 77 0 10000", "update 77 1 10001",
                                            "update 77 2 10002", "refresh 78 4 10004",
                                            "update 78 5 10005"});
    CHECK(data2 == std::vector<std::string>{"refresh 88 0 10000", "update 88 1 10001",
                                            "update 88 2 10002", "update 88 3 10003",
                                            "update 88 4 10004", "update 88 5 10005"});
    CHECK(links.of(d1.port(), "up").size() == 2);
    CHECK(links.of(d2.port(), "up").size() == 1);
    CHECK(links.of(d2.port(), "down").empty());
    publisher.stop();
    CHECK(links.of(d1.port(), "stopped").size() == 1);
    CHECK(links.of(d2.port(), "stopped").size() == 1);
    CHECK(publisher.stats().connection_losses == 1);
    CHECK(publisher.stats().links_dropped == 0);
}

TEST_CASE(
    "a distributor that takes nothing loses its link past max_output_bytes, the other "
    "gets everything and the caller is never refused",
    "[publisher]") {
    ScriptedDistributor stuck, fine;
    stuck.set_receive_buffer(4096);
    Links links;
    auto options = to_both(stuck, fine);
    options.max_output_bytes = 64 * 1024;
    options.heartbeat_timeout_ms = 60'000;  // the overflow, not the silence, drops it
    mdcast::Publisher publisher(options, links);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(item, bid(10000)));
    publisher.start();
    constexpr int kUpdates = 20'000;  // 20 MB: more than the kernel's buffers hold
    std::atomic<int> phase{0};
    std::string reimage;
    Script stuck_script([&] {
        stuck.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        stuck.register_one("A", 77, 0);
        phase = 1;
        wait_for(phase, 2);  // reads nothing until its link has been dropped
        stuck.drop();
        stuck.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        stuck.register_one("A", 78, 0);
        reimage = stuck.next_data();
    });
    int received = 0;
    Script fine_script([&] {
        fine.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST);
        fine.register_one("A", 88, 0);
        if (fine.next_data() != "refresh 88 0 10000") fail("no refresh first");
        for (int i = 1; i <= kUpdates; ++i) {
            if (fine.next_data() !=
                "update 88 " + std::to_string(i) + " " + std::to_string(10000 + i))
                fail("update " + std::to_string(i) + " missing or out of order");
            ++received;
        }
    });
    wait_for(phase, 1);
    REQUIRE(eventually([&] { return publisher.stats().refreshes_sent == 2; }));
    int refused = 0;
    for (int i = 1; i <= kUpdates; ++i)
        refused += publisher.update(item, bid(10000 + i, 1000)) ? 0 : 1;
    CHECK(refused == 0);
    CHECK(eventually([&] { return publisher.stats().links_dropped == 1; }));
    CHECK(fine_script.join().empty());
    CHECK(received == kUpdates);
    phase = 2;  // every update is in the images now: the re-image carries the last
    CHECK(stuck_script.join().empty());
    CHECK(reimage ==
          "refresh 78 " + std::to_string(kUpdates) + " " + std::to_string(10000 + kUpdates));
    const auto downs = links.of(stuck.port(), "down");
    REQUIRE(downs.size() == 1);
    CHECK(downs[0].find("max_output_bytes") != std::string::npos);
    CHECK(links.of(fine.port(), "down").empty());
    publisher.stop();
    CHECK(publisher.stats().outbox_full == 0);
}

TEST_CASE(
    "dual-homed: requests are answered per link, an item is closed when no distributor "
    "wants it, flush waits for every link that is up",
    "[publisher]") {
    ScriptedDistributor d1, d2;
    Links links;
    links.image = bid(500);
    mdcast::Publisher publisher(to_both(d1, d2), links);
    links.publisher = &publisher;
    publisher.add_service("INT", mdcast::ServiceMode::kInteractive);
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data1, data2;
    std::atomic<bool> flushed{false};
    Script first([&] {
        d1.accept_publisher("INT", 5, wire::SERVICE_INTERACTIVE);
        d1.request(5, "INT", "X", 71);
        data1.push_back(d1.next_data());
        phase = 1;
        wait_for(phase, 2);
        data1.push_back(d1.next_data());  // the refresh answering distributor 2's request
        wire::Unsubscribe close;
        close.add_item_ids(71);
        d1.send(FrameType::kUnsubscribe, close);
        const auto flush = d1.expect<wire::Flush>(FrameType::kFlush);
        wire::FlushAck ack;
        ack.set_token(flush.token());
        d1.send(FrameType::kFlushAck, ack);
        phase = 3;
    });
    Script second([&] {
        d2.accept_publisher("INT", 6, wire::SERVICE_INTERACTIVE);
        wait_for(phase, 1);
        d2.request(6, "INT", "X", 81);
        data2.push_back(d2.next_data());
        phase = 2;
        const auto flush = d2.expect<wire::Flush>(FrameType::kFlush);
        wait_for(phase, 3);
        std::this_thread::sleep_for(milliseconds(50));
        if (flushed) fail("flush() returned before distributor 2 acknowledged");
        wire::FlushAck ack;
        ack.set_token(flush.token());
        d2.send(FrameType::kFlushAck, ack);
        wire::Unsubscribe close;
        close.add_item_ids(81);
        d2.send(FrameType::kUnsubscribe, close);
    });
    wait_for(phase, 2);
    CHECK(publisher.flush(std::chrono::seconds(10)));
    flushed = true;
    CHECK(first.join().empty());
    CHECK(second.join().empty());
    CHECK(data1 == std::vector<std::string>{"refresh 71 0 500", "refresh 71 0 500"});
    CHECK(data2 == std::vector<std::string>{"refresh 81 0 500"});
    CHECK(links.count("request X") == 2);
    CHECK(eventually([&] { return links.count("closed X") == 1; }));
    publisher.stop();
    CHECK(links.count("closed X") == 1);
}

TEST_CASE("a dual-homed publisher on a shared IoContext feeds both distributors and leaves it",
          "[publisher]") {
    ScriptedDistributor d1, d2;
    Links links;
    auto options = to_both(d1, d2);
    auto io = std::make_shared<mdcast::IoContext>();
    options.io_context = io;
    mdcast::Publisher publisher(options, links);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(item, bid(10000)));
    publisher.start();
    std::vector<std::string> data1, data2;
    auto serve = [&](ScriptedDistributor& d, uint32_t service_id, uint64_t item_id,
                     std::vector<std::string>& data) {
        d.accept_publisher("SVC", service_id, wire::SERVICE_BROADCAST);
        d.register_one("A", item_id, 0);
        for (int i = 0; i < 2; ++i) data.push_back(d.next_data());
    };
    Script first([&] { serve(d1, 5, 77, data1); });
    Script second([&] { serve(d2, 6, 88, data2); });
    REQUIRE(eventually([&] { return publisher.stats().refreshes_sent == 2; }));
    CHECK(publisher.update(item, bid(10001)));
    CHECK(first.join().empty());
    CHECK(second.join().empty());
    CHECK(data1 == std::vector<std::string>{"refresh 77 0 10000", "update 77 1 10001"});
    CHECK(data2 == std::vector<std::string>{"refresh 88 0 10000", "update 88 1 10001"});
    CHECK(io->publishers() == 1);
    publisher.stop();
    CHECK(io->publishers() == 0);
    CHECK(links.of(d1.port(), "stopped").size() == 1);
    CHECK(links.of(d2.port(), "stopped").size() == 1);
}

TEST_CASE("publish_to_all refuses a distributor listed twice", "[publisher]") {
    Links links;
    mdcast::PublisherOptions options;
    options.distributors = {{"127.0.0.1", 4000}, {"127.0.0.1", 4000}};
    options.publish_to_all = true;
    CHECK_THROWS_AS(mdcast::Publisher(options, links), std::invalid_argument);
    options.publish_to_all = false;  // a failover list may name one twice
    CHECK_NOTHROW(mdcast::Publisher(options, links));
}
