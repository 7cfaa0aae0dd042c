// The sample items the load tools agree on: names and deterministic values.
//
// Item i is named PREFIX + i as six digits (ITEM000042). Its field values are a
// pure function of (i, item sequence n), so tests can check every value:
//   BID      = (10000 + 100*i + n % 1000) x 10^-2     ASK     = BID + 0.05
//   BIDSIZE  = 100 + n % 50                           ASKSIZE = 200 + n % 50
//   ACVOL_1  = 10*n
// A refresh carries the same fields for its sequence plus DSPLY_NAME (the item
// name), CURRENCY ("USD"), TRDPRC_1 (the n = 0 BID) and TRADE_DATE (today).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "wire/common.pb.h"

namespace mdcast::tools {

// One sample update field: an INT (exponent unused) or a DECIMAL mantissa x 10^exponent.
struct SampleValue {
    uint32_t id;
    bool decimal;
    int64_t value;
    int32_t exponent;
};

std::string item_name(const std::string& prefix, uint64_t index);
// The update fields of item `index` at sequence `seq`, in wire order: BID, ASK, BIDSIZE,
// ASKSIZE, ACVOL_1.
std::array<SampleValue, 5> update_values(uint64_t index, uint64_t seq);
void fill_update_fields(wire::v1::FieldList& fields, uint64_t index, uint64_t seq);
void fill_refresh_fields(wire::v1::FieldList& fields, const std::string& name, uint64_t index,
                         uint64_t seq);

}  // namespace mdcast::tools
