// PublisherSession over a socketpair, its backbone a real multicast backbone on
// loopback (publisher_fixture.h): login first or closed; services owned by one
// connection; items registered only on owned services; refreshes and statuses
// re-encoded with the registry's names, updates forwarded as the publisher's
// own bytes and merged into the image; invalid content refused alone,
// malformed framing closes; flush, ping and the interactive requests.
#include "distributor/publisher_session.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "publisher_fixture.h"

using namespace mdcast;
using mdcast::distributor::kTakeoverTokenBytes;
using mdcast::distributor::PublisherSession;
using mdcast::distributor::TradeFields;
using mdcast::distributor::testing::PublisherFixture;
using mdcast::distributor::testing::PublisherFrame;
namespace wire_v1 = mdcast::wire::v1;
using proto::FrameType;

namespace {

template <class Message>
Message parsed(const PublisherFrame& frame, FrameType type) {
    REQUIRE(frame.type == type);
    Message message;
    REQUIRE(message.ParseFromString(frame.body));
    return message;
}

// Announces `name` (with a takeover token, if given) and returns the answer.
wire_v1::ServiceAnnounceResponse announce_answer(PublisherFixture& f, PublisherSession& session,
                                                 const std::string& name,
                                                 const std::string& token = {}) {
    wire_v1::ServiceAnnounce announce;
    announce.set_name(name);
    announce.set_mode(wire_v1::SERVICE_BROADCAST);
    announce.set_takeover_token(token);
    f.send(session, FrameType::kServiceAnnounce, announce);
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 1);
    return parsed<wire_v1::ServiceAnnounceResponse>(frames[0], FrameType::kServiceAnnounceResponse);
}

// Announces `name` and returns its service id (0: refused).
uint32_t announce(PublisherFixture& f, PublisherSession& session, const std::string& name,
                  wire_v1::ServiceMode mode = wire_v1::SERVICE_BROADCAST) {
    wire_v1::ServiceAnnounce announce;
    announce.set_name(name);
    announce.set_mode(mode);
    f.send(session, FrameType::kServiceAnnounce, announce);
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 1);
    return parsed<wire_v1::ServiceAnnounceResponse>(frames[0], FrameType::kServiceAnnounceResponse)
        .service_id();
}

// Registers one item and returns its id (0: refused).
uint64_t register_item(PublisherFixture& f, PublisherSession& session, uint32_t service,
                       const std::string& name) {
    wire_v1::ItemRegister request;
    request.set_service_id(service);
    auto* entry = request.add_items();
    entry->set_ref(42);
    entry->set_name(name);
    f.send(session, FrameType::kItemRegister, request);
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 1);
    const auto response = parsed<wire_v1::ItemRegistered>(frames[0], FrameType::kItemRegistered);
    REQUIRE(response.items_size() == 1);
    CHECK(response.items(0).ref() == 42);
    return response.items(0).item_id();
}

wire_v1::Refresh refresh_of(uint64_t item, int64_t bid) {
    wire_v1::Refresh refresh;
    refresh.set_item_id(item);
    refresh.set_item_seq(1);
    refresh.set_item_name("a name the publisher made up");
    auto* field = refresh.mutable_fields()->add_fields();
    field->set_id(22);
    field->set_int_value(bid);
    return refresh;
}

wire_v1::Update update_of(uint64_t item, uint64_t seq, int64_t bid) {
    wire_v1::Update update;
    update.set_item_id(item);
    update.set_item_seq(seq);
    auto* field = update.mutable_fields()->add_fields();
    field->set_id(22);
    field->set_int_value(bid);
    return update;
}

// The item's cached value of field 22.
int64_t cached_bid(PublisherFixture& f, uint64_t item) {
    wire_v1::FieldList fields;
    f.registry().item(item)->image.to_field_list(fields);
    REQUIRE(fields.fields_size() == 1);
    return fields.fields(0).int_value();
}

// The one ItemStatus the publisher was sent.
wire_v1::ItemStatus status_sent(PublisherFixture& f, PublisherSession& session) {
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 1);
    return parsed<wire_v1::ItemStatus>(frames[0], FrameType::kItemStatus);
}

}  // namespace

