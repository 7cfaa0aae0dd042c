// Tests for proto/field_dictionary.h: the text format, lookups, every error
// naming file:line, and the real etc/fields.dict shipped with the project.
#include "proto/field_dictionary.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#ifndef MDCAST_SOURCE_ETC
#error "MDCAST_SOURCE_ETC must name the source tree's etc/ directory"
#endif

namespace {

using mdcast::proto::FieldDictionary;
using mdcast::proto::FieldType;

// The message of the runtime_error thrown by parse(), or "" if it did not throw.
std::string parse_error(const std::string& text, const std::string& file = "test.dict") {
    try {
        (void)FieldDictionary::parse(text, file);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("parses a valid dictionary", "[field_dictionary]") {
    const auto dict = FieldDictionary::parse(
        "22 BID DECIMAL\n"
        "30 BIDSIZE INT\n"
        "3404 MID_PRICE DOUBLE\n"
        "3 DSPLY_NAME STRING\n"
        "5 TIMACT TIME\n",
        "x.dict");
    REQUIRE(dict.fields().size() == 5);
    CHECK(dict.fields()[0].id == 22);
    CHECK(dict.fields()[0].name == "BID");
    CHECK(dict.fields()[0].type == FieldType::kDecimal);
    CHECK(dict.fields()[1].type == FieldType::kInt);
    CHECK(dict.fields()[2].type == FieldType::kDouble);
    CHECK(dict.fields()[3].type == FieldType::kString);
    CHECK(dict.fields()[4].type == FieldType::kTime);
}

TEST_CASE("comments, blank lines and extra whitespace are ignored", "[field_dictionary]") {
    const auto dict = FieldDictionary::parse(
        "# header comment\n"
        "\n"
        "   \t  \n"
        "  22\tBID    DECIMAL   # trailing comment\n"
        "#25 ASK DECIMAL\n"
        "25 ASK DECIMAL#no space before the hash\n"
        "   # indented comment\n"
        "65535 LAST_ID INT",  // no final newline
        "x.dict");
    REQUIRE(dict.fields().size() == 3);
    CHECK(dict.find(22) != nullptr);
    CHECK(dict.find(25) != nullptr);
    CHECK(dict.find(25)->type == FieldType::kDecimal);
    CHECK(dict.find(65535) != nullptr);
    CHECK(dict.find(65535)->name == "LAST_ID");
}

TEST_CASE("a dictionary with CRLF line endings parses", "[field_dictionary]") {
    const auto dict = FieldDictionary::parse("# c\r\n22 BID DECIMAL\r\n25 ASK DECIMAL\r\n", "x");
    REQUIRE(dict.fields().size() == 2);
    CHECK(dict.find(25)->type == FieldType::kDecimal);
    CHECK(dict.find(std::string_view("ASK")) != nullptr);
}

TEST_CASE("an empty dictionary is valid", "[field_dictionary]") {
    CHECK(FieldDictionary::parse("", "x").fields().empty());
    CHECK(FieldDictionary::parse("# only a comment\n\n", "x").fields().empty());
}

TEST_CASE("lookups by id and by name", "[field_dictionary]") {
    const auto dict =
        FieldDictionary::parse("22 BID DECIMAL\n25 ASK DECIMAL\n1 PROD_PERM INT\n", "x");
    const auto* bid = dict.find(22);
    REQUIRE(bid != nullptr);
    CHECK(bid->name == "BID");
    const auto* by_name = dict.find(std::string_view("ASK"));
    REQUIRE(by_name != nullptr);
    CHECK(by_name->id == 25);
    CHECK(dict.find(1)->name == "PROD_PERM");
    CHECK(dict.find(23) == nullptr);
    CHECK(dict.find(0) == nullptr);
    CHECK(dict.find(std::string_view("bid")) == nullptr);  // names are case sensitive
    CHECK(dict.find(std::string_view("")) == nullptr);
    // Same object through both indexes.
    CHECK(dict.find(22) == dict.find(std::string_view("BID")));
}

TEST_CASE("field type names", "[field_dictionary]") {
    using mdcast::proto::field_type_name;
    CHECK(field_type_name(FieldType::kInt) == "INT");
    CHECK(field_type_name(FieldType::kDecimal) == "DECIMAL");
    CHECK(field_type_name(FieldType::kDouble) == "DOUBLE");
    CHECK(field_type_name(FieldType::kString) == "STRING");
    CHECK(field_type_name(FieldType::kTime) == "TIME");
}

TEST_CASE("a non-numeric id names file and line", "[field_dictionary]") {
    const std::string text = "22 BID DECIMAL\n# comment\nXX ASK DECIMAL\n";
    const std::string error = parse_error(text, "my.dict");
    CHECK_THAT(error, Catch::StartsWith("my.dict:3:"));
    CHECK_THAT(error, Catch::Contains("XX"));
    CHECK_THAT(parse_error("22x BID DECIMAL\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("0x16 BID DECIMAL\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("-1 BID DECIMAL\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("99999999999999999999999 BID DECIMAL\n"),
               Catch::StartsWith("test.dict:1:"));
}

TEST_CASE("id 0 is refused", "[field_dictionary]") {
    CHECK_THAT(parse_error("1 A INT\n0 B INT\n"), Catch::StartsWith("test.dict:2:"));
    CHECK_THAT(parse_error("0 B INT\n"), Catch::Contains("1..65535"));
}

TEST_CASE("ids above 65535 are refused", "[field_dictionary]") {
    CHECK(parse_error("65535 A INT\n").empty());
    CHECK_THAT(parse_error("65536 A INT\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("# c\n\n4294967296 A INT\n"), Catch::StartsWith("test.dict:3:"));
}

TEST_CASE("an unknown type names the line and the type", "[field_dictionary]") {
    const std::string error = parse_error("22 BID DECIMAL\n25 ASK FLOAT\n");
    CHECK_THAT(error, Catch::StartsWith("test.dict:2:"));
    CHECK_THAT(error, Catch::Contains("FLOAT"));
    // Types are case sensitive.
    CHECK_THAT(parse_error("22 BID decimal\n"), Catch::StartsWith("test.dict:1:"));
}

TEST_CASE("a duplicate id is refused", "[field_dictionary]") {
    const std::string error = parse_error("22 BID DECIMAL\n25 ASK DECIMAL\n22 BID2 DECIMAL\n");
    CHECK_THAT(error, Catch::StartsWith("test.dict:3:"));
    CHECK_THAT(error, Catch::Contains("duplicate field id"));
}

TEST_CASE("a duplicate name is refused", "[field_dictionary]") {
    const std::string error = parse_error("22 BID DECIMAL\n\n23 BID INT\n");
    CHECK_THAT(error, Catch::StartsWith("test.dict:3:"));
    CHECK_THAT(error, Catch::Contains("duplicate field name"));
}

TEST_CASE("missing or extra words are refused", "[field_dictionary]") {
    CHECK_THAT(parse_error("22 BID DECIMAL extra\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("22 BID DECIMAL\n25 ASK DECIMAL 7 # comment\n"),
               Catch::StartsWith("test.dict:2:"));
    CHECK_THAT(parse_error("22 BID\n"), Catch::StartsWith("test.dict:1:"));
    CHECK_THAT(parse_error("22\n"), Catch::StartsWith("test.dict:1:"));
}

TEST_CASE("load_file of a missing file names the path", "[field_dictionary]") {
    const std::string path = "/nonexistent/mdcast/fields.dict";
    try {
        (void)FieldDictionary::load_file(path);
        FAIL("load_file did not throw");
    } catch (const std::runtime_error& e) {
        CHECK_THAT(e.what(), Catch::Contains(path));
    }
}

TEST_CASE("the shipped etc/fields.dict loads and holds the core fields", "[field_dictionary]") {
    const std::string path = std::string(MDCAST_SOURCE_ETC) + "/fields.dict";
    const auto dict = FieldDictionary::load_file(path);
    CHECK(dict.fields().size() >= 7);

    const auto* bid = dict.find(std::string_view("BID"));
    REQUIRE(bid != nullptr);
    CHECK(bid->id == 22);
    CHECK(bid->type == FieldType::kDecimal);

    const auto* ask = dict.find(std::string_view("ASK"));
    REQUIRE(ask != nullptr);
    CHECK(ask->id == 25);
    CHECK(ask->type == FieldType::kDecimal);

    for (const char* name : {"BIDSIZE", "ASKSIZE", "TRDVOL_1", "ACVOL_1"}) {
        INFO(name);
        const auto* f = dict.find(std::string_view(name));
        REQUIRE(f != nullptr);
        CHECK(f->type == FieldType::kInt);
        CHECK(dict.find(f->id) == f);
    }
    const auto* trade = dict.find(std::string_view("TRDPRC_1"));
    REQUIRE(trade != nullptr);
    CHECK(trade->type == FieldType::kDecimal);
    CHECK(dict.find(std::string_view("BIDSIZE"))->id == 30);
    CHECK(dict.find(std::string_view("ASKSIZE"))->id == 31);
}
