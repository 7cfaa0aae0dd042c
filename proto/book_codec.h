// A book's Map payload (wire.v1.Map in proto/wire/common.proto): entries each
// with a key (a price or a name), an action and a field list. Encoded once by
// the publisher; every hop forwards the bytes, and a cache that applies them
// parses them here first, all of them, before changing anything.
//
// The parser is strict where protobuf is lenient, because every byte is a
// peer's: an unknown or repeated member, an entry without exactly one key, an
// action outside add/update/delete, a delete with fields, a key or a field list
// past the limits of proto/limits.h, or a key of the wrong kind for the
// item's domain refuses the whole Map (docs/books.md, "Limits").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/update_codec.h"
#include "wire/common.pb.h"

namespace mdcast::proto {

enum class MapAction : uint8_t { kAdd = 1, kUpdate = 2, kDelete = 3 };

struct MapEntryView {
    bool is_price = false;
    int64_t mantissa = 0;  // price = mantissa * 10^exponent
    int32_t exponent = 0;
    std::string_view name;  // !is_price; points into the decoded bytes
    MapAction action = MapAction::kAdd;
    std::span<const uint8_t> field_bytes;  // the entry's encoded FieldList
};

// Decodes `bytes` into `out` (cleared first). False, with `why`, when they are
// not a valid Map with at most `max_entries` entries.
bool decode_map(std::span<const uint8_t> bytes, size_t max_entries, std::vector<MapEntryView>& out,
                std::string& why);
// The same, and every key of the kind `domain` takes (false for a domain that
// is not a book's).
bool decode_map_for(::mdcast::wire::v1::Domain domain, std::span<const uint8_t> bytes,
                    size_t max_entries, std::vector<MapEntryView>& out, std::string& why);

// The key kind a book domain takes; false for DOMAIN_MARKET_PRICE (no map).
bool is_book_domain(::mdcast::wire::v1::Domain domain);
bool domain_keys_by_price(::mdcast::wire::v1::Domain domain);
// The names of docs/books.md (LSEG's): "MarketPrice", "MarketByPrice",
// "MarketByOrder", "SymbolList"; "unknown" for any other value.
std::string_view domain_name(::mdcast::wire::v1::Domain domain);

// Appends one MapEntry (tag included) to `out`, an encoded Map being built.
// `fields` is written for add and update, never for delete.
void append_map_entry(std::string& out, const MapEntryView& key_and_action,
                      std::span<const FieldEntry> fields);

}  // namespace mdcast::proto
