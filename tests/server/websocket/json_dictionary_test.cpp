// Tests for server/websocket/json_dictionary.h: mdcast's field dictionary as LSEG's
// RWFFld and RWFEnum in LSEG's JSON (a Series of Elements), by verbosity, split into
// bounded parts marked Complete only on the last, encoded once.
#include "server/websocket/json_dictionary.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {

namespace proto = mdcast::proto;
using mdcast::server::dictionary_kind;
using mdcast::server::dictionary_verbosity;
using mdcast::server::DictionaryKind;
using mdcast::server::DictionaryVerbosity;
using mdcast::server::JsonDictionary;
using nlohmann::json;

const proto::FieldDictionary kFields = proto::FieldDictionary::parse(
    "3 DSPLY_NAME STRING\n5 TIMACT TIME\n22 BID DECIMAL\n30 BIDSIZE INT\n90 RATIO DOUBLE\n",
    "test.dict");

// The JSON payload of a server text frame (unmasked, 2- or 4-byte header), and its size.
json message(const std::string& frame, size_t* payload_bytes = nullptr) {
    REQUIRE(static_cast<uint8_t>(frame[0]) == 0x81);
    const size_t header = (frame[1] & 0x7f) == 126 ? 4 : 2;
    if (payload_bytes) *payload_bytes = frame.size() - header;
    const json array = json::parse(frame.substr(header));
    REQUIRE((array.is_array() && array.size() == 1));
    return array[0];
}

// The field entries of a RWFFld refresh, by NAME.
std::map<std::string, json> entries_by_name(const std::vector<std::string>& parts) {
    std::map<std::string, json> out;
    for (const std::string& part : parts) {
        const json m = message(part);
        for (const json& entry : m["Series"].value("Entries", json::array()))
            out[entry["Elements"]["NAME"]] = entry["Elements"];
    }
    return out;
}

}  // namespace

TEST_CASE("RWFFld at Normal: every field with LSEG's elements, types mapped to RWF") {
    JsonDictionary dictionary(kFields);
    const auto& parts =
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kNormal, true);
    REQUIRE(parts.size() == 1);
    const json m = message(parts[0]);
    CHECK(m["ID"] == 0);  // restamped per request
    CHECK(m["Type"] == "Refresh");
    CHECK(m["Domain"] == "Dictionary");
    CHECK(m["Key"] == json({{"Name", "RWFFld"}, {"Filter", 7}}));
    CHECK(m["State"] == json({{"Stream", "Open"}, {"Data", "Ok"}, {"Text", ""}}));
    CHECK_FALSE(m.contains("Complete"));  // a single part is complete
    const json summary = m["Series"]["Summary"]["Elements"];
    CHECK(summary["Type"] == 1);
    CHECK(summary["DictionaryId"] == json({{"Type", "Int"}, {"Data", 1}}));
    CHECK(summary["Version"] == dictionary.version());
    CHECK(m["Series"]["CountHint"] == 5);

    const auto fields = entries_by_name(parts);
    REQUIRE(fields.size() == 5);
    const json& bid = fields.at("BID");
    CHECK(bid["FID"] == json({{"Type", "Int"}, {"Data", 22}}));
    CHECK(bid["RIPPLETO"] == json({{"Type", "Int"}, {"Data", 0}}));
    CHECK(bid["TYPE"] == json({{"Type", "Int"}, {"Data", 4}}));  // Marketfeed PRICE
    CHECK((bid["RWFTYPE"] == 8 && bid["LENGTH"] == 17));         // REAL
    CHECK((bid["ENUMLENGTH"] == 0 && bid["LONGNAME"] == "BID"));
    CHECK(fields.at("BIDSIZE")["RWFTYPE"] == 3);      // INT
    CHECK(fields.at("RATIO")["RWFTYPE"] == 6);        // DOUBLE
    CHECK(fields.at("DSPLY_NAME")["RWFTYPE"] == 18);  // UTF8_STRING
    CHECK(fields.at("TIMACT")["RWFTYPE"] == 11);      // DATETIME
}

