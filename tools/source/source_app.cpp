#include "source_app.h"

#include "common/clock.h"
#include "proto/field_values.h"
#include "proto/update_codec.h"
#include "tools/sample_items.h"
#include "wire/publisher.pb.h"

namespace mdcast::tools {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {
constexpr size_t kRegisterBatch = 1000;
}  // namespace

SourceApp::SourceApp(EventLoop& loop, SourceOptions options)
    : loop_(loop),
      options_(std::move(options)),
      flusher_(loop, std::chrono::microseconds(0)),
      session_(loop, flusher_, options_.session, proto::kDistributorToPublisherTypes, *this),
      tick_timer_(loop, [this] { on_tick(); }),
      stop_timer_(loop, [this] { stop("run time over"); }),
      drain_timer_(loop, [this] { drain(); }),
      schedule_(options_.rate, static_cast<uint64_t>(options_.max_batch)),
      stamps_(options_.stamp ? options_.latency_rate : 0, options_.seed),
      encoder_(static_cast<size_t>(options_.update_bytes)),
      log_(log::get("source")) {
    if (!options_.sample_items.empty()) {
        items_.resize(options_.sample_items.size());
        for (size_t i = 0; i < items_.size(); ++i) {
            items_[i].name = options_.sample_items[i].name;
            items_[i].sample = &options_.sample_items[i];
        }
    } else {
        items_.resize(static_cast<size_t>(options_.items));
        for (size_t i = 0; i < items_.size(); ++i)
            items_[i].name = item_name(options_.item_prefix, i);
    }
    for (int64_t i = 0; i < options_.books; ++i) {
        Item& item = items_.emplace_back();
        item.name = item_name(options_.book_prefix, static_cast<uint64_t>(i));
        item.book.emplace(options_.seed, static_cast<uint64_t>(i), options_.book_levels);
    }
}

bool SourceApp::start(std::string& error) {
    return session_.open(error);
}

void SourceApp::on_logged_in(sdk::Session& session, const wire::LoginResponse&) {
    wire::ServiceAnnounce announce;
    announce.set_name(options_.service);
    announce.set_mode(wire::SERVICE_BROADCAST);
    // A restarted source has no token yet: the operator's secret, if given,
    // takes the service from its predecessor's connection not yet timed out.
    announce.set_takeover_token(takeover_token_.empty() ? options_.takeover_secret
                                                        : takeover_token_);
    announce.set_standby_rank(options_.standby_rank);
    session.send(FrameType::kServiceAnnounce, announce);
}

void SourceApp::on_session_frame(sdk::Session&, const proto::Frame& frame) {
    switch (frame.type) {
        case FrameType::kServiceAnnounceResponse:
            return on_announce_response(frame);
        case FrameType::kItemRegistered:
            return on_items_registered(frame);
        case FrameType::kItemStatus:
            return on_item_status(frame);
        default:
            return;
    }
}

void SourceApp::on_announce_response(const proto::Frame& frame) {
    wire::ServiceAnnounceResponse response;
    response.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
    if (response.service_id() == 0) {
        log_->error("service {} refused: {}", options_.service, response.status().text());
        exit_code_ = 1;
        return stop("service refused");
    }
    service_id_ = response.service_id();
    takeover_token_ = response.takeover_token();
    for (size_t first = 0; first < items_.size(); first += kRegisterBatch) {
        wire::ItemRegister request;
        request.set_service_id(service_id_);
        for (size_t i = first; i < std::min(items_.size(), first + kRegisterBatch); ++i) {
            auto* entry = request.add_items();
            entry->set_ref(i);
            entry->set_name(items_[i].name);
        }
        session_.send(FrameType::kItemRegister, request);
    }
}

void SourceApp::on_items_registered(const proto::Frame& frame) {
    wire::ItemRegistered response;
    response.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
    for (const auto& entry : response.items()) {
        if (entry.ref() >= items_.size() || entry.item_id() == 0) continue;
        Item& item = items_[entry.ref()];
        item.id = entry.item_id();
        item.seq = entry.last_item_seq();  // continue the sequence after a reconnect
        wire::Refresh refresh;
        refresh.set_item_id(item.id);
        refresh.set_item_seq(item.seq);
        refresh.set_clear_cache(true);
        if (item.book) {
            fill_book_refresh(item, refresh);
        } else {
            fill_refresh_fields(*refresh.mutable_fields(), item.name, entry.ref(), item.seq);
        }
        if (item.sample) {
            add_template_fields(*item.sample, options_.dictionary, options_.sample_file,
                                *refresh.mutable_fields());
        }
        session_.send(FrameType::kRefresh, refresh);
        ++registered_;
    }
    if (response.status().code() != wire::STATUS_NONE) {
        log_->error("items refused: {}", response.status().text());
        exit_code_ = 1;
        return stop("items refused");
    }
    if (registered_ == items_.size()) begin_publishing();
}

void SourceApp::on_item_status(const proto::Frame& frame) {
    wire::ItemStatus status;
    status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
    ++rejected_;
    log_->warn("distributor rejected a message for item {}: {}", status.item_id(),
               status.status().text());
}

void SourceApp::begin_publishing() {
    log_->info("{} items registered in service {} ({}); publishing {} updates/s", items_.size(),
               options_.service, service_id_, options_.rate);
    started_ns_ = monotonic_ns();
    schedule_.start(started_ns_);
    stamps_.start(started_ns_);
    if (options_.rate > 0) tick_timer_.start_periodic(std::chrono::microseconds(options_.tick_us));
    if (options_.duration_s > 0) {
        stop_timer_.start_once(
            std::chrono::microseconds(static_cast<int64_t>(options_.duration_s * 1e6)));
    }
}

void SourceApp::on_tick() {
    const int64_t now = monotonic_ns();
    const uint64_t owed = schedule_.owed(now);
    stamps_.begin_tick(now, owed);
    for (uint64_t i = 0; i < owed && session_.is_open(); ++i) publish_one();
    schedule_.sent(owed);
}

// Encodes one update straight into a reused buffer: the only encoding it gets
// on its way to every client.
void SourceApp::publish_one() {
    Item& item = items_[next_item_];
    ++item.seq;
    const uint64_t stamp = stamps_.next() ? static_cast<uint64_t>(realtime_ns()) : 0;
    std::span<const uint8_t> frame;
    if (item.book) {
        frame = encode_book_update(item, stamp);
    } else {
        frame = encoder_.encode(item.id, next_item_, item.seq, stamp);
        if (options_.trade_every > 0 && item.seq % static_cast<uint64_t>(options_.trade_every) == 0)
            frame = encoder_.mark_trade(frame);
    }
    if (!session_.send_frame(frame)) {
        --item.seq;  // not sent: keep the item's sequence unbroken
        log_->error("output to the distributor is full; stopping");
        exit_code_ = 1;
        return stop("distributor not reading");
    }
    next_item_ = (next_item_ + 1) % items_.size();
}

// A book's update: its next level actions, always a trade (docs/books.md).
std::span<const uint8_t> SourceApp::encode_book_update(Item& item, uint64_t stamp) {
    book_map_.clear();
    item.book->next_update(book_map_);
    proto::UpdateView update;
    update.item_id = item.id;
    update.item_seq = item.seq;
    update.publish_time_ns = stamp;
    update.trade = true;
    update.map_bytes = {reinterpret_cast<const uint8_t*>(book_map_.data()), book_map_.size()};
    book_frame_.clear();
    proto::append_update_frame(book_frame_, update);
    return {reinterpret_cast<const uint8_t*>(book_frame_.data()), book_frame_.size()};
}

void SourceApp::fill_book_refresh(const Item& item, wire::Refresh& refresh) const {
    refresh.set_domain(wire::DOMAIN_MARKET_BY_PRICE);
    item.book->refresh_map(*refresh.mutable_map());
    auto* name = refresh.mutable_fields()->add_fields();
    name->set_id(kDisplayNameField);
    name->set_string_value(item.name);
}

// --print-books: {"type":"book","item":...,"entries":[{"key":"99.99","fields":{...}}, ...]}
// with prices ascending, the fields by name, as mdcast-client prints them.
void SourceApp::print_books() const {
    for (const Item& item : items_) {
        if (!item.book) continue;
        std::string line = "{\"type\":\"book\",\"service\":\"" +
                           proto::json_escape(options_.service) + "\",\"item\":\"" +
                           proto::json_escape(item.name) +
                           "\",\"seq\":" + std::to_string(item.seq) + ",\"entries\":[";
        bool first = true;
        for (const auto& [price, level] : item.book->levels()) {
            if (!first) line += ",";
            first = false;
            line += "{\"key\":\"" + proto::format_decimal(price, kBookPriceExponent) +
                    "\",\"fields\":{\"ORDER_SIDE\":" + std::to_string(level.side) +
                    ",\"ORDER_SIZE\":" + std::to_string(level.size) +
                    ",\"NO_ORD\":" + std::to_string(level.orders) + "}}";
        }
        std::printf("%s]}\n", line.c_str());
    }
}

void SourceApp::report(spdlog::level::level_enum level) {
    const int64_t now = monotonic_ns();
    const double elapsed = started_ns_ ? static_cast<double>(now - started_ns_) / 1e9 : 0;
    log_->log(level,
              "sent {} updates in {:.3f} s ({:.0f}/s, target {:.0f}/s); behind by {} at the end; "
              "{} capped ticks; {} rejected",
              schedule_.total_sent(), elapsed, elapsed > 0 ? schedule_.total_sent() / elapsed : 0.0,
              options_.rate, started_ns_ ? schedule_.shortfall(now) : 0, schedule_.capped_ticks(),
              rejected_);
}

void SourceApp::stop(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    tick_timer_.stop();
    report(spdlog::level::info);
    if (started_ns_ && schedule_.capped_ticks() > 0) {
        log_->warn("target rate not reached: {} ticks owed more than --max-batch",
                   schedule_.capped_ticks());
    }
    if (encoder_.undersized_target() > 0 || encoder_.inexact() > 0) {
        log_->warn(
            "--update-bytes {}: {} updates were larger by nature, {} could not be padded exactly",
            options_.update_bytes, encoder_.undersized_target(), encoder_.inexact());
    }
    if (options_.print_books) print_books();
    print_summary();
    log_->info("stopping: {}", why);
    drain_deadline_ns_ = monotonic_ns() + 5'000'000'000;
    drain();
}

void SourceApp::print_summary() {
    SourceSummary summary =
        pacing_summary(items_.size(), started_ns_, monotonic_ns(), schedule_, stamps_);
    summary.update_bytes = options_.update_bytes;
    summary.undersized = encoder_.undersized_target();
    summary.rejected = rejected_;
    print_source_summary(summary);
}

// Lets queued updates reach the distributor before saying goodbye, bounded in time.
void SourceApp::drain() {
    if (session_.logged_in() && session_.queued_bytes() > 0 &&
        monotonic_ns() < drain_deadline_ns_) {
        session_.flush();
        return drain_timer_.start_once(std::chrono::milliseconds(1));
    }
    if (session_.is_open()) session_.close(CloseReason::kShutdown, "source finished");
    loop_.stop();
}

void SourceApp::on_session_closed(sdk::Session&, CloseReason reason, const std::string& text) {
    if (stopping_) return;
    log_->error("connection to the distributor closed: {}: {}", close_reason_name(reason), text);
    exit_code_ = 1;
    stop("connection lost");
}

}  // namespace mdcast::tools