TEST_CASE("the first message must be a login", "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& session = f.connect();
    wire_v1::ServiceAnnounce announce;
    announce.set_name("SVC");
    f.send(session, FrameType::kServiceAnnounce, announce);
    CHECK_FALSE(session.connection().is_open());
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kNotLoggedIn});
    CHECK(f.registry().service_count() == 0);
}

TEST_CASE(
    "a login is checked by the owner: accepted with the backbone's frame limit, or refused "
    "and closed",
    "[publisher_session]") {
    PublisherFixture f;
    f.accept_logins = GENERATE(true, false);
    PublisherSession& session = f.connect();
    wire_v1::LoginRequest login;
    login.set_user("feed");
    login.set_application_id("256");
    f.send(session, FrameType::kLoginRequest, login);
    CHECK(f.events == std::vector<std::string>{"login feed"});
    const auto frames = f.received(session);
    REQUIRE(frames.size() == (f.accept_logins ? 1 : 2));  // refused: then a Close
    const auto response = parsed<wire_v1::LoginResponse>(frames[0], FrameType::kLoginResponse);
    CHECK(response.accepted() == f.accept_logins);
    CHECK(session.logged_in() == f.accept_logins);
    if (f.accept_logins) {
        CHECK(response.max_frame_bytes() == PublisherFixture::kMaxFrameBytes);
        CHECK(response.heartbeat_interval_ms() == PublisherFixture::kHeartbeatIntervalMs);
        CHECK(session.user() == "feed");
        CHECK(session.application_id() == "256");
        f.send(session, FrameType::kLoginRequest, login);  // a second login
        CHECK(f.closes == std::vector<CloseReason>{CloseReason::kProtocolError});
    } else {
        CHECK(frames[1].type == FrameType::kClose);
        CHECK_FALSE(session.connection().is_open());
        CHECK(f.closes == std::vector<CloseReason>{CloseReason::kAuthFailed});
    }
}

TEST_CASE("a service belongs to one connection, the same names alone never take it over",
          "[publisher_session][takeover]") {
    PublisherFixture f;
    PublisherSession& first = f.logged_in();
    const auto owned = announce_answer(f, first, "SVC");
    const uint32_t id = owned.service_id();
    CHECK(id != 0);
    CHECK(owned.takeover_token().size() == kTakeoverTokenBytes);
    CHECK(f.events == std::vector<std::string>{"login feed", "directory changed", "announced SVC"});
    CHECK(f.registry().service(id)->owner_session == first.connection().id());
    // A stranger with the same user (application and position empty on both),
    // with no token or a wrong one, as often as it likes.
    const std::string wrong = GENERATE(std::string(), std::string(16, 'x'), std::string("short"));
    for (int attempt = 0; attempt < 3; ++attempt) {
        PublisherSession& stranger = f.logged_in();
        f.events.clear();
        const auto refused = announce_answer(f, stranger, "SVC", wrong);
        CHECK(refused.service_id() == 0);
        CHECK(refused.takeover_token().empty());
        CHECK(refused.status().code() == wire_v1::STATUS_NOT_ENTITLED);
        CHECK(refused.status().text().find("takeover token") != std::string::npos);
        CHECK(f.events ==
              std::vector<std::string>{"replace " + std::to_string(first.connection().id())});
    }
    CHECK(f.closes.empty());  // the owner was never kicked
    CHECK(first.connection().is_open());
    CHECK(f.registry().service(id)->owner_session == first.connection().id());
}

TEST_CASE("the owner's reconnect takes its service over with the takeover token",
          "[publisher_session][takeover]") {
    PublisherFixture f;
    PublisherSession& first = f.logged_in();
    const auto owned = announce_answer(f, first, "SVC");
    PublisherSession& second = f.logged_in();
    const auto taken = announce_answer(f, second, "SVC", owned.takeover_token());
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kKicked});
    CHECK(taken.service_id() == owned.service_id());  // the same service, the same id
    CHECK(f.registry().service(owned.service_id())->owner_session == second.connection().id());
    // A new owner, a new token: the old one proves nothing any more.
    REQUIRE(taken.takeover_token().size() == kTakeoverTokenBytes);
    CHECK(taken.takeover_token() != owned.takeover_token());
    PublisherSession& replay = f.logged_in();
    CHECK(announce_answer(f, replay, "SVC", owned.takeover_token()).service_id() == 0);
    CHECK(second.connection().is_open());
}

