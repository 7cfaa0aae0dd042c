// Tests for tools/client/item_printer.h: mdcast-client's lines for books — a
// refresh's domain and entries, an update's actions in order, in JSON and as
// text — and a field-list item printed as before, with its domain.
#include "item_printer.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

namespace {

namespace proto = mdcast::proto;
namespace wire = mdcast::wire::v1;
using mdcast::tools::ItemPrinter;
using mdcast::tools::OutputFormat;

const proto::FieldDictionary& dictionary() {
    static const auto dict =
        proto::FieldDictionary::parse("3429 ORDER_SIZE INT\n3430 NO_ORD INT\n", "test.dict");
    return dict;
}

// What `print` writes through an ItemPrinter of `format`.
template <class Print>
std::string printed(OutputFormat format, Print print) {
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* out = open_memstream(&buffer, &size);
    REQUIRE(out != nullptr);
    {
        ItemPrinter printer(format, dictionary(), out);
        print(printer);
    }
    std::fclose(out);
    std::string text(buffer, size);
    std::free(buffer);
    return text;
}

proto::FieldEntry int_field(uint32_t id, int64_t value) {
    return {.id = id,
            .kind = proto::FieldKind::kInt,
            .exponent = 0,
            .integer = value,
            .real = 0,
            .text = {}};
}

void append_price(std::string& map, int64_t mantissa, proto::MapAction action,
                  std::vector<proto::FieldEntry> fields) {
    proto::MapEntryView key;
    key.is_price = true;
    key.mantissa = mantissa;
    key.exponent = -2;
    key.action = action;
    proto::append_map_entry(map, key, fields);
}

wire::Refresh book_refresh() {
    wire::Refresh refresh;
    refresh.set_item_id(7);
    refresh.set_item_seq(3);
    refresh.set_service_name("MDCAST");
    refresh.set_item_name("BOOK000000");
    refresh.set_domain(wire::DOMAIN_MARKET_BY_PRICE);
    append_price(*refresh.mutable_map(), 9995, proto::MapAction::kAdd,
                 {int_field(3429, 500), int_field(3430, 5)});
    append_price(*refresh.mutable_map(), 10005, proto::MapAction::kAdd, {int_field(3429, 300)});
    return refresh;
}

wire::Update book_update() {
    wire::Update update;
    update.set_item_id(7);
    update.set_item_seq(4);
    update.set_trade(true);
    append_price(*update.mutable_map(), 10005, proto::MapAction::kUpdate, {int_field(3429, 700)});
    append_price(*update.mutable_map(), 9995, proto::MapAction::kDelete, {});
    return update;
}

}  // namespace

TEST_CASE("a book's refresh and update in JSON lines: domain, then entries in order",
          "[item_printer]") {
    const std::string text = printed(OutputFormat::kJson, [](ItemPrinter& printer) {
        printer.refresh(0, book_refresh());
        printer.update(0, "MDCAST", "BOOK000000", book_update(), -1);
    });
    CHECK(text.find("\"domain\":\"MarketByPrice\",\"fields\":{},\"entries\":["
                    "{\"key\":\"99.95\",\"action\":\"add\",\"fields\":{\"ORDER_SIZE\":500,"
                    "\"NO_ORD\":5}},{\"key\":\"100.05\",\"action\":\"add\",\"fields\":{"
                    "\"ORDER_SIZE\":300}}]}\n") != std::string::npos);
    CHECK(text.find("\"fields\":{},\"entries\":[{\"key\":\"100.05\",\"action\":\"update\","
                    "\"fields\":{\"ORDER_SIZE\":700}},{\"key\":\"99.95\",\"action\":\"delete\","
                    "\"fields\":{}}]}\n") != std::string::npos);
}

TEST_CASE("a book in text: one indented line per entry", "[item_printer]") {
    const std::string text = printed(OutputFormat::kText, [](ItemPrinter& printer) {
        printer.refresh(0, book_refresh());
        printer.update(0, "MDCAST", "BOOK000000", book_update(), -1);
    });
    CHECK(text.find(" MarketByPrice\n    add 99.95 ORDER_SIZE=500 NO_ORD=5\n"
                    "    add 100.05 ORDER_SIZE=300\n") != std::string::npos);
    CHECK(text.find("UPDATE  MDCAST/BOOK000000 seq=4\n    update 100.05 ORDER_SIZE=700\n"
                    "    delete 99.95\n") != std::string::npos);
}

TEST_CASE("a field-list item names its domain and has no entries, a bad map says why",
          "[item_printer]") {
    wire::Refresh plain;
    plain.set_item_name("ITEM000001");
    auto* field = plain.mutable_fields()->add_fields();
    field->set_id(3429);
    field->set_int_value(1);
    wire::Update broken = book_update();
    broken.set_map(std::string("\x0a\x02\x18\x09", 4));  // an entry with action 9, no key
    const std::string text = printed(OutputFormat::kJson, [&](ItemPrinter& printer) {
        printer.refresh(0, plain);
        printer.update(0, "MDCAST", "BOOK000000", broken, -1);
    });
    CHECK(text.find("\"domain\":\"MarketPrice\",\"fields\":{\"ORDER_SIZE\":1}}\n") !=
          std::string::npos);
    CHECK(text.find("\"entries\":null,\"map_error\":\"") != std::string::npos);
}
