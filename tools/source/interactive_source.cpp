#include "interactive_source.h"

#include "common/clock.h"
#include "tools/sample_items.h"

namespace mdcast::tools {

InteractiveSourceApp::InteractiveSourceApp(EventLoop& loop, SourceOptions options,
                                           PublisherOptions publisher)
    : loop_(loop),
      options_(std::move(options)),
      publisher_options_(std::move(publisher)),
      tick_timer_(loop, [this] { on_tick(); }),
      stop_timer_(loop, [this] { stop("run time over"); }),
      schedule_(options_.rate, static_cast<uint64_t>(options_.max_batch)),
      stamps_(options_.stamp ? options_.latency_rate : 0, options_.seed),
      updates_(static_cast<size_t>(options_.update_bytes)),
      log_(log::get("source")) {
    const size_t count = options_.sample_items.empty() ? static_cast<size_t>(options_.items)
                                                       : options_.sample_items.size();
    items_.resize(count);
    by_name_.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (options_.sample_items.empty()) {
            items_[i].name = item_name(options_.item_prefix, i);
        } else {
            items_[i].name = options_.sample_items[i].name;
            items_[i].sample = &options_.sample_items[i];
        }
        by_name_.emplace(items_[i].name, i);
    }
}

InteractiveSourceApp::~InteractiveSourceApp() {
    if (publisher_) publisher_->stop();  // joins the I/O thread before the handler goes
}

bool InteractiveSourceApp::start(std::string& error) {
    try {
        publisher_ = std::make_unique<Publisher>(publisher_options_, *this);
        publisher_->add_service(options_.service, ServiceMode::kInteractive);
        publisher_->start();
    } catch (const std::exception& e) {
        error = e.what();
        return false;
    }
    log_->info("service {} (interactive) with {} items; {} updates/s over the items requested",
               options_.service, items_.size(), options_.rate);
    started_ns_ = monotonic_ns();
    schedule_.start(started_ns_);
    stamps_.start(started_ns_);
    tick_timer_.start_periodic(std::chrono::microseconds(options_.tick_us));
    if (options_.duration_s > 0) {
        stop_timer_.start_once(
            std::chrono::microseconds(static_cast<int64_t>(options_.duration_s * 1e6)));
    }
    return true;
}

// ---- the Publisher's I/O thread ------------------------------------------------------------

void InteractiveSourceApp::on_connection(const ConnectionEvent& event) {
    log_->info("distributor {}: {} {}", event.server.to_string(), to_string(event.state),
               event.text);
}

void InteractiveSourceApp::on_service(const std::string& service, bool accepted,
                                      const std::string& text) {
    if (accepted) return log_->info("service {} announced as interactive", service);
    log_->error("service {} refused: {}", service, text);
    refused_ = true;
}

void InteractiveSourceApp::on_item_request(PublishedItem handle, const std::string&,
                                           const std::string& item) {
    const std::lock_guard lock(changes_mutex_);
    changes_.push_back({handle, item, true});
}

void InteractiveSourceApp::on_item_closed(PublishedItem handle, const std::string&,
                                          const std::string& item) {
    const std::lock_guard lock(changes_mutex_);
    changes_.push_back({handle, item, false});
}

void InteractiveSourceApp::on_item_rejected(PublishedItem handle, const ItemState& state) {
    rejected_.fetch_add(1);
    log_->warn("distributor rejected a message for item {}: {}", handle.id, state.text);
}

// ---- the event loop ------------------------------------------------------------------------

void InteractiveSourceApp::on_tick() {
    if (refused_) {
        exit_code_ = 1;
        return stop("service refused");
    }
    apply_interest_changes();
    const int64_t now = monotonic_ns();
    const uint64_t owed = schedule_.owed(now);
    if (open_.empty()) {
        schedule_.skipped(owed);
        idle_owed_ += owed;
        return;
    }
    stamps_.begin_tick(now, owed);
    uint64_t sent = 0;
    while (sent < owed && publish_one()) ++sent;
    schedule_.sent(sent);
    if (sent < owed) {
        log_->error("the publisher's outbox is full; stopping");
        exit_code_ = 1;
        stop("distributor not reading");
    }
}

