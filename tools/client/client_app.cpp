#include "client_app.h"

#include <sys/resource.h>

#include <cinttypes>

#include "common/clock.h"
#include "wire/client.pb.h"

namespace mdcast::tools {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

ClientApp::ClientApp(EventLoop& loop, ClientOptions options, ItemPrinter& printer)
    : loop_(loop),
      options_(std::move(options)),
      printer_(printer),
      flusher_(loop, std::chrono::microseconds(0)),
      stop_timer_(loop, [this] { stop("run time over"); }),
      stats_timer_(loop, [this] { print_stats(); }),
      log_(log::get("client")) {}

ClientApp::~ClientApp() = default;

bool ClientApp::start(std::string& error) {
    started_ns_ = monotonic_ns();
    connections_.resize(static_cast<size_t>(options_.connections));
    for (size_t i = 0; i < connections_.size(); ++i) {
        connections_[i].session = std::make_unique<sdk::Session>(
            loop_, flusher_, options_.session, proto::kServerToClientTypes, *this, i);
        if (!connections_[i].session->open(error)) return false;
        ++open_connections_;
    }
    if (options_.duration_s > 0) {
        stop_timer_.start_once(std::chrono::microseconds(static_cast<int64_t>(options_.duration_s * 1e6)));
    }
    if (options_.stats_interval_s > 0) {
        stats_timer_.start_periodic(
            std::chrono::microseconds(static_cast<int64_t>(options_.stats_interval_s * 1e6)));
    }
    return true;
}

void ClientApp::on_logged_in(sdk::Session& session, const wire::LoginResponse& response) {
    log_->debug("connection {} logged in to {}", session.connection()->id(), response.server_id());
    const uint32_t batch = std::max<uint32_t>(1, response.max_items_per_request());
    for (size_t first = 0; first < options_.items.size(); first += batch) {
        wire::Subscribe request;
        request.set_request_id(static_cast<uint32_t>(first / batch + 1));
        request.set_service_name(options_.service);
        request.set_snapshot(options_.snapshot);
        for (size_t i = first; i < std::min(options_.items.size(), first + batch); ++i) {
            request.add_item_names(options_.items[i]);
        }
        for (uint32_t id : options_.view) request.add_view_field_ids(id);
        session.send(FrameType::kSubscribe, request);
    }
}

void ClientApp::on_session_frame(sdk::Session& session, const proto::Frame& frame) {
    const auto index = static_cast<int>(session.connection()->id());
    Connection& connection = connections_[static_cast<size_t>(index)];
    switch (frame.type) {
        case FrameType::kUpdate: return on_update(connection, index, frame);
        case FrameType::kRefresh: return on_refresh(connection, index, frame);
        case FrameType::kItemStatus: return on_status(connection, index, frame);
        default: return;
    }
}

void ClientApp::on_refresh(Connection& connection, int index, const proto::Frame& frame) {
    wire::Refresh refresh;
    if (!refresh.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed refresh");
    }
    ++totals_.refreshes;
    const int64_t now = monotonic_ns();
    if (first_image_ns_ == 0) first_image_ns_ = now;
    last_image_ns_ = now;
    ItemState& item = connection.items[refresh.item_id()];
    item.service = refresh.service_name();
    item.name = refresh.item_name();
    item.last_seq = refresh.item_seq();
    if (refresh.status().stream_state() == wire::STREAM_CLOSED) connection.items.erase(refresh.item_id());
    printer_.refresh(index, refresh);
}

void ClientApp::on_update(Connection& connection, int index, const proto::Frame& frame) {
    if (!update_.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed update");
    }
    ++totals_.updates;
    const int64_t latency = update_.publish_time_ns() != 0
                                ? realtime_ns() - static_cast<int64_t>(update_.publish_time_ns())
                                : -1;
    if (latency >= 0 || update_.publish_time_ns() != 0) latency_.record(latency);
    const auto found = connection.items.find(update_.item_id());
    if (found == connection.items.end()) {
        ++totals_.unknown_items;
        printer_.update(index, "", "", update_, latency);
    } else {
        ItemState& item = found->second;
        // With a view, updates that touch none of its fields are not sent, so
        // sequence numbers may skip: only full subscriptions are gap-checked.
        if (update_.item_seq() <= item.last_seq) {
            ++totals_.duplicates;
        } else if (update_.item_seq() != item.last_seq + 1 && options_.view.empty()) {
            ++totals_.gaps;
            totals_.missing += update_.item_seq() - item.last_seq - 1;
        }
        item.last_seq = std::max(item.last_seq, update_.item_seq());
        printer_.update(index, item.service, item.name, update_, latency);
    }
    if (options_.count > 0 && totals_.updates >= static_cast<uint64_t>(options_.count)) {
        stop("--count reached");
    }
}

void ClientApp::on_status(Connection& connection, int index, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection.session->close(CloseReason::kProtocolError, "malformed status");
    }
    ++totals_.statuses;
    std::string service = status.service_name(), name = status.item_name();
    const auto found = connection.items.find(status.item_id());
    if (found != connection.items.end()) {
        service = found->second.service;
        name = found->second.name;
        if (status.status().stream_state() == wire::STREAM_CLOSED) connection.items.erase(found);
    }
    printer_.status(index, service, name, status);
}

