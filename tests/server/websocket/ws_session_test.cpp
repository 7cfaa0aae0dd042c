// WsSession inside a real ClientSession over a socketpair (client_fixture.h):
// the handshake (upgrade, page, refusal), masked client frames read through
// wslay, JSON requests turned into the session's calls, the session's answers
// as JSON text frames, and each breach closed with its reason and its
// WebSocket close code.
#include "server/websocket/ws_session.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../client_fixture.h"
#include "server/make_status.h"
#include "server/websocket/json_protocol.h"

using namespace mdcast;
using server::ClientSession;
using server::testing::ClientFixture;

namespace {

const std::string kUpgrade =
    "GET /WebSocket HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Protocol: tr_json2\r\n\r\n";

// A client's frame: FIN set, masked as RFC 6455 requires of clients.
std::string client_frame(uint8_t opcode, std::string_view payload) {
    std::string frame(1, static_cast<char>(0x80 | opcode));
    if (payload.size() < 126) {
        frame += static_cast<char>(0x80 | payload.size());
    } else {
        frame += static_cast<char>(0x80 | 126);
        frame += static_cast<char>(payload.size() >> 8);
        frame += static_cast<char>(payload.size() & 0xff);
    }
    const char mask[4] = {0x11, 0x22, 0x33, 0x44};
    frame.append(mask, 4);
    for (size_t i = 0; i < payload.size(); ++i)
        frame += static_cast<char>(payload[i] ^ mask[i % 4]);
    return frame;
}

struct ServerFrame {
    uint8_t opcode;
    std::string payload;
};

// The server's frames in `bytes` (unmasked, as a server sends them).
std::vector<ServerFrame> server_frames(std::string_view bytes) {
    std::vector<ServerFrame> frames;
    while (bytes.size() >= 2) {
        size_t length = static_cast<uint8_t>(bytes[1]) & 0x7f, header = 2;
        if (length == 126) {
            length = (size_t{static_cast<uint8_t>(bytes[2])} << 8) | static_cast<uint8_t>(bytes[3]);
            header = 4;
        }
        REQUIRE(bytes.size() >= header + length);
        const auto opcode = static_cast<uint8_t>(bytes[0] & 0x0f);
        std::string payload(bytes.substr(header, length));
        if (opcode == 0x1) {  // a text message: an array of one object (LSEG's framing)
            REQUIRE(payload.size() >= 2);
            REQUIRE(payload.front() == '[');
            REQUIRE(payload.back() == ']');
            payload = payload.substr(1, payload.size() - 2);
        }
        frames.push_back({opcode, std::move(payload)});
        bytes.remove_prefix(header + length);
    }
    return frames;
}

uint16_t close_code(const ServerFrame& frame) {
    REQUIRE(frame.opcode == 0x8);
    REQUIRE(frame.payload.size() >= 2);
    return static_cast<uint16_t>((static_cast<uint8_t>(frame.payload[0]) << 8) |
                                 static_cast<uint8_t>(frame.payload[1]));
}

struct WsFixture {
    ClientFixture f;
    server::JsonEncoder encoder{
        proto::FieldDictionary::parse("22 BID DECIMAL\n25 ASK DECIMAL\n", "test")};
    server::JsonDictionary dictionary{encoder.dictionary()};
    std::string page = "<html>watchlist</html>";
    server::WsCounters counters;
    server::WsSettings settings;

    WsFixture() {
        settings.max_message_bytes = 1024;
        settings.max_fragments = 4;
        settings.encoder = &encoder;
        settings.dictionary = &dictionary;
        settings.page = &page;
        settings.counters = &counters;
    }

    // A client past the handshake, its 101 read.
    ClientSession& upgraded() {
        ClientSession& client = f.connect(false, 1 << 20, &settings);
        f.send_bytes(client, kUpgrade);
        const std::string answer = f.received_bytes(client);
        REQUIRE(answer.rfind("HTTP/1.1 101", 0) == 0);
        return client;
    }

