// Tests for client-sdk/src/types.cpp: the names of states, codes and events
// (to_string and operator<<), and an event's typed values by field name.
#include "mdcast/types.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "event_writer.h"
#include "mdcast/dictionary.h"
#include "mdcast/event.h"

namespace {

template <typename T>
std::string streamed(const T& value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

TEST_CASE("stream state, data state and status code have names", "[types]") {
    using mdcast::to_string;
    CHECK(to_string(mdcast::StreamState::kOpen) == "open");
    CHECK(to_string(mdcast::StreamState::kClosed) == "closed");
    CHECK(to_string(mdcast::DataState::kOk) == "ok");
    CHECK(to_string(mdcast::DataState::kSuspect) == "suspect");
    CHECK(to_string(mdcast::StatusCode::kNotEntitled) == "NOT_ENTITLED");
    CHECK(to_string(mdcast::StatusCode::kConnectionLost) == "CONNECTION_LOST");
    CHECK(to_string(static_cast<mdcast::StatusCode>(77)) == "UNKNOWN");
    CHECK(streamed(mdcast::StreamState::kClosed) == "closed");
    CHECK(streamed(mdcast::DataState::kSuspect) == "suspect");
    CHECK(streamed(mdcast::StatusCode::kSourceDown) == "SOURCE_DOWN");
    CHECK(streamed(mdcast::ConnectionState::kUp) == "up");
    CHECK(streamed(mdcast::EventType::kRefresh) == "refresh");
    CHECK(streamed(mdcast::ServerAddress{"10.0.0.1", 14002}) == "10.0.0.1:14002");
}

TEST_CASE("an item state reads as one phrase", "[types]") {
    CHECK(mdcast::to_string(mdcast::ItemState{}) == "open/ok");
    const mdcast::ItemState lost{mdcast::StreamState::kOpen, mdcast::DataState::kSuspect,
                                 mdcast::StatusCode::kConnectionLost, "127.0.0.1:14002 lost"};
    CHECK(mdcast::to_string(lost) == "open/suspect CONNECTION_LOST: 127.0.0.1:14002 lost");
    const mdcast::ItemState closed{mdcast::StreamState::kClosed, mdcast::DataState::kSuspect,
                                   mdcast::StatusCode::kNotFound, ""};
    CHECK(streamed(closed) == "closed/suspect NOT_FOUND");
}

TEST_CASE("an event gives typed values by field name", "[types]") {
    const auto dictionary = mdcast::Dictionary::parse(
        "22 BID DECIMAL\n25 ASK DECIMAL\n3 DSPLY_NAME STRING\n6 TRDPRC_1 DECIMAL\n");
    mdcast::wire::v1::FieldList fields;
    auto* bid = fields.add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(10125);
    bid->mutable_decimal_value()->set_exponent(-2);
    auto* name = fields.add_fields();
    name->set_id(3);
    name->set_string_value("VODAFONE");
    auto* blank = fields.add_fields();
    blank->set_id(6);
    blank->mutable_blank();
    mdcast::proto::FieldImage image;
    image.assign(fields);
    mdcast::Event event;
    mdcast::detail::EventWriter::refresh(
        event, {mdcast::ItemHandle{1}, "MDCAST", "VOD.L", dictionary.get()}, image, 1, {}, false,
        0);

    CHECK(event.number("BID") == Approx(101.25));
    CHECK(event.text("BID") == "101.25");
    CHECK(streamed(*event.field("BID")) == "101.25");
    CHECK(event.text("DSPLY_NAME") == "VODAFONE");
    CHECK_FALSE(event.number("DSPLY_NAME"));  // a string is not a number
    CHECK_FALSE(event.number("TRDPRC_1"));    // blank
    CHECK(event.text("TRDPRC_1") == "");
    CHECK_FALSE(event.number("ASK"));  // in the dictionary, not in this event
    CHECK_FALSE(event.text("ASK"));
    CHECK_FALSE(event.text("NO_SUCH_FIELD"));
}
