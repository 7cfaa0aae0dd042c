#include "common/net/shared_block.h"

#include <atomic>
#include <cstring>
#include <new>

namespace mdcast {

namespace {

std::atomic<size_t> g_live_blocks{0};
std::atomic<size_t> g_live_bytes{0};
std::atomic<uint64_t> g_next_serial{1};

}  // namespace

SharedBlock::SharedBlock(size_t capacity)
    : capacity_(capacity), serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)) {}

// Header and bytes in one allocation: a block costs one malloc.
SharedBlock* SharedBlock::create(size_t capacity) {
    void* memory = ::operator new(sizeof(SharedBlock) + capacity);
    g_live_blocks.fetch_add(1, std::memory_order_relaxed);
    g_live_bytes.fetch_add(capacity, std::memory_order_relaxed);
    return new (memory) SharedBlock(capacity);
}

void SharedBlock::release() {
    if (--references_ != 0) return;
    g_live_blocks.fetch_sub(1, std::memory_order_relaxed);
    g_live_bytes.fetch_sub(capacity_, std::memory_order_relaxed);
    this->~SharedBlock();
    ::operator delete(this);
}

void SharedBlock::release_reference(const void*, size_t, void* block) {
    static_cast<SharedBlock*>(block)->release();
}

std::span<const uint8_t> SharedBlock::append(std::span<const uint8_t> bytes) {
    uint8_t* at = data() + size_;
    std::memcpy(at, bytes.data(), bytes.size());
    size_ += bytes.size();
    return {at, bytes.size()};
}

size_t SharedBlock::live_blocks() {
    return g_live_blocks.load(std::memory_order_relaxed);
}

size_t SharedBlock::live_bytes() {
    return g_live_bytes.load(std::memory_order_relaxed);
}

SharedBlockWriter::~SharedBlockWriter() {
    if (current_) current_->release();
}

SharedFrame SharedBlockWriter::store(std::span<const uint8_t> frame) {
    if (frame.size() > block_bytes_ / 4) return {};
    if (!current_ || current_->room() < frame.size()) {
        if (current_) current_->release();  // freed once every connection has sent from it
        current_ = SharedBlock::create(block_bytes_);
        ++blocks_started_;
    }
    return {current_, current_->append(frame)};
}

void PinnedBlocks::pin(const SharedBlock& block, uint64_t end) {
    if (!entries_.empty() && entries_.back().serial == block.serial()) {
        entries_.back().end = end;
        return;
    }
    entries_.push_back(Entry{block.serial(), end});
}

void PinnedBlocks::written_to(uint64_t offset) {
    while (!entries_.empty() && entries_.front().end <= offset) entries_.pop_front();
}

}  // namespace mdcast
