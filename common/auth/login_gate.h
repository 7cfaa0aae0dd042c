#pragma once
// The login step both daemons' peer sessions share (a server's clients, a
// distributor's publishers): one login per connection, its fields checked
// against the protocol's limits before anyone looks at the password, who the
// peer said it is, and how its close is logged (a refused login was logged,
// rate-limited, where it was refused).
#include <spdlog/common.h>

#include <string>

#include "common/net/close_reason.h"
#include "wire/session.pb.h"

namespace mdcast::auth {

class LoginGate {
  public:
    enum class Start {
        kAsk,          // well-formed: the owner checks it, then accepted() or refused()
        kSecondLogin,  // one login per connection: close protocol_error
        kInvalid,  // user missing, or a field over proto::kMaxLoginFieldBytes: close auth_failed
    };

    Start start(const wire::v1::LoginRequest& request);
    void accepted();
    void refused();

    bool logged_in() const { return logged_in_; }
    const std::string& user() const { return user_; }
    const std::string& application_id() const { return application_id_; }
    const std::string& position() const { return position_; }
    // The user for log lines, escaped (log::escaped): "-" before a login.
    std::string user_or_dash() const;
    // How a close is logged: debug after a refused login (logged already),
    // info for an orderly close, warn otherwise.
    spdlog::level::level_enum close_log_level(CloseReason reason) const;

  private:
    bool logged_in_ = false;
    bool pending_ = false;
    bool refused_ = false;
    std::string user_;
    std::string application_id_;
    std::string position_;
};

}  // namespace mdcast::auth
