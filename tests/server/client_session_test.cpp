// ClientSession over a socketpair (client_fixture.h): the login comes first
// and is answered by the owner; requests reach the owner decoded; pings are
// answered; a protocol breach closes with its reason; a full queue applies the
// slow-consumer policy (disconnect, or conflate what is owed until it drains).
#include "server/client_session.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "wire/client.pb.h"
#include "wire/session.pb.h"

using namespace mdcast;
using server::ClientSession;
using server::ConflationBacklog;
using server::testing::ClientFixture;
namespace wire_v1 = mdcast::wire::v1;

namespace {

wire_v1::LoginRequest login_as(const std::string& user) {
    wire_v1::LoginRequest login;
    login.set_user(user);
    login.set_application_id("256");
    return login;
}

// A session whose login was accepted, with what that sent already read.
ClientSession& logged_in(ClientFixture& f, bool conflate = false, size_t max_output = 1 << 20) {
    ClientSession& client = f.connect(conflate, max_output);
    f.send_frame(client, proto::FrameType::kLoginRequest, login_as("alice"));
    REQUIRE(f.logins.size() == 1);
    client.accept_login(nullptr);
    f.received(client);
    return client;
}

// A link logged in as an edge does (link_role.h), with what that sent already read.
ClientSession& linked(ClientFixture& f, size_t max_output) {
    ClientSession& client = f.connect(false, max_output);
    auto login = login_as("edge");
    login.set_application_id("mdcast-server/2");
    f.send_frame(client, proto::FrameType::kLoginRequest, login);
    client.accept_login(nullptr);
    f.received(client);
    REQUIRE(client.is_link());
    return client;
}

std::vector<uint8_t> item_frame(size_t bytes) {
    wire_v1::ItemStatus status;
    status.set_item_name(std::string(bytes, 'x'));
    const std::string frame = proto::encode_frame_string(proto::FrameType::kItemStatus, status);
    return {frame.begin(), frame.end()};
}

}  // namespace

TEST_CASE("a login goes to the owner and its acceptance is answered", "[client_session]") {
    ClientFixture f;
    ClientSession& client = f.connect();
    f.send_frame(client, proto::FrameType::kLoginRequest, login_as("alice"));
    REQUIRE(f.logins.size() == 1);
    CHECK(f.logins[0].user() == "alice");
    CHECK_FALSE(client.logged_in());  // until the owner answers
    client.accept_login(nullptr);
    CHECK(client.logged_in());
    CHECK(client.user() == "alice");
    CHECK(client.application_id() == "256");
    const auto frames = f.received(client);
    REQUIRE(frames.size() == 1);
    REQUIRE(frames[0].type == proto::FrameType::kLoginResponse);
    wire_v1::LoginResponse response;
    REQUIRE(response.ParseFromString(frames[0].body));
    CHECK(response.accepted());
    CHECK(response.server_id() == "test-server");
    CHECK(response.max_items_per_request() == 100);
}

TEST_CASE("a refused login is answered, then closed auth_failed", "[client_session]") {
    ClientFixture f;
    ClientSession& client = f.connect();
    f.send_frame(client, proto::FrameType::kLoginRequest, login_as("mallory"));
    auth::LoginVerdict verdict;
    verdict.kind = auth::LoginVerdict::Kind::kBadCredentials;
    verdict.text = "bad user name or password";
    client.refuse_login(verdict);
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kAuthFailed});
    const auto frames = f.received(client);
    REQUIRE_FALSE(frames.empty());
    wire_v1::LoginResponse response;
    REQUIRE(response.ParseFromString(frames[0].body));
    CHECK_FALSE(response.accepted());
}

TEST_CASE("anything before a login closes the client not_logged_in", "[client_session]") {
    ClientFixture f;
    ClientSession& client = f.connect();
    f.send_frame(client, proto::FrameType::kDirectoryRequest, wire_v1::DirectoryRequest());
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kNotLoggedIn});
    CHECK(f.directory_requests == 0);
    CHECK_FALSE(client.is_open());
}

