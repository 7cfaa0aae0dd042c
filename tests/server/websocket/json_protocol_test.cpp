// Tests for server/websocket/json_protocol.h: messages as WebSocket text frames, fields
// named from the dictionary with exact decimals, views, and states.
#include "server/websocket/json_protocol.h"

#include <catch2/catch.hpp>

#include "server/make_status.h"

namespace {

namespace proto = mdcast::proto;
namespace wire = mdcast::wire::v1;
using mdcast::server::JsonEncoder;

JsonEncoder encoder() {
    return JsonEncoder(
        proto::FieldDictionary::parse("22 BID DECIMAL\n25 ASK DECIMAL\n3 DSPLY_NAME STRING\n"
                                      "30 BIDSIZE INT\n",
                                      "test.dict"));
}

// The object in a short unmasked text frame (2-byte header) or a 4-byte one,
// which must carry it as an array of one (LSEG's framing).
std::string payload(const std::string& frame) {
    REQUIRE(static_cast<uint8_t>(frame[0]) == 0x81);
    const size_t header = (frame[1] & 0x7f) == 126 ? 4 : 2;
    const std::string text = frame.substr(header);
    REQUIRE(text.size() >= 2);
    REQUIRE(text.front() == '[');
    REQUIRE(text.back() == ']');
    return text.substr(1, text.size() - 2);
}

proto::FieldEntry decimal(uint32_t id, int64_t mantissa, int32_t exponent) {
    proto::FieldEntry f;
    f.id = id;
    f.kind = proto::FieldKind::kDecimal;
    f.integer = mantissa;
    f.exponent = exponent;
    return f;
}

}  // namespace

TEST_CASE("an update: fields by name, decimals exact, the view applied, one frame") {
    const JsonEncoder json = encoder();
    proto::UpdateView update;
    update.item_id = 17;
    update.item_seq = 43;
    update.fields = {decimal(22, 10143, -2), decimal(25, -5, -3), decimal(30, 7, 2)};
    proto::FieldEntry name;
    name.id = 3;
    name.kind = proto::FieldKind::kString;
    name.text = "A \"quoted\"\n";
    update.fields.push_back(name);
    proto::FieldEntry unknown;
    unknown.id = 999;
    unknown.kind = proto::FieldKind::kBlank;
    update.fields.push_back(unknown);
    std::string out;
    json.append_update(out, update, {});
    CHECK(
        payload(out) ==
        R"({"ID":17,"Type":"Update","SeqNumber":43,"Fields":{"BID":101.43,"ASK":-0.005,"BIDSIZE":700,"DSPLY_NAME":"A \"quoted\"\u000a","999":null}})");
    out.clear();
    json.append_update(out, update, {22});
    CHECK(payload(out) == R"({"ID":17,"Type":"Update","SeqNumber":43,"Fields":{"BID":101.43}})");
    // A trade, and a conflated update saying what it stands for (LSEG's ConflationInfo).
    update.trade = true;
    out.clear();
    json.append_update(out, update, {22});
    CHECK(
        payload(out) ==
        R"({"ID":17,"Type":"Update","SeqNumber":43,"UpdateType":"Trade","Fields":{"BID":101.43}})");
    update.trade = false;
    update.conflated = true;
    update.stands_for = 5;
    update.first_publish_time_ns = 1'000'000'000;
    update.publish_time_ns = 1'250'000'000;
    out.clear();
    json.append_update(out, update, {22});
    CHECK(
        payload(out) ==
        R"({"ID":17,"Type":"Update","SeqNumber":43,"Conflated":true,"ConflationInfo":{"Count":5,"Time":250},"Fields":{"BID":101.43}})");
}

TEST_CASE("the Source directory lists each service's info and state") {
    wire::Directory directory;
    auto* up = directory.add_services();
    up->set_service_id(65537);
    up->set_name("MDCAST");
    up->set_state(wire::SERVICE_UP);
    up->set_item_count(3);
    auto* down = directory.add_services();
    down->set_service_id(65538);
    down->set_name("IDN");
    down->set_state(wire::SERVICE_DOWN);
    down->set_mode(wire::SERVICE_INTERACTIVE);
    const std::string text = payload(mdcast::server::JsonEncoder::source_refresh(5, directory));
    CHECK(text.find(R"({"ID":5,"Type":"Refresh","Domain":"Source",)") == 0);
    CHECK(
        text.find(
            R"({"Action":"Add","Key":65537,"FilterList":{"Entries":[{"ID":1,"Action":"Set","Elements":{"Name":"MDCAST",)") !=
        std::string::npos);
    CHECK(
        text.find(
            R"("Mode":"broadcast","ItemCount":3}},{"ID":2,"Action":"Set","Elements":{"ServiceState":1,"AcceptingRequests":1}})") !=
        std::string::npos);
    CHECK(
        text.find(
            R"("Mode":"interactive","ItemCount":0}},{"ID":2,"Action":"Set","Elements":{"ServiceState":0,"AcceptingRequests":0}})") !=
        std::string::npos);
}

TEST_CASE("statuses carry the key and the LSEG state names") {
    const JsonEncoder json = encoder();
    const auto status = mdcast::server::make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT,
                                                    wire::STATUS_SOURCE_DOWN, "down");
    CHECK(
        payload(json.status("S", "A", 9, status)) ==
        R"({"ID":9,"Type":"Status","Key":{"Service":"S","Name":"A"},"State":{"Stream":"Open","Data":"Suspect","Code":"SourceDown","Text":"down"}})");
}

TEST_CASE("errors echo the start of what was refused") {
    CHECK(payload(JsonEncoder::error("not JSON text", "{x")) ==
          R"({"Type":"Error","Text":"not JSON text","Debug":{"Message":"{x"}})");
    CHECK(payload(JsonEncoder::pong()) == R"({"Type":"Pong"})");
}
