// Books (docs/books.md) in the WebSocket/JSON protocol, in the LSEG WebSocket
// API's shape for MarketByPrice, MarketByOrder and SymbolList: a "Map" with its
// KeyType, the book's summary fields as "Summary" and one object per entry,
// {"Action":"Add"|"Update"|"Delete","Key":..,"Fields":{..}} (no Fields on a
// Delete). Prices are Real keys written exactly; names are AsciiString keys,
// written as text (LSEG's Buffer keys would be base64: docs/websocket.md).
#include <vector>

#include "proto/book_image.h"
#include "proto/limits.h"
#include "server/websocket/json_protocol.h"

namespace mdcast::server {

namespace {

std::string_view action_name(proto::MapAction action) {
    switch (action) {
        case proto::MapAction::kUpdate:
            return "Update";
        case proto::MapAction::kDelete:
            return "Delete";
        case proto::MapAction::kAdd:
            break;
    }
    return "Add";
}

void append_key_type(std::string& out, bool by_price) {
    out += by_price ? "\"KeyType\":\"Real\"" : "\"KeyType\":\"AsciiString\"";
}

void append_entry_key(std::string& out, bool is_price, int64_t mantissa, int32_t exponent,
                      std::string_view name) {
    out += "\"Key\":";
    if (is_price) {
        append_json_decimal(out, mantissa, exponent);
    } else {
        append_json_string(out, name);
    }
}

}  // namespace

void JsonEncoder::append_book_map(std::string& out, const proto::FieldImage& image,
                                  const std::vector<uint32_t>& view) const {
    const proto::BookImage& book = *image.book();
    out += "\"Map\":{";
    append_key_type(out, proto::domain_keys_by_price(book.domain()));
    out += ",\"Summary\":{";
    append_image_fields(out, image, view);
    out += "},\"Entries\":[";
    bool first = true;
    for (const auto& [key, entry] : book.entries()) {
        if (!first) out += ',';
        first = false;
        out += "{\"Action\":\"Add\",";
        append_entry_key(out, key.is_price, key.mantissa, key.exponent, key.name);
        out += ',';
        append_image_fields(out, entry, view);
        out += '}';
    }
    out += "]}";
}

bool JsonEncoder::append_update_map(std::string& out, const proto::UpdateView& update,
                                    const std::vector<uint32_t>& view) const {
    // The caches validated the map before fanning it out; one that still does
    // not decode goes out without its entries rather than half of them.
    std::vector<proto::MapEntryView> entries;
    std::string why;
    if (!proto::decode_map(update.map_bytes, proto::kMaxMapEntries, entries, why) ||
        entries.empty())
        return false;
    out += "\"Map\":{";
    append_key_type(out, entries.front().is_price);
    if (!update.fields.empty()) {
        out += ",\"Summary\":{";
        append_fields(out, update.fields, view);
        out += '}';
    }
    out += ",\"Entries\":[";
    std::vector<proto::FieldEntry> fields;
    bool first = true;
    for (const proto::MapEntryView& entry : entries) {
        // A view selects fields inside entries too, as on the native protocol
        // (docs/books.md, "Views"): an Update left with none of them is left out.
        fields.clear();
        if (entry.action != proto::MapAction::kDelete) {
            proto::FieldListCursor cursor(entry.field_bytes);
            proto::FieldEntry field;
            while (cursor.next(field) == proto::FieldListCursor::Step::kField)
                if (in_view(view, field.id)) fields.push_back(field);
            if (entry.action == proto::MapAction::kUpdate && fields.empty()) continue;
        }
        if (!first) out += ',';
        first = false;
        out += "{\"Action\":\"";
        out += action_name(entry.action);
        out += "\",";
        // In the refresh's form (101.5, never 101.50): a client keying its book by
        // the key's text finds the entry the refresh added.
        int64_t mantissa = entry.mantissa;
        int32_t exponent = entry.exponent;
        if (entry.is_price) proto::normalize_price(mantissa, exponent);
        append_entry_key(out, entry.is_price, mantissa, exponent, entry.name);
        if (entry.action != proto::MapAction::kDelete) {
            out += ',';
            append_fields(out, fields, {});
        }
        out += '}';
    }
    out += "]}";
    return true;
}

}  // namespace mdcast::server
