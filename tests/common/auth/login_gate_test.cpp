// LoginGate: the login step a server's client sessions and a distributor's
// publisher sessions share.
#include "common/auth/login_gate.h"

#include <catch2/catch.hpp>
#include <string>

#include "proto/limits.h"

using mdcast::CloseReason;
using mdcast::auth::LoginGate;

namespace {

mdcast::wire::v1::LoginRequest login(const std::string& user, const std::string& app = "app",
                                     const std::string& position = "host") {
    mdcast::wire::v1::LoginRequest request;
    request.set_user(user);
    request.set_application_id(app);
    request.set_position(position);
    return request;
}

}  // namespace

TEST_CASE("one well-formed login per connection is passed on", "[login_gate]") {
    LoginGate gate;
    CHECK(gate.user_or_dash() == "-");
    REQUIRE(gate.start(login("alice")) == LoginGate::Start::kAsk);
    CHECK(gate.user() == "alice");
    CHECK(gate.application_id() == "app");
    CHECK(gate.position() == "host");
    CHECK_FALSE(gate.logged_in());
    CHECK(gate.start(login("bob")) == LoginGate::Start::kSecondLogin);  // while it is checked
    gate.accepted();
    CHECK(gate.logged_in());
    CHECK(gate.start(login("bob")) == LoginGate::Start::kSecondLogin);
    CHECK(gate.user() == "alice");
    CHECK(gate.close_log_level(CloseReason::kPeerClosed) == spdlog::level::info);
    CHECK(gate.close_log_level(CloseReason::kSlowConsumer) == spdlog::level::warn);
}

TEST_CASE("a login without a user or with an overlong field is refused before any check",
          "[login_gate]") {
    const std::string longest(mdcast::proto::kMaxLoginFieldBytes, 'x');
    const std::string too_long(mdcast::proto::kMaxLoginFieldBytes + 1, 'x');
    CHECK(LoginGate().start(login("")) == LoginGate::Start::kInvalid);
    CHECK(LoginGate().start(login("u", too_long)) == LoginGate::Start::kInvalid);
    CHECK(LoginGate().start(login("u", "app", too_long)) == LoginGate::Start::kInvalid);
    CHECK(LoginGate().start(login("u", longest, longest)) == LoginGate::Start::kAsk);
    LoginGate refused_first;
    CHECK(refused_first.start(login("")) == LoginGate::Start::kInvalid);
    CHECK(refused_first.user().empty());  // nothing kept from a refused request
}

TEST_CASE("a refused login's close is logged quietly: it was logged where it was refused",
          "[login_gate]") {
    LoginGate gate;
    REQUIRE(gate.start(login("mallory")) == LoginGate::Start::kAsk);
    gate.refused();
    CHECK_FALSE(gate.logged_in());
    CHECK(gate.close_log_level(CloseReason::kAuthFailed) == spdlog::level::debug);
}
