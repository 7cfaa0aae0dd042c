// Tests for the wire formats (proto/wire/*.proto framed with proto/frame.h) and
// for proto/field_values.h (rendering field values).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "proto/field_values.h"
#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/common.pb.h"
#include "wire/publisher.pb.h"
#include "wire/session.pb.h"

namespace {

using mdcast::proto::encode_frame_string;
using mdcast::proto::format_value;
using mdcast::proto::format_value_json;
using mdcast::proto::Frame;
using mdcast::proto::FrameReader;
using mdcast::proto::FrameType;
using mdcast::proto::FrameTypeSet;
using mdcast::proto::json_escape;
namespace wire = mdcast::wire::v1;

const FrameTypeSet kEveryType{FrameType::kLoginRequest,
                              FrameType::kLoginResponse,
                              FrameType::kPing,
                              FrameType::kPong,
                              FrameType::kClose,
                              FrameType::kServiceAnnounce,
                              FrameType::kServiceAnnounceResponse,
                              FrameType::kItemRegister,
                              FrameType::kItemRegistered,
                              FrameType::kRefresh,
                              FrameType::kUpdate,
                              FrameType::kItemStatus,
                              FrameType::kDirectory,
                              FrameType::kDirectoryRequest,
                              FrameType::kSubscribe,
                              FrameType::kUnsubscribe,
                              FrameType::kHeartbeat,
                              FrameType::kImageRequest,
                              FrameType::kDirectoryQuery};

// Frames `message`, pushes the bytes through a FrameReader and parses the body
// back into a fresh message of the same type.
template <class Message>
Message round_trip(FrameType type, const Message& message) {
    const std::string bytes = encode_frame_string(type, message);
    FrameReader reader(1 << 20, kEveryType);
    reader.append({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    Frame frame{};
    REQUIRE(reader.next(frame) == FrameReader::Result::kFrame);
    CHECK(frame.type == type);
    CHECK(frame.whole.size() == bytes.size());
    Message back;
    REQUIRE(back.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())));
    Frame none{};
    CHECK(reader.next(none) == FrameReader::Result::kNeedMore);
    return back;
}

wire::FieldValue int_field(uint32_t id, int64_t v) {
    wire::FieldValue f;
    f.set_id(id);
    f.set_int_value(v);
    return f;
}

wire::FieldValue decimal_field(uint32_t id, int64_t mantissa, int32_t exponent) {
    wire::FieldValue f;
    f.set_id(id);
    f.mutable_decimal_value()->set_mantissa(mantissa);
    f.mutable_decimal_value()->set_exponent(exponent);
    return f;
}

wire::FieldValue double_field(uint32_t id, double v) {
    wire::FieldValue f;
    f.set_id(id);
    f.set_double_value(v);
    return f;
}

wire::FieldValue string_field(uint32_t id, const std::string& v) {
    wire::FieldValue f;
    f.set_id(id);
    f.set_string_value(v);
    return f;
}

wire::FieldValue time_field(uint32_t id, int64_t ns) {
    wire::FieldValue f;
    f.set_id(id);
    f.set_time_ns(ns);
    return f;
}

wire::FieldValue blank_field(uint32_t id) {
    wire::FieldValue f;
    f.set_id(id);
    f.mutable_blank();
    return f;
}

}  // namespace