    // A client whose JSON login was accepted, the Refresh read.
    ClientSession& logged_in() {
        ClientSession& client = upgraded();
        send_text(client, R"({"ID":1,"Domain":"Login","Key":{"Name":"alice"}})");
        REQUIRE(f.logins.size() == 1);
        client.accept_login(nullptr);
        f.received_bytes(client);
        return client;
    }

    void send_text(ClientSession& client, std::string_view json) {
        f.send_bytes(client, client_frame(0x1, json));
    }
    std::vector<ServerFrame> frames(ClientSession& client) {
        return server_frames(f.received_bytes(client));
    }
};

}  // namespace

TEST_CASE("the upgrade is answered 101 with the accept key and the subprotocol", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.f.connect(false, 1 << 20, &w.settings);
    w.f.send_bytes(client, kUpgrade.substr(0, 20));  // a head may come in pieces
    CHECK(w.f.received_bytes(client).empty());
    w.f.send_bytes(client, kUpgrade.substr(20));
    const std::string answer = w.f.received_bytes(client);
    CHECK(answer.rfind("HTTP/1.1 101", 0) == 0);
    CHECK(answer.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") != std::string::npos);
    CHECK(answer.find("tr_json2") != std::string::npos);
    CHECK(w.counters.upgrades == 1);
    CHECK(client.json() == &w.encoder);
}

TEST_CASE("a plain GET is served the page, another path is refused", "[ws_session]") {
    WsFixture w;
    ClientSession& reader = w.f.connect(false, 1 << 20, &w.settings);
    w.f.send_bytes(reader, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(w.f.received_bytes(reader).find("<html>watchlist</html>") != std::string::npos);
    CHECK(w.counters.pages_served == 1);
    ClientSession& lost = w.f.connect(false, 1 << 20, &w.settings);
    w.f.send_bytes(lost, "GET /elsewhere HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(w.f.received_bytes(lost).rfind("HTTP/1.1 404", 0) == 0);
    CHECK(w.counters.handshakes_refused == 1);
    CHECK_FALSE(lost.is_open());
}

TEST_CASE("a JSON login reaches the owner and is answered with a Refresh", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.upgraded();
    w.send_text(client, R"({"ID":1,"Domain":"Login","Key":{"Name":"alice"}})");
    REQUIRE(w.f.logins.size() == 1);
    CHECK(w.f.logins[0].user() == "alice");
    client.accept_login(nullptr);
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].opcode == 0x1);
    CHECK(frames[0].payload.find(R"("Type":"Refresh","Domain":"Login")") != std::string::npos);
    CHECK(frames[0].payload.find(R"("Name":"alice")") != std::string::npos);
    // The terms at the top level, where LSEG's clients read PingTimeout.
    CHECK(frames[0].payload.find(R"("Key":{"Name":"alice"},"Elements":{)") != std::string::npos);
    CHECK(frames[0].payload.find(R"("PingTimeout":)") != std::string::npos);
    CHECK(w.counters.messages_in == 1);
}

TEST_CASE("item requests become subscriptions, closes become unsubscribes", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":2,"Key":{"Service":"FEED","Name":["VOD.L","BARC.L"]},)"
                        R"("View":["BID"],"Streaming":false})");
    REQUIRE(w.f.subscribes.size() == 1);
    const auto& subscribe = w.f.subscribes[0];
    CHECK(subscribe.service_name() == "FEED");
    CHECK(subscribe.item_names_size() == 2);
    CHECK(subscribe.snapshot());
    REQUIRE(subscribe.view_field_ids_size() == 1);
    CHECK(subscribe.view_field_ids(0) == 22);
    // LSEG's batch: a Status closes the batch's own ID; the names open on 3 and 4.
    const auto answer = w.frames(client);
    REQUIRE(answer.size() == 1);
    CHECK(answer[0].payload.find(R"({"ID":2,"Type":"Status","State":{"Stream":"Closed")") == 0);

    w.send_text(client, R"({"ID":7,"Key":{"Service":"FEED","Name":["VOD.L","BARC.L"]}})");
    client.bind_json_stream("FEED", "VOD.L", 1001);
    client.bind_json_stream("FEED", "BARC.L", 1002);
    w.frames(client);
    w.send_text(client, R"({"ID":[8,9],"Type":"Close"})");
    CHECK(w.f.unsubscribes == std::vector<uint64_t>{1001, 1002});
    w.send_text(client, R"({"ID":[8,1001],"Type":"Close"})");  // closed, and not a stream id
    CHECK(w.f.unsubscribes.size() == 2);
}

