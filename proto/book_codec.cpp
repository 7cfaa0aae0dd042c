#include "proto/book_codec.h"

#include "proto/limits.h"
#include "proto/protobuf_reader.h"
#include "proto/zigzag.h"

namespace mdcast::proto {

namespace wire = mdcast::wire::v1;

namespace {

using Reader = ProtobufReader;
constexpr uint32_t kVarint = Reader::kVarint;
constexpr uint32_t kLengthDelimited = Reader::kLengthDelimited;

void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// A price key: Decimal { sint64 mantissa = 1; sint32 exponent = 2; }, each at most once.
bool decode_price(std::span<const uint8_t> bytes, MapEntryView& out, std::string& why) {
    Reader r(bytes, 1);
    bool seen[3] = {false, false, false};
    while (!r.done()) {
        uint32_t field, type;
        uint64_t v = 0;
        if (!r.tag(field, type) || field > 2 || type != kVarint || seen[field] || !r.varint(v)) {
            why = "malformed price key";
            return false;
        }
        seen[field] = true;
        if (field == 1) out.mantissa = unzigzag(v);
        if (field == 2) {
            const int64_t exponent = unzigzag(v);
            if (exponent < -kMaxPriceExponent || exponent > kMaxPriceExponent) {
                why = "price exponent beyond +-" + std::to_string(kMaxPriceExponent);
                return false;
            }
            out.exponent = static_cast<int32_t>(exponent);
        }
    }
    return true;
}

// Every value of an entry's field list, and at most kMaxBookEntryFields of them.
bool valid_fields(std::span<const uint8_t> bytes, std::string& why) {
    FieldListCursor cursor(bytes);
    FieldEntry entry;
    size_t count = 0;
    for (;;) {
        switch (cursor.next(entry)) {
            case FieldListCursor::Step::kEnd:
                return true;
            case FieldListCursor::Step::kMalformed:
                why = "malformed entry field list";
                return false;
            case FieldListCursor::Step::kField:
                if (++count > kMaxBookEntryFields) {
                    why = "entry with more than " + std::to_string(kMaxBookEntryFields) + " fields";
                    return false;
                }
        }
    }
}

bool decode_entry_member(Reader& r, uint32_t field, uint32_t type, MapEntryView& out,
                         std::string& why) {
    std::span<const uint8_t> sub;
    uint64_t v = 0;
    switch (field) {
        case 1:
            out.is_price = true;
            return type == kLengthDelimited && r.bytes(sub) && decode_price(sub, out, why);
        case 2:
            if (type != kLengthDelimited || !r.bytes(sub)) return false;
            out.name = {reinterpret_cast<const char*>(sub.data()), sub.size()};
            if (sub.empty() || sub.size() > kMaxBookKeyBytes) {
                why = "name key of " + std::to_string(sub.size()) + " bytes (1 to " +
                      std::to_string(kMaxBookKeyBytes) + ")";
                return false;
            }
            return true;
        case 3:
            if (type != kVarint || !r.varint(v)) return false;
            if (v < 1 || v > 3) {
                why = "map action " + std::to_string(v) + " (1 add, 2 update, 3 delete)";
                return false;
            }
            out.action = static_cast<MapAction>(v);
            return true;
        case 4:
            return type == kLengthDelimited && r.bytes(out.field_bytes) &&
                   valid_fields(out.field_bytes, why);
        default:
            why = "unknown map entry member " + std::to_string(field);
            return false;
    }
}

// One MapEntry: each member at most once, exactly one key, an action.
bool decode_entry(std::span<const uint8_t> bytes, MapEntryView& out, std::string& why) {
    Reader r(bytes, 2);
    bool seen[5] = {false, false, false, false, false};
    while (!r.done()) {
        uint32_t field = 0, type = 0;
        if (!r.tag(field, type)) {  // a failed tag may have been read past: refuse here
            why = "malformed map entry";
            return false;
        }
        if (field < 5 && seen[field]) {
            why = "map entry member " + std::to_string(field) + " repeated";
            return false;
        }
        if (field < 5) seen[field] = true;
        if (!decode_entry_member(r, field, type, out, why)) {
            if (why.empty()) why = "malformed map entry";
            return false;
        }
    }
    if (seen[1] == seen[2])
        why = "map entry without exactly one key";
    else if (!seen[3])
        why = "map entry without an action";
    else if (out.action == MapAction::kDelete && !out.field_bytes.empty())
        why = "a delete carries fields";
    return why.empty();
}

}  // namespace

bool is_book_domain(wire::Domain domain) {
    return domain == wire::DOMAIN_MARKET_BY_PRICE || domain == wire::DOMAIN_MARKET_BY_ORDER ||
           domain == wire::DOMAIN_SYMBOL_LIST;
}

bool domain_keys_by_price(wire::Domain domain) {
    return domain == wire::DOMAIN_MARKET_BY_PRICE;
}

std::string_view domain_name(wire::Domain domain) {
    switch (domain) {
        case wire::DOMAIN_MARKET_PRICE:
            return "MarketPrice";
        case wire::DOMAIN_MARKET_BY_PRICE:
            return "MarketByPrice";
        case wire::DOMAIN_MARKET_BY_ORDER:
            return "MarketByOrder";
        case wire::DOMAIN_SYMBOL_LIST:
            return "SymbolList";
        default:
            return "unknown";
    }
}

bool decode_map_for(wire::Domain domain, std::span<const uint8_t> bytes, size_t max_entries,
                    std::vector<MapEntryView>& out, std::string& why) {
    if (!is_book_domain(domain)) {
        out.clear();
        why = "a map on an item that is not a book";
        return false;
    }
    if (!decode_map(bytes, max_entries, out, why)) return false;
    const bool by_price = domain_keys_by_price(domain);
    for (const MapEntryView& entry : out) {
        if (entry.is_price != by_price) {
            why =
                by_price ? "a name key in a MarketByPrice book" : "a price key in a book of names";
            return false;
        }
    }
    return true;
}

bool decode_map(std::span<const uint8_t> bytes, size_t max_entries, std::vector<MapEntryView>& out,
                std::string& why) {
    out.clear();
    why.clear();
    Reader r(bytes, 3);
    while (!r.done()) {
        uint32_t field = 0, type = 0;
        std::span<const uint8_t> entry;
        if (!r.tag(field, type) || field != 1 || type != kLengthDelimited || !r.bytes(entry)) {
            why = "malformed map";
            return false;
        }
        if (out.size() == max_entries) {
            why = "map of more than " + std::to_string(max_entries) + " entries";
            return false;
        }
        out.emplace_back();
        if (!decode_entry(entry, out.back(), why)) return false;
    }
    return true;
}

void append_map_entry(std::string& out, const MapEntryView& entry,
                      std::span<const FieldEntry> fields) {
    std::string body;
    if (entry.is_price) {
        std::string price;
        if (entry.mantissa != 0) {
            price.push_back(0x08);
            put_varint(price, zigzag(entry.mantissa));
        }
        if (entry.exponent != 0) {
            price.push_back(0x10);
            put_varint(price, zigzag(entry.exponent));
        }
        body.push_back(0x0A);
        put_varint(body, price.size());
        body += price;
    } else {
        body.push_back(0x12);
        put_varint(body, entry.name.size());
        body += entry.name;
    }
    body.push_back(0x18);
    put_varint(body, static_cast<uint64_t>(entry.action));
    if (entry.action != MapAction::kDelete && !fields.empty()) {
        std::string list;
        append_field_values(list, fields);
        body.push_back(0x22);
        put_varint(body, list.size());
        body += list;
    }
    out.push_back(0x0A);
    put_varint(out, body.size());
    out += body;
}

}  // namespace mdcast::proto
