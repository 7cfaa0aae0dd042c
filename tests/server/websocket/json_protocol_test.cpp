// Tests for server/websocket/json_protocol.h: messages as WebSocket text frames, fields
// named from the dictionary with exact decimals, views, and states.
#include "server/websocket/json_protocol.h"

#include <catch2/catch.hpp>

#include "proto/book_image.h"
#include "server/make_status.h"
#include "server/websocket/json_post.h"

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

TEST_CASE("clients.ws_publish_time: updates and refreshes carry the publisher's stamp") {
    JsonEncoder json = encoder();
    proto::UpdateView update;
    update.item_id = 17;
    update.item_seq = 43;
    update.publish_time_ns = 1'700'000'000'123'456'789;
    update.fields = {decimal(22, 10143, -2)};
    std::string out;
    json.append_update(out, update, {});
    CHECK(payload(out).find("PublishTime") == std::string::npos);  // off by default
    json.set_publish_time(true);
    out.clear();
    json.append_update(out, update, {});
    CHECK(
        payload(out) ==
        R"({"ID":17,"Type":"Update","SeqNumber":43,"PublishTime":1700000000123456789,"Fields":{"BID":101.43}})");
    // A conflated update carries the latest merged update's stamp.
    update.conflated = true;
    update.stands_for = 3;
    update.first_publish_time_ns = 1'700'000'000'023'456'789;
    out.clear();
    json.append_update(out, update, {});
    CHECK(
        payload(out) ==
        R"({"ID":17,"Type":"Update","SeqNumber":43,"PublishTime":1700000000123456789,"Conflated":true,"ConflationInfo":{"Count":3,"Time":100},"Fields":{"BID":101.43}})");
    update.publish_time_ns = 0;  // not stamped: no member rather than a false 1970
    out.clear();
    json.append_update(out, update, {});
    CHECK(payload(out).find("PublishTime") == std::string::npos);

    mdcast::server::CachedItem item;
    item.id = 17;
    item.service_name = "S";
    item.name = "A";
    item.item_seq = 44;
    item.status =
        mdcast::server::make_status(wire::STREAM_OPEN, wire::DATA_OK, wire::STATUS_NONE, "");
    item.publish_time_ns = 1'700'000'000'223'456'789;
    CHECK(payload(json.refresh(item, nullptr, {}, true, false))
              .find(R"("SeqNumber":44,"PublishTime":1700000000223456789,)") != std::string::npos);
    item.publish_time_ns = 0;
    CHECK(payload(json.refresh(item, nullptr, {}, true, false)).find("PublishTime") ==
          std::string::npos);
}

