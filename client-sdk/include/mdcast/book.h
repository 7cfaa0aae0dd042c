// Books: items that are maps of entries (docs/books.md) — MarketByPrice
// (keyed by price level), MarketByOrder (keyed by order id) and SymbolList
// (keyed by item name) — beside MarketPrice, the flat field list.
//
// Publishing: build the entries of a refresh, or the actions of an update, in
// a BookChanges and hand it to Publisher::refresh_book / update_book:
//   mdcast::BookChanges changes;
//   changes.add(mdcast::BookKey::price(10125, -2), level);  // level: a FieldList
//   changes.remove(mdcast::BookKey::price(10100, -2));
//   publisher.update_book(item, summary, changes);
//
// Consuming: Event::book_entries() lists a book refresh's entries or an
// update's actions; a Book applies refreshes and updates and keeps the
// current book, ordered by key, for lookups.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/export.h"
#include "mdcast/field_list.h"
#include "mdcast/types.h"

namespace mdcast {

class Event;

enum class Domain : uint8_t {
    kMarketPrice = 0,    // a flat field list
    kMarketByPrice = 1,  // keyed by price
    kMarketByOrder = 2,  // keyed by order id
    kSymbolList = 3,     // keyed by item name
};

enum class MapAction : uint8_t {
    kAdd = 1,     // a new entry, or the whole entry replaced
    kUpdate = 2,  // fields merged into the entry (added when absent)
    kDelete = 3,  // the entry removed (nothing when absent)
};

MDCAST_API std::string_view domain_name(Domain domain);

// A price (mantissa * 10^exponent, |exponent| <= 18) or a name (1 to 256 bytes).
// One value has one key: BookKey::price(10100, -2) == BookKey::price(101, 0).
class MDCAST_API BookKey {
  public:
    // Throw std::invalid_argument beyond the limits above.
    static BookKey price(int64_t mantissa, int32_t exponent);
    static BookKey name(std::string_view name);

    bool is_price() const { return is_price_; }
    int64_t mantissa() const { return mantissa_; }
    int32_t exponent() const { return exponent_; }
    const std::string& name() const { return name_; }
    double to_double() const;
    // "101.25" for a price, the name as it is.
    std::string to_string() const;

    // Prices by value, before names; names bytewise.
    friend MDCAST_API bool operator<(const BookKey& a, const BookKey& b);
    friend bool operator==(const BookKey& a, const BookKey& b) = default;

  private:
    bool is_price_ = false;
    int64_t mantissa_ = 0;
    int32_t exponent_ = 0;
    std::string name_;
};

// One entry of a book refresh (action kAdd) or one action of a book update.
// Field string values view the received bytes: valid for the handler call.
struct BookEntry {
    BookKey key;
    MapAction action = MapAction::kAdd;
    std::vector<FieldValue> fields;
};

// The entries of a book refresh or the actions of a book update, encoded as
// they are added (once: every subscriber gets these bytes). Reuse one with clear().
class MDCAST_API BookChanges {
  public:
    BookChanges& add(const BookKey& key, const FieldList& fields);
    BookChanges& update(const BookKey& key, const FieldList& fields);
    BookChanges& remove(const BookKey& key);
    void clear();
    bool empty() const { return count_ == 0; }
    size_t size() const { return count_; }
    // True when every key is a price (an empty set is both).
    bool keys_by_price() const { return names_ == 0; }
    bool keys_by_name() const { return prices_ == 0; }
    // The encoded Map (proto/wire/common.proto).
    std::span<const uint8_t> bytes() const {
        return {reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
    }

  private:
    BookChanges& append(const BookKey& key, MapAction action, const FieldList* fields);
    std::string bytes_;
    size_t count_ = 0;
    size_t prices_ = 0;
    size_t names_ = 0;
};

// A book kept current from a subscription's events: a refresh replaces it, an
// update merges its summary fields and applies its actions in order (an update
// of an absent key adds it, a delete of an absent key does nothing), a
// conflated update merges its summary (a book's actions are never conflated).
class MDCAST_API Book {
  public:
    // False (nothing changed) for an event that is not a book's refresh or
    // update; a field-list update merges into the summary and returns true.
    bool apply(const Event& event);
    void clear();

    Domain domain() const { return domain_; }
    const FieldList& summary() const { return summary_; }
    // Ordered by key: prices ascending by value (bids: iterate backwards).
    const std::map<BookKey, FieldList>& entries() const { return entries_; }
    const FieldList* find(const BookKey& key) const;
    size_t size() const { return entries_.size(); }

  private:
    Domain domain_ = Domain::kMarketPrice;
    FieldList summary_;
    std::map<BookKey, FieldList> entries_;
};

// `into` with each of `changes` replacing the field of its id, new ids appended.
MDCAST_API void merge_fields(FieldList& into, std::span<const FieldValue> changes);

}  // namespace mdcast
