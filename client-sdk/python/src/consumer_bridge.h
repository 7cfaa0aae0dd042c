// ConsumerBridge: an mdcast::Consumer whose events go into an EventChannel for
// Python to take, plus the connection state Python can wait for.
//
// The SDK delivers on its I/O thread (Delivery::kIoThread); the handler only
// copies the event into the channel and never touches Python, so the I/O
// thread never needs the GIL and a Python error can never reach it. Every
// method that may wait (start, stop, take, wait_connected) is called by the
// bindings with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "event_channel.h"
#include "mdcast/consumer.h"

namespace mdcast::python {

namespace py = pybind11;

// The last connection event, for wait_connected().
struct ConnectionSnapshot {
    ConnectionState state = ConnectionState::kConnecting;
    std::string server;
    std::string text;  // kDown: why (the last refusal or error)
    uint64_t logins = 0;
};

class ConsumerBridge final : public ConsumerHandler {
  public:
    // Throws std::invalid_argument for options that cannot work.
    ConsumerBridge(ConsumerOptions options, size_t max_queued_events);
    ~ConsumerBridge() override;

    void start();
    void stop();

    ItemHandle subscribe(const std::string& service, const std::string& item, const View& view,
                         uint32_t conflate_ms);
    std::vector<ItemHandle> subscribe_batch(const std::string& service,
                                            const std::vector<std::string>& items, const View& view,
                                            uint32_t conflate_ms);
    ItemHandle snapshot(const std::string& service, const std::string& item, const View& view);
    std::vector<ItemHandle> snapshot_batch(const std::string& service,
                                           const std::vector<std::string>& items, const View& view);
    // Nothing of `handle` reaches Python after this returns.
    void unsubscribe(uint64_t handle);
    void request_directory() { consumer_->request_directory(); }
    // Posts: fields {name or id: value}, resolved with the dictionary (the
    // GIL held). On-stream by handle, off-stream by service and item name.
    std::shared_future<PostResult> post(uint64_t handle, const py::dict& fields);
    std::shared_future<PostResult> post_to(const std::string& service, const std::string& item,
                                           const py::dict& fields);

    EventChannel& channel() { return channel_; }
    const std::shared_ptr<const Dictionary>& dictionary() const { return dictionary_; }
    ConsumerStats stats() const { return consumer_->stats(); }
    // Waits up to `timeout` for a login, a refused login or stop(); returns the
    // state then.
    ConnectionSnapshot wait_connected(std::chrono::milliseconds timeout);

    void on_refresh(const Event& event) override { channel_.push(event); }
    void on_update(const Event& event) override { channel_.push(event); }
    void on_status(const Event& event) override { channel_.push(event); }
    void on_directory(const Event& event) override { channel_.push(event); }
    void on_connection(const Event& event) override;

  private:
    const FieldList& post_fields(const py::dict& fields);

    std::shared_ptr<const Dictionary> dictionary_;
    FieldList post_fields_;  // reused; only touched with the GIL held
    EventChannel channel_;
    std::unique_ptr<Consumer> consumer_;
    std::mutex state_mutex_;
    std::condition_variable state_changed_;
    ConnectionSnapshot state_;
};

}  // namespace mdcast::python
