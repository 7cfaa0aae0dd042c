// One copy of a frame for many connections: reference-counted blocks that
// connections queue by reference instead of copying (docs/architecture.md,
// "Shared output blocks").
//
// The fan-out stores a frame that several subscribers get once, in the
// current block of its SharedBlockWriter, and hands every subscriber's
// connection a SharedFrame (TcpConnection::send_shared). A connection
// extends a run while its shared frames are adjacent in one block, and at
// its flush queues the run as one evbuffer reference (no copy) that holds a
// reference on the block until the bytes are written; a short run is copied
// as before. A block is freed when its writer has moved on and the last
// connection has sent (or discarded) its bytes.
//
// Bounds: a block holds at most its capacity; a connection pins a new block
// only while it pins fewer than PinnedBlocks::max, or while its pinned blocks
// stay within twice the bytes charged to its queue (further runs are copied).
// So the shared memory a client holds is bounded by its output limits, and a
// client that takes a few sparse runs of many blocks holds copies instead.
// Single-threaded: blocks never cross event loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>

namespace mdcast {

class SharedBlock {
  public:
    // A block with room for `capacity` bytes and one reference (the creator's).
    static SharedBlock* create(size_t capacity);
    SharedBlock(const SharedBlock&) = delete;
    SharedBlock& operator=(const SharedBlock&) = delete;

    void retain() { ++references_; }
    // Frees the block with its last reference.
    void release();
    // libevent's evbuffer_add_reference cleanup: `block` is the SharedBlock
    // whose reference the evbuffer chain held.
    static void release_reference(const void* data, size_t length, void* block);

    // Copies `bytes` in behind what is stored and returns where they are now;
    // the caller checks room() first.
    std::span<const uint8_t> append(std::span<const uint8_t> bytes);
    size_t room() const { return capacity_ - size_; }
    size_t size() const { return size_; }
    size_t capacity() const { return capacity_; }
    uint32_t references() const { return references_; }
    // Distinct for every block of the process's life (addresses are reused).
    uint64_t serial() const { return serial_; }

    // Blocks alive in this process (on this thread's loop, in practice) and their capacity.
    static size_t live_blocks();
    static size_t live_bytes();

  private:
    explicit SharedBlock(size_t capacity);
    ~SharedBlock() = default;
    uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }

    size_t capacity_;
    size_t size_ = 0;
    uint32_t references_ = 1;
    uint64_t serial_;
};

// A frame stored in a shared block (empty: it was not stored, send a copy).
struct SharedFrame {
    SharedBlock* block = nullptr;
    std::span<const uint8_t> bytes;
    explicit operator bool() const { return block != nullptr; }
};

// The fan-out's side: stores frames in the current block, starting a new one
// when a frame does not fit. Holds one reference on the current block only.
class SharedBlockWriter {
  public:
    static constexpr size_t kDefaultBlockBytes = 64 << 10;
    explicit SharedBlockWriter(size_t block_bytes = kDefaultBlockBytes)
        : block_bytes_(block_bytes) {}
    ~SharedBlockWriter();
    SharedBlockWriter(const SharedBlockWriter&) = delete;
    SharedBlockWriter& operator=(const SharedBlockWriter&) = delete;

    // The frame copied into the current block; empty when it is larger than
    // a quarter of a block (it is sent by copy: big frames gain nothing).
    SharedFrame store(std::span<const uint8_t> frame);
    uint64_t blocks_started() const { return blocks_started_; }

  private:
    size_t block_bytes_;
    SharedBlock* current_ = nullptr;
    uint64_t blocks_started_ = 0;
};

// A connection's side of the bound: the blocks its queue references, in
// queue order, by the stream offset where each block's last reference ends.
class PinnedBlocks {
  public:
    explicit PinnedBlocks(size_t max_blocks) : max_(max_blocks) {}
    // May one more reference to `block` be queued by a connection charged
    // `charged_bytes` for its queue? Yes for the block pinned last; a new block
    // while fewer than max() are pinned, or while the pinned blocks stay within
    // twice the bytes charged (a long queue of whole runs: the blocks hold what
    // copies would, and nothing sparse).
    bool can_pin(const SharedBlock& block, size_t charged_bytes) const {
        if (!entries_.empty() && entries_.back().serial == block.serial()) return true;
        return entries_.size() < max_ ||
               (entries_.size() + 1) * block.capacity() <= 2 * charged_bytes;
    }
    // A reference to `block` was queued, ending at stream offset `end`.
    void pin(const SharedBlock& block, uint64_t end);
    // The stream was written up to `offset`: references ending there are gone.
    void written_to(uint64_t offset);
    void clear() { entries_.clear(); }
    size_t pinned() const { return entries_.size(); }
    size_t max() const { return max_; }

  private:
    struct Entry {
        uint64_t serial;
        uint64_t end;
    };
    size_t max_;
    std::deque<Entry> entries_;
};

}  // namespace mdcast
