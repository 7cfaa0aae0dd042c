#include "reconnect_policy.h"

#include <algorithm>
#include <stdexcept>

namespace mdcast::sdk {

ReconnectPolicy::ReconnectPolicy(ReconnectSettings settings, uint64_t seed)
    : settings_(settings), random_(seed) {
    if (settings_.server_count == 0) throw std::invalid_argument("no servers to connect to");
    settings_.jitter = std::clamp(settings_.jitter, 0.0, 1.0);
    settings_.max_delay = std::max(settings_.max_delay, settings_.min_delay);
}

ReconnectPolicy::Attempt ReconnectPolicy::first() {
    server_ = 0;
    failures_ = 0;
    return Attempt{server_, std::chrono::milliseconds(0), 0};
}

ReconnectPolicy::Attempt ReconnectPolicy::after_loss(std::chrono::milliseconds lasted) {
    if (lasted < settings_.stable_session) return after_failure();
    failures_ = 0;
    advance();
    return Attempt{server_, std::chrono::milliseconds(0), 0};
}

ReconnectPolicy::Attempt ReconnectPolicy::after_failure() {
    ++failures_;
    advance();
    return jittered(backoff(failures_));
}

ReconnectPolicy::Attempt ReconnectPolicy::after_refusal() {
    ++failures_;
    advance();
    return jittered(settings_.max_delay);
}

ReconnectPolicy::Attempt ReconnectPolicy::jittered(std::chrono::milliseconds full) {
    const double low = static_cast<double>(full.count()) * (1.0 - settings_.jitter);
    std::uniform_real_distribution<double> draw(low, static_cast<double>(full.count()));
    const auto delay = std::chrono::milliseconds(static_cast<int64_t>(draw(random_)));
    return Attempt{server_, delay, failures_};
}

std::chrono::milliseconds ReconnectPolicy::backoff(uint32_t failures) const {
    if (failures == 0) return std::chrono::milliseconds(0);
    int64_t delay = settings_.min_delay.count();
    for (uint32_t i = 1; i < failures && delay < settings_.max_delay.count(); ++i) delay *= 2;
    return std::chrono::milliseconds(std::min<int64_t>(delay, settings_.max_delay.count()));
}

}  // namespace mdcast::sdk
