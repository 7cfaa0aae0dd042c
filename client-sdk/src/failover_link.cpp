#include "failover_link.h"

#include <random>

#include "common/clock.h"

namespace mdcast::sdk {

FailoverLink::FailoverLink(EventLoop& loop, FlushScheduler& flusher, proto::FrameTypeSet accepted,
                           const std::vector<ServerAddress>& peers,
                           const ReconnectSettings& reconnect,
                           std::function<LinkSettings(const ServerAddress&)> settings_for,
                           Owner& owner, LinkCounters& counters,
                           std::shared_ptr<spdlog::logger> log)
    : peers_(peers),
      settings_for_(std::move(settings_for)),
      owner_(owner),
      counters_(counters),
      log_(std::move(log)),
      link_(loop, flusher, accepted, *this, log_),
      policy_(reconnect, std::random_device{}()),
      reconnect_timer_(loop, [this] { connect(); }) {}

void FailoverLink::start() {
    attempt_ = policy_.first();
    connect();
}

void FailoverLink::stop() {
    stopped_ = true;
    reconnect_timer_.stop();
}

void FailoverLink::connect() {
    if (stopped_) return;
    owner_.on_connection_event(event(ConnectionState::kConnecting, ""));
    log_->debug("connecting to {} (attempt after {} failures)", peer().to_string(),
                attempt_.failures);
    link_.open(settings_for_(peer()));
}

ConnectionEvent FailoverLink::event(ConnectionState state, const std::string& text) const {
    ConnectionEvent event;
    event.state = state;
    event.server = peer();
    event.server_id = state == ConnectionState::kUp ? link_.peer_id() : std::string();
    event.text = text;
    event.attempt = attempt_.failures;
    if (state == ConnectionState::kDown) event.close_reason = link_.peer_close().reason;
    return event;
}

void FailoverLink::on_link_up(const wire::v1::LoginResponse& response) {
    live_ = true;
    live_since_ns_ = monotonic_ns();
    policy_.on_success();
    attempt_.failures = 0;
    counters_.connections.fetch_add(1, std::memory_order_relaxed);
    log_->info("logged in to {} ({})", peer().to_string(), link_.peer_id());
    owner_.on_connection_event(event(ConnectionState::kUp, ""));
    owner_.on_session_up(response);
}

void FailoverLink::on_link_down(LinkDown cause, const std::string& text) {
    const bool was_up = live_;
    live_ = false;
    if (!owner_.on_session_down(was_up, cause) || stopped_) return;
    if (was_up) counters_.connection_losses.fetch_add(1, std::memory_order_relaxed);
    owner_.on_connection_event(
        event(ConnectionState::kDown, std::string(link_down_name(cause)) + ": " + text));
    owner_.on_failing_over(was_up, cause);
    const auto lasted = std::chrono::milliseconds((monotonic_ns() - live_since_ns_) / 1'000'000);
    attempt_ = was_up                             ? policy_.after_loss(lasted)
               : cause == LinkDown::kLoginRefused ? policy_.after_refusal()
                                                  : policy_.after_failure();
    reconnect_timer_.start_once(attempt_.delay);
}

}  // namespace mdcast::sdk
