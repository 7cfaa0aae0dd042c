#include "session_messages.h"

#include <unistd.h>

#include "proto/frame.h"

namespace mdcast::sdk {

wire::v1::LoginRequest make_login_request(const std::string& user,
                                          const std::string& application_id,
                                          const std::string& position,
                                          const std::string& password) {
    wire::v1::LoginRequest login;
    login.set_user(user);
    login.set_application_id(application_id);
    if (position.empty()) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        login.set_position(host);
    } else {
        login.set_position(position);
    }
    login.set_password(password);
    login.set_protocol_version(proto::kProtocolVersion);
    return login;
}

void answer_ping(TcpConnection& connection, const proto::Frame& frame) {
    wire::v1::Ping ping;
    wire::v1::Pong pong;
    if (ping.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        pong.set_ping_sent_time_ns(ping.sent_time_ns());
    }
    connection.send(proto::FrameType::kPong, pong);
}

}  // namespace mdcast::sdk
