// Tests for distributor/trade_fields.h: trades.fields resolved by name through
// the dictionary or by id, per service with "*" for the rest, and an update
// told a trade when it carries any of its service's fields.
#include "distributor/trade_fields.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

namespace {

namespace proto = mdcast::proto;
using mdcast::distributor::TradeFields;

const proto::FieldDictionary& dictionary() {
    static const auto parsed = proto::FieldDictionary::parse(
        "6 TRDPRC_1 DECIMAL\n22 BID DECIMAL\n178 TRDVOL_1 INT\n", "test.dict");
    return parsed;
}

proto::UpdateView update_with(std::vector<uint32_t> ids) {
    proto::UpdateView u;
    for (uint32_t id : ids)
        u.fields.push_back(proto::FieldEntry{id, proto::FieldKind::kInt, 0, 1, 0, {}});
    return u;
}

}  // namespace

TEST_CASE("trade fields resolve by name or id, per service, the star entry for the rest",
          "[trades]") {
    const TradeFields fields({{"IDN", {"TRDVOL_1", "TRDPRC_1", "6"}}, {"*", {"178"}}},
                             &dictionary());
    CHECK(fields.for_service("IDN") == std::vector<uint32_t>{6, 178});  // sorted, once each
    CHECK(fields.for_service("OTHER") == std::vector<uint32_t>{178});
    CHECK(TradeFields({{"IDN", {"6"}}}, nullptr).for_service("OTHER").empty());
    CHECK(TradeFields().for_service("IDN").empty());
}

TEST_CASE("a name the dictionary lacks is refused, naming it and its service", "[trades]") {
    CHECK_THROWS_WITH(TradeFields({{"IDN", {"TRDPRC_9"}}}, &dictionary()),
                      "IDN: field TRDPRC_9 is not in the dictionary");
    CHECK_THROWS_AS(TradeFields({{"IDN", {"TRDPRC_1"}}}, nullptr), std::invalid_argument);
    CHECK(TradeFields::names_fields({{"IDN", {"6", "TRDPRC_1"}}}));
    CHECK_FALSE(TradeFields::names_fields({{"IDN", {"6", "178"}}}));
}

TEST_CASE("an update is a trade when it carries any of the fields", "[trades]") {
    const std::vector<uint32_t> ids{6, 178};
    CHECK(TradeFields::carries_any(ids, update_with({22, 178})));
    CHECK(TradeFields::carries_any(ids, update_with({6})));
    CHECK_FALSE(TradeFields::carries_any(ids, update_with({22, 25})));
    CHECK_FALSE(TradeFields::carries_any({}, update_with({6})));
}
