#include "tools/sample_items.h"

#include <cstdio>

#include "common/clock.h"

namespace mdcast::tools {

namespace wire = mdcast::wire::v1;

namespace {

constexpr uint32_t kDisplayName = 3, kCurrency = 15, kTradeDate = 16, kTradePrice = 6;
constexpr uint32_t kBid = 22, kAsk = 25, kBidSize = 30, kAskSize = 31, kVolume = 32;

void add_decimal(wire::FieldList& fields, uint32_t id, int64_t mantissa, int exponent) {
    auto* f = fields.add_fields();
    f->set_id(id);
    f->mutable_decimal_value()->set_mantissa(mantissa);
    f->mutable_decimal_value()->set_exponent(exponent);
}

void add_int(wire::FieldList& fields, uint32_t id, int64_t value) {
    auto* f = fields.add_fields();
    f->set_id(id);
    f->set_int_value(value);
}

int64_t bid_mantissa(uint64_t index, uint64_t seq) {
    return static_cast<int64_t>(10000 + 100 * index + seq % 1000);
}

}  // namespace

std::string item_name(const std::string& prefix, uint64_t index) {
    char digits[32];
    std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(index));
    return prefix + digits;
}

std::array<SampleValue, 5> update_values(uint64_t index, uint64_t seq) {
    return {{{kBid, true, bid_mantissa(index, seq), -2},
             {kAsk, true, bid_mantissa(index, seq) + 5, -2},
             {kBidSize, false, static_cast<int64_t>(100 + seq % 50), 0},
             {kAskSize, false, static_cast<int64_t>(200 + seq % 50), 0},
             {kVolume, false, static_cast<int64_t>(10 * seq), 0}}};
}

void fill_update_fields(wire::FieldList& fields, uint64_t index, uint64_t seq) {
    fields.Clear();
    for (const SampleValue& v : update_values(index, seq)) {
        if (v.decimal) {
            add_decimal(fields, v.id, v.value, v.exponent);
        } else {
            add_int(fields, v.id, v.value);
        }
    }
}

void fill_refresh_fields(wire::FieldList& fields, const std::string& name, uint64_t index,
                         uint64_t seq) {
    fill_update_fields(fields, index, seq);
    auto* display = fields.add_fields();
    display->set_id(kDisplayName);
    display->set_string_value(name);
    auto* currency = fields.add_fields();
    currency->set_id(kCurrency);
    currency->set_string_value("USD");
    add_decimal(fields, kTradePrice, bid_mantissa(index, 0), -2);
    auto* date = fields.add_fields();
    date->set_id(kTradeDate);
    date->set_time_ns(realtime_ns() / 86'400'000'000'000 * 86'400'000'000'000);
}

}  // namespace mdcast::tools
