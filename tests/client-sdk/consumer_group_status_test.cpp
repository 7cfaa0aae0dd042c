// The Consumer's expansion of a GroupStatus (consumer_core.cpp): it asks for
// group statuses at login, and one group frame from a scripted server reaches
// the application as one status per open item in its scope (a service, or a
// distributor through the item ids), with the code and text an ItemStatus
// would have carried; items outside the scope hear nothing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "mdcast/consumer.h"
#include "proto/source_ids.h"
#include "scripted_peer.h"
#include "wire/client.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
namespace proto = mdcast::proto;
using mdcast::proto::FrameType;
using scripted::Script;
using std::chrono::milliseconds;

// Service 1 of distributor 1 holds A1..A3; service 2 of distributor 1 holds B;
// service 1 of distributor 2 holds C.
struct Placed {
    const char* service;
    const char* name;
    uint16_t source;
    uint32_t service_number;
    uint64_t number;
};
constexpr Placed kItems[] = {{"S1", "A1", 1, 1, 1},
                             {"S1", "A2", 1, 1, 2},
                             {"S1", "A3", 1, 1, 3},
                             {"S2", "B", 1, 2, 4},
                             {"S3", "C", 2, 1, 1}};

class GroupServer : public scripted::Peer {
  public:
    // Accepts the consumer, checks it asks for group statuses, takes its requests.
    void accept_consumer() {
        if (!accept()) scripted::fail("no connection from the SDK");
        const auto login = expect<wire::LoginRequest>(FrameType::kLoginRequest);
        if (!login.group_status()) scripted::fail("the consumer did not ask for group statuses");
        wire::LoginResponse response;
        response.set_accepted(true);
        response.set_server_id("scripted");
        response.set_heartbeat_interval_ms(1000);
        send(FrameType::kLoginResponse, response);
        for (int asked = 0; asked < 5;) {
            asked += expect<wire::Subscribe>(FrameType::kSubscribe).item_names_size();
        }
    }
    void images() {
        for (const Placed& p : kItems) {
            wire::Refresh r;
            r.set_item_id(proto::make_item_id(p.source, p.number));
            r.set_item_seq(1);
            r.set_service_id(proto::make_service_id(p.source, p.service_number));
            r.set_service_name(p.service);
            r.set_item_name(p.name);
            r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
            r.mutable_status()->set_data_state(wire::DATA_OK);
            send(FrameType::kRefresh, r);
        }
    }
    void group(wire::GroupScope scope, uint32_t id, wire::StatusCode code, const std::string& text,
               uint32_t items) {
        wire::GroupStatus g;
        g.set_scope(scope);
        g.set_id(id);
        g.set_item_count(items);
        g.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        g.mutable_status()->set_data_state(wire::DATA_SUSPECT);
        g.mutable_status()->set_code(code);
        g.mutable_status()->set_text(text);
        send(FrameType::kGroupStatus, g);
    }
};

class Recorder final : public mdcast::ConsumerHandler {
  public:
    void on_refresh(const mdcast::Event& e) override { seen.push_back("refresh " + e.item()); }
    void on_status(const mdcast::Event& e) override {
        seen.push_back("status " + e.item() + " " +
                       std::string(mdcast::status_code_name(e.state().code)) + " " +
                       (e.state().data == mdcast::DataState::kSuspect ? "suspect" : "ok") + " " +
                       e.state().text);
    }
    std::vector<std::string> seen;
};

void dispatch_until(mdcast::Consumer& consumer, Recorder& recorder, size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (recorder.seen.size() < count && std::chrono::steady_clock::now() < deadline) {
        consumer.dispatch(milliseconds(20));
    }
}

// The last `count` events seen, sorted (a group's items come in no set order).
std::vector<std::string> last_sorted(const Recorder& recorder, size_t count) {
    REQUIRE(recorder.seen.size() >= count);
    std::vector<std::string> tail(recorder.seen.end() - static_cast<long>(count),
                                  recorder.seen.end());
    std::sort(tail.begin(), tail.end());
    return tail;
}

}  // namespace

TEST_CASE("a group status reaches the application as each open item's status in its scope",
          "[consumer][group]") {
    GroupServer server;
    Recorder recorder;
    mdcast::ConsumerOptions options;
    options.servers.push_back({"127.0.0.1", server.port()});
    options.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
    options.log_level = "off";
    mdcast::Consumer consumer(options, recorder);
    for (const Placed& p : kItems) consumer.subscribe(p.service, p.name);
    consumer.start();

    Script script([&] {
        server.accept_consumer();
        server.images();
        server.group(wire::GROUP_SERVICE, proto::make_service_id(1, 1), wire::STATUS_SOURCE_DOWN,
                     "service S1 is down", 3);
    });
    dispatch_until(consumer, recorder, 8);
    REQUIRE(script.join().empty());
    CHECK(last_sorted(recorder, 3) ==
          std::vector<std::string>{"status A1 SOURCE_DOWN suspect service S1 is down",
                                   "status A2 SOURCE_DOWN suspect service S1 is down",
                                   "status A3 SOURCE_DOWN suspect service S1 is down"});

    // Distributor 1 restarts: every item of it (both services) hears the reset,
    // the ids are void, and a new image by name binds them again.
    Script reset([&] {
        server.group(wire::GROUP_SOURCE, 1, wire::STATUS_SOURCE_RESET, "restarted", 4);
        server.images();
    });
    dispatch_until(consumer, recorder, 17);
    REQUIRE(reset.join().empty());
    REQUIRE(recorder.seen.size() == 17);
    recorder.seen.resize(12);
    CHECK(last_sorted(recorder, 4) ==
          std::vector<std::string>{"status A1 SOURCE_RESET suspect restarted",
                                   "status A2 SOURCE_RESET suspect restarted",
                                   "status A3 SOURCE_RESET suspect restarted",
                                   "status B SOURCE_RESET suspect restarted"});
    CHECK(consumer.stats().group_statuses == 2);
    CHECK(consumer.stats().statuses == 7);  // C, on distributor 2, heard nothing
    consumer.stop();
}
