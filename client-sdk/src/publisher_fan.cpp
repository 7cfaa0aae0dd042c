#include "publisher_fan.h"

#include <algorithm>

#include "common/clock.h"

namespace mdcast::sdk {

// The application's handler as one link's core sees it: the events of that
// link, with what the links share kept in the fan's PublisherLinkSet.
class PublisherFan::LinkHandler final : public PublisherHandler {
  public:
    LinkHandler(PublisherFan& fan, size_t link) : fan_(fan), link_(link) {}

    void on_connection(const ConnectionEvent& event) override {
        if (event.state == ConnectionState::kUp) {
            fan_.acknowledged(fan_.links_.on_link_up(link_));
        } else if (event.state != ConnectionState::kConnecting) {
            fan_.acknowledged(fan_.links_.on_link_down(link_));
        }
        fan_.apply_frame_limit();
        fan_.handler_.on_connection(event);
    }
    void on_service(const std::string& service, bool accepted, const std::string& text) override {
        fan_.handler_.on_service(service, accepted, text);
    }
    void on_item_request(PublishedItem item, const std::string& service,
                         const std::string& name) override {
        fan_.links_.on_item_request(link_, item.id);
        fan_.handler_.on_item_request(item, service, name);
    }
    void on_item_closed(PublishedItem item, const std::string& service,
                        const std::string& name) override {
        if (fan_.links_.on_item_closed(link_, item.id))
            fan_.handler_.on_item_closed(item, service, name);
    }
    void on_item_rejected(PublishedItem item, const ItemState& state) override {
        fan_.handler_.on_item_rejected(item, state);
    }
    PostAnswer on_post(const PostRequest& request) override {
        return fan_.handler_.on_post(request);
    }

  private:
    PublisherFan& fan_;
    size_t link_;
};

PublisherFan::PublisherFan(
    EventLoop& loop, const PublisherOptions& options, PublisherHandler& handler,
    PublisherCounters& counters, PublisherOutbox& outbox,
    std::function<PublishedItem(const std::string&, const std::string&)> handle_for,
    std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls,
    std::function<void(uint64_t)> flushed)
    : handler_(handler),
      outbox_(outbox),
      stop_loop_(std::move(stop_loop)),
      flushed_(std::move(flushed)),
      links_(options.distributors.size()),
      stopped_(options.distributors.size()),
      retry_timer_(loop, [this] { work(); }),
      drain_timer_(loop, [this] { drain(); }) {
    for (size_t link = 0; link < options.distributors.size(); ++link) {
        auto& one = link_options_.emplace_back(std::make_unique<PublisherOptions>(options));
        one->distributors = {options.distributors[link]};
        one->publish_to_all = false;
        one->io_context.reset();  // the front end holds the context; a core never needs it
        auto& link_handler = handlers_.emplace_back(std::make_unique<LinkHandler>(*this, link));
        cores_.push_back(std::make_unique<PublisherCore>(
            loop, *one, *link_handler, counters, nullptr, handle_for,
            [this, link] { core_stopped(link); }, tls,
            [this, link](uint64_t token) { acknowledged(links_.on_flush_ack(link, token)); }));
    }
}

PublisherFan::~PublisherFan() = default;

// Every call goes to every link: the calls are checked against the least
// limit of the distributors logged in (with none, the last one applied).
void PublisherFan::apply_frame_limit() {
    uint32_t least = 0;
    for (const auto& core : cores_) {
        const uint32_t limit = core->announced_frame_limit();
        if (limit != 0 && (least == 0 || limit < least)) least = limit;
    }
    if (least != 0) outbox_.set_max_frame_bytes(least);
}

void PublisherFan::start() {
    for (auto& core : cores_) core->start();
}

// What was published before stop() reaches every core first (within
// `drain_ms`); each then drains its own link in what is left of it, and the
// last one stops the loop.
void PublisherFan::stop(uint32_t drain_ms) {
    if (stopping_) return;
    stopping_ = true;
    drain_deadline_ns_ = monotonic_ns() + int64_t{drain_ms} * 1'000'000;
    drain();
}

void PublisherFan::drain() {
    work();
    const int64_t left_ns = drain_deadline_ns_ - monotonic_ns();
    if ((next_ < batch_.records.size() || !outbox_.empty()) && left_ns > 0) {
        return drain_timer_.start_once(std::chrono::milliseconds(1));
    }
    const auto left_ms = static_cast<uint32_t>(std::max<int64_t>(left_ns, 0) / 1'000'000);
    for (auto& core : cores_) core->stop(left_ms);
}

void PublisherFan::on_wake() {
    work();
}

// Every record to every core, in order: the images and sequences stay the
// same on all links. Taken until the outbox is empty (its wake-up contract),
// unless every link is congested: then again in a millisecond.
void PublisherFan::work() {
    for (;;) {
        if (next_ >= batch_.records.size()) {
            outbox_.take(batch_);
            next_ = 0;
            if (batch_.records.empty()) return;
        }
        while (next_ < batch_.records.size()) {
            if (congested()) {
                for (auto& core : cores_) core->end_batch();
                return retry_timer_.start_once(std::chrono::milliseconds(1));
            }
            const OutboxRecord& record = batch_.records[next_++];
            for (auto& core : cores_) core->apply_record(batch_, record);
        }
        for (auto& core : cores_) core->end_batch();
    }
}

// Some link is up and every link that is up is congested.
bool PublisherFan::congested() const {
    bool any_up = false;
    for (const auto& core : cores_) {
        if (core->up() && !core->congested()) return false;
        any_up = any_up || core->up();
    }
    return any_up;
}

void PublisherFan::core_stopped(size_t link) {
    if (stopped_[link]) return;
    stopped_[link] = true;
    if (std::count(stopped_.begin(), stopped_.end(), true) == std::ssize(stopped_)) stop_loop_();
}

void PublisherFan::acknowledged(uint64_t token) {
    if (token != 0 && flushed_) flushed_(token);
}

}  // namespace mdcast::sdk
