#include "post_fields.h"

#include "event_writer.h"

namespace mdcast::sdk {

void to_wire_fields(std::span<const FieldValue> fields, wire::v1::FieldList& out) {
    std::vector<proto::FieldEntry> entries;
    entries.reserve(fields.size());
    for (const FieldValue& f : fields) {
        entries.push_back(
            {f.id, detail::to_proto_kind(f.kind), f.exponent, f.integer, f.real, f.text});
    }
    proto::FieldImage image;
    image.apply(entries);
    image.to_field_list(out);
}

void from_wire_fields(const wire::v1::FieldList& in, proto::FieldImage& image,
                      std::vector<FieldValue>& out) {
    image.assign(in);
    out.clear();
    for (const auto& slot : image.slots()) {
        const proto::FieldEntry e = slot.entry();
        out.push_back(
            {e.id, detail::to_public_kind(e.kind), e.exponent, e.integer, e.real, e.text});
    }
}

}  // namespace mdcast::sdk
