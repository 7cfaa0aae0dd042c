#include "update_payload.h"

#include "proto/frame.h"
#include "tools/sample_items.h"

namespace mdcast::tools {

std::span<const uint8_t> UpdateEncoder::encode(uint64_t item_id, uint64_t index, uint64_t seq,
                                               uint64_t publish_time_ns) {
    update_.set_item_id(item_id);
    update_.set_item_seq(seq);
    update_.set_publish_time_ns(publish_time_ns);
    fill_update_fields(*update_.mutable_fields(), index, seq);
    if (body_bytes_ > 0) pad_to_target();
    frame_.resize(proto::frame_bytes(update_));
    auto* out = reinterpret_cast<uint8_t*>(frame_.data());
    proto::encode_frame(proto::FrameType::kUpdate, update_, out);
    return {out, frame_.size()};
}

// Appends the filler field and sizes it. Each round moves the string length by
// the remaining difference; varint lengths can make the size jump by one more
// byte than the string grew, which the later rounds correct. When even an empty
// filler does not fit in what is left, the last sample field is left out of this
// update to make room (the filler needs 8 bytes at least).
void UpdateEncoder::pad_to_target() {
    const size_t natural = update_.ByteSizeLong();
    if (natural >= body_bytes_) {
        if (natural > body_bytes_) ++undersized_;
        return;
    }
    auto* fields = update_.mutable_fields()->mutable_fields();
    wire::v1::FieldValue* filler = update_.mutable_fields()->add_fields();
    filler->set_id(kFillerFieldId);
    filler->set_string_value("");
    size_t size = update_.ByteSizeLong();
    while (size > body_bytes_ && fields->size() > 1) {
        fields->SwapElements(fields->size() - 2, fields->size() - 1);  // filler before the last sample
        fields->RemoveLast();
        filler = &(*fields)[fields->size() - 1];
        size = update_.ByteSizeLong();
    }
    size_t length = 0;
    for (int round = 0; round < 4 && size != body_bytes_; ++round) {
        length = size < body_bytes_ ? length + (body_bytes_ - size) : length - (size - body_bytes_);
        filler_.assign(length, 'x');
        filler->set_string_value(filler_);
        size = update_.ByteSizeLong();
    }
    while (size > body_bytes_ && length > 0) {  // never above the target
        filler_.assign(--length, 'x');
        filler->set_string_value(filler_);
        size = update_.ByteSizeLong();
    }
    if (size != body_bytes_) ++inexact_;
}

}  // namespace mdcast::tools
