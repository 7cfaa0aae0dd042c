// The Consumer as a whole (public API, its own I/O thread or a shared
// IoContext's, the dispatch queue) against scripted servers that speak the wire protocol on
// loopback, so each failover case happens exactly when the test says: a server whose image is
// behind (catch-up), a Close(shutdown), a refused login, an unsubscribe racing its own refresh, and
// what the requests look like on the wire. The real-server cases are in
// tests/integration/test_sdk_failover.py.
#include "mdcast/consumer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "scripted_peer.h"
#include "wire/client.pb.h"
#include "wire/post.pb.h"

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

TEST_CASE("an image ahead after a failover is delivered at once, repeats are dropped",
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

// ---- several Consumers on one IoContext ------------------------------------------------------

namespace {

using Delivery = mdcast::ConsumerOptions::Delivery;

mdcast::ConsumerOptions on_context(mdcast::ConsumerOptions options,
                                   std::shared_ptr<mdcast::IoContext> io,
                                   Delivery delivery = Delivery::kDispatch) {
    options.io_context = std::move(io);
    options.delivery = delivery;
    return options;
}

// For Delivery::kIoThread: what the handler saw, which threads it ran on, and
// whether each call was on the context's thread; `hook` runs in every call.
class ThreadRecorder final : public mdcast::ConsumerHandler {
  public:
    explicit ThreadRecorder(const mdcast::IoContext& io) : io_(io) {}
    void on_refresh(const mdcast::Event& e) override { note("refresh " + e.item(), e); }
    void on_update(const mdcast::Event& e) override {
        note("update " + e.item() + " " + std::to_string(e.sequence()), e);
    }
    void on_connection(const mdcast::Event& e) override {
        note(std::string(mdcast::connection_state_name(e.connection().state)), e);
    }
    // Waits (up to 5 s) until `line` was seen.
    bool wait_for(const std::string& line) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            {
                std::lock_guard lock(mutex_);
                if (std::find(seen_.begin(), seen_.end(), line) != seen_.end()) return true;
            }
            std::this_thread::sleep_for(milliseconds(2));
        }
        return false;
    }
    std::vector<std::string> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }
    std::vector<std::thread::id> threads() {
        std::lock_guard lock(mutex_);
        return threads_;
    }
    bool all_on_context() const { return all_on_context_; }
    std::function<void(const mdcast::Event&)> hook;

  private:
    void note(std::string line, const mdcast::Event& e) {
        if (hook) hook(e);
        if (!io_.on_io_thread()) all_on_context_ = false;
        std::lock_guard lock(mutex_);
        if (line == "connecting") return;  // repeats with every attempt
        seen_.push_back(std::move(line));
        const auto self = std::this_thread::get_id();
        if (std::find(threads_.begin(), threads_.end(), self) == threads_.end())
            threads_.push_back(self);
    }
    const mdcast::IoContext& io_;
    std::mutex mutex_;
    std::vector<std::string> seen_;
    std::vector<std::thread::id> threads_;
    std::atomic<bool> all_on_context_{true};
};

// Reads from `server` until the consumer closes the connection (or 5 s pass).
bool closed_by_consumer(ScriptedServer& server) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
        if (!server.read(milliseconds(200))) return true;
    }
    return false;
}

// The pair every case below starts with: `x` streams X, `y` streams Y (asked
// before start(), so the requests wait for the shared loop), both started.
void subscribe_and_start(mdcast::Consumer& x, mdcast::Consumer& y) {
    x.subscribe("SVC", "X");
    y.subscribe("SVC", "Y");
    x.start();
    y.start();
}

// The servers' side of that: sessions, then X's image (id 7) and Y's (id 8).
void serve_images(ScriptedServer& x_server, ScriptedServer& y_server) {
    x_server.accept_session();
    y_server.accept_session();
    x_server.refresh(7, "X", 1, 101);
    y_server.refresh(8, "Y", 1, 201);
}

}  // namespace