TEST_CASE("verbosity: Info is the Summary alone, Minimal drops ENUMLENGTH and LONGNAME") {
    JsonDictionary dictionary(kFields);
    const json info = message(
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kInfo, false).at(0));
    CHECK(info["State"]["Stream"] == "NonStreaming");
    CHECK(info["Key"]["Filter"] == 0);
    CHECK(info["Series"].contains("Summary"));
    CHECK_FALSE(info["Series"].contains("Entries"));

    const auto minimal = entries_by_name(
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kMinimal, true));
    REQUIRE(minimal.size() == 5);
    CHECK(minimal.at("BID").contains("RWFLEN"));
    CHECK_FALSE(minimal.at("BID").contains("ENUMLENGTH"));
    CHECK_FALSE(minimal.at("BID").contains("LONGNAME"));

    CHECK(dictionary_verbosity(0) == DictionaryVerbosity::kInfo);
    CHECK(dictionary_verbosity(1) == DictionaryVerbosity::kInfo);
    CHECK(dictionary_verbosity(3) == DictionaryVerbosity::kMinimal);
    CHECK(dictionary_verbosity(7) == DictionaryVerbosity::kNormal);
    CHECK(dictionary_verbosity(15) == DictionaryVerbosity::kVerbose);
    CHECK(dictionary_verbosity(0x17) == DictionaryVerbosity::kNormal);
}

TEST_CASE("a large dictionary goes in bounded parts, Complete only on the last") {
    std::string text;
    for (int id = 1; id <= 400; ++id)
        text += std::to_string(id) + " FIELD_" + std::to_string(id) + " DECIMAL\n";
    const auto big = proto::FieldDictionary::parse(text, "big.dict");
    JsonDictionary dictionary(big, 2048);
    const auto& parts =
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kNormal, false);
    REQUIRE(parts.size() > 10);
    std::vector<std::string> names;
    for (size_t i = 0; i < parts.size(); ++i) {
        size_t bytes = 0;
        const json m = message(parts[i], &bytes);
        CHECK(bytes <= 2048);
        CHECK(m["State"]["Stream"] == "NonStreaming");
        CHECK(m.contains("Complete") == (i + 1 < parts.size()));
        if (m.contains("Complete")) CHECK(m["Complete"] == false);
        CHECK(m["Series"].contains("Summary") == (i == 0));
        CHECK(m.contains("ClearCache") == (i > 0));  // only the first part clears
        for (const json& entry : m["Series"]["Entries"]) names.push_back(entry["Elements"]["NAME"]);
    }
    REQUIRE(names.size() == 400);
    CHECK(names.front() == "FIELD_1");
    CHECK(names.back() == "FIELD_400");
}

TEST_CASE("RWFEnum: a well-formed enum dictionary with no tables") {
    JsonDictionary dictionary(kFields);
    const auto& parts =
        dictionary.refresh(DictionaryKind::kEnums, DictionaryVerbosity::kNormal, true);
    REQUIRE(parts.size() == 1);
    const json m = message(parts[0]);
    CHECK(m["Key"]["Name"] == "RWFEnum");
    const json summary = m["Series"]["Summary"]["Elements"];
    CHECK(summary["Type"] == 2);
    CHECK(summary["DictionaryId"] == json({{"Type", "Int"}, {"Data", 1}}));
    CHECK(summary["RT_Version"] == dictionary.version());  // the field dictionary it goes with
    CHECK_FALSE(m["Series"].contains("Entries"));
}

TEST_CASE("each answer is encoded once, a name not served is refused") {
    JsonDictionary dictionary(kFields);
    const auto& first =
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kNormal, true);
    const auto& again =
        dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kNormal, true);
    CHECK(&first == &again);
    CHECK(dictionary.encodings() == 1);
    dictionary.refresh(DictionaryKind::kFields, DictionaryVerbosity::kNormal, false);
    CHECK(dictionary.encodings() == 2);

    CHECK(dictionary_kind("RWFFld") == DictionaryKind::kFields);
    CHECK(dictionary_kind("RWFEnum") == DictionaryKind::kEnums);
    CHECK_FALSE(dictionary_kind("RDMFieldDictionary").has_value());
    const json refused =
        message(JsonDictionary::refused(9, "NOPE", "NotFound", "no such dictionary"));
    CHECK(refused["ID"] == 9);
    CHECK(refused["Type"] == "Status");
    CHECK(refused["Domain"] == "Dictionary");
    CHECK(refused["Key"]["Name"] == "NOPE");
    CHECK(refused["State"] == json({{"Stream", "Closed"},
                                    {"Data", "Suspect"},
                                    {"Code", "NotFound"},
                                    {"Text", "no such dictionary"}}));

    // Another dictionary, another Version.
    JsonDictionary other(proto::FieldDictionary::parse("22 BID DOUBLE\n", "other.dict"));
    CHECK(other.version() != dictionary.version());
}
