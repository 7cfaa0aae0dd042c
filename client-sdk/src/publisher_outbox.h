// The publisher's outbox: what application threads published and the I/O
// thread has not taken yet.
//
// Any thread push()es a record with its fields and names; an update is also
// encoded there, on the publishing thread, into the batch's wire bytes (its
// body without item id and sequence, which only the I/O thread knows), so the
// I/O thread only prefixes them and moves bytes. The I/O thread take()s
// everything at once by swapping buffers (one lock and at most one wake-up per
// batch), so each side holds the lock only to append or to swap, and the
// buffers keep their capacity: steady publishing allocates nothing. Bounded by
// max_bytes (records, fields, text and wire bytes); push() refuses a bounded
// record that does not fit, and a refresh, update or status whose frame would
// pass the distributor's frame limit (publisher_frame_limit.h): the image it
// would enter is sent again after every reconnect.
//
// Wake-ups (the adaptive write policy): the I/O thread is woken only when it
// may be asleep: by the first push() after a take() that found nothing — at
// once, so a lone update is written without waiting (Nagle off). After a
// take() that found something the I/O thread must take() again until it finds
// nothing (PublisherCore::work does), so pushes meanwhile wake nobody. A push() inside a
// Publisher::Batch defers that wake-up to the batch's end (wake_owed()), so a burst published
// together goes out in one write with one wake-up (corking) even when the I/O
// thread would otherwise run between its updates. A push() from another
// thread, not deferring, still wakes the I/O thread for everything queued.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/types.h"
#include "proto/update_codec.h"
#include "publisher_frame_limit.h"

namespace mdcast::sdk {

struct OutboxRecord {
    enum class Kind : uint8_t { kAnnounce, kAddItem, kRefresh, kUpdate, kStatus, kFlush };
    Kind kind = Kind::kUpdate;
    ServiceMode mode = ServiceMode::kBroadcast;  // kAnnounce
    StreamState stream = StreamState::kOpen;     // kRefresh, kStatus
    DataState data = DataState::kOk;
    StatusCode code = StatusCode::kNone;
    uint64_t item = 0;   // handle (kAddItem, kRefresh, kUpdate, kStatus); kFlush: its token
    uint64_t stamp = 0;  // kUpdate: publish time, 0 = none
    bool trade = false;  // kUpdate: marked a trade (Update.trade), never conflated away
    // kRefresh, kUpdate of a book (docs/books.md): the encoded Map is in the
    // batch's wire bytes (a refresh's alone; an update's as its field 9).
    bool book = false;
    uint8_t domain = 0;  // kRefresh: wire.v1.Domain
    uint32_t first_field = 0;
    uint32_t field_count = 0;
    // Offsets into the batch text: service name (kAnnounce, kAddItem), item
    // name (kAddItem), status text (kRefresh, kStatus).
    uint32_t text1_offset = 0, text1_size = 0;
    uint32_t text2_offset = 0, text2_size = 0;
    // kUpdate: the encoded Update body without item id and sequence
    // (proto::write_update_rest), in the batch's wire bytes; a book's kRefresh: its Map.
    uint32_t wire_offset = 0, wire_size = 0;
};

// What the I/O thread takes: records, their fields (string values point into
// `text`, kept pointing there as it grows or moves: rebase()).
struct OutboxBatch {
    std::vector<OutboxRecord> records;
    std::vector<proto::FieldEntry> fields;
    std::string text;
    std::string wire;  // encoded update bodies (OutboxRecord::wire_offset)

    std::span<const proto::FieldEntry> fields_of(const OutboxRecord& r) const {
        return std::span(fields).subspan(r.first_field, r.field_count);
    }
    std::string_view text1(const OutboxRecord& r) const {
        return std::string_view(text).substr(r.text1_offset, r.text1_size);
    }
    std::string_view text2(const OutboxRecord& r) const {
        return std::string_view(text).substr(r.text2_offset, r.text2_size);
    }
    std::span<const uint8_t> wire_of(const OutboxRecord& r) const {
        return std::span(reinterpret_cast<const uint8_t*>(wire.data()) + r.wire_offset,
                         r.wire_size);
    }
    void clear();
    size_t bytes() const;
    void rebase(const char* old_base);
};

class PublisherOutbox {
  public:
    explicit PublisherOutbox(uint64_t max_bytes)
        : max_bytes_(max_bytes), max_frame_bytes_(kDefaultDistributorFrameBytes) {}

    enum class Wake : uint8_t { kNow, kDeferred };
    // What push() did: true when it took the record.
    struct Pushed {
        enum class Refusal : uint8_t { kNone, kFull, kTooLarge };
        Refusal refusal = Refusal::kNone;
        size_t frame_bytes = 0;  // kTooLarge: the frame body's bound
        explicit operator bool() const { return refusal == Refusal::kNone; }
    };
    // Refused (nothing taken) when `bounded` and it would pass max_bytes
    // (kFull), or a refresh, update or status whose frame body could pass
    // max_frame_bytes() (kTooLarge). `wake` is set when the caller must wake
    // the I/O thread: with Wake::kNow, when no wake-up is on its way for what
    // is queued; never with kDeferred. `map`: a book's encoded Map (record.book set).
    Pushed push(OutboxRecord record, std::span<const FieldValue> fields, std::string_view text1,
                std::string_view text2, bool bounded, Wake when, bool& wake,
                std::span<const uint8_t> map = {});
    // The distributor's frame limit that push() applies: the last one
    // announced (the smallest of the links that are up, dual-homed).
    void set_max_frame_bytes(uint32_t bytes) {
        max_frame_bytes_.store(bytes, std::memory_order_relaxed);
    }
    uint32_t max_frame_bytes() const { return max_frame_bytes_.load(std::memory_order_relaxed); }
    // True (and from then on a wake-up counts as sent) when something is
    // queued that no wake-up is on its way for: the end of a deferring batch.
    bool wake_owed();
    // Swaps the outbox into `out` (cleared first); string fields then point
    // into out.text. When `out` is not empty the caller must take() again
    // later without being woken; once it is empty the next push() wakes.
    void take(OutboxBatch& out);
    bool empty() const;

  private:
    uint32_t keep(std::string_view text);
    std::string_view keep_value(std::string_view value);
    void add_fields(OutboxRecord& record, std::span<const FieldValue> fields);
    void encode_update(OutboxRecord& record, std::span<const uint8_t> map);
    size_t frame_bound(const OutboxRecord& record, std::string_view text1,
                       std::span<const uint8_t> map) const;
    void truncate(size_t fields, size_t text, size_t wire);

    uint64_t max_bytes_;
    std::atomic<uint32_t> max_frame_bytes_;
    mutable std::mutex mutex_;
    OutboxBatch pending_;
    bool wake_sent_ = false;  // a wake-up is on its way for pending_
};

}  // namespace mdcast::sdk