TEST_CASE("consumers on one IoContext each get their own images and updates",
          "[consumer][io_context]") {
    auto io = std::make_shared<mdcast::IoContext>();
    ScriptedServer a, b;
    Recorder ra, rb;
    mdcast::Consumer ca(on_context(options_for({&a}), io), ra);
    mdcast::Consumer cb(on_context(options_for({&b}), io), rb);
    CHECK(io->consumers() == 0);
    subscribe_and_start(ca, cb);
    Script script([&] {
        serve_images(a, b);
        a.update(7, 2, 102);
        b.update(8, 2, 202);
    });
    dispatch_until(ca, ra, 3);
    dispatch_until(cb, rb, 3);
    CHECK(script.join().empty());
    const std::vector<std::string> expected_a{"up " + std::to_string(a.port()), "refresh X 1 1.01",
                                              "update X 2 1.02"};
    const std::vector<std::string> expected_b{"up " + std::to_string(b.port()), "refresh Y 1 2.01",
                                              "update Y 2 2.02"};
    CHECK(ra.seen == expected_a);
    CHECK(rb.seen == expected_b);
    CHECK(io->consumers() == 2);
    CHECK(ca.stats().updates == 1);
    CHECK(cb.stats().updates == 1);
    ca.stop();
    cb.stop();
    CHECK(io->consumers() == 0);
}

TEST_CASE("handlers of consumers on one IoContext run on its thread, one stops, the other runs on",
          "[consumer][io_context]") {
    auto io = std::make_shared<mdcast::IoContext>();
    ScriptedServer a, b;
    ThreadRecorder ra(*io), rb(*io);
    mdcast::Consumer ca(on_context(options_for({&a}), io, Delivery::kIoThread), ra);
    mdcast::Consumer cb(on_context(options_for({&b}), io, Delivery::kIoThread), rb);
    subscribe_and_start(ca, cb);
    Script session([&] { serve_images(a, b); });
    CHECK(ra.wait_for("refresh X"));
    CHECK(rb.wait_for("refresh Y"));
    CHECK(session.join().empty());
    ca.stop();  // takes A off the loop; B keeps its connection
    CHECK(io->consumers() == 1);
    Script after([&] {
        if (!closed_by_consumer(a)) scripted::fail("the stopped consumer kept its connection");
        b.update(8, 2, 202);
    });
    CHECK(after.join().empty());
    CHECK(rb.wait_for("update Y 2"));
    const std::vector<std::string> expected_a{"up", "refresh X", "stopped"};
    CHECK(ra.seen() == expected_a);
    const std::vector<std::string> expected_b{"up", "refresh Y", "update Y 2"};
    CHECK(rb.seen() == expected_b);
    // One thread for both, and it is the context's.
    REQUIRE(ra.threads().size() == 1);
    CHECK(rb.threads() == ra.threads());
    CHECK(ra.all_on_context());
    CHECK(rb.all_on_context());
    cb.stop();
    CHECK(io->consumers() == 0);
}

TEST_CASE("consumers on one IoContext fail over independently", "[consumer][io_context]") {
    auto io = std::make_shared<mdcast::IoContext>();
    ScriptedServer a1, b1, a2;
    Recorder r1, r2;
    mdcast::Consumer c1(on_context(options_for({&a1, &b1}), io), r1);
    mdcast::Consumer c2(on_context(options_for({&a2}), io), r2);
    subscribe_and_start(c1, c2);
    Script script([&] {
        serve_images(a1, a2);
        std::this_thread::sleep_for(milliseconds(100));
        a1.drop();  // c1's server dies; c2's does not
        b1.accept_session();
        b1.refresh(8, "X", 2, 102);
        a2.update(8, 2, 202);
    });
    dispatch_until(c1, r1, 5);
    dispatch_until(c2, r2, 3);
    CHECK(script.join().empty());
    const std::vector<std::string> expected_1{
        "up " + std::to_string(a1.port()), "refresh X 1 1.01", "status X CONNECTION_LOST",
        "up " + std::to_string(b1.port()), "refresh X 2 1.02"};
    const std::vector<std::string> expected_2{"up " + std::to_string(a2.port()), "refresh Y 1 2.01",
                                              "update Y 2 2.02"};
    CHECK(r1.seen == expected_1);
    CHECK(r2.seen == expected_2);
    CHECK(c1.stats().connection_losses == 1);
    CHECK(c2.stats().connection_losses == 0);
    c1.stop();
    c2.stop();
}

