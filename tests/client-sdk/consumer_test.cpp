// The Consumer as a whole (public API, its own I/O thread, the dispatch
// queue) against scripted servers that speak the wire protocol on loopback,
// so each failover case happens exactly when the test says: a server whose
// image is behind (catch-up), a Close(shutdown), a refused login, an
// unsubscribe racing its own refresh, and what the requests look like on the
// wire. The real-server cases are in tests/integration/test_sdk_failover.py.
#include "mdcast/consumer.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "scripted_peer.h"
#include "wire/client.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::Script;
using std::chrono::milliseconds;

// A server: the session, then the refreshes and updates a test scripts.
class ScriptedServer : public scripted::Peer {
  public:
    // Accepts, answers the login, returns the Subscribe that follows.
    wire::Subscribe accept_session(bool accepted = true) {
        accept_login(accepted, 2);
        if (!accepted) return {};
        return expect<wire::Subscribe>(FrameType::kSubscribe);
    }
    void refresh(uint64_t id, const std::string& item, uint64_t seq, int64_t bid) {
        wire::Refresh r;
        r.set_item_id(id);
        r.set_item_seq(seq);
        r.set_service_name("SVC");
        r.set_item_name(item);
        r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        r.mutable_status()->set_data_state(wire::DATA_OK);
        add_bid(*r.mutable_fields(), bid);
        auto* name = r.mutable_fields()->add_fields();
        name->set_id(3);
        name->set_string_value(item);
        send(FrameType::kRefresh, r);
    }
    void update(uint64_t id, uint64_t seq, int64_t bid) {
        wire::Update u;
        u.set_item_id(id);
        u.set_item_seq(seq);
        u.set_publish_time_ns(1000 + seq);
        add_bid(*u.mutable_fields(), bid);
        send(FrameType::kUpdate, u);
    }

  private:
    static void add_bid(wire::FieldList& fields, int64_t bid) {
        auto* f = fields.add_fields();
        f->set_id(22);
        f->mutable_decimal_value()->set_mantissa(bid);
        f->mutable_decimal_value()->set_exponent(-2);
    }
};

// What the application saw, in order, as short strings: "refresh X 10 100.00".
class Recorder final : public mdcast::ConsumerHandler {
  public:
    void on_refresh(const mdcast::Event& e) override { item("refresh", e); }
    void on_update(const mdcast::Event& e) override {
        item("update", e);
        update_receive_ns.push_back(e.receive_time_ns());
    }
    void on_status(const mdcast::Event& e) override {
        seen.push_back("status " + e.item() + " " +
                       std::string(mdcast::status_code_name(e.state().code)));
    }
    void on_connection(const mdcast::Event& e) override {
        if (e.connection().state == mdcast::ConnectionState::kUp) {
            seen.push_back("up " + std::to_string(e.connection().server.port));
        }
    }
    std::vector<std::string> seen;
    std::vector<uint64_t> update_receive_ns;

  private:
    void item(const char* what, const mdcast::Event& e) {
        const auto* bid = e.field(22);
        seen.push_back(std::string(what) + " " + e.item() + " " + std::to_string(e.sequence()) +
                       " " + (bid ? bid->to_string() : "-"));
    }
};

mdcast::ConsumerOptions options_for(std::initializer_list<const ScriptedServer*> servers) {
    mdcast::ConsumerOptions options;
    for (const auto* s : servers) options.servers.push_back({"127.0.0.1", s->port()});
    options.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
    options.reconnect_delay_min_ms = 20;
    options.reconnect_delay_max_ms = 100;
    options.log_level = "off";
    return options;
}

// Dispatches until `count` events were seen (or 5 s passed).
void dispatch_until(mdcast::Consumer& consumer, Recorder& recorder, size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (recorder.seen.size() < count && std::chrono::steady_clock::now() < deadline) {
        consumer.dispatch(milliseconds(20));
    }
}

// Two servers and a consumer streaming X from them, started.
struct TwoServers {
    explicit TwoServers(const std::function<void(mdcast::ConsumerOptions&)>& adjust = {})
        : consumer(adjusted(options_for({&a, &b}), adjust), recorder) {
        consumer.subscribe("SVC", "X");
        consumer.start();
    }
    static mdcast::ConsumerOptions adjusted(
        mdcast::ConsumerOptions options,
        const std::function<void(mdcast::ConsumerOptions&)>& adjust) {
        if (adjust) adjust(options);
        return options;
    }
    ScriptedServer a, b;
    Recorder recorder;
    mdcast::Consumer consumer;
};

}  // namespace