void ClientApp::on_session_closed(sdk::Session& session, CloseReason reason, const std::string& text) {
    Connection& connection = connections_[session.connection()->id()];
    if (connection.closed) return;
    connection.closed = true;
    --open_connections_;
    printer_.closed(static_cast<int>(session.connection()->id()), std::string(close_reason_name(reason)), text);
    if (!stopping_) {
        log_->warn("connection {} closed: {}: {}", session.connection()->id(), close_reason_name(reason), text);
        if (open_connections_ == 0) {
            exit_code_ = reason == CloseReason::kPeerClosed ? 0 : 1;
            stop("every connection closed");
        }
    }
}

void ClientApp::print_stats() {
    const ClientTotals now = totals_;
    const double interval = options_.stats_interval_s;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    log_->info("updates/s={:.0f} refreshes={} statuses={} gaps={} dups={} latency_us mean={:.1f} "
               "p99={:.1f} max={:.1f} rss_mb={:.1f}",
               static_cast<double>(now.updates - last_stats_.updates) / interval, now.refreshes,
               now.statuses, now.gaps, now.duplicates, latency_.mean_ns() / 1e3,
               static_cast<double>(latency_.percentile_ns(0.99)) / 1e3,
               static_cast<double>(latency_.max_ns()) / 1e3, static_cast<double>(usage.ru_maxrss) / 1024);
    last_stats_ = now;
}

void ClientApp::print_summary() {
    const double elapsed = static_cast<double>(monotonic_ns() - started_ns_) / 1e9;
    const auto us = [](double ns) { return ns / 1e3; };
    char text[1024];
    std::snprintf(
        text, sizeof text,
        "{\"type\":\"summary\",\"elapsed_s\":%.3f,\"connections\":%lld,\"refreshes\":%" PRIu64
        ",\"updates\":%" PRIu64 ",\"statuses\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"missing\":%" PRIu64
        ",\"duplicates\":%" PRIu64 ",\"unknown_items\":%" PRIu64 ",\"updates_per_s\":%.1f,"
        "\"image_time_s\":%.6f,\"latency_us\":{\"count\":%" PRIu64
        ",\"mean\":%.2f,\"stddev\":%.2f,\"min\":%.2f,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,"
        "\"p99_9\":%.2f,\"p99_99\":%.2f,\"max\":%.2f,\"negative\":%" PRIu64 "}}",
        elapsed, static_cast<long long>(options_.connections), totals_.refreshes, totals_.updates,
        totals_.statuses, totals_.gaps, totals_.missing, totals_.duplicates, totals_.unknown_items,
        elapsed > 0 ? static_cast<double>(totals_.updates) / elapsed : 0.0,
        static_cast<double>(last_image_ns_ - first_image_ns_) / 1e9, latency_.count(),
        us(latency_.mean_ns()), us(latency_.stddev_ns()), us(static_cast<double>(latency_.min_ns())),
        us(static_cast<double>(latency_.percentile_ns(0.5))),
        us(static_cast<double>(latency_.percentile_ns(0.9))),
        us(static_cast<double>(latency_.percentile_ns(0.99))),
        us(static_cast<double>(latency_.percentile_ns(0.999))),
        us(static_cast<double>(latency_.percentile_ns(0.9999))),
        us(static_cast<double>(latency_.max_ns())), latency_.negative_count());
    if (printer_.format() == OutputFormat::kJson) {
        printer_.json_line(text);
    } else {
        std::fprintf(stderr, "%s\n", text);
    }
}

void ClientApp::stop(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    log_->info("stopping: {}", why);
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
