// Tests for proto/post_checks.h (which stream a wire Post is for, its limits,
// the PostAck answer) and for Post / PostAck framed with proto/frame.h.
#include "proto/post_checks.h"

#include <catch2/catch.hpp>
#include <string>

#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/limits.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::proto::check_post;
using mdcast::proto::FrameType;
using mdcast::proto::make_post_ack;
using mdcast::proto::PostTarget;

void add_field(wire::Post& post, uint32_t id, int64_t value) {
    wire::FieldValue* field = post.mutable_fields()->add_fields();
    field->set_id(id);
    field->set_int_value(value);
}

wire::Post on_stream_post() {
    wire::Post post;
    post.set_post_id(7);
    post.set_item_id(0x0100'0000'0042);
    add_field(post, 22, 101);
    return post;
}

wire::Post off_stream_post() {
    wire::Post post;
    post.set_post_id(8);
    post.set_service_name("EQUITIES");
    post.set_item_name("ACME.N");
    add_field(post, 22, 101);
    return post;
}

// Frames `message` as `type`, reads it back through a FrameReader that accepts
// only that type, and parses the body into a fresh message.
template <class Message>
Message round_trip(FrameType type, const Message& message) {
    const std::string bytes = mdcast::proto::encode_frame_string(type, message);
    mdcast::proto::FrameReader reader(1 << 20, mdcast::proto::FrameTypeSet{type});
    reader.append({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    mdcast::proto::Frame frame{};
    REQUIRE(reader.next(frame) == mdcast::proto::FrameReader::Result::kFrame);
    CHECK(frame.type == type);
    Message back;
    REQUIRE(back.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())));
    return back;
}

}  // namespace

TEST_CASE("post: an item id makes it on-stream, names make it off-stream") {
    const auto on = check_post(on_stream_post());
    CHECK(on.target == PostTarget::kOnStream);
    CHECK(on.error.empty());
    const auto off = check_post(off_stream_post());
    CHECK(off.target == PostTarget::kOffStream);
    CHECK(off.error.empty());
}

TEST_CASE("post: both an item id and names, or neither, is invalid") {
    wire::Post both = on_stream_post();
    both.set_service_name("EQUITIES");
    CHECK(check_post(both).target == PostTarget::kInvalid);
    CHECK_FALSE(check_post(both).error.empty());

    wire::Post neither = on_stream_post();
    neither.set_item_id(0);
    CHECK(check_post(neither).target == PostTarget::kInvalid);

    wire::Post no_item = off_stream_post();
    no_item.clear_item_name();
    CHECK(check_post(no_item).target == PostTarget::kInvalid);
}

TEST_CASE("post: names over the protocol's limits are invalid") {
    wire::Post long_service = off_stream_post();
    long_service.set_service_name(std::string(mdcast::proto::kMaxServiceNameBytes + 1, 'S'));
    CHECK(check_post(long_service).target == PostTarget::kInvalid);
    wire::Post long_item = off_stream_post();
    long_item.set_item_name(std::string(mdcast::proto::kMaxItemNameBytes + 1, 'I'));
    CHECK(check_post(long_item).target == PostTarget::kInvalid);
}

TEST_CASE("post: no fields, or more than kMaxPostFields, is invalid") {
    wire::Post empty = on_stream_post();
    empty.clear_fields();
    CHECK(check_post(empty).target == PostTarget::kInvalid);

    wire::Post full = on_stream_post();
    full.clear_fields();
    for (size_t i = 0; i < mdcast::proto::kMaxPostFields; ++i)
        add_field(full, static_cast<uint32_t>(i + 1), 1);
    CHECK(check_post(full).target == PostTarget::kOnStream);
    add_field(full, 5000, 1);
    CHECK(check_post(full).target == PostTarget::kInvalid);
}

TEST_CASE("post ack: accepted carries no reason, refused keeps code and text") {
    const wire::PostAck ok = make_post_ack(7, true, wire::STATUS_NOT_ENTITLED, "ignored");
    CHECK(ok.post_id() == 7);
    CHECK(ok.accepted());
    CHECK(ok.code() == wire::STATUS_NONE);
    CHECK(ok.text().empty());

    const wire::PostAck no = make_post_ack(8, false, wire::STATUS_NOT_FOUND, "no publisher");
    CHECK_FALSE(no.accepted());
    CHECK(no.code() == wire::STATUS_NOT_FOUND);
    CHECK(no.text() == "no publisher");
}

TEST_CASE("post ack: a long text is cut without splitting a UTF-8 character") {
    // "é" is two bytes; an odd prefix puts one straddling the limit.
    std::string text(mdcast::proto::kMaxPostAckTextBytes - 1, 'x');
    for (int i = 0; i < 10; ++i) text += "\xC3\xA9";
    const wire::PostAck ack = make_post_ack(9, false, wire::STATUS_NONE, text);
    CHECK(ack.text().size() == mdcast::proto::kMaxPostAckTextBytes - 1);
    wire::PostAck back;
    REQUIRE(back.ParseFromString(ack.SerializeAsString()));
    CHECK(back.text() == ack.text());
}

TEST_CASE("post and post ack survive framing") {
    const wire::Post post = round_trip(FrameType::kPost, off_stream_post());
    CHECK(post.post_id() == 8);
    CHECK(post.service_name() == "EQUITIES");
    CHECK(post.item_name() == "ACME.N");
    REQUIRE(post.fields().fields_size() == 1);
    CHECK(post.fields().fields(0).int_value() == 101);

    const wire::PostAck ack =
        round_trip(FrameType::kPostAck, make_post_ack(8, false, wire::STATUS_NONE, "price stale"));
    CHECK(ack.post_id() == 8);
    CHECK_FALSE(ack.accepted());
    CHECK(ack.text() == "price stale");
    CHECK(mdcast::proto::frame_type_name(FrameType::kPost) == "Post");
    CHECK(mdcast::proto::frame_type_name(FrameType::kPostAck) == "PostAck");
}

TEST_CASE("posting user: the login, and after a slash whom a relaying login posts for") {
    using mdcast::proto::posting_user;
    CHECK(posting_user("alice", "") == "alice");
    CHECK(posting_user("edge1", "alice") == "edge1/alice");
    CHECK(posting_user("edge2", "edge1/alice") == "edge2/edge1/alice");
    // The login part is never replaced; what cannot be shown is dropped.
    CHECK(posting_user("mallory", "alice") == "mallory/alice");
    CHECK(posting_user("edge1", std::string("ali\nce")) == "edge1");
    CHECK(posting_user("edge1", std::string(mdcast::proto::kMaxUserNameBytes + 1, 'a')) == "edge1");
}