TEST_CASE("item frames carry the client's stream ids, one copy per stream", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":5,"Key":{"Service":"FEED","Name":"VOD.L"}})");
    w.send_text(client, R"({"ID":6,"Key":{"Service":"FEED","Name":"VOD.L"}})");
    client.bind_json_stream("FEED", "VOD.L", 1099511627780);
    proto::UpdateView update;
    update.item_id = 1099511627780;
    update.item_seq = 43;
    proto::FieldEntry bid;
    bid.id = 22;
    bid.kind = proto::FieldKind::kDecimal;
    bid.integer = 10143;
    bid.exponent = -2;
    update.fields.push_back(bid);
    std::string frame;
    w.encoder.append_update(frame, update, {});
    client.deliver_item(update.item_id, ClientSession::Owed::kUpdate,
                        {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()});
    auto frames = w.frames(client);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].payload ==
          R"({"ID":5,"Type":"Update","SeqNumber":43,"Fields":{"BID":101.43}})");
    CHECK(frames[1].payload ==
          R"({"ID":6,"Type":"Update","SeqNumber":43,"Fields":{"BID":101.43}})");

    // Closing one stream leaves the other; closing the last unsubscribes.
    w.send_text(client, R"({"ID":5,"Type":"Close"})");
    CHECK(w.f.unsubscribes.empty());
    client.deliver_item(update.item_id, ClientSession::Owed::kUpdate,
                        {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()});
    frames = w.frames(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload.find(R"({"ID":6,)") == 0);
    w.send_text(client, R"({"ID":6,"Type":"Close"})");
    CHECK(w.f.unsubscribes == std::vector<uint64_t>{1099511627780});
}

TEST_CASE("a refusal naming no item is answered on the stream that asked", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":12,"Key":{"Service":"FEED","Name":"NOSUCH"}})");
    mdcast::wire::v1::ItemStatus refused;
    refused.set_service_name("FEED");
    refused.set_item_name("NOSUCH");
    *refused.mutable_status() =
        server::make_status(mdcast::wire::v1::STREAM_CLOSED, mdcast::wire::v1::DATA_SUSPECT,
                            mdcast::wire::v1::STATUS_NOT_FOUND, "no such item");
    client.deliver(proto::FrameType::kItemStatus, refused);
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload.find(R"({"ID":12,"Type":"Status")") == 0);
    CHECK(frames[0].payload.find(R"("Code":"NotFound")") != std::string::npos);
    // The id is free again: a new request on it opens a new stream.
    w.send_text(client, R"({"ID":12,"Key":{"Service":"FEED","Name":"VOD.L"}})");
    CHECK(w.f.subscribes.size() == 2);
}

TEST_CASE("a session opens no more streams than its subscription limit", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    std::string names;
    for (int i = 0; i < 101; ++i) names += (i ? ",\"I" : "\"I") + std::to_string(i) + "\"";
    w.send_text(client, R"({"ID":1000,"Key":{"Service":"FEED","Name":[)" + names + "]}}");
    REQUIRE(w.f.subscribes.size() == 1);
    CHECK(w.f.subscribes[0].item_names_size() == 100);
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 2);  // the batch's status, and the refusal of the 101st name
    CHECK(frames[1].payload.find(R"({"ID":1101,"Type":"Status")") == 0);
    CHECK(frames[1].payload.find("LimitReached") != std::string::npos);
}