TEST_CASE("an image that is behind after a failover is brought level before it is delivered",
          "[consumer]") {
    TwoServers t;
    // References, not a structured binding: clang 14 cannot capture bindings in lambdas.
    auto &a = t.a, &b = t.b;
    auto& recorder = t.recorder;
    auto& consumer = t.consumer;
    Script script([&] {
        a.accept_session();
        a.refresh(7, "X", 10, 10010);
        for (uint64_t seq = 11; seq <= 13; ++seq)
            a.update(7, seq, 10000 + static_cast<int64_t>(seq));
        std::this_thread::sleep_for(milliseconds(100));
        a.drop();  // server A dies
        b.accept_session();
        b.refresh(9, "X", 11, 10011);  // B's image is two updates behind what was delivered
        b.update(9, 12, 10012);
        b.update(9, 13, 10013);
        b.update(9, 14, 10014);
    });
    dispatch_until(consumer, recorder, 9);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"up " + std::to_string(a.port()),
                                            "refresh X 10 100.10",
                                            "update X 11 100.11",
                                            "update X 12 100.12",
                                            "update X 13 100.13",
                                            "status X CONNECTION_LOST",
                                            "up " + std::to_string(b.port()),
                                            "refresh X 13 100.13",
                                            "update X 14 100.14"};
    CHECK(recorder.seen == expected);
    CHECK(consumer.stats().catch_ups == 1);
    CHECK(consumer.stats().connection_losses == 1);
    consumer.stop();
}

TEST_CASE("an image ahead after a failover is delivered at once; repeats are dropped",
          "[consumer]") {
    TwoServers t;
    // References, not a structured binding: clang 14 cannot capture bindings in lambdas.
    auto &a = t.a, &b = t.b;
    auto& recorder = t.recorder;
    auto& consumer = t.consumer;
    Script script([&] {
        a.accept_session();
        a.refresh(7, "X", 10, 10010);
        a.update(7, 11, 10011);
        a.update(7, 11, 10011);  // a repeat on the same connection
        std::this_thread::sleep_for(milliseconds(100));
        a.drop();
        b.accept_session();
        b.update(9, 15, 10015);  // before its image: never delivered
        b.refresh(9, "X", 14, 10014);
        b.update(9, 14, 10014);
        b.update(9, 15, 10015);
    });
    dispatch_until(consumer, recorder, 7);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"up " + std::to_string(a.port()),
                                            "refresh X 10 100.10",
                                            "update X 11 100.11",
                                            "status X CONNECTION_LOST",
                                            "up " + std::to_string(b.port()),
                                            "refresh X 14 100.14",
                                            "update X 15 100.15"};
    CHECK(recorder.seen == expected);
    CHECK(consumer.stats().duplicates_dropped >= 2);
    consumer.stop();
}

TEST_CASE("a server shutting down sends the consumer to the next at once", "[consumer]") {
    TwoServers t([](mdcast::ConsumerOptions& options) {
        options.heartbeat_interval_ms = 10000;  // only the Close can explain a quick move
        options.heartbeat_timeout_ms = 30000;
    });
    // References, not a structured binding: clang 14 cannot capture bindings in lambdas.
    auto &a = t.a, &b = t.b;
    auto& recorder = t.recorder;
    auto& consumer = t.consumer;
    Script script([&] {
        a.accept_session();
        a.refresh(7, "X", 1, 10001);
        wire::Close close;
        close.set_reason(wire::CLOSE_SHUTDOWN);
        close.set_text("server shutting down");
        a.send(FrameType::kClose, close);
        b.accept_session();
        b.refresh(9, "X", 1, 10001);
    });
    dispatch_until(consumer, recorder, 5);
    CHECK(script.join().empty());
    CHECK(recorder.seen.size() == 5);
    CHECK(recorder.seen[2] == "status X SERVER_SHUTDOWN");
    CHECK(recorder.seen[4] == "refresh X 1 100.01");
    consumer.stop();
}

TEST_CASE("a refused login moves to the next server after a back-off", "[consumer]") {
    TwoServers t;
    // References, not a structured binding: clang 14 cannot capture bindings in lambdas.
    auto &a = t.a, &b = t.b;
    auto& recorder = t.recorder;
    auto& consumer = t.consumer;
    Script script([&] {
        a.accept_session(false);
        b.accept_session();
        b.refresh(9, "X", 5, 10005);
    });
    dispatch_until(consumer, recorder, 2);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"up " + std::to_string(b.port()), "refresh X 5 100.05"};
    CHECK(recorder.seen == expected);
    CHECK(consumer.stats().connection_losses == 0);  // never logged in to A: not a loss
    consumer.stop();
}