void InteractiveSourceApp::apply_interest_changes() {
    {
        const std::lock_guard lock(changes_mutex_);
        applying_.swap(changes_);
    }
    for (const InterestChange& change : applying_) {
        if (change.wanted) {
            open_item(change.handle, change.name);
        } else {
            close_item(change.name);
        }
    }
    applying_.clear();
}

// A request: the image now, and from the next tick a share of the rate.
void InteractiveSourceApp::open_item(PublishedItem handle, const std::string& name) {
    const auto found = by_name_.find(name);
    if (found == by_name_.end()) {
        ++not_found_;
        log_->info("request for {}: not in the item list", name);
        publisher_->status(handle, ItemState{StreamState::kClosed, DataState::kSuspect,
                                             StatusCode::kNotFound, "no such item: " + name});
        return;
    }
    Item& item = items_[found->second];
    item.handle = handle;
    send_image(item, found->second);
    ++requests_;
    if (first_request_ns_ == 0) first_request_ns_ = monotonic_ns();
    if (item.open_at != kNotOpen) return;  // asked again (another server, a restart)
    item.open_at = open_.size();
    open_.push_back(found->second);
}

// Closed: no more updates; the slot goes to the last open item.
void InteractiveSourceApp::close_item(const std::string& name) {
    const auto found = by_name_.find(name);
    if (found == by_name_.end()) return;
    Item& item = items_[found->second];
    if (item.open_at == kNotOpen) return;
    ++closes_;
    const size_t last = open_.back();
    open_[item.open_at] = last;
    items_[last].open_at = item.open_at;
    open_.pop_back();
    item.open_at = kNotOpen;
    if (next_open_ >= open_.size()) next_open_ = 0;
}

void InteractiveSourceApp::send_image(Item& item, size_t index) {
    wire::v1::FieldList image;
    fill_refresh_fields(image, item.name, index, item.seq);
    if (item.sample) {
        add_template_fields(*item.sample, options_.dictionary, options_.sample_file, image);
    }
    FieldList fields;
    append_wire_fields(fields, image);
    publisher_->refresh(item.handle, fields);
}

// One update of the next open item. The distributor numbers items in the
// order they are first requested, so the item id given to the size
// calculation is a guess (index + 1): with --update-bytes a body may be off by
// the one byte of a longer varint, counted as inexact in the summary.
bool InteractiveSourceApp::publish_one() {
    const size_t index = open_[next_open_];
    Item& item = items_[index];
    const uint64_t seq = item.seq + 1;
    const uint64_t stamp = stamps_.next() ? realtime_now_ns() : 0;
    updates_.build(fields_, index + 1, index, seq, stamp);
    if (!publisher_->update(item.handle, fields_, stamp)) return false;
    item.seq = seq;
    next_open_ = (next_open_ + 1) % open_.size();
    return true;
}

void InteractiveSourceApp::stop(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    tick_timer_.stop();
    stop_timer_.stop();
    if (publisher_) publisher_->stop();  // sends what the outbox holds (bounded by 2 s)
    const int64_t since = first_request_ns_ ? first_request_ns_ : started_ns_;
    const double elapsed = static_cast<double>(monotonic_ns() - since) / 1e9;
    log_->info(
        "sent {} updates in {:.3f} s ({:.0f}/s, target {:.0f}/s while items were open); {} "
        "requests answered, {} unknown, {} closes; {} items open at the end",
        schedule_.total_sent(), elapsed, elapsed > 0 ? schedule_.total_sent() / elapsed : 0.0,
        options_.rate, requests_, not_found_, closes_, open_.size());
    if (schedule_.capped_ticks() > 0) {
        log_->warn("target rate not reached: {} ticks owed more than --max-batch",
                   schedule_.capped_ticks());
    }
    print_summary();
    log_->info("stopping: {}", why);
    loop_.stop();
}

void InteractiveSourceApp::print_summary() {
    // Over the time since the first request: before it nothing was owed.
    SourceSummary summary =
        pacing_summary(items_.size(), first_request_ns_, monotonic_ns(), schedule_, stamps_);
    summary.mode = "interactive";
    summary.requests = requests_;
    summary.closes = closes_;
    summary.open_items = open_.size();
    summary.update_bytes = options_.update_bytes;
    summary.undersized = updates_.encoder().undersized_target();
    summary.rejected = rejected_.load();
    print_source_summary(summary);
}

}  // namespace mdcast::tools