namespace {

// One entry of an encoded Map: a price key (or `name`), an action, a BIDSIZE (< 0: none).
void add_entry(std::string& map, int64_t mantissa, int32_t exponent, proto::MapAction action,
               int64_t size, std::string_view name = {}) {
    proto::MapEntryView e;
    e.is_price = name.empty();
    e.mantissa = mantissa;
    e.exponent = exponent;
    e.name = name;
    e.action = action;
    proto::FieldEntry field;
    field.id = 30;
    field.kind = proto::FieldKind::kInt;
    field.integer = size;
    proto::append_map_entry(map, e,
                            size < 0 ? std::span<const proto::FieldEntry>{} : std::span(&field, 1));
}

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

// The shape of the LSEG WebSocket API's MarketByPrice refresh: Domain, then a
// Map with KeyType, Summary and Entries, each an Add with a Key and Fields.
TEST_CASE("a book's refresh: Domain, Map with KeyType Real, Summary and every entry in order") {
    const JsonEncoder json = encoder();
    mdcast::server::CachedItem item;
    item.id = 9;
    item.service_name = "S";
    item.name = "BOOK";
    item.item_seq = 4;
    item.status =
        mdcast::server::make_status(wire::STREAM_OPEN, wire::DATA_OK, wire::STATUS_NONE, "");
    proto::FieldImage image;
    const proto::FieldEntry name = [] {
        proto::FieldEntry f;
        f.id = 3;
        f.kind = proto::FieldKind::kString;
        f.text = "ACME";
        return f;
    }();
    image.apply({&name, 1});
    image.set_book(std::make_unique<proto::BookImage>(wire::DOMAIN_MARKET_BY_PRICE));
    std::string map;
    add_entry(map, 10150, -2, proto::MapAction::kAdd, 300);
    add_entry(map, 1014, -1, proto::MapAction::kAdd, 200);
    std::string why;
    REQUIRE(image.book()->apply(bytes_of(map), 100, why) == proto::BookImage::Result::kApplied);

    const std::string text = payload(json.refresh(item, &image, {}, true, false));
    CHECK(
        text ==
        R"({"ID":9,"Type":"Refresh","Domain":"MarketByPrice","Key":{"Service":"S","Name":"BOOK"},)"
        R"("State":{"Stream":"Open","Data":"Ok","Text":""},"SeqNumber":4,)"
        R"("Map":{"KeyType":"Real","Summary":{"Fields":{"DSPLY_NAME":"ACME"}},"Entries":[)"
        R"({"Action":"Add","Key":101.4,"Fields":{"BIDSIZE":200}},)"
        R"({"Action":"Add","Key":101.5,"Fields":{"BIDSIZE":300}}]}})");
    // A view narrows the summary and every entry's fields.
    const std::string viewed = payload(json.refresh(item, &image, {22}, true, false));
    CHECK(viewed.find(R"("Summary":{"Fields":{}})") != std::string::npos);
    CHECK(viewed.find(R"({"Action":"Add","Key":101.4,"Fields":{}})") != std::string::npos);
    const std::string sizes = payload(json.refresh(item, &image, {30}, true, false));
    CHECK(
        sizes.find(
            R"("Summary":{"Fields":{}},"Entries":[{"Action":"Add","Key":101.4,"Fields":{"BIDSIZE":200}})") !=
        std::string::npos);
}

TEST_CASE("a book's update: each action with its key, no Fields on a Delete, names as text") {
    const JsonEncoder json = encoder();
    std::string map;
    add_entry(map, 10150, -2, proto::MapAction::kUpdate, 250);
    add_entry(map, 1014, -1, proto::MapAction::kDelete, -1);
    add_entry(map, 1016, -1, proto::MapAction::kAdd, 5);
    proto::UpdateView update;
    update.item_id = 9;
    update.item_seq = 5;
    update.trade = true;
    update.map_bytes = bytes_of(map);
    std::string frame;
    json.append_update(frame, update, {});
    CHECK(payload(frame) == R"({"ID":9,"Type":"Update","SeqNumber":5,"UpdateType":"Trade",)"
                            R"("Map":{"KeyType":"Real","Entries":[)"
                            R"({"Action":"Update","Key":101.5,"Fields":{"BIDSIZE":250}},)"
                            R"({"Action":"Delete","Key":101.4},)"
                            R"({"Action":"Add","Key":101.6,"Fields":{"BIDSIZE":5}}]}})");

    // A view without BIDSIZE: the Update entry is left out, the Delete stays, the Add
    // stays with no fields (as on the native protocol, docs/books.md "Views").
    std::string viewed;
    json.append_update(viewed, update, {22});
    CHECK(payload(viewed) == R"({"ID":9,"Type":"Update","SeqNumber":5,"UpdateType":"Trade",)"
                             R"("Map":{"KeyType":"Real","Entries":[)"
                             R"({"Action":"Delete","Key":101.4},)"
                             R"({"Action":"Add","Key":101.6,"Fields":{}}]}})");

    std::string orders;
    add_entry(orders, 0, 0, proto::MapAction::kAdd, 7, "order \"1\"");
    update.map_bytes = bytes_of(orders);
    const proto::FieldEntry bid = decimal(22, 10143, -2);
    update.fields.push_back(bid);
    std::string named;
    json.append_update(named, update, {});
    CHECK(payload(named).find(
              R"("Map":{"KeyType":"AsciiString","Summary":{"Fields":{"BID":101.43}},"Entries":[)"
              R"({"Action":"Add","Key":"order \"1\"","Fields":{"BIDSIZE":7}}]})") !=
          std::string::npos);
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

