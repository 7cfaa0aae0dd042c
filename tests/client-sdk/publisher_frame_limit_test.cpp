// The Publisher and the distributor's frame limit (client-sdk/src/publisher_frame_limit.h,
// docs/sdk.md "Frame limit") against a scripted distributor on loopback: a
// call over the announced limit is refused with the error while the other
// items go on; a kept image over a lower limit after a failover is dropped
// alone and closed; a distributor that closes the connection frame_too_large
// all the same gets the item of the largest frame dropped, not re-sent for
// ever. The real distributor's side is in tests/integration/test_frame_limit.py.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/publisher.h"
#include "scripted_distributor.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::bid;
using scripted::kBid;
using scripted::options_for;
using scripted::Script;
using scripted::ScriptedDistributor;
using scripted::wait_for;
using std::chrono::milliseconds;

// The rejections the handler hears (I/O thread), for the test to read.
class Rejections : public mdcast::PublisherHandler {
  public:
    void on_item_rejected(mdcast::PublishedItem item, const mdcast::ItemState& state) override {
        std::lock_guard lock(mutex_);
        seen_.push_back(std::to_string(item.id) + " " +
                        (state.stream == mdcast::StreamState::kClosed ? "closed " : "open ") +
                        std::to_string(static_cast<int>(state.code)) + " " + state.text);
    }
    std::vector<std::string> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

  private:
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

// One broadcast service SVC with items A and B, not started.
struct TwoItems {
    Rejections handler;
    mdcast::Publisher publisher;
    mdcast::PublishedItem a, b;
    explicit TwoItems(std::initializer_list<const scripted::Peer*> distributors)
        : publisher(options_for(distributors), handler) {
        publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
        a = publisher.add_item("SVC", "A");
        b = publisher.add_item("SVC", "B");
    }
};

// BID first (the scripted distributor reads it), then `bytes` of text.
mdcast::FieldList bid_and_text(int64_t mantissa, size_t bytes) {
    mdcast::FieldList fields = bid(mantissa);
    fields.add_string(3, std::string(bytes, 'x'));
    return fields;
}

// Nothing but pings for a while: nothing re-sent, no other frame.
void expect_nothing_more(scripted::Peer& d) {
    if (const auto more = d.read(milliseconds(300)))
        scripted::fail("then " + std::string(mdcast::proto::frame_type_name(more->first)));
}

// After the publisher stops: `item` alone was dropped, once, closed
// LIMIT_REACHED with a text starting `what` and saying `why`, and the
// connection was lost once (the test's own doing), never for the item.
void check_dropped_alone(mdcast::Publisher& publisher, Rejections& handler,
                         mdcast::PublishedItem item, const std::string& what,
                         const std::string& why) {
    publisher.stop();
    const auto seen = handler.seen();
    REQUIRE(seen.size() == 1);
    const auto limit_reached = static_cast<int>(mdcast::StatusCode::kLimitReached);
    CHECK(seen[0].starts_with(std::to_string(item.id) + " closed " + std::to_string(limit_reached) +
                              " " + what));
    CHECK(seen[0].find(why) != std::string::npos);
    const auto stats = publisher.stats();
    CHECK(stats.images_dropped == 1);
    CHECK(stats.connection_losses == 1);
}

}  // namespace

