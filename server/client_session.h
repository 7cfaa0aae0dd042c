// One client connection: login, directory, subscribe / unsubscribe, ping.
//
// Requests go to the Owner (the server), which resolves items and fans out.
// Output goes through the connection's bounded queue; a client whose queue
// passes output.max_bytes is a slow consumer and is disconnected with that
// reason, so it never delays the others or the backbone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "common/tcp_connection.h"
#include "wire/client.pb.h"
#include "wire/session.pb.h"

namespace mdcast::server {

struct ClientLimits {
    uint32_t max_items_per_request = 0;
    uint32_t max_subscriptions = 0;
    uint32_t heartbeat_interval_ms = 0;
    uint32_t max_frame_bytes = 0;
};

class ClientSession final : public TcpConnection::Handler {
public:
    class Owner {
    public:
        virtual void on_subscribe(ClientSession& client, const wire::v1::Subscribe& request) = 0;
        virtual void on_unsubscribe(ClientSession& client, uint64_t item_id) = 0;
        virtual void on_directory_request(ClientSession& client) = 0;
        virtual void on_client_closed(ClientSession& client, CloseReason reason) = 0;

    protected:
        virtual ~Owner() = default;
    };

    ClientSession(Owner& owner, const ClientLimits& limits, std::string server_id);

    void attach(std::unique_ptr<TcpConnection> connection);
    TcpConnection& connection() { return *connection_; }
    bool is_open() const { return connection_ && connection_->is_open(); }
    bool logged_in() const { return logged_in_; }
    const std::string& user() const { return user_; }
    // "id peer user" for log lines.
    std::string describe() const;

    // Hot path: queue bytes already framed. Applies the slow-consumer policy.
    void deliver(std::span<const uint8_t> frame);
    void deliver(proto::FrameType type, const google::protobuf::MessageLite& message);

    // Item ids this client holds (value: view), kept by the server.
    std::unordered_map<uint64_t, std::vector<uint32_t>>& subscriptions() { return subscriptions_; }
    const ClientLimits& limits() const { return limits_; }

    void on_frame(TcpConnection& connection, const proto::Frame& frame) override;
    void on_closed(TcpConnection& connection, CloseReason reason, const std::string& text) override;

private:
    void on_login(const proto::Frame& frame);
    void on_ping(const proto::Frame& frame);
    template <class Message>
    bool parse(const proto::Frame& frame, Message& message);

    Owner& owner_;
    ClientLimits limits_;
    std::string server_id_;
    std::unique_ptr<TcpConnection> connection_;
    bool logged_in_ = false;
    std::string user_;
    std::string application_id_;
    std::unordered_map<uint64_t, std::vector<uint32_t>> subscriptions_;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::server