TEST_CASE("an IoContext: misuse is refused with a clear error, and it outlives its consumers",
          "[consumer][io_context]") {
    auto io = std::make_shared<mdcast::IoContext>();
    const std::weak_ptr<mdcast::IoContext> weak = io;
    ScriptedServer a, b;
    ThreadRecorder ra(*io), rb(*io);
    auto ca = std::make_unique<mdcast::Consumer>(
        on_context(options_for({&a}), io, Delivery::kIoThread), ra);
    mdcast::Consumer cb(on_context(options_for({&b}), io, Delivery::kIoThread), rb);
    io.reset();  // the consumers keep the context alive
    ca->stop();  // before start(): nothing to do
    std::string refused;
    rb.hook = [&](const mdcast::Event& e) {
        if (e.type() != mdcast::EventType::kRefresh) return;
        try {
            ca->stop();  // A runs on this very thread: waiting for it would never end
        } catch (const std::logic_error& error) {
            refused = error.what();
        }
    };
    subscribe_and_start(*ca, cb);
    CHECK_THROWS_AS(ca->start(), std::logic_error);
    Script script([&] { serve_images(a, b); });
    CHECK(ra.wait_for("refresh X"));
    CHECK(rb.wait_for("refresh Y"));
    CHECK(script.join().empty());
    CHECK(refused.find("shared IoContext") != std::string::npos);
    REQUIRE(!weak.expired());
    CHECK(weak.lock()->consumers() == 2);
    ca->stop();                 // from the owner's thread it works
    ca->subscribe("SVC", "Z");  // after stop(): dropped, never reaches a freed core
    ca.reset();
    CHECK(!weak.expired());
    cb.stop();
    CHECK(weak.lock()->consumers() == 0);
}

// A started Consumer destroyed inside a handler on its own IoContext's thread
// cannot leave the loop it runs on: the process stops with a message instead
// of running freed code. In a child process.
TEST_CASE("a consumer destroyed inside a handler on its IoContext aborts with a message",
          "[consumer][io_context]") {
    int err[2];
    REQUIRE(::pipe(err) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        std::signal(SIGABRT, SIG_DFL);  // not Catch's handler: the parent judges the abort
        ::dup2(err[1], STDERR_FILENO);
        auto io = std::make_shared<mdcast::IoContext>();
        std::unique_ptr<mdcast::Consumer> consumer;
        ThreadRecorder recorder(*io);
        recorder.hook = [&](const mdcast::Event&) { consumer.reset(); };
        mdcast::ConsumerOptions options;
        options.servers = {{"127.0.0.1", 1}};  // the first event (connecting) is enough
        options.log_level = "off";
        consumer = std::make_unique<mdcast::Consumer>(on_context(options, io, Delivery::kIoThread),
                                                      recorder);
        consumer->start();
        std::this_thread::sleep_for(std::chrono::seconds(10));
        ::_exit(0);
    }
    ::close(err[1]);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(child, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(child, SIGKILL);
            ::waitpid(child, &status, 0);
            break;
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    std::string text;
    char chunk[4096];
    for (ssize_t n; (n = ::read(err[0], chunk, sizeof chunk)) > 0;)
        text.append(chunk, static_cast<size_t>(n));
    ::close(err[0]);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(text.find("destroyed inside a handler on its IoContext's thread") != std::string::npos);
}

TEST_CASE(
    "a post goes on-stream with the item's id, its answer fulfils the future, a lost "
    "connection refuses what waits",
    "[consumer][posts]") {
    TwoServers t;
    auto& a = t.a;
    std::string posted;
    Script script([&] {
        a.accept_session();
        a.refresh(7, "X", 1, 10001);
        const auto on_stream = a.expect<wire::Post>(FrameType::kPost);
        posted = std::to_string(on_stream.item_id()) + on_stream.item_name();
        wire::PostAck ack;
        ack.set_post_id(on_stream.post_id());
        ack.set_text("ignored: accepted");
        ack.set_accepted(true);
        a.send(FrameType::kPostAck, ack);
        const auto off_stream = a.expect<wire::Post>(FrameType::kPost);
        posted += " | " + std::to_string(off_stream.item_id()) + " " + off_stream.service_name() +
                  " " + off_stream.item_name();
        a.drop();  // the second post's answer never comes
    });
    dispatch_until(t.consumer, t.recorder, 2);  // connected, refreshed
    mdcast::FieldList fields;
    fields.add_decimal(22, 10125, -2);
    auto first = t.consumer.post(mdcast::ItemHandle{1}, fields);
    REQUIRE(first.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(first.get().accepted);
    std::promise<mdcast::PostResult> second;
    t.consumer.post("SVC", "OTHER", fields,
                    [&](const mdcast::PostResult& result) { second.set_value(result); });
    auto answer = second.get_future();
    REQUIRE(answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    const mdcast::PostResult lost = answer.get();
    CHECK_FALSE(lost.accepted);
    CHECK(lost.code == mdcast::StatusCode::kConnectionLost);
    CHECK(script.join().empty());
    CHECK(posted == "7 | 0 SVC OTHER");
    auto stale = t.consumer.post(mdcast::ItemHandle{99}, fields);  // streams nothing
    REQUIRE(stale.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(stale.get().code == mdcast::StatusCode::kNotFound);
    CHECK(t.consumer.stats().posts_accepted == 1);
    t.consumer.stop();
}