TEST_CASE("the Source directory sends the filters Key.Filter asks for, and says which") {
    wire::Directory directory;
    auto* up = directory.add_services();
    up->set_service_id(65537);
    up->set_name("MDCAST");
    up->set_state(wire::SERVICE_UP);
    const auto entries = [&](uint32_t filter) {
        return payload(JsonEncoder::source_refresh(5, directory, filter));
    };
    const std::string info = entries(mdcast::server::kSourceInfo);
    CHECK(info.find(R"("Key":{"Filter":1})") != std::string::npos);
    CHECK(info.find(
              R"("FilterList":{"Entries":[{"ID":1,"Action":"Set","Elements":{"Name":"MDCAST",)") !=
          std::string::npos);
    CHECK(info.find("ServiceState") == std::string::npos);
    const std::string state = entries(mdcast::server::kSourceState);
    CHECK(state.find(R"("Key":{"Filter":2})") != std::string::npos);
    CHECK(
        state.find(
            R"("FilterList":{"Entries":[{"ID":2,"Action":"Set","Elements":{"ServiceState":1,"AcceptingRequests":1}}]})") !=
        std::string::npos);
    CHECK(state.find("Capabilities") == std::string::npos);
    // Filters this server does not serve (Group 4, Load 8, ... as EMA's 63 asks) are left out.
    CHECK(entries(63) == entries(3));
    CHECK(entries(63).find(R"("Key":{"Filter":3})") != std::string::npos);
    CHECK(entries(4).find(R"("FilterList":{"Entries":[]})") != std::string::npos);
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

TEST_CASE("a posted message's fields are typed by the dictionary") {
    const auto dictionary = proto::FieldDictionary::parse(
        "22 BID DECIMAL\n30 BIDSIZE INT\n3 DSPLY_NAME STRING\n5 TIMACT TIME\n7 RATIO DOUBLE\n",
        "t");
    using mdcast::server::JsonScalar;
    const auto scalar = [](JsonScalar::Kind kind, int64_t i, double d, std::string t) {
        JsonScalar s;
        s.kind = kind;
        s.integer = i;
        s.real = d;
        s.text = std::move(t);
        return s;
    };
    std::vector<std::pair<std::string, JsonScalar>> fields{
        {"BID", scalar(JsonScalar::Kind::kFloat, 0, 45.55, "")},
        {"30", scalar(JsonScalar::Kind::kInt, 18, 0, "")},
        {"DSPLY_NAME", scalar(JsonScalar::Kind::kString, 0, 0, "X")},
        {"TIMACT", scalar(JsonScalar::Kind::kString, 0, 0, "2026-11-28T10:00:01.5Z")},
        {"RATIO", scalar(JsonScalar::Kind::kNull, 0, 0, "")}};
    std::string why;
    const auto list = mdcast::server::post_field_list(fields, dictionary, why);
    REQUIRE(list);
    REQUIRE(list->fields_size() == 5);
    CHECK(list->fields(0).decimal_value().mantissa() == 4555);
    CHECK(list->fields(0).decimal_value().exponent() == -2);
    CHECK(list->fields(1).id() == 30);
    CHECK(list->fields(1).int_value() == 18);
    CHECK(list->fields(2).string_value() == "X");
    CHECK(list->fields(3).time_ns() == 1795860001500000000);
    CHECK(list->fields(4).has_blank());
    fields = {{"BIDSIZE", scalar(JsonScalar::Kind::kFloat, 0, 1.5, "")}};
    CHECK_FALSE(mdcast::server::post_field_list(fields, dictionary, why));
    CHECK(why == "the value of BIDSIZE does not fit its type");
    fields = {{"NOPE", scalar(JsonScalar::Kind::kInt, 1, 0, "")}};
    CHECK_FALSE(mdcast::server::post_field_list(fields, dictionary, why));
    CHECK(why == "no field named NOPE");
}