TEST_CASE("Refresh round trips every field value kind", "[wire]") {
    wire::Refresh refresh;
    refresh.set_item_id(1234567890123ull);
    refresh.set_item_seq(42);
    refresh.set_clear_cache(true);
    refresh.set_solicited(true);
    refresh.set_service_id(3);
    refresh.set_service_name("ELEKTRON_DD");
    refresh.set_item_name("VOD.L");
    refresh.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    refresh.mutable_status()->set_data_state(wire::DATA_OK);
    refresh.mutable_status()->set_code(wire::STATUS_NONE);
    refresh.mutable_status()->set_text("All is well");
    auto* fields = refresh.mutable_fields();
    *fields->add_fields() = int_field(30, -9'000'000'000'000ll);
    *fields->add_fields() = decimal_field(22, 10125, -2);
    *fields->add_fields() = double_field(3404, 101.255);
    *fields->add_fields() = string_field(3, "Vodafone Group \xE2\x82\xAC");
    *fields->add_fields() = time_field(5, 1'700'000'000'123'456'789ll);
    *fields->add_fields() = blank_field(1025);

    const wire::Refresh back = round_trip(FrameType::kRefresh, refresh);
    CHECK(back.item_id() == 1234567890123ull);
    CHECK(back.item_seq() == 42);
    CHECK(back.clear_cache());
    CHECK(back.solicited());
    CHECK(back.service_id() == 3);
    CHECK(back.service_name() == "ELEKTRON_DD");
    CHECK(back.item_name() == "VOD.L");
    CHECK(back.status().stream_state() == wire::STREAM_OPEN);
    CHECK(back.status().data_state() == wire::DATA_OK);
    CHECK(back.status().text() == "All is well");
    REQUIRE(back.fields().fields_size() == 6);
    const auto& f = back.fields().fields();
    CHECK(f[0].id() == 30);
    CHECK(f[0].value_case() == wire::FieldValue::kIntValue);
    CHECK(f[0].int_value() == -9'000'000'000'000ll);
    CHECK(f[1].value_case() == wire::FieldValue::kDecimalValue);
    CHECK(f[1].decimal_value().mantissa() == 10125);
    CHECK(f[1].decimal_value().exponent() == -2);
    CHECK(f[2].value_case() == wire::FieldValue::kDoubleValue);
    CHECK(f[2].double_value() == 101.255);
    CHECK(f[3].value_case() == wire::FieldValue::kStringValue);
    CHECK(f[3].string_value() == "Vodafone Group \xE2\x82\xAC");
    CHECK(f[4].value_case() == wire::FieldValue::kTimeNs);
    CHECK(f[4].time_ns() == 1'700'000'000'123'456'789ll);
    CHECK(f[5].value_case() == wire::FieldValue::kBlank);
    CHECK(f[5].id() == 1025);
    // Serialisation is deterministic enough for a byte comparison here.
    CHECK(back.SerializeAsString() == refresh.SerializeAsString());
}

TEST_CASE("field values keep zero and extreme values", "[wire]") {
    wire::FieldList list;
    *list.add_fields() = int_field(1, 0);  // zero in a oneof is still present
    *list.add_fields() = int_field(2, std::numeric_limits<int64_t>::min());
    *list.add_fields() = decimal_field(3, 0, 0);
    *list.add_fields() = double_field(4, 0.0);
    *list.add_fields() = string_field(5, "");
    *list.add_fields() = time_field(6, 0);
    wire::Update update;
    *update.mutable_fields() = list;
    const wire::Update back = round_trip(FrameType::kUpdate, update);
    REQUIRE(back.fields().fields_size() == 6);
    const auto& f = back.fields().fields();
    CHECK(f[0].value_case() == wire::FieldValue::kIntValue);
    CHECK(f[1].int_value() == std::numeric_limits<int64_t>::min());
    CHECK(f[2].value_case() == wire::FieldValue::kDecimalValue);
    CHECK(f[3].value_case() == wire::FieldValue::kDoubleValue);
    CHECK(f[4].value_case() == wire::FieldValue::kStringValue);
    CHECK(f[5].value_case() == wire::FieldValue::kTimeNs);
}

TEST_CASE("Update round trips with publish time", "[wire]") {
    wire::Update update;
    update.set_item_id(7);
    update.set_item_seq(1001);
    update.set_publish_time_ns(1'712'345'678'901'234'567ull);
    update.set_conflated(true);
    *update.mutable_fields()->add_fields() = decimal_field(22, 10126, -2);
    *update.mutable_fields()->add_fields() = int_field(30, 500);
    const wire::Update back = round_trip(FrameType::kUpdate, update);
    CHECK(back.item_id() == 7);
    CHECK(back.item_seq() == 1001);
    CHECK(back.publish_time_ns() == 1'712'345'678'901'234'567ull);
    CHECK(back.conflated());
    REQUIRE(back.fields().fields_size() == 2);
    CHECK(back.fields().fields(0).decimal_value().mantissa() == 10126);
    CHECK(back.fields().fields(1).int_value() == 500);
}

