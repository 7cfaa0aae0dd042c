// FieldList: the fields a publisher puts in a refresh or an update.
//
// Reuse one FieldList per thread (clear() keeps its storage) and publishing
// allocates nothing once it has grown to the largest message. Not thread-safe;
// Publisher copies what it needs before returning.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/export.h"
#include "mdcast/types.h"

namespace mdcast {

class MDCAST_API FieldList {
  public:
    FieldList() = default;
    FieldList(const FieldList& other);
    FieldList& operator=(const FieldList& other);

    FieldList& add_int(uint32_t id, int64_t value);
    // value = mantissa * 10^exponent: prices without binary rounding.
    FieldList& add_decimal(uint32_t id, int64_t mantissa, int32_t exponent);
    FieldList& add_double(uint32_t id, double value);
    FieldList& add_string(uint32_t id, std::string_view value);
    // Nanoseconds since the Unix epoch, UTC.
    FieldList& add_time(uint32_t id, int64_t ns);
    // Present but without a value.
    FieldList& add_blank(uint32_t id);

    void clear();
    bool empty() const { return values_.empty(); }
    size_t size() const { return values_.size(); }
    std::span<const FieldValue> values() const { return values_; }

  private:
    FieldList& add(FieldValue value);
    void rebase(const char* old_base);

    std::vector<FieldValue> values_;
    std::string text_;  // backing store of the string values
};

}  // namespace mdcast