TEST_CASE(
    "requests on the wire: batches split, views sorted, snapshots flagged, stale refreshes "
    "let go",
    "[consumer]") {
    ScriptedServer a;
    Recorder recorder;
    auto options = options_for({&a});
    options.dictionary = mdcast::Dictionary::parse("22 BID DECIMAL\n25 ASK DECIMAL\n");
    mdcast::Consumer consumer(options, recorder);
    consumer.subscribe_batch("SVC", {"A", "B", "C"}, mdcast::View{{25}, {"BID", "ASK"}});
    consumer.snapshot("SVC", "S");
    const auto gone = consumer.subscribe("SVC", "G");
    CHECK_THROWS_AS(consumer.subscribe("SVC", "A"), std::invalid_argument);  // already streamed
    CHECK_THROWS_AS(consumer.subscribe("SVC", "Z", mdcast::View{{}, {"NOPE"}}),
                    std::invalid_argument);
    consumer.start();
    std::vector<wire::Subscribe> requests;
    std::optional<wire::Unsubscribe> let_go;
    std::atomic<bool> subscribed{false};
    std::atomic<bool> unsubscribed{false};
    Script script([&] {
        requests.push_back(a.accept_session());
        for (int i = 0; i < 3; ++i)
            requests.push_back(a.expect<wire::Subscribe>(FrameType::kSubscribe));
        subscribed = true;
        while (!unsubscribed) std::this_thread::sleep_for(milliseconds(1));
        std::this_thread::sleep_for(milliseconds(100));  // the I/O thread takes the unsubscribe
        a.refresh(40, "G", 1, 1);  // the server did subscribe G: the consumer must let it go
        auto frame = a.read();
        if (frame && frame->first == FrameType::kUnsubscribe) {
            let_go.emplace();
            let_go->ParseFromString(frame->second);
        }
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!subscribed && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(milliseconds(1));
    consumer.unsubscribe(gone);  // after the request went out, before its image arrives
    unsubscribed = true;
    CHECK(script.join().empty());
    REQUIRE(requests.size() == 4);
    // Order of groups is by (service, snapshot, view); A,B,C split at the server's limit of 2.
    std::vector<std::string> summary;
    for (const auto& r : requests) {
        std::string line = r.snapshot() ? "snapshot:" : "stream:";
        for (const auto& name : r.item_names()) line += name + ",";
        line += " view:";
        for (uint32_t id : r.view_field_ids()) line += std::to_string(id) + ",";
        summary.push_back(line);
    }
    std::sort(summary.begin(), summary.end());
    const std::vector<std::string> expected{"snapshot:S, view:", "stream:A,B, view:22,25,",
                                            "stream:C, view:22,25,", "stream:G, view:"};
    CHECK(summary == expected);
    REQUIRE(let_go.has_value());
    CHECK(let_go->item_ids_size() == 1);
    CHECK(let_go->item_ids(0) == 40);
    consumer.dispatch(milliseconds(50));
    for (const auto& line : recorder.seen) CHECK(line.find(" G ") == std::string::npos);
    consumer.stop();
}

TEST_CASE("a closed status reaches the stream and the snapshots waiting for the item",
          "[consumer]") {
    ScriptedServer a;
    Recorder recorder;
    mdcast::Consumer consumer(options_for({&a}), recorder);
    consumer.subscribe("SVC", "X");
    consumer.snapshot("SVC", "X");
    consumer.start();
    Script script([&] {
        a.accept_session();
        a.expect<wire::Subscribe>(FrameType::kSubscribe);  // the snapshot's own request
        a.refresh(7, "X", 1, 10001);                       // answers the stream
        wire::ItemStatus closed;
        closed.set_item_id(7);
        closed.set_service_name("SVC");
        closed.set_item_name("X");
        closed.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
        closed.mutable_status()->set_data_state(wire::DATA_SUSPECT);
        closed.mutable_status()->set_code(wire::STATUS_NOT_FOUND);
        a.send(FrameType::kItemStatus, closed);
        a.refresh(7, "X", 2, 10002);  // nobody wants X now: never delivered
    });
    dispatch_until(consumer, recorder, 4);
    CHECK(script.join().empty());
    consumer.dispatch(milliseconds(100));
    const std::vector<std::string> expected{"up " + std::to_string(a.port()), "refresh X 1 100.01",
                                            "status X NOT_FOUND", "status X NOT_FOUND"};
    CHECK(recorder.seen == expected);
    consumer.stop();
}

TEST_CASE("an event's receive time is the wall-clock time its bytes were read", "[consumer]") {
    ScriptedServer server;
    Recorder recorder;
    mdcast::Consumer consumer(options_for({&server}), recorder);
    consumer.subscribe("SVC", "X");
    consumer.start();
    uint64_t sent_ns = 0;
    Script script([&] {
        server.accept_session();
        server.refresh(7, "X", 1, 100);
        std::this_thread::sleep_for(milliseconds(250));  // past a clock-offset sample or two
        sent_ns = mdcast::realtime_now_ns();
        server.update(7, 2, 101);
    });
    dispatch_until(consumer, recorder, 3);  // up, refresh, update
    const uint64_t dispatched_ns = mdcast::realtime_now_ns();
    CHECK(script.join().empty());
    REQUIRE(recorder.update_receive_ns.size() == 1);
    CHECK(recorder.update_receive_ns[0] >= sent_ns);
    CHECK(recorder.update_receive_ns[0] <= dispatched_ns);
    consumer.stop();
}