TEST_CASE("ItemStatus round trips", "[wire]") {
    wire::ItemStatus status;
    status.set_item_id(0);
    status.set_service_id(2);
    status.set_service_name("SVC");
    status.set_item_name("NOPE");
    status.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    status.mutable_status()->set_data_state(wire::DATA_SUSPECT);
    status.mutable_status()->set_code(wire::STATUS_NOT_FOUND);
    status.mutable_status()->set_text("no such item");
    const wire::ItemStatus back = round_trip(FrameType::kItemStatus, status);
    CHECK(back.item_id() == 0);
    CHECK(back.service_id() == 2);
    CHECK(back.service_name() == "SVC");
    CHECK(back.item_name() == "NOPE");
    CHECK(back.status().stream_state() == wire::STREAM_CLOSED);
    CHECK(back.status().data_state() == wire::DATA_SUSPECT);
    CHECK(back.status().code() == wire::STATUS_NOT_FOUND);
    CHECK(back.status().text() == "no such item");
}

TEST_CASE("LoginRequest and LoginResponse round trip", "[wire]") {
    wire::LoginRequest request;
    request.set_user("alice");
    request.set_application_id("256");
    request.set_position("10.0.0.1/host");
    request.set_password("s3cr3t");
    request.set_protocol_version(mdcast::proto::kProtocolVersion);
    const wire::LoginRequest req_back = round_trip(FrameType::kLoginRequest, request);
    CHECK(req_back.user() == "alice");
    CHECK(req_back.application_id() == "256");
    CHECK(req_back.position() == "10.0.0.1/host");
    CHECK(req_back.password() == "s3cr3t");
    CHECK(req_back.protocol_version() == 1);

    wire::LoginResponse response;
    response.set_accepted(true);
    response.mutable_status()->set_code(wire::STATUS_NONE);
    response.set_server_id("mdcast-server/host/1");
    response.set_heartbeat_interval_ms(5000);
    response.set_max_frame_bytes(1 << 20);
    response.set_max_items_per_request(1000);
    const wire::LoginResponse resp_back = round_trip(FrameType::kLoginResponse, response);
    CHECK(resp_back.accepted());
    CHECK(resp_back.server_id() == "mdcast-server/host/1");
    CHECK(resp_back.heartbeat_interval_ms() == 5000);
    CHECK(resp_back.max_frame_bytes() == (1u << 20));
    CHECK(resp_back.max_items_per_request() == 1000);

    wire::LoginResponse refused;
    refused.set_accepted(false);
    refused.mutable_status()->set_code(wire::STATUS_NOT_ENTITLED);
    refused.mutable_status()->set_text("bad password");
    const wire::LoginResponse refused_back = round_trip(FrameType::kLoginResponse, refused);
    CHECK_FALSE(refused_back.accepted());
    CHECK(refused_back.status().code() == wire::STATUS_NOT_ENTITLED);
}

TEST_CASE("Subscribe with a view round trips", "[wire]") {
    wire::Subscribe subscribe;
    subscribe.set_request_id(17);
    subscribe.set_service_name("DIRECT_FEED");
    subscribe.add_item_names("IBM.N");
    subscribe.add_item_names("MSFT.O");
    subscribe.add_item_names("");
    subscribe.set_snapshot(true);
    subscribe.add_view_field_ids(22);
    subscribe.add_view_field_ids(25);
    subscribe.add_view_field_ids(65535);
    const wire::Subscribe back = round_trip(FrameType::kSubscribe, subscribe);
    CHECK(back.request_id() == 17);
    CHECK(back.service_name() == "DIRECT_FEED");
    REQUIRE(back.item_names_size() == 3);
    CHECK(back.item_names(0) == "IBM.N");
    CHECK(back.item_names(1) == "MSFT.O");
    CHECK(back.item_names(2).empty());
    CHECK(back.snapshot());
    REQUIRE(back.view_field_ids_size() == 3);
    CHECK(back.view_field_ids(0) == 22);
    CHECK(back.view_field_ids(1) == 25);
    CHECK(back.view_field_ids(2) == 65535);

    wire::Unsubscribe unsubscribe;
    unsubscribe.add_item_ids(1);
    unsubscribe.add_item_ids(UINT64_MAX);
    const wire::Unsubscribe unsub_back = round_trip(FrameType::kUnsubscribe, unsubscribe);
    REQUIRE(unsub_back.item_ids_size() == 2);
    CHECK(unsub_back.item_ids(1) == UINT64_MAX);
}

