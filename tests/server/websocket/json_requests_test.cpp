// Tests for server/websocket/json_requests.h: the LSEG-style requests parsed into typed
// requests, and every kind of refusal with its reason and its limit.
#include "server/websocket/json_requests.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::server::JsonError;
using mdcast::server::JsonLimits;
using mdcast::server::JsonRequest;
using mdcast::server::parse_json_requests;

}  // namespace

TEST_CASE("a login with its elements") {
    const auto got = parse_json_requests(
        R"({"ID":1,"Domain":"Login","Key":{"Name":"alice","Elements":{"Password":"p","ApplicationId":"256","Position":"10.0.0.1"}}})",
        JsonLimits{});
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].error == JsonError::kNone);
    const JsonRequest& r = got[0].request;
    CHECK(r.type == JsonRequest::Type::kLogin);
    CHECK(r.id == 1);
    CHECK(r.user == "alice");
    CHECK(r.password == "p");
    CHECK(r.application_id == "256");
    CHECK(r.position == "10.0.0.1");
}

TEST_CASE("item requests: one name, a batch, a view, a snapshot") {
    auto got = parse_json_requests(R"({"ID":2,"Key":{"Service":"S","Name":"A"}})", JsonLimits{});
    REQUIRE(got[0].error == JsonError::kNone);
    CHECK(got[0].request.type == JsonRequest::Type::kItem);
    CHECK(got[0].request.names == std::vector<std::string>{"A"});
    CHECK(got[0].request.streaming);
    got = parse_json_requests(
        R"({"ID":3,"Key":{"Service":"S","Name":["A","B"]},"View":["BID","ASK"],"Streaming":false})",
        JsonLimits{});
    REQUIRE(got[0].error == JsonError::kNone);
    CHECK(got[0].request.names == std::vector<std::string>{"A", "B"});
    CHECK(got[0].request.view == std::vector<std::string>{"BID", "ASK"});
    CHECK_FALSE(got[0].request.streaming);
}

TEST_CASE("an array of messages is answered message by message") {
    const auto got = parse_json_requests(
        R"([{"Type":"Ping"},{"Type":"Refresh"},{"ID":[4,5],"Type":"Close"},{"Type":"Close","Domain":"Login"}])",
        JsonLimits{});
    REQUIRE(got.size() == 4);
    CHECK(got[0].request.type == JsonRequest::Type::kPing);
    CHECK(got[1].error == JsonError::kUnknownType);
    CHECK(got[2].request.type == JsonRequest::Type::kClose);
    CHECK(got[2].request.close_ids == std::vector<int64_t>{4, 5});
    CHECK(got[3].request.type == JsonRequest::Type::kCloseLogin);
}

TEST_CASE("a View names fields by name or by field id") {
    const auto got = parse_json_requests(
        R"({"ID":3,"Key":{"Service":"S","Name":"A"},"View":["BID",25,"ASK",22]})", JsonLimits{});
    REQUIRE(got.size() == 1);
    CHECK(got[0].request.view == std::vector<std::string>{"BID", "ASK"});
    CHECK(got[0].request.view_ids == std::vector<uint32_t>{25, 22});
    CHECK(parse_json_requests(R"({"ID":3,"Key":{"Service":"S","Name":"A"},"View":[-1]})",
                              JsonLimits{})[0]
              .error == JsonError::kBadRequest);
}

TEST_CASE("a Qos of TimeConflated asks for conflation, and a batch is marked") {
    const auto one = [](const char* text) { return parse_json_requests(text, JsonLimits{})[0]; };
    const auto conflated = one(
        R"({"ID":2,"Key":{"Name":["A","B"]},"Qos":{"Timeliness":"Realtime","Rate":"TimeConflated","RateInfo":250}})");
    CHECK(conflated.error == JsonError::kNone);
    CHECK(conflated.request.conflate_ms == 250);
    CHECK(conflated.request.batch);
    const auto every = one(R"({"ID":2,"Key":{"Name":"A"},"Qos":{"Rate":"TickByTick"}})");
    CHECK(every.request.conflate_ms == 0);
    CHECK_FALSE(every.request.batch);
    CHECK(one(R"({"ID":2,"Key":{"Name":"A"},"Qos":{"Rate":"TimeConflated"}})").error_text ==
          "Qos.RateInfo (ms) must be 1 to 60000 with Rate TimeConflated");
    CHECK(one(R"({"ID":2,"Key":{"Name":"A"},"Qos":{"Rate":"TimeConflated","RateInfo":60001}})")
              .error == JsonError::kBadRequest);
    CHECK(one(R"({"ID":2,"Key":{"Name":"A"},"Qos":{"Rate":"JitConflated"}})").error_text ==
          "Qos.Rate 'JitConflated' is not offered (TickByTick, TimeConflated)");
    CHECK(one(R"({"ID":2,"Key":{"Name":"A"},"Qos":{"Timeliness":"Delayed"}})").error ==
          JsonError::kBadRequest);
}

