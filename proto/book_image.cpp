#include "proto/book_image.h"

#include <algorithm>
#include <memory>

#include "proto/limits.h"

namespace mdcast::proto {

namespace wire = mdcast::wire::v1;

namespace {

__extension__ using Wide = unsigned __int128;

uint64_t magnitude(int64_t v) {
    return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// |a| < |b| for normalised non-zero prices. A mantissa is below 10^19, so an
// exponent 19 or more larger decides alone; otherwise the scaled mantissa fits
// 128 bits (below 10^19 * 10^18).
bool magnitude_less(int64_t a_mantissa, int32_t a_exponent, int64_t b_mantissa,
                    int32_t b_exponent) {
    const uint64_t ma = magnitude(a_mantissa), mb = magnitude(b_mantissa);
    if (a_exponent == b_exponent) return ma < mb;
    const bool a_larger_exponent = a_exponent > b_exponent;
    const int64_t gap =
        a_larger_exponent ? int64_t{a_exponent} - b_exponent : int64_t{b_exponent} - a_exponent;
    if (gap >= 19) return !a_larger_exponent;
    Wide scale = 1;
    for (int64_t i = 0; i < gap; ++i) scale *= 10;
    return a_larger_exponent ? Wide{ma} * scale < mb : Wide{ma} < Wide{mb} * scale;
}

int sign(int64_t v) {
    return (v > 0) - (v < 0);
}

void read_fields(std::span<const uint8_t> bytes, std::vector<FieldEntry>& out) {
    out.clear();
    FieldListCursor cursor(bytes);
    FieldEntry entry;
    while (cursor.next(entry) == FieldListCursor::Step::kField) out.push_back(entry);
}

// Whether merging `fields` keeps the entry within kMaxBookEntryFields, so its
// image always fits a refresh a receiver accepts.
bool fits(const FieldImage& entry, std::span<const FieldEntry> fields) {
    size_t added = 0;
    for (const FieldEntry& f : fields) added += entry.find(f.id) == nullptr;
    return entry.size() + added <= kMaxBookEntryFields;
}

}  // namespace

// Trailing zeros move into the exponent, but never past kMaxPriceExponent: the
// key must encode back into a Map the strict parser accepts (a book's refresh).
// Equal prices still meet in one form, and price_less is exact either way.
void normalize_price(int64_t& mantissa, int32_t& exponent) {
    if (mantissa == 0) exponent = 0;
    while (mantissa != 0 && mantissa % 10 == 0 && exponent < kMaxPriceExponent) {
        mantissa /= 10;
        ++exponent;
    }
}

bool price_less(int64_t a_mantissa, int32_t a_exponent, int64_t b_mantissa, int32_t b_exponent) {
    if (sign(a_mantissa) != sign(b_mantissa)) return sign(a_mantissa) < sign(b_mantissa);
    if (a_mantissa == 0) return false;
    return a_mantissa > 0 ? magnitude_less(a_mantissa, a_exponent, b_mantissa, b_exponent)
                          : magnitude_less(b_mantissa, b_exponent, a_mantissa, a_exponent);
}

BookKey BookKey::of(const MapEntryView& entry) {
    BookKey key;
    key.is_price = entry.is_price;
    if (!entry.is_price) {
        key.name.assign(entry.name);
        return key;
    }
    key.mantissa = entry.mantissa;
    key.exponent = entry.exponent;
    normalize_price(key.mantissa, key.exponent);
    return key;
}

bool operator<(const BookKey& a, const BookKey& b) {
    if (a.is_price != b.is_price) return a.is_price;
    return a.is_price ? price_less(a.mantissa, a.exponent, b.mantissa, b.exponent)
                      : a.name < b.name;
}

// Decodes everything first, so a malformed Map changes nothing.
BookImage::Result BookImage::apply(std::span<const uint8_t> map_bytes, size_t max_entries,
                                   std::string& why) {
    if (!decode_map_for(domain_, map_bytes, kMaxMapEntries, decoded_, why))
        return Result::kMalformed;
    Result result = Result::kApplied;
    for (const MapEntryView& entry : decoded_) {
        BookKey key = BookKey::of(entry);
        if (entry.action == MapAction::kDelete) {
            entries_.erase(key);
            continue;
        }
        read_fields(entry.field_bytes, fields_);
        auto it = entries_.find(key);
        if (it ==
            entries_.end()) {  // an update of an absent key adds it, as a consumer's Book does
            if (entries_.size() >= max_entries) {
                result = Result::kFull;
                continue;
            }
            it = entries_.emplace(std::move(key), FieldImage{}).first;
        } else if (entry.action == MapAction::kAdd) {
            it->second.clear();  // an add replaces the whole entry
        } else if (!fits(it->second, fields_)) {
            result = Result::kFull;
            continue;
        }
        it->second.apply(fields_);
    }
    if (result == Result::kFull) {
        why = "book over its limit of " + std::to_string(max_entries) + " entries (or " +
              std::to_string(kMaxBookEntryFields) + " fields in an entry)";
    }
    return result;
}

void BookImage::to_map(std::string& out, const std::vector<uint32_t>* view) const {
    std::vector<FieldEntry> fields;
    for (const auto& [key, image] : entries_) {
        MapEntryView entry;
        entry.is_price = key.is_price;
        entry.mantissa = key.mantissa;
        entry.exponent = key.exponent;
        entry.name = key.name;
        entry.action = MapAction::kAdd;
        fields.clear();
        for (const auto& slot : image.slots()) {
            if (!view || std::binary_search(view->begin(), view->end(), slot.entry().id))
                fields.push_back(slot.entry());
        }
        append_map_entry(out, entry, fields);  // an add even with no field in view
    }
}

BookOutcome assign_refresh(FieldImage& image, const wire::Refresh& refresh, size_t max_entries,
                           std::string& why) {
    image.assign(refresh.fields());
    image.set_book(nullptr);
    if (!is_book_domain(refresh.domain())) {
        if (refresh.domain() == wire::DOMAIN_MARKET_PRICE && refresh.map().empty())
            return BookOutcome::kNone;
        why = "a map or an unknown domain on a field-list refresh";
        return BookOutcome::kMalformed;
    }
    auto book = std::make_unique<BookImage>(refresh.domain());
    const auto* bytes = reinterpret_cast<const uint8_t*>(refresh.map().data());
    const auto result = book->apply({bytes, refresh.map().size()}, max_entries, why);
    if (result == BookImage::Result::kMalformed) return BookOutcome::kMalformed;
    image.set_book(std::move(book));
    return result == BookImage::Result::kFull ? BookOutcome::kFull : BookOutcome::kNone;
}

BookOutcome apply_update(FieldImage& image, const UpdateView& update, size_t max_entries,
                         std::string& why) {
    if (update.map_bytes.empty()) {
        image.apply(update.fields);
        return BookOutcome::kNone;
    }
    if (!image.book()) {
        why = "a map for an item that is not a book";
        return BookOutcome::kMalformed;
    }
    const auto result = image.book()->apply(update.map_bytes, max_entries, why);
    if (result == BookImage::Result::kMalformed) return BookOutcome::kMalformed;
    image.apply(update.fields);
    return result == BookImage::Result::kFull ? BookOutcome::kFull : BookOutcome::kNone;
}

bool book_update_valid(const FieldImage& image, const UpdateView& update, std::string& why) {
    if (update.map_bytes.empty()) return true;
    if (!image.book()) {
        why = "a map for an item that is not a book";
        return false;
    }
    std::vector<MapEntryView> entries;
    return decode_map_for(image.book()->domain(), update.map_bytes, kMaxMapEntries, entries, why);
}

void book_into_refresh(const FieldImage& image, wire::Refresh& refresh,
                       const std::vector<uint32_t>* view) {
    const BookImage* book = image.book();
    if (!book) return;
    refresh.set_domain(book->domain());
    book->to_map(*refresh.mutable_map(), view);
}

}  // namespace mdcast::proto