TEST_CASE("ServiceAnnounce and response round trip", "[wire]") {
    wire::ServiceAnnounce announce;
    announce.set_name("DIRECT_FEED");
    announce.set_mode(wire::SERVICE_INTERACTIVE);
    const wire::ServiceAnnounce back = round_trip(FrameType::kServiceAnnounce, announce);
    CHECK(back.name() == "DIRECT_FEED");
    CHECK(back.mode() == wire::SERVICE_INTERACTIVE);

    wire::ServiceAnnounceResponse response;
    response.set_name("DIRECT_FEED");
    response.set_service_id(4);
    response.mutable_status()->set_code(wire::STATUS_LIMIT_REACHED);
    const wire::ServiceAnnounceResponse resp_back =
        round_trip(FrameType::kServiceAnnounceResponse, response);
    CHECK(resp_back.service_id() == 4);
    CHECK(resp_back.status().code() == wire::STATUS_LIMIT_REACHED);
}

TEST_CASE("ItemRegister and ItemRegistered round trip", "[wire]") {
    wire::ItemRegister reg;
    reg.set_service_id(5);
    for (uint64_t i = 0; i < 3; ++i) {
        auto* e = reg.add_items();
        e->set_ref(1000 + i);
        e->set_name("ITEM" + std::to_string(i));
    }
    const wire::ItemRegister reg_back = round_trip(FrameType::kItemRegister, reg);
    CHECK(reg_back.service_id() == 5);
    REQUIRE(reg_back.items_size() == 3);
    CHECK(reg_back.items(2).ref() == 1002);
    CHECK(reg_back.items(2).name() == "ITEM2");

    wire::ItemRegistered done;
    done.set_service_id(5);
    auto* ok = done.add_items();
    ok->set_ref(1000);
    ok->set_item_id(77);
    ok->set_last_item_seq(123);
    auto* refused = done.add_items();
    refused->set_ref(1001);
    refused->set_item_id(0);
    done.mutable_status()->set_code(wire::STATUS_LIMIT_REACHED);
    const wire::ItemRegistered done_back = round_trip(FrameType::kItemRegistered, done);
    REQUIRE(done_back.items_size() == 2);
    CHECK(done_back.items(0).ref() == 1000);
    CHECK(done_back.items(0).item_id() == 77);
    CHECK(done_back.items(0).last_item_seq() == 123);
    CHECK(done_back.items(1).item_id() == 0);
    CHECK(done_back.status().code() == wire::STATUS_LIMIT_REACHED);
}

TEST_CASE("Heartbeat, ImageRequest and DirectoryQuery round trip", "[wire]") {
    wire::Heartbeat heartbeat;
    heartbeat.set_next_sequence(UINT64_MAX);
    heartbeat.set_control_port(40123);
    heartbeat.set_send_time_ns(1'700'000'000'000'000'001ull);
    const wire::Heartbeat hb_back = round_trip(FrameType::kHeartbeat, heartbeat);
    CHECK(hb_back.next_sequence() == UINT64_MAX);
    CHECK(hb_back.control_port() == 40123);
    CHECK(hb_back.send_time_ns() == 1'700'000'000'000'000'001ull);

    wire::ImageRequest request;
    request.set_service_id(2);
    request.set_service_name("SVC");
    request.set_item_name("EUR=");
    request.set_item_id(0);
    const wire::ImageRequest req_back = round_trip(FrameType::kImageRequest, request);
    CHECK(req_back.service_id() == 2);
    CHECK(req_back.service_name() == "SVC");
    CHECK(req_back.item_name() == "EUR=");
    CHECK(req_back.item_id() == 0);

    const std::string query =
        encode_frame_string(FrameType::kDirectoryQuery, wire::DirectoryQuery{});
    CHECK(query.size() == mdcast::proto::kFrameHeaderBytes);
    (void)round_trip(FrameType::kDirectoryQuery, wire::DirectoryQuery{});
}

TEST_CASE("Directory round trips", "[wire]") {
    wire::Directory directory;
    for (uint32_t i = 1; i <= 3; ++i) {
        auto* s = directory.add_services();
        s->set_service_id(i);
        s->set_name("SVC" + std::to_string(i));
        s->set_state(i == 2 ? wire::SERVICE_DOWN : wire::SERVICE_UP);
        s->set_mode(i == 3 ? wire::SERVICE_INTERACTIVE : wire::SERVICE_BROADCAST);
        s->set_item_count(i * 1000);
    }
    const wire::Directory back = round_trip(FrameType::kDirectory, directory);
    REQUIRE(back.services_size() == 3);
    CHECK(back.services(0).name() == "SVC1");
    CHECK(back.services(1).state() == wire::SERVICE_DOWN);
    CHECK(back.services(2).mode() == wire::SERVICE_INTERACTIVE);
    CHECK(back.services(2).item_count() == 3000);
}

