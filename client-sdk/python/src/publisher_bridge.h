// PublisherBridge: an mdcast::Publisher driven from Python.
//
// Fields come as {name: value} dicts, resolved with the dictionary. The SDK's
// callbacks (connection, service answer, item request/close, rejection, post) run on
// its I/O thread: the bridge takes the GIL there and calls one Python
// function, `callback(name, *args)`, that mdcast.Publisher routes to the
// application and guards (an exception is reported, never raised into the I/O
// thread; whatever still escapes is reported as unraisable). stop() and the
// destructor release the GIL while the I/O thread is joined, so a callback
// waiting for the GIL cannot deadlock them.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "mdcast/dictionary.h"
#include "mdcast/publisher.h"

namespace mdcast::python {

namespace py = pybind11;

class PublisherBridge final : public PublisherHandler {
  public:
    PublisherBridge(PublisherOptions options, std::shared_ptr<const Dictionary> dictionary,
                    py::object callback);
    ~PublisherBridge() override;

    void start();
    void stop();
    void add_service(const std::string& name, bool interactive);
    uint64_t add_item(const std::string& service, const std::string& item);
    bool refresh(uint64_t item, const py::dict& fields, const ItemState& state);
    // `trade`: marked a trade (Publisher::trade), never merged by conflation.
    bool update(uint64_t item, const py::dict& fields, uint64_t publish_time_ns,
                bool trade = false);
    bool status(uint64_t item, const ItemState& state);
    // Books (book_values.h for the Python shapes of entries and changes).
    bool refresh_book(uint64_t item, Domain domain, const py::dict& summary, py::handle entries,
                      const ItemState& state);
    bool update_book(uint64_t item, const py::dict& summary, py::handle changes,
                     uint64_t publish_time_ns);
    // Waits (GIL released by the caller) until the I/O thread has handled
    // every refresh, update and status accepted so far, for at most `timeout`.
    // With publish_to_all: until every link that is up has acknowledged them
    // (Publisher::flush), as the stats count once per distributor.
    bool flush(std::chrono::milliseconds timeout);
    PublisherStats stats() const { return publisher_->stats(); }
    // The publisher's I/O thread (where its callbacks run) is the current one.
    bool on_io_thread() const { return io_thread_.load() == std::this_thread::get_id(); }

    void on_connection(const ConnectionEvent& event) override;
    void on_service(const std::string& service, bool accepted, const std::string& text) override;
    void on_item_request(PublishedItem item, const std::string& service,
                         const std::string& name) override;
    void on_item_closed(PublishedItem item, const std::string& service,
                        const std::string& name) override;
    void on_item_rejected(PublishedItem item, const ItemState& state) override;
    // callback("post", item, service, name, user, fields) returns (accepted, text).
    PostAnswer on_post(const PostRequest& request) override;

  private:
    template <typename... Args>
    void call(const char* name, Args&&... args);
    bool handled_all() const;

    std::shared_ptr<const Dictionary> dictionary_;
    py::object callback_;
    std::unique_ptr<Publisher> publisher_;
    bool publish_to_all_ = false;
    FieldList fields_;  // reused, as the two below; only touched with the GIL held
    FieldList entry_fields_;
    BookChanges book_;
    std::atomic<uint64_t> refreshes_{0}, updates_{0}, statuses_{0};
    std::atomic<std::thread::id> io_thread_{};  // learnt from the first callback
};

// Python's holder of a PublisherBridge. A garbage collection can run inside
// a callback, on the publisher's own I/O thread, and collect the publisher
// there (a user's callback that refers to its publisher makes a cycle only the
// collector frees): that thread cannot stop and join itself, so the bridge is
// then destroyed on a thread of its own, which joins it once the callback returns.
struct PublisherBridgeDeleter {
    void operator()(PublisherBridge* bridge) const;
};

}  // namespace mdcast::python