TEST_CASE("a second login or a login without a user is refused", "[client_session]") {
    ClientFixture f;
    SECTION("a second login is a protocol error") {
        ClientSession& client = logged_in(f);
        f.send_frame(client, proto::FrameType::kLoginRequest, login_as("bob"));
        CHECK(f.closes == std::vector<CloseReason>{CloseReason::kProtocolError});
        CHECK(f.logins.size() == 1);
    }
    SECTION("no user name fails the login before the owner is asked") {
        ClientSession& client = f.connect();
        f.send_frame(client, proto::FrameType::kLoginRequest, login_as(""));
        CHECK(f.closes == std::vector<CloseReason>{CloseReason::kAuthFailed});
        CHECK(f.logins.empty());
    }
}

TEST_CASE("requests reach the owner decoded", "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f);
    wire_v1::Subscribe subscribe;
    subscribe.set_service_name("FEED");
    subscribe.add_item_names("VOD.L");
    f.send_frame(client, proto::FrameType::kSubscribe, subscribe);
    wire_v1::Unsubscribe unsubscribe;
    unsubscribe.add_item_ids(7);
    unsubscribe.add_item_ids(9);
    f.send_frame(client, proto::FrameType::kUnsubscribe, unsubscribe);
    f.send_frame(client, proto::FrameType::kDirectoryRequest, wire_v1::DirectoryRequest());
    REQUIRE(f.subscribes.size() == 1);
    CHECK(f.subscribes[0].item_names(0) == "VOD.L");
    CHECK(f.unsubscribes == std::vector<uint64_t>{7, 9});  // one call per id
    CHECK(f.directory_requests == 1);
    CHECK(f.closes.empty());
}

TEST_CASE("a post reaches the owner decoded, its answer goes back to the client",
          "[client_session][posts]") {
    ClientFixture f;
    ClientSession& client = logged_in(f);
    wire_v1::Post post;
    post.set_post_id(5);
    post.set_service_name("FEED");
    post.set_item_name("VOD.L");
    post.mutable_fields()->add_fields()->set_int_value(1);
    f.send_frame(client, proto::FrameType::kPost, post);
    REQUIRE(f.posts.size() == 1);
    CHECK(f.posts[0].item_name() == "VOD.L");
    wire_v1::PostAck ack;
    ack.set_post_id(5);
    ack.set_accepted(true);
    client.deliver(proto::FrameType::kPostAck, ack);
    const auto frames = f.received(client);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].type == proto::FrameType::kPostAck);
    CHECK(f.closes.empty());
}

TEST_CASE("a ping is answered with its own time", "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f);
    wire_v1::Ping ping;
    ping.set_sent_time_ns(123456789);
    f.send_frame(client, proto::FrameType::kPing, ping);
    const auto frames = f.received(client);
    REQUIRE(frames.size() == 1);
    REQUIRE(frames[0].type == proto::FrameType::kPong);
    wire_v1::Pong pong;
    REQUIRE(pong.ParseFromString(frames[0].body));
    CHECK(pong.ping_sent_time_ns() == 123456789);
}

TEST_CASE("a malformed body closes the client protocol_error", "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f);
    std::string frame =
        proto::encode_frame_string(proto::FrameType::kSubscribe, wire_v1::Subscribe());
    frame += "\xff";  // a body that is not a Subscribe: one stray byte, the length says so
    proto::FrameHeader header =
        proto::decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data()));
    header.body_bytes += 1;
    proto::encode_frame_header(header, reinterpret_cast<uint8_t*>(frame.data()));
    f.send_bytes(client, frame);
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kProtocolError});
    CHECK(f.subscribes.empty());
}

TEST_CASE("a full queue disconnects a client slow_consumer", "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f, false, 4096);
    const auto frame = item_frame(1000);
    for (int i = 0; i < 8 && client.is_open(); ++i)
        client.deliver_item(1, ClientSession::Owed::kUpdate, frame);
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kSlowConsumer});
}