TEST_CASE("a Post carries its stream or Key, its PostID and the fields as JSON gave them") {
    const auto one = [](const char* text) { return parse_json_requests(text, JsonLimits{})[0]; };
    const auto on_stream = one(
        R"({"ID":2,"Type":"Post","Ack":true,"PostID":7,"Message":{"ID":0,"Type":"Update","Fields":{"BID":45.55,"BIDSIZE":18,"DSPLY_NAME":"X","ASK":null}}})");
    REQUIRE(on_stream.error == JsonError::kNone);
    const JsonRequest& r = on_stream.request;
    CHECK(r.type == JsonRequest::Type::kPost);
    CHECK((r.id == 2 && r.post_id == 7 && r.ack && r.names.empty()));
    REQUIRE(r.post_fields.size() == 4);
    CHECK(r.post_fields[0].first == "ASK");  // nlohmann keeps object members sorted
    CHECK(r.post_fields[0].second.kind == mdcast::server::JsonScalar::Kind::kNull);
    const auto off_stream = one(
        R"({"ID":1,"Type":"Post","Key":{"Service":"S","Name":"A"},"Message":{"Fields":{"BID":1}}})");
    CHECK((off_stream.request.service == "S" && off_stream.request.names.at(0) == "A"));
    CHECK_FALSE(off_stream.request.ack);
    CHECK(one(R"({"ID":2,"Type":"Post","Message":{"Fields":{}}})").error_text ==
          "Message.Fields missing or empty");
    CHECK(one(R"({"ID":2,"Type":"Post","Message":{"Fields":{"BID":[1]}}})").error ==
          JsonError::kBadRequest);
}

TEST_CASE("a Dictionary request: its name, Filter (Normal when absent) and Streaming") {
    const auto one = [](const char* text) { return parse_json_requests(text, JsonLimits{})[0]; };
    const auto fields =
        one(R"({"ID":3,"Domain":"Dictionary","Key":{"Name":"RWFFld","Filter":3,"Service":"S"}})");
    REQUIRE(fields.error == JsonError::kNone);
    CHECK(fields.request.type == JsonRequest::Type::kDictionary);
    CHECK((fields.request.id == 3 && fields.request.names.at(0) == "RWFFld"));
    CHECK((fields.request.filter.value_or(0) == 3 && fields.request.streaming));
    const auto enums =
        one(R"({"ID":4,"Domain":"Dictionary","Key":{"Name":"RWFEnum"},"Streaming":false})");
    CHECK((enums.request.names.at(0) == "RWFEnum" && !enums.request.filter));
    CHECK_FALSE(enums.request.streaming);
}

TEST_CASE("refusals say why") {
    const auto one = [](const char* text) {
        return parse_json_requests(text, JsonLimits{4, 2, 2})[0];
    };
    CHECK(one("{not json").error == JsonError::kNotJson);
    CHECK(one(R"({"ID":"x","Key":{}})").error_text == "ID is not an integer");
    CHECK(one(R"({"ID":1,"Key":{"Name":"A"}})").request.service.empty());  // the default
    CHECK(one(R"({"ID":1,"Key":{"Service":"S"}})").error_text == "Key.Name missing");
    CHECK(one(R"({"ID":1,"Domain":"Source","Key":{}})").request.type == JsonRequest::Type::kSource);
    CHECK(one(R"({"ID":1,"Domain":"Source","Key":{"Filter":1}})").request.filter.value_or(0) == 1);
    CHECK_FALSE(one(R"({"ID":1,"Domain":"Source"})").request.filter);
    CHECK(one(R"({"ID":1,"Domain":"Source","Key":{"Filter":-1}})").error_text ==
          "Key.Filter is not an unsigned integer");
    CHECK(one(R"({"ID":1,"Domain":"Dictionary","Key":{}})").error_text == "Key.Name missing");
    CHECK(
        one(R"({"ID":1,"Domain":"Dictionary","Key":{"Name":"RWFFld","Filter":"7"}})").error_text ==
        "Key.Filter is not an unsigned integer");
    CHECK(one(R"({"ID":1,"Domain":"MarketMaker","Key":{"Name":"A"}})").error ==
          JsonError::kUnknownType);
    // A book's domains are item requests (the refresh names the item's own Domain).
    for (const char* domain : {"MarketByPrice", "MarketByOrder", "SymbolList"}) {
        const auto book = one(
            (std::string(R"({"ID":1,"Domain":")") + domain + R"(","Key":{"Name":"A"}})").c_str());
        CHECK(book.error == JsonError::kNone);
        CHECK(book.request.type == JsonRequest::Type::kItem);
        CHECK(book.request.names == std::vector<std::string>{"A"});
    }
    CHECK(one(R"({"ID":1,"Key":{"Service":"S","Name":"A"},"Streaming":1})").error ==
          JsonError::kBadRequest);
    CHECK(one(R"({"ID":1,"Key":{"Service":"S","Name":["A","B","C"]}})").error ==
          JsonError::kTooMany);
    CHECK(one(R"({"ID":1,"Key":{"Service":"S","Name":"A"},"View":["A","B","C"]})").error ==
          JsonError::kTooMany);
    CHECK(one("[1,2,3,4,5]").error == JsonError::kTooMany);
    const auto empty = parse_json_requests("[]", JsonLimits{});  // found by fuzz_ws_requests
    REQUIRE(empty.size() == 1);                                  // answered, not silently dropped
    CHECK(empty[0].error == JsonError::kBadRequest);
    CHECK(empty[0].error_text == "an empty array: no request");
    CHECK(one("5").error == JsonError::kBadRequest);
    const auto deep = std::string(100, '[') + std::string(100, ']');
    CHECK(parse_json_requests(deep, JsonLimits{})[0].error_text == "nested deeper than 8 levels");
}