TEST_CASE("Ping, Pong and Close round trip", "[wire]") {
    wire::Ping ping;
    ping.set_sent_time_ns(99);
    CHECK(round_trip(FrameType::kPing, ping).sent_time_ns() == 99);
    wire::Pong pong;
    pong.set_ping_sent_time_ns(99);
    CHECK(round_trip(FrameType::kPong, pong).ping_sent_time_ns() == 99);
    wire::Close close;
    close.set_reason(wire::CLOSE_SLOW_CONSUMER);
    close.set_text("output queue over 8 MiB");
    const wire::Close back = round_trip(FrameType::kClose, close);
    CHECK(back.reason() == wire::CLOSE_SLOW_CONSUMER);
    CHECK(back.text() == "output queue over 8 MiB");
}

TEST_CASE("several message types in one stream come back in order", "[wire]") {
    wire::LoginRequest login;
    login.set_user("bob");
    wire::Subscribe sub;
    sub.set_service_name("S");
    sub.add_item_names("X");
    wire::Ping ping;
    ping.set_sent_time_ns(5);
    const std::string stream = encode_frame_string(FrameType::kLoginRequest, login) +
                               encode_frame_string(FrameType::kSubscribe, sub) +
                               encode_frame_string(FrameType::kPing, ping);
    FrameReader reader(4096, mdcast::proto::kClientToServerTypes);
    reader.append({reinterpret_cast<const uint8_t*>(stream.data()), stream.size()});
    Frame frame{};
    REQUIRE(reader.next(frame) == FrameReader::Result::kFrame);
    CHECK(frame.type == FrameType::kLoginRequest);
    REQUIRE(reader.next(frame) == FrameReader::Result::kFrame);
    CHECK(frame.type == FrameType::kSubscribe);
    REQUIRE(reader.next(frame) == FrameReader::Result::kFrame);
    CHECK(frame.type == FrameType::kPing);
    CHECK(reader.next(frame) == FrameReader::Result::kNeedMore);
}

// ---------------------------------------------------------------------------
// proto/field_values.h

TEST_CASE("format_value renders decimals exactly", "[field_values]") {
    CHECK(format_value(decimal_field(1, 10125, -2)) == "101.25");
    CHECK(format_value(decimal_field(1, -5, -3)) == "-0.005");
    CHECK(format_value(decimal_field(1, 7, 2)) == "700");
    CHECK(format_value(decimal_field(1, 7, 0)) == "7");
    CHECK(format_value(decimal_field(1, 5, -1)) == "0.5");
    CHECK(format_value(decimal_field(1, 123, -3)) == "0.123");
    CHECK(format_value(decimal_field(1, -123, -2)) == "-1.23");
    CHECK(format_value(decimal_field(1, 100, -2)) == "1.00");
    CHECK(format_value(decimal_field(1, 0, 5)) == "0");
    CHECK(format_value(decimal_field(1, 0, 0)) == "0");
}

TEST_CASE("format_value survives hostile decimals", "[field_values]") {
    const int64_t min = std::numeric_limits<int64_t>::min();
    CHECK(format_value(decimal_field(1, min, 0)) == "-9223372036854775808");
    CHECK(format_value(decimal_field(1, min, -2)) == "-92233720368547758.08");
    CHECK(format_value(decimal_field(1, std::numeric_limits<int64_t>::max(), 0)) ==
          "9223372036854775807");
    // A huge exponent is clamped (to 30) so a hostile value cannot allocate gigabytes.
    const std::string big = format_value(decimal_field(1, 1, std::numeric_limits<int32_t>::max()));
    CHECK(big == "1" + std::string(30, '0'));
    const std::string tiny = format_value(decimal_field(1, 1, std::numeric_limits<int32_t>::min()));
    CHECK(tiny == "0." + std::string(29, '0') + "1");
    CHECK(format_value(decimal_field(1, -1, std::numeric_limits<int32_t>::min())) ==
          "-0." + std::string(29, '0') + "1");
}

