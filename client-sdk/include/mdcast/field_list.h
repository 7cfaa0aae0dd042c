// FieldList: the fields a publisher puts in a refresh or an update.
//
// Fields are added by id, or by dictionary name when the FieldList was made
// with a Dictionary:
//   mdcast::FieldList fields(mdcast::Dictionary::load_installed());
//   fields.add_decimal("BID", 10125, -2).add_decimal("ASK", 10150, -2);
// A name costs one hash lookup; an unknown name throws std::invalid_argument.
//
// Reuse one FieldList per thread (clear() keeps its storage) and publishing
// allocates nothing once it has grown to the largest message. Not thread-safe;
// Publisher copies what it needs before returning.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/export.h"
#include "mdcast/types.h"

namespace mdcast {

class Dictionary;

class MDCAST_API FieldList {
  public:
    FieldList() = default;
    // Takes field names through `dictionary`; throws std::invalid_argument when
    // it is null (Dictionary::load_installed() found no dictionary).
    explicit FieldList(std::shared_ptr<const Dictionary> dictionary);
    FieldList(const FieldList& other);
    FieldList& operator=(const FieldList& other);
    ~FieldList();

    // By id: inline, one store each once the list has grown (the per-update
    // cost of a publishing application).
    FieldList& add_int(uint32_t id, int64_t value) {
        return add(FieldValue{id, FieldKind::kInt, 0, value, 0, {}});
    }
    // value = mantissa * 10^exponent: prices without binary rounding.
    FieldList& add_decimal(uint32_t id, int64_t mantissa, int32_t exponent) {
        return add(FieldValue{id, FieldKind::kDecimal, exponent, mantissa, 0, {}});
    }
    FieldList& add_double(uint32_t id, double value) {
        return add(FieldValue{id, FieldKind::kDouble, 0, 0, value, {}});
    }
    // The value is copied into the FieldList.
    FieldList& add_string(uint32_t id, std::string_view value);
    // Nanoseconds since the Unix epoch, UTC.
    FieldList& add_time(uint32_t id, int64_t ns) {
        return add(FieldValue{id, FieldKind::kTime, 0, ns, 0, {}});
    }
    // Present but without a value.
    FieldList& add_blank(uint32_t id) {
        return add(FieldValue{id, FieldKind::kBlank, 0, 0, 0, {}});
    }

    // The same by dictionary name. Throw std::invalid_argument for a name the
    // dictionary does not have, std::logic_error without a dictionary.
    FieldList& add_int(std::string_view name, int64_t value);
    FieldList& add_decimal(std::string_view name, int64_t mantissa, int32_t exponent);
    FieldList& add_double(std::string_view name, double value);
    FieldList& add_string(std::string_view name, std::string_view value);
    FieldList& add_time(std::string_view name, int64_t ns);
    FieldList& add_blank(std::string_view name);

    void clear();
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    std::span<const FieldValue> values() const { return {values_.data(), size_}; }

  private:
    // A compare and a store once the list has grown: the slots past size_
    // are kept (clear() only resets size_), and nothing is called out of line
    // on the publishing hot path (a vector push_back was, once per field).
    FieldList& add(const FieldValue& value) {
        if (size_ == values_.size()) [[unlikely]]
            grow();
        values_[size_++] = value;
        return *this;
    }
    void grow();
    void rebase(const char* old_base);
    uint32_t id_of(std::string_view name) const;

    std::vector<FieldValue> values_;  // the first size_ are the fields
    size_t size_ = 0;
    std::string text_;                              // backing store of the string values
    std::shared_ptr<const Dictionary> dictionary_;  // for names; may be null
};

}  // namespace mdcast
