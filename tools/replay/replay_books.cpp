#include "tools/replay/replay_books.h"

#include "proto/limits.h"
#include "tools/replay/replay_items.h"

namespace mdcast::tools {

bool BookReplayer::to_changes(wire::v1::Domain domain, std::span<const uint8_t> map,
                              BookChanges& out, std::string& why) {
    out.clear();
    if (!proto::decode_map_for(domain, map, proto::kMaxMapEntries, entries_, why)) return false;
    for (const auto& entry : entries_) {
        // decode_map_for checked the limits BookKey enforces: neither throws here.
        const BookKey key = entry.is_price ? BookKey::price(entry.mantissa, entry.exponent)
                                           : BookKey::name(entry.name);
        bool ok = false;
        to_field_list(entry.field_bytes, fields_, ok);
        if (!ok) {
            why = "an entry's field list does not decode";
            return false;
        }
        switch (entry.action) {
            case proto::MapAction::kAdd:
                out.add(key, fields_);
                break;
            case proto::MapAction::kUpdate:
                out.update(key, fields_);
                break;
            case proto::MapAction::kDelete:
                out.remove(key);
                break;
        }
    }
    return true;
}

}  // namespace mdcast::tools
