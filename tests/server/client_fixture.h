// Real ClientSessions over socketpairs for the server's unit tests: what a
// session queues is flushed and read back from the other end as frames (or
// raw bytes, for a WebSocket session); what the peer writes is read by the
// session on the fixture's loop. The fixture is the sessions' Owner and
// records what they report.
#pragma once

#include <event2/event.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/tcp_connection.h"
#include "proto/frame_reader.h"
#include "server/client_session.h"

namespace mdcast::server::testing {

struct ReceivedFrame {
    proto::FrameType type;
    std::string body;
    std::string whole;
};

class ClientFixture : public ClientSession::Owner {
  public:
    ClientFixture() : flusher_(loop_, std::chrono::microseconds(0)) {}
    ~ClientFixture() override {
        sessions_.clear();
        for (int fd : peer_fds_) ::close(fd);
    }

    // A connected session; `max_output_bytes` bounds its queue; with `ws` it
    // speaks WebSocket/JSON as one accepted on clients.ws_port.
    ClientSession& connect(bool conflate = false, size_t max_output_bytes = 1 << 20,
                           const WsSettings* ws = nullptr) {
        int fds[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        REQUIRE(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
        peer_fds_.push_back(fds[1]);
        ClientLimits limits;
        limits.conflate = conflate;
        limits.max_items_per_request = 100;
        limits.max_subscriptions = 100;
        limits.max_frame_bytes = 65536;
        limits.max_held_trades = max_held_trades;
        limits.link_max_bytes = link_max_bytes;
        auto session = std::make_unique<ClientSession>(*this, limits, "test-server");
        TcpConnection::Limits connection_limits;
        connection_limits.max_output_bytes = max_output_bytes;
        connection_limits.raw_input = ws != nullptr;  // wslay frames the input
        const uint64_t id = sessions_.size() + 1;
        session->attach(std::make_unique<TcpConnection>(loop_, flusher_, fds[0], id, "peer",
                                                        proto::kClientToServerTypes,
                                                        connection_limits, *session),
                        ws);
        sessions_.push_back(std::move(session));
        return *sessions_.back();
    }

    // A connected session that logged in taking group statuses (LoginRequest.group_status).
    ClientSession& connect_grouped(bool conflate = false, size_t max_output_bytes = 1 << 20) {
        ClientSession& session = connect(conflate, max_output_bytes);
        ::mdcast::wire::v1::LoginRequest login;
        login.set_user("grouped");
        login.set_group_status(true);
        session.request_login(login);
        REQUIRE(session.takes_group_status());
        return session;
    }

    // Writes what `client` has queued and returns the bytes its peer has received.
    std::string received_bytes(ClientSession& client) {
        if (client.is_open()) client.connection().flush();
        const int fd = peer_fds_.at(index_of(client));
        std::string bytes;
        char buffer[65536];
        for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) bytes.append(buffer, n);
        return bytes;
    }

    // Writes what `client` has queued and returns every frame its peer has received.
    std::vector<ReceivedFrame> received(ClientSession& client) {
        const std::string bytes = received_bytes(client);
        proto::FrameReader reader(1 << 20, proto::kServerToClientTypes);
        reader.append({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
        std::vector<ReceivedFrame> frames;
        proto::Frame frame;
        while (reader.next(frame) == proto::FrameReader::Result::kFrame) {
            frames.push_back({frame.type, std::string(frame.body.begin(), frame.body.end()),
                              std::string(frame.whole.begin(), frame.whole.end())});
        }
        return frames;
    }

    // The peer writes `bytes`; the session reads them on the loop.
    void send_bytes(ClientSession& client, std::string_view bytes) {
        const int fd = peer_fds_.at(index_of(client));
        REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
        for (int i = 0; i < 4; ++i) event_base_loop(loop_.base(), EVLOOP_NONBLOCK);
    }
    // The peer writes one binary-protocol frame.
    void send_frame(ClientSession& client, proto::FrameType type,
                    const google::protobuf::MessageLite& message) {
        send_bytes(client, proto::encode_frame_string(type, message));
    }

    EventLoop& loop() { return loop_; }
    // output.max_held_trades of the sessions connected from now on.
    uint32_t max_held_trades = 10000;
    // output.link_max_bytes of the sessions connected from now on (0: none).
    uint64_t link_max_bytes = 0;

    // What the owner is told.
    std::function<void(ClientSession&)> on_drained;
    std::function<size_t(const ClientSession&)> count_subscriptions;
    std::vector<CloseReason> closes;
    std::vector<::mdcast::wire::v1::LoginRequest> logins;
    std::vector<::mdcast::wire::v1::Subscribe> subscribes;
    std::vector<uint64_t> unsubscribes;
    size_t directory_requests = 0;

    void on_login_request(ClientSession&, const ::mdcast::wire::v1::LoginRequest& login) override {
        logins.push_back(login);
    }
    void on_subscribe(ClientSession&, const ::mdcast::wire::v1::Subscribe& request) override {
        subscribes.push_back(request);
    }
    void on_unsubscribe(ClientSession&, uint64_t item_id) override {
        unsubscribes.push_back(item_id);
    }
    void on_directory_request(ClientSession&) override { ++directory_requests; }
    void on_post(ClientSession&, const ::mdcast::wire::v1::Post& post) override {
        posts.push_back(post);
    }
    std::vector<::mdcast::wire::v1::Post> posts;
    void on_client_closed(ClientSession&, CloseReason reason, const std::string&) override {
        closes.push_back(reason);
    }
    void on_client_drained(ClientSession& client) override {
        if (on_drained) on_drained(client);
    }
    size_t subscription_count(const ClientSession& client) const override {
        return count_subscriptions ? count_subscriptions(client) : 0;
    }

  private:
    size_t index_of(const ClientSession& client) const {
        for (size_t i = 0; i < sessions_.size(); ++i) {
            if (sessions_[i].get() == &client) return i;
        }
        FAIL("not a session of this fixture");
        return 0;
    }

    EventLoop loop_;
    FlushScheduler flusher_;
    std::vector<int> peer_fds_;
    std::vector<std::unique_ptr<ClientSession>> sessions_;
};

}  // namespace mdcast::server::testing