TEST_CASE("a call over the announced frame limit is refused with the error, the rest goes on",
          "[publisher][frame_limit]") {
    ScriptedDistributor d;
    TwoItems two({&d});
    auto& [handler, publisher, a, b] = two;
    // Before any distributor announced its limit: publishers.max_frame_bytes' default.
    CHECK_THROWS_WITH(publisher.refresh(b, bid_and_text(1, 1u << 20)),
                      Catch::Contains("over the distributor's frame limit of 1048576 bytes"));
    CHECK(publisher.refresh(a, bid(100)));
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data;
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST, 4096);
        d.register_items({{"A", 77}, {"B", 78}});
        data.push_back(d.next_data());
        phase = 1;  // logged in: the calls now meet the announced 4096
        data.push_back(d.next_data());
        data.push_back(d.next_data());
        expect_nothing_more(d);
    });
    wait_for(phase, 1);
    CHECK_THROWS_WITH(publisher.refresh(b, bid_and_text(1, 5000)),
                      Catch::Contains("refresh of") &&
                          Catch::Contains("over the distributor's frame limit of 4096 bytes"));
    CHECK_THROWS_AS(publisher.update(a, bid_and_text(1, 5000)), std::invalid_argument);
    CHECK_THROWS_AS(publisher.status(a, {mdcast::StreamState::kOpen, mdcast::DataState::kSuspect,
                                         mdcast::StatusCode::kNone, std::string(5000, 's')}),
                    std::invalid_argument);
    mdcast::BookChanges entries;
    for (int i = 0; i < 400; ++i)
        entries.add(mdcast::BookKey::name("order" + std::to_string(i)), bid(i));
    CHECK_THROWS_WITH(publisher.refresh_book(b, mdcast::Domain::kMarketByOrder, bid(1), entries),
                      Catch::Contains("book refresh of"));
    CHECK(publisher.update(a, bid(101)));  // A's image was left as it was
    CHECK(publisher.refresh(b, bid(7)));
    CHECK(script.join().empty());
    CHECK(data ==
          std::vector<std::string>{"refresh 77 0 100", "update 77 1 101", "refresh 78 0 7"});
    publisher.stop();
    const auto stats = publisher.stats();
    CHECK(stats.frames_refused == 5);
    CHECK(stats.images_dropped == 0);
    CHECK(stats.connection_losses == 0);
    CHECK(handler.seen().empty());
}

TEST_CASE("a kept image over a lower limit after a failover is dropped alone and closed",
          "[publisher][frame_limit]") {
    ScriptedDistributor d1, d2;
    TwoItems two({&d1, &d2});
    auto& [handler, publisher, a, b] = two;
    CHECK(publisher.refresh(a, bid(100)));
    CHECK(publisher.refresh(b, bid_and_text(200, 6000)));  // within d1's 1 MiB
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data;
    Script script([&] {
        d1.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);  // announces no limit
        d1.register_items({{"A", 77}, {"B", 78}});
        data.push_back(d1.next_data());
        data.push_back(d1.next_data());
        d1.drop();
        d2.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST, 4096);
        d2.register_items({{"A", 87}, {"B", 88}});
        data.push_back(d2.next_data());
        data.push_back(d2.next_data());
        phase = 1;
        data.push_back(d2.next_data());
        data.push_back(d2.next_data());
        expect_nothing_more(d2);
    });
    wait_for(phase, 1);
    CHECK(publisher.update(b, bid(201)));  // dropped: B has no image now
    CHECK(publisher.update(a, bid(101)));
    CHECK(publisher.refresh(b, bid(300)));  // within the limit: B is back
    CHECK(script.join().empty());
    CHECK(data == std::vector<std::string>{"refresh 77 0 100", "refresh 78 0 200",
                                           "refresh 87 0 100", "status 88 STATUS_LIMIT_REACHED",
                                           "update 87 1 101", "refresh 88 0 300"});
    check_dropped_alone(publisher, handler, b, "image of ",
                        "over the distributor's frame limit of 4096 bytes");
    CHECK(publisher.stats().updates_dropped == 1);
}