TEST_CASE("a Dictionary request is answered on its ID from answers encoded once", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":3,"Domain":"Dictionary","Key":{"Name":"RWFFld","Filter":7}})");
    w.send_text(client,
                R"([{"ID":4,"Domain":"Dictionary","Key":{"Name":"RWFFld"}},)"
                R"({"ID":5,"Domain":"Dictionary","Key":{"Name":"RWFFld"},"Streaming":false},)"
                R"({"ID":6,"Domain":"Dictionary","Key":{"Name":"RDMFieldDictionary"}}])");
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 4);
    CHECK(frames[0].payload.find(R"({"ID":3,"Type":"Refresh","Domain":"Dictionary")") == 0);
    CHECK(frames[0].payload.find(R"("NAME":"BID")") != std::string::npos);
    CHECK(frames[0].payload.find(R"("Stream":"Open")") != std::string::npos);
    CHECK(frames[1].payload.substr(frames[1].payload.find(',')) ==
          frames[0].payload.substr(frames[0].payload.find(',')));  // the same bytes but the ID
    CHECK(frames[2].payload.find(R"("Stream":"NonStreaming")") != std::string::npos);
    CHECK(frames[3].payload.find(R"({"ID":6,"Type":"Status","Domain":"Dictionary")") == 0);
    CHECK(frames[3].payload.find(R"("Code":"NotFound")") != std::string::npos);
    CHECK(w.dictionary.encodings() == 2);  // streaming Normal once, non-streaming once
    CHECK(w.counters.dictionary_requests == 4);
    CHECK(w.f.subscribes.empty());
    w.send_text(client, R"({"ID":[3,4],"Type":"Close"})");  // closed: nothing to answer
    CHECK(w.frames(client).empty());
    CHECK(client.is_open());
}

TEST_CASE("a Dictionary request takes its ID over and counts against the stream limit",
          "[ws_session]") {
    WsFixture w;
    w.settings.max_message_bytes = 16384;  // room for 100 requests in one message
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":2,"Key":{"Service":"FEED","Name":"VOD.L"}})");
    client.bind_json_stream("FEED", "VOD.L", 1001);
    w.send_text(client, R"({"ID":2,"Domain":"Dictionary","Key":{"Name":"RWFEnum"}})");
    CHECK(w.f.unsubscribes == std::vector<uint64_t>{1001});  // the item on ID 2 is closed
    w.frames(client);
    std::string requests;
    for (int id = 10; id < 110; ++id)
        requests += (id > 10 ? "," : "[") + std::string(R"({"ID":)") + std::to_string(id) +
                    R"(,"Domain":"Dictionary","Key":{"Name":"RWFEnum","Filter":0}})";
    w.send_text(client, requests + "]");
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 100);  // ID 2 and 10..108 open: 100 streams, the limit
    CHECK(frames[98].payload.find(R"("Type":"Refresh")") != std::string::npos);
    CHECK(frames[99].payload.find(R"({"ID":109,"Type":"Status")") == 0);
    CHECK(frames[99].payload.find("LimitReached") != std::string::npos);
}

TEST_CASE("a request without Key.Service takes the default service, or is refused",
          "[ws_session]") {
    WsFixture w;
    ClientSession& refused = w.logged_in();
    w.send_text(refused, R"({"ID":2,"Key":{"Name":"VOD.L"}})");
    CHECK(w.f.subscribes.empty());
    const auto frames = w.frames(refused);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload.find(R"("Type":"Error","Text":"Key.Service missing)") !=
          std::string::npos);
    CHECK(refused.is_open());

    WsFixture with_default;
    with_default.settings.default_service = "FEED";
    ClientSession& served = with_default.logged_in();
    with_default.send_text(served, R"({"ID":2,"Key":{"Name":"VOD.L"}})");
    REQUIRE(with_default.f.subscribes.size() == 1);
    CHECK(with_default.f.subscribes[0].service_name() == "FEED");
}