TEST_CASE("format_value renders ints, doubles, strings and blanks", "[field_values]") {
    CHECK(format_value(int_field(1, 0)) == "0");
    CHECK(format_value(int_field(1, -42)) == "-42");
    CHECK(format_value(int_field(1, std::numeric_limits<int64_t>::min())) ==
          "-9223372036854775808");
    CHECK(format_value(double_field(1, 0.5)) == "0.5");
    CHECK(format_value(double_field(1, 101.25)) == "101.25");
    // %.17g: the text parses back to the identical double.
    const double third = 1.0 / 3.0;
    CHECK(std::stod(format_value(double_field(1, third))) == third);
    CHECK(format_value(string_field(1, "hello \"x\"")) == "hello \"x\"");
    CHECK(format_value(blank_field(1)).empty());
    wire::FieldValue unset;
    unset.set_id(1);
    CHECK(format_value(unset).empty());
}

TEST_CASE("format_value renders times as ISO-8601 UTC with nanoseconds", "[field_values]") {
    CHECK(format_value(time_field(1, 0)) == "1970-01-01T00:00:00.000000000Z");
    CHECK(format_value(time_field(1, 1)) == "1970-01-01T00:00:00.000000001Z");
    CHECK(format_value(time_field(1, 1'700'000'000'123'456'789ll)) ==
          "2023-11-14T22:13:20.123456789Z");
    CHECK(format_value(time_field(1, 951'782'400'000'000'000ll)) ==  // leap day 2000
          "2000-02-29T00:00:00.000000000Z");
    CHECK(format_value(time_field(1, 1'999'999'999'999'999'999ll)) ==
          "2033-05-18T03:33:19.999999999Z");
}

TEST_CASE("format_value on times before 1970 does not crash", "[field_values]") {
    // Whole seconds before the epoch are still representable.
    CHECK(format_value(time_field(1, -1'000'000'000ll)) == "1969-12-31T23:59:59.000000000Z");
    // A fractional pre-epoch time falls back to the raw number rather than a wrong date.
    CHECK_FALSE(format_value(time_field(1, -1)).empty());
    CHECK_FALSE(format_value(time_field(1, std::numeric_limits<int64_t>::min())).empty());
}

TEST_CASE("format_value_json emits valid JSON literals", "[field_values]") {
    CHECK(format_value_json(int_field(1, -7)) == "-7");
    CHECK(format_value_json(decimal_field(1, 10125, -2)) == "101.25");
    CHECK(format_value_json(double_field(1, 2.5)) == "2.5");
    CHECK(format_value_json(double_field(1, std::nan(""))) == "null");
    CHECK(format_value_json(double_field(1, std::numeric_limits<double>::infinity())) == "null");
    CHECK(format_value_json(double_field(1, -std::numeric_limits<double>::infinity())) == "null");
    CHECK(format_value_json(string_field(1, "say \"hi\"\\\n")) == "\"say \\\"hi\\\"\\\\\\n\"");
    CHECK(format_value_json(time_field(1, 0)) == "\"1970-01-01T00:00:00.000000000Z\"");
    CHECK(format_value_json(blank_field(1)) == "null");
    wire::FieldValue unset;
    CHECK(format_value_json(unset) == "null");
}

TEST_CASE("json_escape escapes quotes, backslashes and control characters", "[field_values]") {
    CHECK(json_escape("plain") == "plain");
    CHECK(json_escape("") == "");
    CHECK(json_escape("a\"b") == "a\\\"b");
    CHECK(json_escape("a\\b") == "a\\\\b");
    CHECK(json_escape("\n\r\t") == "\\n\\r\\t");
    CHECK(json_escape(std::string_view("\0", 1)) == "\\u0000");
    CHECK(json_escape("\x01") == "\\u0001");
    CHECK(json_escape("\x08\x0c") == "\\u0008\\u000c");
    CHECK(json_escape("\x1f") == "\\u001f");
    CHECK(json_escape(" ") == " ");
    // UTF-8 bytes (>= 0x80) pass through untouched.
    CHECK(json_escape("\xE2\x82\xAC") == "\xE2\x82\xAC");
    CHECK(json_escape("\x7f") == "\x7f");
}