TEST_CASE("a token does not let another publisher's names take a service",
          "[publisher_session][takeover]") {
    PublisherFixture f;
    PublisherSession& first = f.logged_in("feed");
    const auto owned = announce_answer(f, first, "SVC");
    PublisherSession& other = f.logged_in("other");
    const auto refused = announce_answer(f, other, "SVC", owned.takeover_token());
    CHECK(refused.service_id() == 0);
    CHECK(refused.status().text() == "service is owned by another publisher");
    CHECK(first.connection().is_open());
}

TEST_CASE("with authentication on, the same user's login is the proof",
          "[publisher_session][takeover]") {
    PublisherFixture f;
    f.authenticated = true;
    PublisherSession& first = f.logged_in("feed");
    const uint32_t id = announce(f, first, "SVC");
    PublisherSession& second = f.logged_in("feed");
    CHECK(announce(f, second, "SVC") == id);
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kKicked});
    PublisherSession& other = f.logged_in("someone");
    CHECK(announce(f, other, "SVC") == 0);
    CHECK(second.connection().is_open());
}

TEST_CASE("the operator's takeover secret lets a standby of the same user take over",
          "[publisher_session][takeover]") {
    PublisherFixture f;
    const std::string secret = "standby-secret-0123456789";
    PublisherSession& first = f.logged_in("feed", "host-a");
    const uint32_t id = announce(f, first, "SVC");
    // Not configured: the secret is just another wrong token.
    PublisherSession& early = f.logged_in("feed", "host-b");
    CHECK(announce_answer(f, early, "SVC", secret).service_id() == 0);
    f.shared_secret = secret;
    PublisherSession& other = f.logged_in("someone", "host-b");
    CHECK(announce_answer(f, other, "SVC", secret).service_id() == 0);
    PublisherSession& guess = f.logged_in("feed", "host-b");
    CHECK(announce_answer(f, guess, "SVC", secret + "x").service_id() == 0);
    CHECK(f.closes.empty());
    PublisherSession& standby = f.logged_in("feed", "host-b");  // another host: another position
    CHECK(announce_answer(f, standby, "SVC", secret).service_id() == id);
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kKicked});
    CHECK(f.registry().service(id)->owner_session == standby.connection().id());
}

TEST_CASE("items are registered only on a service the connection owns", "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& owner = f.logged_in();
    const uint32_t service = announce(f, owner, "SVC");
    const uint64_t item = register_item(f, owner, service, "IBM.N");
    CHECK(item != 0);
    CHECK(register_item(f, owner, service, "IBM.N") == item);  // the same name, the same id
    PublisherSession& other = f.logged_in();
    CHECK(register_item(f, other, service, "MSFT.O") == 0);
    CHECK(f.registry().item_count() == 1);
}

