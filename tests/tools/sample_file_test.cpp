// Tests for tools/sample_file.h: item files in both formats, typed field
// templates, and errors that name the file and line.
#include "tools/sample_file.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using mdcast::tools::add_template_fields;
using mdcast::tools::load_sample_file;
namespace wire = mdcast::wire::v1;

std::string write_temp(const std::string& suffix, const std::string& text) {
    const std::string path = "/tmp/mdcast_sample_file_test_" + std::to_string(::getpid()) + suffix;
    std::ofstream(path) << text;
    return path;
}

mdcast::proto::FieldDictionary dictionary() {
    return mdcast::proto::FieldDictionary::load_file(MDCAST_SOURCE_ETC "/fields.dict");
}

}  // namespace

TEST_CASE("a plain list: one name per line, comments and blanks ignored", "[sample_file]") {
    const auto path = write_temp(".txt", "# items\nIBM.N\n\n  MSFT.O  # software\nVOD.L\n");
    const auto items = load_sample_file(path);
    REQUIRE(items.size() == 3);
    CHECK(items[0].name == "IBM.N");
    CHECK(items[1].name == "MSFT.O");
    CHECK(items[1].line == 4);
    std::remove(path.c_str());
}

TEST_CASE("the shipped sample file loads and its templates convert", "[sample_file]") {
    const auto items = load_sample_file(MDCAST_SOURCE_ETC "/samples/items.yaml");
    REQUIRE(items.size() >= 10);
    const auto dict = dictionary();
    for (const auto& item : items) {
        wire::FieldList fields;
        add_template_fields(item, dict, "items.yaml", fields);
        CHECK(fields.fields_size() == static_cast<int>(item.fields.size()));
    }
}

TEST_CASE("YAML templates are typed by the dictionary", "[sample_file]") {
    const auto path = write_temp(".yaml", R"(items:
  - PLAIN.X
  - name: IBM.N
    fields: {DSPLY_NAME: "INTL BUS MACHINE", HST_CLOSE: "131.25", TRDVOL_1: 300, MID_PRICE: 1.5, TRADE_DATE: 2024-03-01}
)");
    const auto items = load_sample_file(path);
    REQUIRE(items.size() == 2);
    CHECK(items[0].fields.empty());
    wire::FieldList fields;
    add_template_fields(items[1], dictionary(), path, fields);
    REQUIRE(fields.fields_size() == 5);
    CHECK(fields.fields(0).string_value() == "INTL BUS MACHINE");
    CHECK(fields.fields(1).decimal_value().mantissa() == 13125);
    CHECK(fields.fields(1).decimal_value().exponent() == -2);
    CHECK(fields.fields(2).int_value() == 300);
    CHECK(fields.fields(3).double_value() == 1.5);
    CHECK(fields.fields(4).time_ns() == 1'709'251'200'000'000'000);
    std::remove(path.c_str());
}

TEST_CASE("errors name the file and line", "[sample_file]") {
    const auto dict = dictionary();
    const auto bad_type =
        write_temp(".yaml", "items:\n  - IBM.N\n  - name: X\n    fields: {BID: abc}\n");
    const auto items = load_sample_file(bad_type);
    wire::FieldList fields;
    CHECK_THROWS_WITH(add_template_fields(items[1], dict, bad_type, fields),
                      Catch::Contains(":3: X: BID is"));
    const auto unknown_field = write_temp(".yml", "items:\n  - name: X\n    fields: {NOPE: 1}\n");
    CHECK_THROWS_WITH(
        add_template_fields(load_sample_file(unknown_field)[0], dict, unknown_field, fields),
        Catch::Contains("no field named 'NOPE'"));
    const auto unknown_key = write_temp(".yaml", "items: [A]\ncolour: red\n");
    CHECK_THROWS_WITH(load_sample_file(unknown_key), Catch::Contains(":2: unknown key 'colour'"));
    CHECK_THROWS_WITH(load_sample_file("/nonexistent/items.txt"), Catch::Contains("cannot read"));
    for (const auto& p : {bad_type, unknown_field, unknown_key}) std::remove(p.c_str());
}
