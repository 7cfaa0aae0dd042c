#include "mdcast/field_list.h"

#include <algorithm>
#include <stdexcept>

#include "mdcast/dictionary.h"

namespace mdcast {

FieldList::FieldList(std::shared_ptr<const Dictionary> dictionary)
    : dictionary_(std::move(dictionary)) {
    if (!dictionary_) {
        throw std::invalid_argument(
            "FieldList: no dictionary (Dictionary::load_installed() finds none: install "
            "libmdcast, set MDCAST_DICTIONARY, or use Dictionary::load_file)");
    }
}

FieldList::FieldList(const FieldList& other)
    : values_(other.values().begin(), other.values().end()),
      size_(other.size_),
      text_(other.text_),
      dictionary_(other.dictionary_) {
    rebase(other.text_.data());
}

FieldList::~FieldList() = default;

FieldList& FieldList::operator=(const FieldList& other) {
    if (this == &other) return *this;
    values_.assign(other.values().begin(), other.values().end());
    size_ = other.size_;
    text_ = other.text_;
    dictionary_ = other.dictionary_;
    rebase(other.text_.data());
    return *this;
}

uint32_t FieldList::id_of(std::string_view name) const {
    if (!dictionary_) {
        throw std::logic_error("FieldList: field '" + std::string(name) +
                               "' by name needs a FieldList made with a Dictionary");
    }
    return dictionary_->require_id(name);
}

// String values point into text_; after text_ moved (copy, growth) they are
// pointed at the same offsets of its new buffer.
void FieldList::rebase(const char* old_base) {
    if (old_base == text_.data()) return;
    for (FieldValue& value : std::span(values_).first(size_)) {
        if (value.kind != FieldKind::kString) continue;
        const auto offset = static_cast<size_t>(value.text.data() - old_base);
        value.text = std::string_view(text_).substr(offset, value.text.size());
    }
}

FieldList& FieldList::add_string(uint32_t id, std::string_view value) {
    const char* old_base = text_.data();
    const size_t offset = text_.size();
    text_.append(value);
    rebase(old_base);
    return add(FieldValue{id, FieldKind::kString, 0, 0, 0,
                          std::string_view(text_).substr(offset, value.size())});
}

FieldList& FieldList::add_int(std::string_view name, int64_t value) {
    return add_int(id_of(name), value);
}

FieldList& FieldList::add_decimal(std::string_view name, int64_t mantissa, int32_t exponent) {
    return add_decimal(id_of(name), mantissa, exponent);
}

FieldList& FieldList::add_double(std::string_view name, double value) {
    return add_double(id_of(name), value);
}

FieldList& FieldList::add_string(std::string_view name, std::string_view value) {
    return add_string(id_of(name), value);
}

FieldList& FieldList::add_time(std::string_view name, int64_t ns) {
    return add_time(id_of(name), ns);
}

FieldList& FieldList::add_blank(std::string_view name) {
    return add_blank(id_of(name));
}

void FieldList::clear() {
    size_ = 0;
    text_.clear();
}

void FieldList::grow() {
    values_.resize(std::max<size_t>(8, 2 * values_.size()));
}

}  // namespace mdcast