TEST_CASE("refresh, update and status go on the backbone and into the image cache",
          "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& session = f.logged_in();
    const uint32_t service = announce(f, session, "SVC");
    const uint64_t item = register_item(f, session, service, "IBM.N");
    f.backbone_messages();  // the directories so far

    f.send(session, FrameType::kRefresh, refresh_of(item, 100));
    auto carried = f.backbone_messages();
    REQUIRE(carried.size() == 1);
    wire_v1::Refresh refresh;
    REQUIRE(carried[0].type == FrameType::kRefresh);
    REQUIRE(refresh.ParseFromString(carried[0].body));
    CHECK(refresh.item_name() == "IBM.N");  // the registry's name, not the publisher's
    CHECK(refresh.service_name() == "SVC");
    CHECK(refresh.status().data_state() == wire_v1::DATA_OK);
    CHECK(f.registry().item(item)->has_image);
    CHECK(cached_bid(f, item) == 100);

    const std::string update =
        proto::encode_frame_string(FrameType::kUpdate, update_of(item, 2, 101));
    f.send_bytes(session, update);
    carried = f.backbone_messages();
    REQUIRE(carried.size() == 1);
    CHECK(carried[0].whole == update);  // the publisher's own bytes
    CHECK(cached_bid(f, item) == 101);
    CHECK(f.registry().item(item)->item_seq == 2);

    wire_v1::ItemStatus status;
    status.set_item_id(item);
    status.mutable_status()->set_stream_state(wire_v1::STREAM_CLOSED);
    status.mutable_status()->set_data_state(wire_v1::DATA_SUSPECT);
    f.send(session, FrameType::kItemStatus, status);
    carried = f.backbone_messages();
    REQUIRE(carried.size() == 1);
    CHECK(carried[0].type == FrameType::kItemStatus);
    CHECK(f.registry().item(item)->closed);
    CHECK_FALSE(f.registry().item(item)->has_image);
    CHECK(f.counters().refreshes == 1);
    CHECK(f.counters().updates == 1);
    CHECK(f.counters().statuses == 1);
    CHECK(f.received(session).empty());  // nothing refused
}

TEST_CASE("a message for an item not owned, or an update before the refresh, is refused alone",
          "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& owner = f.logged_in();
    const uint64_t item = register_item(f, owner, announce(f, owner, "SVC"), "IBM.N");
    f.backbone_messages();
    SECTION("update before the refresh") {
        f.send(owner, FrameType::kUpdate, update_of(item, 2, 101));
        const auto status = status_sent(f, owner);
        CHECK(status.item_id() == item);
        CHECK(status.status().code() == wire_v1::STATUS_INVALID_REQUEST);
    }
    SECTION("another connection's item") {
        PublisherSession& other = f.logged_in();
        f.send(other, FrameType::kRefresh, refresh_of(item, 100));
        CHECK(status_sent(f, other).status().code() == wire_v1::STATUS_NOT_ENTITLED);
        CHECK(other.connection().is_open());
    }
    CHECK(f.backbone_messages().empty());
    CHECK(f.counters().rejected_messages == 1);
    CHECK_FALSE(f.registry().item(item)->has_image);
    CHECK(owner.connection().is_open());
}

TEST_CASE("invalid content is refused alone, a malformed body closes the publisher",
          "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& session = f.logged_in();
    const uint64_t item = register_item(f, session, announce(f, session, "SVC"), "IBM.N");
    f.send(session, FrameType::kRefresh, refresh_of(item, 100));
    f.backbone_messages();

    wire_v1::Update update = update_of(item, 2, 0);
    update.mutable_fields()->mutable_fields(0)->set_string_value(std::string("\xff\xfe", 2));
    f.send(session, FrameType::kUpdate, update);
    CHECK(status_sent(f, session).status().code() == wire_v1::STATUS_INVALID_REQUEST);
    CHECK(f.counters().invalid_content == 1);
    CHECK(session.connection().is_open());
    CHECK(cached_bid(f, item) == 100);  // the image is untouched
    CHECK(f.backbone_messages().empty());

    proto::FrameHeader header{3, static_cast<uint16_t>(FrameType::kRefresh), 0};
    std::string frame(proto::kFrameHeaderBytes, '\0');
    proto::encode_frame_header(header, reinterpret_cast<uint8_t*>(frame.data()));
    f.send_bytes(session, frame + "\xff\xff\xff");
    CHECK_FALSE(session.connection().is_open());
    CHECK(f.closes == std::vector<CloseReason>{CloseReason::kProtocolError});
}

