#include "update_header.h"

#include "proto/protobuf_reader.h"

namespace mdcast::tools {

// The field list and unknown fields are skipped unread: only their framing is
// checked, with the reader protobuf's parser agrees with (proto/protobuf_reader.h).
bool decode_update_header(std::span<const uint8_t> body, UpdateHeader& out) {
    using Reader = proto::ProtobufReader;
    out = UpdateHeader{};
    Reader r(body);
    while (!r.done()) {
        uint32_t field = 0, type = 0;
        if (!r.tag(field, type)) return false;
        bool ok = false;
        if (field == 1 && type == Reader::kVarint) {
            ok = r.varint(out.item_id);
        } else if (field == 2 && type == Reader::kVarint) {
            ok = r.varint(out.item_seq);
        } else if (field == 3 && type == Reader::kFixed64) {
            ok = r.fixed64(out.publish_time_ns);
        } else if (field == 5 && type == Reader::kVarint) {
            uint64_t flag = 0;
            ok = r.varint(flag);
            out.conflated = flag != 0;
        } else {
            ok = r.skip(field, type);
        }
        if (!ok) return false;
    }
    return true;
}

}  // namespace mdcast::tools
