// The Consumer's requests fit the limits the server announced at login
// (client-sdk/src/consumer_core.cpp, proto/subscribe_split.h): a batch is
// split at max_frame_bytes as well as at max_items_per_request, an item whose
// request cannot fit at all is closed locally (INVALID_REQUEST) and never sent,
// and a name over the protocol's limit is refused to the caller. Each of these
// used to get the connection closed (frame_too_large) on every reconnect.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdcast/consumer.h"
#include "mdcast/publisher.h"
#include "proto/limits.h"
#include "scripted_peer.h"
#include "wire/client.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::Script;
using std::chrono::milliseconds;

class Statuses final : public mdcast::ConsumerHandler {
  public:
    void on_status(const mdcast::Event& e) override {
        std::lock_guard lock(mutex_);
        seen_.push_back(e.item().substr(0, 8) + " " + std::string(stream_state_name(e.state())) +
                        " " + std::string(mdcast::status_code_name(e.state().code)));
    }
    std::vector<std::string> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

  private:
    static std::string_view stream_state_name(const mdcast::ItemState& s) {
        return s.stream == mdcast::StreamState::kClosed ? "closed" : "open";
    }
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

mdcast::ConsumerOptions options_for(const scripted::Peer& server) {
    mdcast::ConsumerOptions options;
    options.servers.push_back({"127.0.0.1", server.port()});
    options.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
    options.reconnect_delay_min_ms = 20;
    options.reconnect_delay_max_ms = 100;
    options.log_level = "off";
    return options;
}

std::vector<std::string> numbered(size_t count, size_t width) {
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
        const std::string n = std::to_string(i);
        names.push_back(std::string(width - n.size(), 'N') + n);
    }
    return names;
}

// Reads Subscribe frames until `names` names arrived (or nothing for 2 s);
// throws when a frame body is over `max_body`.
std::vector<std::string> read_subscribed(scripted::Peer& server, size_t names, size_t max_body) {
    std::vector<std::string> seen;
    while (seen.size() < names) {
        auto frame = server.read(milliseconds(2000));
        if (!frame) break;
        if (frame->first != FrameType::kSubscribe) scripted::fail("expected only Subscribe");
        if (frame->second.size() > max_body) {
            scripted::fail("a Subscribe of " + std::to_string(frame->second.size()) +
                           " bytes, over the announced " + std::to_string(max_body));
        }
        wire::Subscribe request;
        request.ParseFromString(frame->second);
        seen.insert(seen.end(), request.item_names().begin(), request.item_names().end());
    }
    return seen;
}

}  // namespace

TEST_CASE("a batch is split to fit the server's announced frame limit", "[consumer][limits]") {
    scripted::Peer server;
    Statuses handler;
    mdcast::Consumer consumer(options_for(server), handler);
    const auto names = numbered(2000, 40);  // ~84 KB of names
    consumer.subscribe_batch("SVC", names);
    consumer.start();
    std::vector<std::string> seen;
    Script script([&] {
        server.accept_login(true, 10000, 4096);
        seen = read_subscribed(server, names.size(), 4096);
    });
    CHECK(script.join().empty());
    CHECK(seen == names);
    CHECK(consumer.stats().connections == 1);
    consumer.stop();
}

TEST_CASE("without an announced frame limit the SDK keeps to the known default",
          "[consumer][limits]") {
    scripted::Peer server;
    Statuses handler;
    mdcast::Consumer consumer(options_for(server), handler);
    const auto names = numbered(10000, 10);  // 120 KB: over 64 KB in one request
    consumer.subscribe_batch("SVC", names);
    consumer.start();
    std::vector<std::string> seen;
    Script script([&] {
        server.accept_login(true, 10000, 0);
        seen = read_subscribed(server, names.size(), mdcast::proto::kDefaultServerFrameBodyBytes);
    });
    CHECK(script.join().empty());
    CHECK(seen == names);
    consumer.stop();
}

TEST_CASE("an item that cannot fit the frame limit is closed locally, never sent",
          "[consumer][limits]") {
    scripted::Peer server;
    Statuses handler;
    auto options = options_for(server);
    options.delivery = mdcast::ConsumerOptions::Delivery::kIoThread;
    mdcast::Consumer consumer(options, handler);
    const std::string huge(1000,
                           'H');  // within the protocol's 1024 bytes, over this server's frame
    consumer.subscribe_batch("SVC", {"A", huge, "B"});
    consumer.start();
    std::vector<std::string> seen;
    std::atomic<bool> second_connection{false};
    Script script([&] {
        server.accept_login(true, 10000, 512);
        seen = read_subscribed(server, 2, 512);
        // The connection stays: no reconnect follows.
        second_connection = server.accept(milliseconds(500));
    });
    CHECK(script.join().empty());
    CHECK(seen == std::vector<std::string>{"A", "B"});
    CHECK_FALSE(second_connection);
    CHECK(handler.seen() == std::vector<std::string>{"HHHHHHHH closed INVALID_REQUEST"});
    consumer.stop();
}

TEST_CASE("a name over the protocol's limit is refused to the caller", "[consumer][limits]") {
    scripted::Peer server;
    Statuses handler;
    mdcast::Consumer consumer(options_for(server), handler);
    const std::string too_long(100 * 1024, 'X');
    CHECK_THROWS_AS(consumer.subscribe("SVC", too_long), std::invalid_argument);
    CHECK_THROWS_AS(consumer.subscribe_batch("SVC", {"A", too_long}), std::invalid_argument);
    CHECK_THROWS_AS(consumer.snapshot(std::string(300, 'S'), "A"), std::invalid_argument);
    CHECK_NOTHROW(consumer.subscribe("SVC", std::string(mdcast::proto::kMaxItemNameBytes, 'M')));

    mdcast::PublisherOptions publisher_options;
    publisher_options.distributors.push_back({"127.0.0.1", server.port()});
    publisher_options.log_level = "off";
    mdcast::PublisherHandler publisher_handler;
    mdcast::Publisher publisher(publisher_options, publisher_handler);
    CHECK_THROWS_AS(publisher.add_service(std::string(300, 'S'), mdcast::ServiceMode::kBroadcast),
                    std::invalid_argument);
    publisher.add_service("SVC", mdcast::ServiceMode::kBroadcast);
    CHECK_THROWS_AS(publisher.add_item("SVC", too_long), std::invalid_argument);
}
