// A book's Map restricted to a view (sorted field ids), as the server sends it
// to a subscription with a view: each entry keeps only the view's fields.
// Encoded once per distinct view, never per client (docs/books.md, "Views").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mdcast::proto {

// Appends to `out` the entries of the encoded Map `map_bytes`, in order, each
// with only the fields whose ids are in `view`. A delete always passes (it has
// no fields); an add passes even with no field left (it still creates or
// replaces the entry); an update with no field left is dropped, so `out` may
// gain nothing. False, `out` unchanged, when `map_bytes` is not a valid Map.
bool append_map_in_view(std::string& out, std::span<const uint8_t> map_bytes,
                        const std::vector<uint32_t>& view);

}  // namespace mdcast::proto
