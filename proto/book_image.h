// A book's current state in a cache: its domain and every entry (key → field
// image), ordered by key (prices by value, names bytewise). Held by a
// FieldImage (whose own fields are the book's summary), so the server's and
// the distributor's caches, image answers and refreshes carry books the way
// they carry field lists.
//
// Bounded: an add beyond `max_entries` is refused (the rest of the Map is still
// applied) and reported as kFull, which the caller makes loud (docs/books.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/book_codec.h"
#include "proto/field_image.h"

namespace mdcast::proto {

// Trailing zeros out of the mantissa into the exponent (0 for zero): one value, one form.
void normalize_price(int64_t& mantissa, int32_t& exponent);
// a < b by value, both normalised.
bool price_less(int64_t a_mantissa, int32_t a_exponent, int64_t b_mantissa, int32_t b_exponent);

// A price (mantissa * 10^exponent, trailing zeros taken out of the mantissa,
// so one value has one key) or a name.
struct BookKey {
    bool is_price = false;
    int64_t mantissa = 0;
    int32_t exponent = 0;
    std::string name;

    static BookKey of(const MapEntryView& entry);
    // Prices by value, before names; names bytewise.
    friend bool operator<(const BookKey& a, const BookKey& b);
    friend bool operator==(const BookKey& a, const BookKey& b) = default;
};

class BookImage {
  public:
    explicit BookImage(::mdcast::wire::v1::Domain domain) : domain_(domain) {}

    enum class Result : uint8_t {
        kApplied,    // every action applied
        kFull,       // adds beyond max_entries refused: the book is incomplete
        kMalformed,  // the Map was refused (why): nothing applied
    };
    // Applies an encoded Map's actions in order.
    Result apply(std::span<const uint8_t> map_bytes, size_t max_entries, std::string& why);
    // Every entry as a MAP_ADD, in key order: the book's refresh payload. With
    // `view` (sorted field ids) each entry carries only those fields.
    void to_map(std::string& out, const std::vector<uint32_t>* view = nullptr) const;

    ::mdcast::wire::v1::Domain domain() const { return domain_; }
    const std::map<BookKey, FieldImage>& entries() const { return entries_; }
    size_t size() const { return entries_.size(); }

  private:
    ::mdcast::wire::v1::Domain domain_;
    std::map<BookKey, FieldImage> entries_;
    std::vector<MapEntryView> decoded_;  // reused between applies
    std::vector<FieldEntry> fields_;
};

// What applying a refresh or an update to an image did to its book, if any.
enum class BookOutcome : uint8_t {
    kNone,       // a field-list item, or a book applied whole
    kFull,       // a book over its max_entries: incomplete, the caller says so loudly
    kMalformed,  // a map refused (why), or a map for an item that is not a book
};

// Replaces `image` with a refresh's fields and, for a book, its entries.
BookOutcome assign_refresh(FieldImage& image, const ::mdcast::wire::v1::Refresh& refresh,
                           size_t max_entries, std::string& why);
// Merges an update: its fields into the summary, its map's actions into the book.
// A malformed map changes nothing.
BookOutcome apply_update(FieldImage& image, const UpdateView& update, size_t max_entries,
                         std::string& why);
// Whether apply_update would take `update`'s map (if any): `image` is a book
// and the map valid for its domain. For a hop that checks before forwarding.
bool book_update_valid(const FieldImage& image, const UpdateView& update, std::string& why);
// The image's book, if it is one, into a refresh (domain and map), each entry
// with only `view`'s fields when set.
void book_into_refresh(const FieldImage& image, ::mdcast::wire::v1::Refresh& refresh,
                       const std::vector<uint32_t>* view = nullptr);

}  // namespace mdcast::proto