TEST_CASE("closed frame_too_large all the same: the largest frame's item is dropped, no loop",
          "[publisher][frame_limit]") {
    // A distributor from before the limit was announced (or whose limit went
    // down since): the image it refused would otherwise go again after every
    // reconnect, and be refused again, while the other items go down each time.
    ScriptedDistributor d;
    TwoItems two({&d});
    auto& [handler, publisher, a, b] = two;
    CHECK(publisher.refresh(a, bid(100)));
    CHECK(publisher.refresh(b, bid_and_text(200, 20000)));
    publisher.start();
    std::vector<std::string> data;
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d.register_items({{"A", 77}, {"B", 78}});
        data.push_back(d.next_data());
        data.push_back(d.next_data());
        wire::Close close;
        close.set_reason(wire::CLOSE_FRAME_TOO_LARGE);
        close.set_text("frame body of 20070 bytes exceeds the limit");
        d.send(FrameType::kClose, close);
        d.drop();
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST);
        d.register_items({{"A", 77}, {"B", 78}});
        data.push_back(d.next_data());
        data.push_back(d.next_data());
        expect_nothing_more(d);
    });
    CHECK(script.join().empty());
    CHECK(data == std::vector<std::string>{"refresh 77 0 100", "refresh 78 0 200",
                                           "refresh 77 0 100", "status 78 STATUS_LIMIT_REACHED"});
    check_dropped_alone(publisher, handler, b, "frame of ", "closed frame_too_large");
}

TEST_CASE("item registrations are split to fit the announced limit", "[publisher][frame_limit]") {
    // 100 names of 60 bytes, about 8 KB: one request would pass a 4096-byte
    // limit, and the distributor would close the connection after every login.
    ScriptedDistributor d;
    Rejections handler;
    mdcast::Publisher publisher(options_for({&d}), handler);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    for (int i = 0; i < 100; ++i)
        publisher.add_item("SVC", std::string(57, 'N') + std::to_string(100 + i));
    publisher.start();
    size_t registered = 0, requests = 0, largest = 0;
    Script script([&] {
        d.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST, 4096);
        while (registered < 100) {
            const auto frame = d.read();
            if (!frame || frame->first != FrameType::kItemRegister)
                scripted::fail("no registration");
            wire::ItemRegister request;
            request.ParseFromString(frame->second);
            registered += static_cast<size_t>(request.items_size());
            largest = std::max(largest, frame->second.size());
            ++requests;
        }
    });
    CHECK(script.join().empty());
    publisher.stop();
    CHECK(registered == 100);
    CHECK(requests >= 4);
    CHECK(largest <= 2048);
}

TEST_CASE("dual-homed, calls meet the least limit of the distributors logged in",
          "[publisher][frame_limit]") {
    ScriptedDistributor small, large;
    auto options = options_for({&small, &large});
    options.publish_to_all = true;
    Rejections handler;
    mdcast::Publisher publisher(options, handler);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    const auto a = publisher.add_item("SVC", "A");
    CHECK(publisher.refresh(a, bid(100)));
    publisher.start();
    std::atomic<int> phase{0};
    std::vector<std::string> data;
    Script first([&] {
        small.accept_publisher("SVC", 5, wire::SERVICE_BROADCAST, 4096);
        small.register_one("A", 77, 0);
        small.next_data();
        phase = 1;
        wait_for(phase, 2);
        small.drop();  // gone: the larger limit is the least left
    });
    Script second([&] {
        large.accept_publisher("SVC", 6, wire::SERVICE_BROADCAST, 8192);
        large.register_one("A", 88, 0);
        data.push_back(large.next_data());
        data.push_back(large.next_data());
    });
    wait_for(phase, 1);
    const auto both_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (publisher.stats().refreshes_sent < 2 && std::chrono::steady_clock::now() < both_up)
        std::this_thread::sleep_for(milliseconds(1));
    CHECK_THROWS_WITH(publisher.update(a, bid_and_text(101, 6000)),
                      Catch::Contains("frame limit of 4096 bytes"));
    phase = 2;
    CHECK(first.join().empty());
    const auto down = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (publisher.stats().connection_losses < 1 && std::chrono::steady_clock::now() < down)
        std::this_thread::sleep_for(milliseconds(1));
    CHECK(publisher.update(a, bid_and_text(102, 6000)));
    CHECK(second.join().empty());
    CHECK(data == std::vector<std::string>{"refresh 88 0 100", "update 88 1 102"});
    publisher.stop();
    CHECK(publisher.stats().frames_refused == 1);
}
