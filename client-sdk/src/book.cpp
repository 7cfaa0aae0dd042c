// Books in the SDK (mdcast/book.h): keys, the publisher's BookChanges (encoded
// with proto/book_codec.h), the entries of an event and the maintained Book.
#include "mdcast/book.h"

#include <stdexcept>

#include "event_writer.h"
#include "mdcast/event.h"
#include "proto/book_codec.h"
#include "proto/book_image.h"
#include "proto/limits.h"

namespace mdcast {

namespace {

proto::FieldEntry to_entry(const FieldValue& v) {
    return proto::FieldEntry{
        v.id,       detail::to_proto_kind(v.kind),
        v.exponent, v.integer,
        v.real,     v.kind == FieldKind::kString ? v.text : std::string_view{}};
}

FieldValue to_value(const proto::FieldEntry& e) {
    return FieldValue{e.id, detail::to_public_kind(e.kind), e.exponent, e.integer, e.real, e.text};
}

void add_value(FieldList& out, const FieldValue& v) {
    switch (v.kind) {
        case FieldKind::kInt:
            out.add_int(v.id, v.integer);
            break;
        case FieldKind::kDecimal:
            out.add_decimal(v.id, v.integer, v.exponent);
            break;
        case FieldKind::kDouble:
            out.add_double(v.id, v.real);
            break;
        case FieldKind::kString:
            out.add_string(v.id, v.text);
            break;
        case FieldKind::kTime:
            out.add_time(v.id, v.integer);
            break;
        case FieldKind::kBlank:
            out.add_blank(v.id);
            break;
    }
}

BookKey key_of(const proto::MapEntryView& entry) {
    return entry.is_price ? BookKey::price(entry.mantissa, entry.exponent)
                          : BookKey::name(entry.name);
}

}  // namespace

std::string_view domain_name(Domain domain) {
    switch (domain) {
        case Domain::kMarketPrice:
            return "MarketPrice";
        case Domain::kMarketByPrice:
            return "MarketByPrice";
        case Domain::kMarketByOrder:
            return "MarketByOrder";
        case Domain::kSymbolList:
            return "SymbolList";
    }
    return "unknown";
}

// ---- keys ------------------------------------------------------------------------------------

BookKey BookKey::price(int64_t mantissa, int32_t exponent) {
    if (exponent < -proto::kMaxPriceExponent || exponent > proto::kMaxPriceExponent)
        throw std::invalid_argument("book price exponent beyond +-18");
    BookKey key;
    key.is_price_ = true;
    proto::normalize_price(mantissa, exponent);
    key.mantissa_ = mantissa;
    key.exponent_ = exponent;
    return key;
}

BookKey BookKey::name(std::string_view name) {
    if (name.empty() || name.size() > proto::kMaxBookKeyBytes)
        throw std::invalid_argument("book key names are 1 to 256 bytes");
    BookKey key;
    key.name_.assign(name);
    return key;
}

double BookKey::to_double() const {
    return FieldValue{0, FieldKind::kDecimal, exponent_, mantissa_, 0, {}}.to_double();
}

std::string BookKey::to_string() const {
    if (!is_price_) return name_;
    return FieldValue{0, FieldKind::kDecimal, exponent_, mantissa_, 0, {}}.to_string();
}

bool operator<(const BookKey& a, const BookKey& b) {
    if (a.is_price_ != b.is_price_) return a.is_price_;
    return a.is_price_ ? proto::price_less(a.mantissa_, a.exponent_, b.mantissa_, b.exponent_)
                       : a.name_ < b.name_;
}

// ---- publishing ------------------------------------------------------------------------------

BookChanges& BookChanges::add(const BookKey& key, const FieldList& fields) {
    return append(key, MapAction::kAdd, &fields);
}

BookChanges& BookChanges::update(const BookKey& key, const FieldList& fields) {
    return append(key, MapAction::kUpdate, &fields);
}

BookChanges& BookChanges::remove(const BookKey& key) {
    return append(key, MapAction::kDelete, nullptr);
}

void BookChanges::clear() {
    bytes_.clear();
    count_ = prices_ = names_ = 0;
}

BookChanges& BookChanges::append(const BookKey& key, MapAction action, const FieldList* fields) {
    if (fields && fields->size() > proto::kMaxBookEntryFields)
        throw std::invalid_argument("a book entry has at most 256 fields");
    if (count_ == proto::kMaxMapEntries)
        throw std::invalid_argument("at most 100000 book entries in one message");
    proto::MapEntryView entry;
    entry.is_price = key.is_price();
    entry.mantissa = key.mantissa();
    entry.exponent = key.exponent();
    entry.name = key.name();
    entry.action = static_cast<proto::MapAction>(action);
    std::vector<proto::FieldEntry> entries;
    if (fields) {
        entries.reserve(fields->size());
        for (const FieldValue& v : fields->values()) {
            if (v.kind == FieldKind::kString && !proto::is_valid_utf8(v.text))
                throw std::invalid_argument("a book entry's string value is not valid UTF-8");
            entries.push_back(to_entry(v));
        }
    }
    proto::append_map_entry(bytes_, entry, entries);
    ++count_;
    ++(key.is_price() ? prices_ : names_);
    return *this;
}

// ---- consuming -------------------------------------------------------------------------------

std::vector<BookEntry> Event::book_entries() const {
    std::vector<BookEntry> out;
    std::vector<proto::MapEntryView> views;
    std::string why;
    if (map_bytes_.empty() || !proto::decode_map(map_bytes_, proto::kMaxMapEntries, views, why))
        return out;
    out.reserve(views.size());
    for (const proto::MapEntryView& view : views) {
        BookEntry& entry = out.emplace_back();
        entry.key = key_of(view);
        entry.action = static_cast<MapAction>(view.action);
        proto::FieldListCursor cursor(view.field_bytes);
        proto::FieldEntry field;
        while (cursor.next(field) == proto::FieldListCursor::Step::kField)
            entry.fields.push_back(to_value(field));
    }
    return out;
}

void merge_fields(FieldList& into, std::span<const FieldValue> changes) {
    FieldList merged;
    std::vector<bool> used(changes.size(), false);
    for (const FieldValue& old : into.values()) {
        const FieldValue* now = &old;
        for (size_t i = 0; i < changes.size(); ++i) {
            if (changes[i].id == old.id) {
                now = &changes[i];
                used[i] = true;
            }
        }
        add_value(merged, *now);
    }
    for (size_t i = 0; i < changes.size(); ++i) {
        if (!used[i]) add_value(merged, changes[i]);
    }
    into = merged;
}

bool Book::apply(const Event& event) {
    if (event.type() == EventType::kRefresh) {
        clear();
        domain_ = event.domain();
        for (const FieldValue& v : event.fields()) add_value(summary_, v);
    } else if (event.type() == EventType::kUpdate) {
        merge_fields(summary_, event.fields());
    } else {
        return false;
    }
    for (BookEntry& entry : event.book_entries()) {
        if (entry.action == MapAction::kDelete) {
            entries_.erase(entry.key);
            continue;
        }
        FieldList& fields = entries_[std::move(entry.key)];
        if (entry.action == MapAction::kAdd) fields.clear();
        merge_fields(fields, entry.fields);
    }
    return true;
}

void Book::clear() {
    domain_ = Domain::kMarketPrice;
    summary_.clear();
    entries_.clear();
}

const FieldList* Book::find(const BookKey& key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace mdcast