TEST_CASE("a conflating client records what is owed and is sent it once drained",
          "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f, true, 4096);
    const auto frame = item_frame(1000);
    for (int i = 0; i < 8; ++i) {
        client.deliver_item(static_cast<uint64_t>(1 + i % 2), ClientSession::Owed::kUpdate, frame);
    }
    client.deliver_item(2, ClientSession::Owed::kStatus, frame);
    CHECK(client.is_open());
    CHECK(client.conflating());
    CHECK(client.conflation_episodes() == 1);
    f.received(client);  // the queue drains
    std::vector<std::pair<uint64_t, ClientSession::Owed>> asked;
    const size_t sent =
        client.drain_owed([&](uint64_t item_id, const ConflationBacklog::Piece& piece) {
            asked.emplace_back(item_id, piece.state);
            return std::optional<std::string>(std::string(frame.begin(), frame.end()));
        });
    // One entry per item, the heaviest kind owed, in item order.
    CHECK(asked == std::vector<std::pair<uint64_t, ClientSession::Owed>>{
                       {1, ClientSession::Owed::kUpdate}, {2, ClientSession::Owed::kStatus}});
    CHECK(sent == 2);
    CHECK_FALSE(client.conflating());
    CHECK(f.closes.empty());
}

TEST_CASE("a cascade link gets the link policy: conflated where a client would be cut",
          "[client_session]") {
    ClientFixture f;
    ClientSession& client = linked(f, 4096);  // clients: disconnect
    CHECK(client.limits().max_held_trades == server::ClientLimits{}.link_max_held_trades);
    const auto frame = item_frame(1000);
    for (int i = 0; i < 8; ++i) client.deliver_item(1, ClientSession::Owed::kUpdate, frame);
    CHECK(client.is_open());
    CHECK(client.conflating());
    CHECK(f.closes.empty());
}

TEST_CASE("a link at its queue bound writes what it holds rather than conflate",
          "[client_session]") {
    ClientFixture f;
    f.link_max_bytes = 4096;  // four of the frames below; the timer has not fired
    ClientSession& client = linked(f, 1 << 20);
    const auto frame = item_frame(1000);
    for (int i = 0; i < 8; ++i) client.deliver_item(1, ClientSession::Owed::kUpdate, frame);
    CHECK_FALSE(client.conflating());
    CHECK(client.conflation_episodes() == 0);
    CHECK(f.received(client).size() == 8);  // every one, as queued
}

TEST_CASE("a link whose peer takes nothing more still conflates at its queue bound",
          "[client_session]") {
    ClientFixture f;
    f.link_max_bytes = 64 << 10;
    ClientSession& client = linked(f, 64 << 20);
    const auto frame = item_frame(1000);
    // Far more than the socket pair's buffers: the kernel refuses the rest.
    for (int i = 0; i < 4000 && !client.conflating(); ++i) {
        client.deliver_item(1, ClientSession::Owed::kUpdate, frame);
    }
    CHECK(client.conflating());
    CHECK(client.is_open());
    CHECK(f.closes.empty());
}

TEST_CASE("a conflating client's answers wait for the drain rather than cut it",
          "[client_session]") {
    ClientFixture f;
    ClientSession& client = logged_in(f, true, 4096);
    const auto frame = item_frame(1000);
    for (int i = 0; i < 8; ++i) client.deliver_item(1, ClientSession::Owed::kUpdate, frame);
    REQUIRE(client.conflating());
    wire_v1::Ping ping;
    for (uint64_t sent = 1; sent <= 3; ++sent) {  // only the latest pong is kept
        ping.set_sent_time_ns(sent);
        f.send_frame(client, proto::FrameType::kPing, ping);
    }
    CHECK(client.is_open());
    f.received(client);  // the queue drains
    client.drain_owed([&](uint64_t, const ConflationBacklog::Piece&) {
        return std::optional<std::string>(std::string(frame.begin(), frame.end()));
    });
    const auto frames = f.received(client);
    REQUIRE_FALSE(frames.empty());
    REQUIRE(frames[0].type == proto::FrameType::kPong);
    wire_v1::Pong pong;
    REQUIRE(pong.ParseFromString(frames[0].body));
    CHECK(pong.ping_sent_time_ns() == 3);
    CHECK(std::count_if(frames.begin(), frames.end(), [](const auto& received) {
              return received.type == proto::FrameType::kPong;
          }) == 1);
    CHECK_FALSE(client.conflating());
    CHECK(f.closes.empty());
}
