// A captured book's entries (an encoded wire.v1.Map) as the SDK's BookChanges,
// so mdcast-replay publishes them with Publisher::refresh_book / update_book and
// the replayed book ends equal to the captured one (docs/books.md, "Tools").
#pragma once

#include <span>
#include <string>
#include <vector>

#include "mdcast/book.h"
#include "proto/book_codec.h"

namespace mdcast::tools {

class BookReplayer {
  public:
    // `map` into `out` (cleared first), entry by entry in their order. False,
    // with `why`, when the map does not decode as one of `domain`.
    bool to_changes(::mdcast::wire::v1::Domain domain, std::span<const uint8_t> map,
                    BookChanges& out, std::string& why);

  private:
    std::vector<proto::MapEntryView> entries_;  // reused between maps
    FieldList fields_;
};

}  // namespace mdcast::tools
