// Tests for mdcast/book.h: keys, BookChanges' encoding, Event::book_entries()
// and the maintained Book fed with events as the consumer makes them.
#include "mdcast/book.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "event_writer.h"
#include "mdcast/event.h"
#include "proto/book_image.h"

using namespace mdcast;
namespace pb = mdcast::wire::v1;

namespace {

FieldList level(int64_t size, std::string_view side = "B") {
    FieldList fields;
    fields.add_int(3427, size).add_string(3428, side);
    return fields;
}

std::string to_string(std::span<const uint8_t> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The refresh event a consumer makes of a book refresh.
void refresh_event(Event& event, const BookChanges& entries, const FieldList& summary) {
    pb::Refresh refresh;
    refresh.set_domain(pb::DOMAIN_MARKET_BY_PRICE);
    refresh.set_map(to_string(entries.bytes()));
    for (const FieldValue& v : summary.values()) {
        auto* f = refresh.mutable_fields()->add_fields();
        f->set_id(v.id);
        f->set_int_value(v.integer);
    }
    proto::FieldImage image;
    std::string why;
    REQUIRE(proto::assign_refresh(image, refresh, 100, why) == proto::BookOutcome::kNone);
    static const std::string service = "SVC", item = "VOD.L";
    detail::EventWriter::refresh(event, {ItemHandle{1}, service, item, nullptr, false}, image, 1,
                                 ItemState{}, false, 0);
}

void update_event(Event& event, const BookChanges& changes, std::vector<proto::FieldEntry> fields,
                  std::string& storage) {
    storage = to_string(changes.bytes());
    proto::UpdateView update;
    update.item_seq = 2;
    update.fields = std::move(fields);
    update.map_bytes = {reinterpret_cast<const uint8_t*>(storage.data()), storage.size()};
    static const std::string service = "SVC", item = "VOD.L";
    detail::EventWriter::update(event, {ItemHandle{1}, service, item, nullptr, false}, update, 0);
}

}  // namespace

TEST_CASE("keys: one value one key, ordered by value, within the limits", "[book]") {
    CHECK(BookKey::price(10100, -2) == BookKey::price(101, 0));
    CHECK(BookKey::price(10125, -2) < BookKey::price(102, 0));
    CHECK(BookKey::price(-1, 0) < BookKey::price(0, 0));
    CHECK(BookKey::price(5, 0) < BookKey::name("A"));
    CHECK(BookKey::name("A") < BookKey::name("B"));
    CHECK(BookKey::price(10125, -2).to_string() == "101.25");
    CHECK(BookKey::price(10125, -2).to_double() == Approx(101.25));
    CHECK_THROWS_AS(BookKey::price(1, 19), std::invalid_argument);
    CHECK_THROWS_AS(BookKey::name(""), std::invalid_argument);
    CHECK_THROWS_AS(BookKey::name(std::string(257, 'x')), std::invalid_argument);
    CHECK(domain_name(Domain::kMarketByOrder) == "MarketByOrder");
}

TEST_CASE("BookChanges encode a wire.v1.Map", "[book]") {
    BookChanges changes;
    changes.add(BookKey::price(10125, -2), level(500)).remove(BookKey::price(101, 0));
    CHECK(changes.size() == 2);
    CHECK(changes.keys_by_price());
    CHECK_FALSE(changes.keys_by_name());
    pb::Map map;
    REQUIRE(map.ParseFromString(to_string(changes.bytes())));
    REQUIRE(map.entries_size() == 2);
    CHECK(map.entries(0).action() == pb::MAP_ADD);
    CHECK(map.entries(0).fields().fields(0).int_value() == 500);
    CHECK(map.entries(1).action() == pb::MAP_DELETE);
    CHECK(map.entries(1).price().mantissa() == 101);
    changes.clear();
    CHECK(changes.empty());
    FieldList bad;
    bad.add_string(1, std::string_view("\xC3\x28", 2));
    CHECK_THROWS_AS(changes.add(BookKey::name("X"), bad), std::invalid_argument);
}

TEST_CASE("a Book follows refreshes and updates entry by entry", "[book]") {
    BookChanges entries;
    entries.add(BookKey::price(101, 0), level(100))
        .add(BookKey::price(103, 0), level(300, "A"))
        .add(BookKey::price(102, 0), level(200));
    FieldList summary;
    summary.add_int(1, 9);
    Event event;
    refresh_event(event, entries, summary);
    CHECK(event.domain() == Domain::kMarketByPrice);
    CHECK(event.book_entries().size() == 3);

    Book book;
    REQUIRE(book.apply(event));
    CHECK(book.domain() == Domain::kMarketByPrice);
    CHECK(book.size() == 3);
    CHECK(book.entries().begin()->first == BookKey::price(101, 0));  // by price
    CHECK(book.summary().values()[0].integer == 9);

    BookChanges changes;
    FieldList just_size;
    just_size.add_int(3427, 250);
    changes.update(BookKey::price(102, 0), just_size)
        .remove(BookKey::price(101, 0))
        .add(BookKey::price(104, 0), level(4, "A"));
    std::string storage;
    update_event(event, changes, {proto::FieldEntry{1, proto::FieldKind::kInt, 0, 10, 0, {}}},
                 storage);
    const auto actions = event.book_entries();
    REQUIRE(actions.size() == 3);
    CHECK(actions[1].action == MapAction::kDelete);
    REQUIRE(book.apply(event));
    CHECK(book.size() == 3);
    CHECK(book.find(BookKey::price(101, 0)) == nullptr);
    const FieldList* at_102 = book.find(BookKey::price(102, 0));
    REQUIRE(at_102 != nullptr);
    REQUIRE(at_102->size() == 2);  // the update merged: the side stays
    CHECK(at_102->values()[0].integer == 250);
    CHECK(at_102->values()[1].text == "B");
    CHECK(book.find(BookKey::price(104, 0))->values()[1].text == "A");
    CHECK(book.summary().values()[0].integer == 10);

    Event status;
    static const std::string service = "SVC", item = "VOD.L";
    detail::EventWriter::status(status, {ItemHandle{1}, service, item, nullptr, false}, ItemState{},
                                0);
    CHECK_FALSE(book.apply(status));
}
