#include "client_app.h"

#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "proto/subscribe_split.h"
#include "update_header.h"
#include "wire/client.pb.h"

namespace mdcast::tools {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {

std::chrono::microseconds seconds_us(double seconds) {
    return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// Printed lines reach a pipe or file at most this late (stdout is block-buffered there).
constexpr std::chrono::microseconds kOutputFlushInterval{100'000};

}  // namespace

ClientApp::ClientApp(EventLoop& loop, ClientOptions options, ItemPrinter& printer)
    : loop_(loop),
      options_(std::move(options)),
      printer_(printer),
      flusher_(loop, std::chrono::microseconds(0)),
      stop_timer_(loop, [this] { stop("run time over"); }),
      stats_timer_(loop, [this] { on_stats_timer(); }),
      warmup_timer_(loop, [this] { stats_.begin_steady(monotonic_ns()); }),
      output_timer_(loop, [this] { printer_.flush(); }),
      stats_(monotonic_ns()),
      cpu_(monotonic_ns()),
      log_(log::get("client")) {}

ClientApp::~ClientApp() {
    if (csv_) std::fclose(csv_);
}

bool ClientApp::start(std::string& error) {
    if (!options_.csv_path.empty()) {
        csv_ = std::fopen(options_.csv_path.c_str(), "w");
        if (!csv_) {
            error = "cannot write --csv " + options_.csv_path;
            return false;
        }
        std::fputs(stats_csv_header().c_str(), csv_);
    }
    connections_.resize(static_cast<size_t>(options_.connections));
    for (size_t i = 0; i < connections_.size(); ++i) {
        sdk::SessionOptions session = options_.session;
        const auto& [host, port] = options_.servers[i % options_.servers.size()];
        session.host = host;
        session.port = port;
        connections_[i].session = std::make_unique<sdk::Session>(
            loop_, flusher_, session, proto::kServerToClientTypes, *this, i);
        if (!connections_[i].session->open(error)) return false;
        ++open_connections_;
    }
    if (options_.duration_s > 0) stop_timer_.start_once(seconds_us(options_.duration_s));
    if (printer_.enabled()) output_timer_.start_periodic(kOutputFlushInterval);
    if (options_.stats_interval_s > 0)
        stats_timer_.start_periodic(seconds_us(options_.stats_interval_s));
    if (options_.warmup_s > 0) {
        warmup_timer_.start_once(seconds_us(options_.warmup_s));
    } else {
        stats_.begin_steady(monotonic_ns());
    }
    return true;
}

void ClientApp::on_logged_in(sdk::Session& session, const wire::LoginResponse& response) {
    log_->debug("connection {} logged in to {}", session.id(), response.server_id());
    // Split to fit what the server announced: a larger request closes the
    // connection (frame_too_large, or protocol_error over the item count).
    wire::Subscribe head;
    head.set_service_name(options_.service);
    head.set_snapshot(options_.snapshot);
    head.set_conflate_ms(options_.conflate_ms);
    for (uint32_t id : options_.view) head.add_view_field_ids(id);
    const std::vector<std::string_view> names(options_.items.begin(), options_.items.end());
    const auto limits = proto::request_limits(response.max_items_per_request(),
                                              response.max_frame_bytes(), names.size());
    proto::SubscribeSplit split = proto::split_subscribe(head, names, limits);
    for (size_t index : split.too_large) {
        log_->error(
            "connection {}: item {} is not requested: its name does not fit the server's "
            "frame limit of {} bytes",
            session.id(), log::escaped(options_.items[index]), limits.max_body_bytes);
    }
    uint32_t request_id = 0;
    for (wire::Subscribe& request : split.requests) {
        request.set_request_id(++request_id);
        session.send(FrameType::kSubscribe, request);
    }
}

void ClientApp::on_session_frame(sdk::Session& session, const proto::Frame& frame) {
    const auto index = static_cast<int>(session.id());
    Connection& connection = connections_[static_cast<size_t>(index)];
    switch (frame.type) {
        case FrameType::kUpdate:
            return on_update(connection, index, frame);
        case FrameType::kRefresh:
            return on_refresh(connection, index, frame);
        case FrameType::kItemStatus:
            return on_status(connection, index, frame);
        default:
            return;
    }
}

void ClientApp::on_refresh(Connection& connection, int index, const proto::Frame& frame) {
    wire::Refresh refresh;
    if (!refresh.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed refresh");
    }
    stats_.on_image(monotonic_ns());
    connection.items.on_image(refresh.item_id(), refresh.service_name(), refresh.item_name(),
                              refresh.item_seq());
    if (refresh.status().stream_state() == wire::STREAM_CLOSED)
        connection.items.erase(refresh.item_id());
    printer_.refresh(index, refresh);
}

// The hot path: see the cost note in client_app.h.
void ClientApp::on_update(Connection& connection, int index, const proto::Frame& frame) {
    UpdateHeader header;
    if (!decode_update_header(frame.body, header)) {
        return connection.session->close(CloseReason::kProtocolError, "malformed update");
    }
    ClientTotals& totals = stats_.totals;
    ++totals.updates;
    int64_t latency = -1;
    if (header.publish_time_ns != 0) {
        latency = realtime_ns() - static_cast<int64_t>(header.publish_time_ns);
        stats_.record_latency(latency);
    }
    ItemState* item = connection.items.find(header.item_id);
    if (item == nullptr) {
        ++totals.unknown_items;
    } else {
        if (header.conflated) ++totals.conflated;
        // A view filters updates out and a conflated update stands for several: both skip
        // sequences.
        const bool gaps_expected = !options_.view.empty() || header.conflated;
        count_sequence(totals, *item, header.item_seq, gaps_expected);
    }
    if (printer_.enabled()) print_update(connection, index, frame, latency);
    if (options_.count > 0 && totals.updates >= static_cast<uint64_t>(options_.count)) {
        stop("--count reached");
    }
}

void ClientApp::print_update(Connection& connection, int index, const proto::Frame& frame,
                             int64_t latency_ns) {
    if (!update_.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed update");
    }
    static const std::string kUnknown;
    const ItemState* item = connection.items.find(update_.item_id());
    printer_.update(index, item ? item->service : kUnknown, item ? item->name : kUnknown, update_,
                    latency_ns);
}

void ClientApp::on_status(Connection& connection, int index, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed status");
    }
    ++stats_.totals.statuses;
    std::string service = status.service_name(), name = status.item_name();
    if (ItemState* item = connection.items.find(status.item_id())) {
        service = item->service;
        name = item->name;
        if (status.status().stream_state() == wire::STREAM_CLOSED)
            connection.items.erase(status.item_id());
    }
    printer_.status(index, service, name, status);
}

void ClientApp::on_session_closed(sdk::Session& session, CloseReason reason,
                                  const std::string& text) {
    Connection& connection = connections_[session.id()];
    if (connection.closed) return;
    connection.closed = true;
    --open_connections_;
    printer_.closed(static_cast<int>(session.id()), std::string(close_reason_name(reason)), text);
    if (!stopping_) {
        ++stats_.totals.closed;
        log_->warn("connection {} to {} closed: {}: {}", session.id(), session.peer(),
                   close_reason_name(reason), text);
        if (open_connections_ == 0) {
            exit_code_ = reason == CloseReason::kPeerClosed ? 0 : 1;
            stop("every connection closed");
        }
    }
}

void ClientApp::on_stats_timer() {
    const int64_t now = monotonic_ns();
    const ProcessUsage usage = process_usage();
    const StatsSample sample = stats_.take_sample(now, cpu_.sample(now), usage.rss_mb);
    const ClientTotals& t = stats_.totals;
    log_->info(
        "updates/s={:.0f} refreshes={} statuses={} gaps={} dups={} closed={} latency_us "
        "mean={:.1f} max={:.1f} (interval) p99={:.1f} ({}) cpu={:.0f}% rss_mb={:.1f}",
        sample.updates_per_s, t.refreshes, t.statuses, t.gaps, t.duplicates, t.closed,
        sample.latency.mean_ns() / 1e3, static_cast<double>(sample.latency.max_ns) / 1e3,
        static_cast<double>((stats_.steady() ? stats_.steady_latency() : stats_.startup_latency())
                                .percentile_ns(0.99)) /
            1e3,
        stats_.steady() ? "steady" : "start-up", sample.cpu_percent, sample.rss_mb);
    if (csv_) {
        std::fputs(stats_csv_row(sample, t).c_str(), csv_);
        std::fflush(csv_);
    }
}

void ClientApp::print_summary() {
    const std::string text = stats_.summary_json(monotonic_ns(), options_.connections,
                                                 options_.warmup_s, process_usage());
    if (printer_.format() == OutputFormat::kJson) {
        printer_.json_line(text);
    } else {
        std::fprintf(stderr, "%s\n", text.c_str());
    }
}

void ClientApp::stop(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    log_->info("stopping: {}", why);
    if (csv_ && options_.stats_interval_s > 0) on_stats_timer();  // the last partial interval
    for (auto& connection : connections_) {
        if (connection.session && connection.session->is_open()) {
            connection.session->close(CloseReason::kShutdown, "client finished");
        }
    }
    print_summary();
    std::fflush(stdout);
    loop_.stop();
}

}  // namespace mdcast::tools
