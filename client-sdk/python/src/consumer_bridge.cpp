#include "consumer_bridge.h"

#include "field_values.h"

namespace mdcast::python {

ConsumerBridge::ConsumerBridge(ConsumerOptions options, size_t max_queued_events)
    : dictionary_(options.dictionary), channel_(max_queued_events, options.dictionary) {
    options.delivery = ConsumerOptions::Delivery::kIoThread;
    consumer_ = std::make_unique<Consumer>(std::move(options), *this);
}

ConsumerBridge::~ConsumerBridge() {
    stop();
}

void ConsumerBridge::start() {
    consumer_->start();
}

void ConsumerBridge::stop() {
    // The I/O thread may be waiting for room in the channel; closing it first
    // lets it finish, so stop() cannot wait on Python.
    channel_.close();
    consumer_->stop();
}

ItemHandle ConsumerBridge::subscribe(const std::string& service, const std::string& item,
                                     const View& view, uint32_t conflate_ms) {
    return consumer_->subscribe(service, item, view, conflate_ms);
}

std::vector<ItemHandle> ConsumerBridge::subscribe_batch(const std::string& service,
                                                        const std::vector<std::string>& items,
                                                        const View& view, uint32_t conflate_ms) {
    return consumer_->subscribe_batch(service, items, view, conflate_ms);
}

ItemHandle ConsumerBridge::snapshot(const std::string& service, const std::string& item,
                                    const View& view) {
    return consumer_->snapshot(service, item, view);
}

std::vector<ItemHandle> ConsumerBridge::snapshot_batch(const std::string& service,
                                                       const std::vector<std::string>& items,
                                                       const View& view) {
    return consumer_->snapshot_batch(service, items, view);
}

void ConsumerBridge::unsubscribe(uint64_t handle) {
    // The channel first: an event the I/O thread delivers while the SDK takes
    // the request is then dropped too.
    channel_.cancel(handle);
    consumer_->unsubscribe(ItemHandle{handle});
}

void ConsumerBridge::on_connection(const Event& event) {
    {
        std::lock_guard lock(state_mutex_);
        const ConnectionEvent& c = event.connection();
        state_.state = c.state;
        state_.server = c.server.to_string();
        if (c.state == ConnectionState::kDown) state_.text = c.text;
        if (c.state == ConnectionState::kUp) ++state_.logins;
    }
    state_changed_.notify_all();
    channel_.push(event);
}

ConnectionSnapshot ConsumerBridge::wait_connected(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_mutex_);
    // A refused login ends the wait at once: the next attempt waits the longest
    // back-off and would most likely be refused again.
    state_changed_.wait_for(lock, timeout, [this] {
        return state_.state == ConnectionState::kUp || state_.state == ConnectionState::kStopped ||
               (state_.state == ConnectionState::kDown &&
                state_.text.find("login_refused") != std::string::npos);
    });
    return state_;
}

const FieldList& ConsumerBridge::post_fields(const py::dict& fields) {
    if (!dictionary_) throw py::value_error("post: the consumer has no field dictionary");
    post_fields_.clear();
    fill_field_list(post_fields_, *dictionary_, fields);
    return post_fields_;
}

std::shared_future<PostResult> ConsumerBridge::post(uint64_t handle, const py::dict& fields) {
    return consumer_->post(ItemHandle{handle}, post_fields(fields)).share();
}

std::shared_future<PostResult> ConsumerBridge::post_to(const std::string& service,
                                                       const std::string& item,
                                                       const py::dict& fields) {
    return consumer_->post(service, item, post_fields(fields)).share();
}

}  // namespace mdcast::python
