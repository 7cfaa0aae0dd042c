// A server that closes the consumer says why (a Close frame: kicked, slow
// consumer, limit reached ...), and the application hears that reason, not only
// that the connection went: the Down connection event carries it in
// close_reason (and text), and each streaming item's suspect status names it.
// A server that vanishes without a Close leaves close_reason empty.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "mdcast/consumer.h"
#include "scripted_peer.h"
#include "wire/client.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using scripted::Script;
using std::chrono::milliseconds;

class Server : public scripted::Peer {
  public:
    // Accepts the consumer and gives it the image of X.
    void serve_x() {
        accept_login();
        expect<wire::Subscribe>(FrameType::kSubscribe);
        wire::Refresh r;
        r.set_item_id(7);
        r.set_item_seq(1);
        r.set_service_name("SVC");
        r.set_item_name("X");
        r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        r.mutable_status()->set_data_state(wire::DATA_OK);
        send(FrameType::kRefresh, r);
    }
    void close_with(wire::CloseReason reason, const std::string& text) {
        wire::Close close;
        close.set_reason(reason);
        close.set_text(text);
        send(FrameType::kClose, close);
        drop();
    }
};

struct Recorder final : mdcast::ConsumerHandler {
    void on_refresh(const mdcast::Event&) override { ++refreshes; }
    void on_status(const mdcast::Event& e) override { statuses.push_back(e.state().text); }
    void on_connection(const mdcast::Event& e) override {
        if (e.connection().state != mdcast::ConnectionState::kDown) return;
        down_reasons.push_back(e.connection().close_reason);
        down_texts.push_back(e.connection().text);
    }
    int refreshes = 0;
    std::vector<std::string> statuses;
    std::vector<std::string> down_reasons;
    std::vector<std::string> down_texts;
};

// Runs a consumer of X against `server` until it has heard of the loss.
Recorder lose_connection(Server& server, const std::function<void()>& script_body) {
    mdcast::ConsumerOptions options;
    options.servers.push_back({"127.0.0.1", server.port()});
    options.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
    options.reconnect_delay_min_ms = 5000;  // no second attempt within the test
    options.reconnect_delay_max_ms = 5000;
    options.log_level = "off";
    Recorder recorder;
    mdcast::Consumer consumer(options, recorder);
    consumer.subscribe("SVC", "X");
    consumer.start();
    Script script(script_body);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((recorder.statuses.empty() || recorder.down_reasons.empty()) &&
           std::chrono::steady_clock::now() < deadline) {
        consumer.dispatch(milliseconds(20));
    }
    CHECK(script.join().empty());
    consumer.stop();
    return recorder;
}

}  // namespace

TEST_CASE("a consumer closed by its server hears the server's reason", "[consumer]") {
    Server server;
    const Recorder seen = lose_connection(server, [&] {
        server.serve_x();
        server.close_with(wire::CLOSE_KICKED, "closed by an operator");
    });
    CHECK(seen.refreshes == 1);
    REQUIRE(seen.down_reasons.size() == 1);
    CHECK(seen.down_reasons[0] == "kicked");
    CHECK(seen.down_texts[0].find("kicked: closed by an operator") != std::string::npos);
    REQUIRE(seen.statuses.size() == 1);
    CHECK(seen.statuses[0].find("closed by the server: kicked: closed by an operator") !=
          std::string::npos);
}

TEST_CASE("a server gone without a Close leaves the reason empty", "[consumer]") {
    Server server;
    const Recorder seen = lose_connection(server, [&] {
        server.serve_x();
        server.drop();
    });
    REQUIRE(seen.down_reasons.size() == 1);
    CHECK(seen.down_reasons[0].empty());
    REQUIRE(seen.statuses.size() == 1);
    CHECK(seen.statuses[0].find("closed by the server") == std::string::npos);
}
