#include "event_channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace mdcast::python {
namespace {

constexpr size_t kMaxPooledBatches = 4;

void signal_fd(int fd) {
    const uint64_t one = 1;
    // Cannot fail short of a full counter (2^64 - 2), which take() prevents.
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void drain_fd(int fd) {
    uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(fd, &count, sizeof count);  // EAGAIN when already 0
}

}  // namespace

EventChannel::EventChannel(size_t max_events, std::shared_ptr<const Dictionary> dictionary)
    : max_events_(max_events), dictionary_(std::move(dictionary)) {
    fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    filling_ = std::make_shared<EventBatch>(dictionary_);
}

EventChannel::~EventChannel() {
    ::close(fd_);
}

void EventChannel::push(const Event& event) {
    std::unique_lock lock(mutex_);
    if (event.handle() && cancelled_.count(event.handle().id)) return;
    if (filling_->size() >= max_events_ && !closed_) {
        ++full_waits_;
        not_full_.wait(lock, [this] { return filling_->size() < max_events_ || closed_; });
    }
    const bool was_empty = filling_->size() == 0;
    filling_->append(event);
    if (was_empty) {
        signal_fd(fd_);
        not_empty_.notify_one();
    }
}

std::shared_ptr<EventBatch> EventChannel::spare_batch() {
    for (auto& batch : pool_) {
        if (batch.use_count() == 1) {  // only the pool holds it: Python is done with it
            batch->clear();
            return batch;
        }
    }
    auto batch = std::make_shared<EventBatch>(dictionary_);
    if (pool_.size() < kMaxPooledBatches) pool_.push_back(batch);
    return batch;
}

std::shared_ptr<EventBatch> EventChannel::take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (filling_->size() == 0 && !closed_) {
        not_empty_.wait_for(lock, timeout, [this] { return filling_->size() > 0 || closed_; });
    }
    auto spare = spare_batch();
    if (filling_->size() == 0) return spare;
    std::swap(filling_, spare);
    drain_fd(fd_);
    not_full_.notify_all();
    return spare;
}

void EventChannel::cancel(uint64_t handle) {
    std::lock_guard lock(mutex_);
    cancelled_.insert(handle);
    filling_->drop(handle);
    if (filling_->size() == 0) drain_fd(fd_);
    not_full_.notify_all();
}

void EventChannel::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    signal_fd(fd_);  // wakes an asyncio reader so it sees the end
    not_full_.notify_all();
    not_empty_.notify_all();
}

bool EventChannel::closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
}

size_t EventChannel::waiting() const {
    std::lock_guard lock(mutex_);
    return filling_->size();
}

uint64_t EventChannel::full_waits() const {
    std::lock_guard lock(mutex_);
    return full_waits_;
}

}  // namespace mdcast::python
