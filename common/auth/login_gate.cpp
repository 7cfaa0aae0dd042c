#include "common/auth/login_gate.h"

#include "common/logging.h"
#include "proto/limits.h"

namespace mdcast::auth {

LoginGate::Start LoginGate::start(const wire::v1::LoginRequest& request) {
    if (logged_in_ || pending_) return Start::kSecondLogin;
    if (!proto::valid_login(request.user(), request.password()) ||
        request.application_id().size() > proto::kMaxLoginFieldBytes ||
        request.position().size() > proto::kMaxLoginFieldBytes) {
        return Start::kInvalid;
    }
    pending_ = true;
    user_ = request.user();
    application_id_ = request.application_id();
    position_ = request.position();
    return Start::kAsk;
}

std::string LoginGate::user_or_dash() const {
    return user_.empty() ? "-" : log::escaped(user_);
}

void LoginGate::accepted() {
    pending_ = false;
    logged_in_ = true;
}

void LoginGate::refused() {
    pending_ = false;
    refused_ = true;
}

spdlog::level::level_enum LoginGate::close_log_level(CloseReason reason) const {
    if (refused_) return spdlog::level::debug;
    if (reason == CloseReason::kPeerClosed || reason == CloseReason::kShutdown)
        return spdlog::level::info;
    return spdlog::level::warn;
}

}  // namespace mdcast::auth
