// Session messages every SDK connection sends the same way (tools' Session,
// the Consumer's and Publisher's ServerLink): the login and the answer to a ping.
#pragma once

#include <string>

#include "common/net/tcp_connection.h"
#include "wire/session.pb.h"

namespace mdcast::sdk {

// `position` empty: this host's name.
wire::v1::LoginRequest make_login_request(const std::string& user,
                                          const std::string& application_id,
                                          const std::string& position, const std::string& password);

// Answers the peer's Ping with a Pong echoing its time.
void answer_ping(TcpConnection& connection, const proto::Frame& ping);

}  // namespace mdcast::sdk
