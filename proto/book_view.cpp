#include "proto/book_view.h"

#include <algorithm>

#include "proto/book_codec.h"
#include "proto/limits.h"

namespace mdcast::proto {

namespace {

// The entry's fields in `view`, into `out` (cleared first). The Map was
// validated whole by decode_map, so every field list reads to its end.
void fields_in_view(const MapEntryView& entry, const std::vector<uint32_t>& view,
                    std::vector<FieldEntry>& out) {
    out.clear();
    FieldListCursor cursor(entry.field_bytes);
    FieldEntry field;
    while (cursor.next(field) == FieldListCursor::Step::kField) {
        if (std::binary_search(view.begin(), view.end(), field.id)) out.push_back(field);
    }
}

}  // namespace

bool append_map_in_view(std::string& out, std::span<const uint8_t> map_bytes,
                        const std::vector<uint32_t>& view) {
    // Reused between calls: the server filters every book update once per view.
    thread_local std::vector<MapEntryView> entries;
    thread_local std::vector<FieldEntry> fields;
    std::string why;
    if (!decode_map(map_bytes, kMaxMapEntries, entries, why)) return false;
    for (const MapEntryView& entry : entries) {
        fields_in_view(entry, view, fields);
        if (entry.action == MapAction::kUpdate && fields.empty()) continue;
        append_map_entry(out, entry, fields);
    }
    return true;
}

}  // namespace mdcast::proto
