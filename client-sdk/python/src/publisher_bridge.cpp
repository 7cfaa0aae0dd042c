#include "publisher_bridge.h"

#include <pybind11/stl.h>

#include <thread>
#include <utility>

#include "book_values.h"
#include "field_values.h"

namespace mdcast::python {

PublisherBridge::PublisherBridge(PublisherOptions options,
                                 std::shared_ptr<const Dictionary> dictionary, py::object callback)
    : dictionary_(std::move(dictionary)),
      callback_(std::move(callback)),
      publish_to_all_(options.publish_to_all) {
    if (!dictionary_) throw std::invalid_argument("a publisher needs a field dictionary");
    publisher_ = std::make_unique<Publisher>(std::move(options), *this);
}

void PublisherBridgeDeleter::operator()(PublisherBridge* bridge) const {
    if (!bridge->on_io_thread()) {
        delete bridge;
        return;
    }
    std::thread([bridge] {
        py::gil_scoped_acquire gil;  // the destructor releases it while it joins
        delete bridge;
    }).detach();
}

PublisherBridge::~PublisherBridge() {
    py::gil_scoped_release release;
    publisher_.reset();  // stops and joins the I/O thread
}

void PublisherBridge::start() {
    publisher_->start();
}
void PublisherBridge::stop() {
    publisher_->stop();
}

void PublisherBridge::add_service(const std::string& name, bool interactive) {
    publisher_->add_service(name,
                            interactive ? ServiceMode::kInteractive : ServiceMode::kBroadcast);
}

uint64_t PublisherBridge::add_item(const std::string& service, const std::string& item) {
    return publisher_->add_item(service, item).id;
}

bool PublisherBridge::refresh(uint64_t item, const py::dict& fields, const ItemState& state) {
    fields_.clear();
    fill_field_list(fields_, *dictionary_, fields);
    const bool taken = publisher_->refresh(PublishedItem{item}, fields_, state);
    if (taken) refreshes_.fetch_add(1, std::memory_order_relaxed);
    return taken;
}

bool PublisherBridge::update(uint64_t item, const py::dict& fields, uint64_t publish_time_ns,
                             bool trade) {
    fields_.clear();
    fill_field_list(fields_, *dictionary_, fields);
    const bool taken = trade ? publisher_->trade(PublishedItem{item}, fields_, publish_time_ns)
                             : publisher_->update(PublishedItem{item}, fields_, publish_time_ns);
    if (taken) updates_.fetch_add(1, std::memory_order_relaxed);
    return taken;
}

bool PublisherBridge::refresh_book(uint64_t item, Domain domain, const py::dict& summary,
                                   py::handle entries, const ItemState& state) {
    fields_.clear();
    fill_field_list(fields_, *dictionary_, summary);
    book_.clear();
    fill_book_entries(book_, entry_fields_, *dictionary_, entries);
    const bool taken = publisher_->refresh_book(PublishedItem{item}, domain, fields_, book_, state);
    if (taken) refreshes_.fetch_add(1, std::memory_order_relaxed);
    return taken;
}

bool PublisherBridge::update_book(uint64_t item, const py::dict& summary, py::handle changes,
                                  uint64_t publish_time_ns) {
    fields_.clear();
    fill_field_list(fields_, *dictionary_, summary);
    book_.clear();
    fill_book_changes(book_, entry_fields_, *dictionary_, changes);
    const bool taken =
        publisher_->update_book(PublishedItem{item}, fields_, book_, publish_time_ns);
    if (taken) updates_.fetch_add(1, std::memory_order_relaxed);
    return taken;
}

bool PublisherBridge::status(uint64_t item, const ItemState& state) {
    const bool taken = publisher_->status(PublishedItem{item}, state);
    if (taken) statuses_.fetch_add(1, std::memory_order_relaxed);
    return taken;
}

// Re-sent images after a reconnect count as sent too, so this may say "all
// handled" a little early after a reconnect; it never waits for ever.
bool PublisherBridge::handled_all() const {
    const PublisherStats s = publisher_->stats();
    return s.refreshes_sent >= refreshes_.load() && s.statuses_sent >= statuses_.load() &&
           s.updates_sent + s.updates_held + s.updates_dropped >= updates_.load();
}

bool PublisherBridge::flush(std::chrono::milliseconds timeout) {
    if (publish_to_all_) return publisher_->flush(timeout);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!handled_all()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

template <typename... Args>
void PublisherBridge::call(const char* name, Args&&... args) {
    if (_Py_IsFinalizing()) return;
    io_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    try {
        callback_(name, std::forward<Args>(args)...);
    } catch (py::error_already_set& error) {
        error.discard_as_unraisable(name);
    }
}

void PublisherBridge::on_connection(const ConnectionEvent& e) {
    call("connection", std::string(connection_state_name(e.state)), e.server.to_string(), e.text);
}

void PublisherBridge::on_service(const std::string& service, bool accepted,
                                 const std::string& text) {
    call("service", service, accepted, text);
}

void PublisherBridge::on_item_request(PublishedItem item, const std::string& service,
                                      const std::string& name) {
    call("item_request", item.id, service, name);
}

void PublisherBridge::on_item_closed(PublishedItem item, const std::string& service,
                                     const std::string& name) {
    call("item_closed", item.id, service, name);
}

void PublisherBridge::on_item_rejected(PublishedItem item, const ItemState& state) {
    call("item_rejected", item.id, std::string(status_code_name(state.code)), state.text);
}

namespace {

// A post's field value as Python sees a received one (field_values.h).
py::object value_to_python(const FieldValue& f) {
    return python::value_to_python(f.kind, f.integer, f.exponent, f.real, f.text);
}

}  // namespace

PostAnswer PublisherBridge::on_post(const PostRequest& request) {
    if (_Py_IsFinalizing()) return PostAnswer::reject("the publisher is shutting down");
    io_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    try {
        py::dict fields;  // by dictionary name; an id the dictionary lacks stays a number
        for (const FieldValue& f : request.fields) {
            const std::string_view name = dictionary_->name(f.id);
            if (name.empty()) {
                fields[py::int_(f.id)] = value_to_python(f);
            } else {
                fields[py::str(name.data(), name.size())] = value_to_python(f);
            }
        }
        const py::object verdict = callback_("post", request.item.id, request.service,
                                             request.item_name, request.user, fields);
        if (verdict.is_none()) return PostAnswer::reject("the publisher is gone");
        const auto answer = verdict.cast<std::pair<bool, std::string>>();
        return answer.first ? PostAnswer::accept() : PostAnswer::reject(answer.second);
    } catch (py::error_already_set& error) {
        error.discard_as_unraisable("post");
    } catch (const py::cast_error&) {
    }
    return PostAnswer::reject("the publisher failed to handle the post");
}

}  // namespace mdcast::python
