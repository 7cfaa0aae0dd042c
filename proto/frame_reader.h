// Incremental frame decoder for a TCP byte stream.
//
// Bytes from the socket are written straight into the reader's buffer
// (prepare/commit) and complete frames are taken out with next(). It copes with
// frames split over many reads and many frames in one read. Every byte is treated
// as hostile: a frame longer than the configured maximum, an unknown type or
// non-zero flags is an error for this connection, reported before the body is
// buffered, and the reader stays in the error state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proto/frame.h"

namespace mdcast::proto {

enum class FrameError { kNone, kTooLarge, kUnknownType, kBadFlags };

std::string_view frame_error_name(FrameError error);

class FrameReader {
  public:
    enum class Result { kFrame, kNeedMore, kError };

    FrameReader(size_t max_body_bytes, FrameTypeSet accepted);

    // Writable space of at least `min_bytes` at the end of the buffered data.
    // Invalidates frames returned by next().
    std::span<uint8_t> prepare(size_t min_bytes);
    void commit(size_t bytes);
    void append(std::span<const uint8_t> bytes);  // prepare + copy + commit

    // Takes the next complete frame. Frames stay valid until prepare()/append().
    Result next(Frame& out);

    FrameError error() const { return error_; }
    std::string error_text() const { return error_text_; }
    size_t buffered_bytes() const { return end_ - start_; }
    size_t max_body_bytes() const { return max_body_bytes_; }
    // A new limit for frames whose header is not read yet (a small one before
    // login, the configured one after).
    void set_max_body_bytes(size_t bytes) { max_body_bytes_ = bytes; }

  private:
    Result fail(FrameError error, std::string text);

    size_t max_body_bytes_;
    FrameTypeSet accepted_;
    std::vector<uint8_t> buffer_;
    size_t start_ = 0;  // first unconsumed byte
    size_t end_ = 0;    // one past the last buffered byte
    FrameError error_ = FrameError::kNone;
    std::string error_text_;
};

}  // namespace mdcast::proto