TEST_CASE("a view naming an unknown field is refused by status, nothing subscribed",
          "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"ID":2,"Key":{"Service":"FEED","Name":"VOD.L"},"View":["NOPE"]})");
    CHECK(w.f.subscribes.empty());
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload.find("View: no field named NOPE") != std::string::npos);
    CHECK(client.is_open());
}

TEST_CASE("a JSON ping is answered, JSON that is no request gets an Error", "[ws_session]") {
    WsFixture w;
    ClientSession& client = w.logged_in();
    w.send_text(client, R"({"Type":"Ping"})");
    w.send_text(client, "not json");
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].payload == R"({"Type":"Pong"})");
    CHECK(frames[1].payload.find(R"("Type":"Error")") != std::string::npos);
    CHECK(client.is_open());
}

TEST_CASE("breaches close with their reason and WebSocket code", "[ws_session]") {
    WsFixture w;
    SECTION("an item request before the login: not_logged_in, 1008") {
        ClientSession& client = w.upgraded();
        w.send_text(client, R"({"ID":2,"Key":{"Service":"FEED","Name":"VOD.L"}})");
        CHECK(w.f.closes == std::vector<CloseReason>{CloseReason::kNotLoggedIn});
        const auto frames = w.frames(client);
        REQUIRE_FALSE(frames.empty());
        CHECK(close_code(frames.back()) == 1008);
    }
    SECTION("a binary message: protocol_error, 1003") {
        ClientSession& client = w.logged_in();
        w.f.send_bytes(client, client_frame(0x2, "\x01\x02"));
        CHECK(w.f.closes == std::vector<CloseReason>{CloseReason::kProtocolError});
        CHECK(w.counters.binary_refused == 1);
        CHECK(close_code(w.frames(client).back()) == 1003);
    }
    SECTION("a message over clients.ws_max_message_bytes: frame_too_large, 1009") {
        ClientSession& client = w.logged_in();
        w.send_text(client, std::string(2000, ' '));
        CHECK(w.f.closes == std::vector<CloseReason>{CloseReason::kFrameTooLarge});
        CHECK(w.counters.too_large == 1);
        CHECK(close_code(w.frames(client).back()) == 1009);
    }
    SECTION("kicked: the login stream's Closed status says why, then 1001") {
        ClientSession& client = w.logged_in();
        client.connection().close(CloseReason::kKicked, "closed by an operator");
        const auto frames = w.frames(client);
        REQUIRE(frames.size() == 2);
        CHECK(frames[0].payload.find(R"({"ID":1,"Type":"Status","Domain":"Login")") == 0);
        CHECK(frames[0].payload.find(R"("Stream":"Closed")") != std::string::npos);
        CHECK(frames[0].payload.find("kicked: closed by an operator") != std::string::npos);
        CHECK(close_code(frames[1]) == 1001);
    }
    SECTION("the login closed: peer_closed, 1000") {
        ClientSession& client = w.logged_in();
        w.send_text(client, R"({"Type":"Close","Domain":"Login"})");
        CHECK(w.f.closes == std::vector<CloseReason>{CloseReason::kPeerClosed});
        CHECK(close_code(w.frames(client).back()) == 1000);
    }
}

TEST_CASE("a silent client is pinged once per heartbeat interval", "[ws_session]") {
    WsFixture w;
    w.settings.heartbeat_interval_ms = 10;
    ClientSession& client = w.logged_in();
    const int64_t later = client.connection().last_input_ns() + 20'000'000;
    client.keep_alive(later);
    client.keep_alive(later + 1'000'000);  // within the interval of the first ping
    const auto frames = w.frames(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload == R"({"Type":"Ping"})");
    CHECK(w.counters.pings_sent == 1);
}