TEST_CASE("flush and ping are answered, interactive requests reach the publisher",
          "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& session = f.logged_in();
    const uint32_t service_id = announce(f, session, "ASK", wire_v1::SERVICE_INTERACTIVE);
    const uint64_t item = register_item(f, session, service_id, "IBM.N");
    wire_v1::Flush flush;
    flush.set_token(77);
    f.send(session, FrameType::kFlush, flush);
    wire_v1::Ping ping;
    ping.set_sent_time_ns(5);
    f.send(session, FrameType::kPing, ping);
    session.request_item(*f.registry().service(service_id), *f.registry().item(item));
    session.unsubscribe_items({item});
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 4);
    CHECK(parsed<wire_v1::FlushAck>(frames[0], FrameType::kFlushAck).token() == 77);
    CHECK(parsed<wire_v1::Pong>(frames[1], FrameType::kPong).ping_sent_time_ns() == 5);
    const auto request = parsed<wire_v1::ImageRequest>(frames[2], FrameType::kImageRequest);
    CHECK(request.item_id() == item);
    CHECK(request.item_name() == "IBM.N");
    CHECK(request.service_name() == "ASK");
    const auto unsubscribe = parsed<wire_v1::Unsubscribe>(frames[3], FrameType::kUnsubscribe);
    CHECK(std::vector<uint64_t>(unsubscribe.item_ids().begin(), unsubscribe.item_ids().end()) ==
          std::vector<uint64_t>{item});
}

TEST_CASE("a publisher that says it takes posts is sent them, its answers reach the owner",
          "[publisher_session][posts]") {
    PublisherFixture f;
    PublisherSession& old_sdk = f.logged_in("old");
    announce(f, old_sdk, "OLD", wire_v1::SERVICE_BROADCAST);
    CHECK_FALSE(old_sdk.takes_posts());  // a publisher from before posts is never sent one

    PublisherSession& session = f.logged_in("feed");
    wire_v1::ServiceAnnounce takes;
    takes.set_name("NEW");
    takes.set_takes_posts(true);
    f.send(session, FrameType::kServiceAnnounce, takes);
    f.received(session);
    CHECK(session.takes_posts());
    wire_v1::Post post;
    post.set_post_id(3);
    post.set_service_name("NEW");
    post.set_item_name("A");
    post.mutable_fields()->add_fields()->set_int_value(1);
    session.send_post(post);
    const auto frames = f.received(session);
    REQUIRE(frames.size() == 1);
    CHECK(parsed<wire_v1::Post>(frames[0], FrameType::kPost).item_name() == "A");
    wire_v1::PostAck ack;
    ack.set_post_id(3);
    ack.set_text("no");
    f.send(session, FrameType::kPostAck, ack);
    REQUIRE(f.post_acks.size() == 1);
    CHECK(f.post_acks[0].text() == "no");
    CHECK(session.connection().is_open());
}

TEST_CASE("an update carrying a field of its service's trades.fields goes out marked a trade",
          "[publisher_session]") {
    PublisherFixture f(TradeFields({{"SVC", {"6"}}}, nullptr));  // TRDPRC_1, by id
    PublisherSession& session = f.logged_in();
    const uint64_t item = register_item(f, session, announce(f, session, "SVC"), "IBM.N");
    f.send(session, FrameType::kRefresh, refresh_of(item, 100));
    f.backbone_messages();

    f.send(session, FrameType::kUpdate, update_of(item, 2, 101));  // a quote: field 22 only
    wire_v1::Update trade = update_of(item, 3, 102);
    auto* price = trade.mutable_fields()->add_fields();
    price->set_id(6);
    price->set_int_value(10250);
    f.send(session, FrameType::kUpdate, trade);
    wire_v1::Update marked = trade;  // marked by its publisher already: forwarded as it is
    marked.set_item_seq(4);
    marked.set_trade(true);
    const std::string marked_bytes = proto::encode_frame_string(FrameType::kUpdate, marked);
    f.send_bytes(session, marked_bytes);

    const auto carried = f.backbone_messages();
    REQUIRE(carried.size() == 3);
    wire_v1::Update got[3];
    for (size_t i = 0; i < 3; ++i) REQUIRE(got[i].ParseFromString(carried[i].body));
    CHECK_FALSE(got[0].trade());
    CHECK(got[1].trade());
    CHECK(got[1].item_seq() == 3);
    CHECK(got[1].fields().SerializeAsString() == trade.fields().SerializeAsString());
    CHECK(carried[2].whole == marked_bytes);
    CHECK(f.counters().trades_marked == 1);
    CHECK(f.registry().item(item)->item_seq == 4);
}
