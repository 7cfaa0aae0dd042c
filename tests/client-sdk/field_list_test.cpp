// Tests for client-sdk/src/field_list.cpp: fields by id and by dictionary
// name, string storage across growth and copies, and the errors a name can give.
#include "mdcast/field_list.h"

#include <catch2/catch.hpp>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "mdcast/dictionary.h"

namespace {

std::shared_ptr<const mdcast::Dictionary> dictionary() {
    return mdcast::Dictionary::parse(
        "22 BID DECIMAL\n25 ASK DECIMAL\n3 DSPLY_NAME STRING\n30 BIDSIZE INT\n"
        "3404 MID_PRICE DOUBLE\n16 TRADE_DATE TIME\n6 TRDPRC_1 DECIMAL\n");
}

}  // namespace

TEST_CASE("fields by name are the dictionary's ids with the given values", "[field_list]") {
    mdcast::FieldList by_name(dictionary());
    by_name.add_decimal("BID", 10125, -2)
        .add_decimal("ASK", 10150, -2)
        .add_string("DSPLY_NAME", "VODAFONE")
        .add_int("BIDSIZE", 300)
        .add_double("MID_PRICE", 101.375)
        .add_time("TRADE_DATE", 1'700'000'000'000'000'000)
        .add_blank("TRDPRC_1");
    mdcast::FieldList by_id;
    by_id.add_decimal(22, 10125, -2)
        .add_decimal(25, 10150, -2)
        .add_string(3, "VODAFONE")
        .add_int(30, 300)
        .add_double(3404, 101.375)
        .add_time(16, 1'700'000'000'000'000'000)
        .add_blank(6);
    REQUIRE(by_name.size() == by_id.size());
    for (size_t i = 0; i < by_id.size(); ++i) {
        const auto& a = by_name.values()[i];
        const auto& b = by_id.values()[i];
        CHECK(a.id == b.id);
        CHECK(a.kind == b.kind);
        CHECK(a.to_string() == b.to_string());
    }
}

TEST_CASE("a copy keeps its strings and its dictionary", "[field_list]") {
    mdcast::FieldList original(dictionary());
    original.add_string("DSPLY_NAME", "VODAFONE GROUP PLC");
    mdcast::FieldList copy = original;
    original.clear();
    original.add_string("DSPLY_NAME", "SOMETHING ELSE ENTIRELY");
    copy.add_decimal("BID", 1, 0);
    REQUIRE(copy.size() == 2);
    CHECK(copy.values()[0].text == "VODAFONE GROUP PLC");
    CHECK(copy.values()[1].id == 22);
}

TEST_CASE("a name the dictionary lacks, or no dictionary, is an error", "[field_list]") {
    mdcast::FieldList fields(dictionary());
    CHECK_THROWS_WITH(fields.add_int("NO_SUCH_FIELD", 1),
                      Catch::Contains("NO_SUCH_FIELD") && Catch::Contains("not in the dictionary"));
    CHECK(fields.empty());
    mdcast::FieldList without;
    CHECK_THROWS_AS(without.add_decimal("BID", 1, 0), std::logic_error);
    CHECK_THROWS_AS(mdcast::FieldList(nullptr), std::invalid_argument);
}

TEST_CASE("a list reused after clear() holds only its new fields, also when copied and grown",
          "[field_list]") {
    mdcast::FieldList fields;
    for (uint32_t id = 1; id <= 20; ++id)
        fields.add_string(id, "a longer value " + std::to_string(id));
    fields.clear();
    CHECK(fields.empty());
    fields.add_int(7, 70).add_string(8, "eight");
    REQUIRE(fields.size() == 2);
    const mdcast::FieldList copy = fields;
    mdcast::FieldList assigned;
    assigned.add_int(1, 1).add_int(2, 2).add_int(3, 3);
    assigned = fields;
    for (const mdcast::FieldList* list :
         std::initializer_list<const mdcast::FieldList*>{&fields, &copy, &assigned}) {
        REQUIRE(list->size() == 2);
        CHECK(list->values()[0].integer == 70);
        CHECK(list->values()[1].text == "eight");
    }
    // Growing past the slots kept from before moves the strings with the text.
    for (uint32_t id = 100; id < 140; ++id) fields.add_string(id, std::string(40, 'x'));
    REQUIRE(fields.size() == 42);
    CHECK(fields.values()[1].text == "eight");
    CHECK(fields.values()[41].text == std::string(40, 'x'));
    CHECK(copy.values()[1].text == "eight");
}
