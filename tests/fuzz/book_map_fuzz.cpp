// proto/book_codec and proto/book_image: a hostile Map, as a publisher or a
// compromised hop could send it. Input: a selector byte (domain 1..3 and the
// book's entry limit), a record of refresh bytes, then update records. What the
// strict parser accepts protobuf must parse as a Map; a book built from them
// stays within its limit; its refresh payload (to_map) parses and rebuilds the
// same book, entry by entry. A Map the parser accepts, restricted to a view
// (proto/book_view.h), parses again, with no more entries and no field out of
// the view.
#include <google/protobuf/stubs/common.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "proto/book_image.h"
#include "proto/book_view.h"
#include "proto/limits.h"

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "book_map: %s\n", what);
    std::abort();
}

void check_accepted_parses(std::span<const uint8_t> bytes, wire::Domain domain) {
    std::vector<MapEntryView> entries;
    std::string why;
    if (!decode_map_for(domain, bytes, kMaxMapEntries, entries, why)) return;
    wire::Map map;
    if (!map.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        fail("accepted a Map protobuf refuses");
    if (static_cast<size_t>(map.entries_size()) != entries.size()) fail("entry counts differ");
}

// The map in a view of the selector's choice: what the server sends a viewed subscriber.
void check_in_view(std::span<const uint8_t> bytes, uint8_t selector) {
    const std::vector<uint32_t> view = {selector % 2 == 0 ? 3427u : 1u, 3430u};
    std::vector<MapEntryView> entries, kept;
    std::string why, filtered;
    const bool valid = decode_map(bytes, kMaxMapEntries, entries, why);
    if (append_map_in_view(filtered, bytes, view) != valid)
        fail("the view disagrees with the parser");
    if (!valid) return;
    const std::span<const uint8_t> out{reinterpret_cast<const uint8_t*>(filtered.data()),
                                       filtered.size()};
    if (!decode_map(out, kMaxMapEntries, kept, why)) fail("a map in a view does not parse");
    if (kept.size() > entries.size()) fail("a map in a view has more entries");
    for (const MapEntryView& entry : kept) {
        FieldListCursor cursor(entry.field_bytes);
        FieldEntry field;
        while (cursor.next(field) == FieldListCursor::Step::kField) {
            if (field.id != view[0] && field.id != view[1]) fail("a field out of the view");
        }
    }
}

// The value a field carries for its kind (a blank's leftover members mean nothing).
bool same_value(const FieldEntry& x, const FieldEntry& y) {
    if (x.id != y.id || x.kind != y.kind) return false;
    switch (x.kind) {
        case FieldKind::kInt:
        case FieldKind::kTime:
            return x.integer == y.integer;
        case FieldKind::kDecimal:
            return x.integer == y.integer && x.exponent == y.exponent;
        case FieldKind::kString:
            return x.text == y.text;
        default:
            return true;
    }
}

bool same_entries(const BookImage& a, const BookImage& b) {
    if (a.size() != b.size()) return false;
    auto it = b.entries().begin();
    for (const auto& [key, image] : a.entries()) {
        if (!(key == it->first) || image.size() != it->second.size()) return false;
        for (size_t i = 0; i < image.size(); ++i) {
            if (!same_value(image.slots()[i].entry(), it->second.slots()[i].entry())) return false;
        }
        ++it;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static google::protobuf::LogSilencer quiet;
    mdcast::fuzz::FuzzInput input(data, size);
    const uint8_t selector = input.byte();
    const auto domain = static_cast<wire::Domain>(1 + selector % 3);
    const size_t max_entries = 1 + (selector >> 2);
    BookImage book(domain);
    std::string why;
    while (!input.empty()) {
        const auto bytes = input.record();
        check_accepted_parses(bytes, domain);
        check_in_view(bytes, selector);
        book.apply(bytes, max_entries, why);
        if (book.size() > max_entries) fail("book over its limit");
    }
    std::string refresh;
    book.to_map(refresh);
    BookImage rebuilt(domain);
    const auto result = rebuilt.apply(
        {reinterpret_cast<const uint8_t*>(refresh.data()), refresh.size()}, max_entries, why);
    if (result != BookImage::Result::kApplied) fail("a book's own refresh payload was refused");
    if (!same_entries(book, rebuilt)) fail("the refresh payload rebuilds another book");
    return 0;
}
