// One client connection: login, directory, subscribe / unsubscribe, ping.
// It speaks the binary protocol, or (with a WsSession, clients.ws_port) JSON
// over WebSocket: the requests and the rules are the same; only the encoding
// of what goes out differs, and the fan-out groups subscribers by it.
//
// Requests go to the Owner (the server), which resolves items and fans out.
// Output goes through the connection's bounded queue; a client whose queue
// passes output.max_bytes is a slow consumer and is disconnected with that
// reason, so it never delays the others or the backbone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/auth/authenticator.h"
#include "common/auth/login_gate.h"
#include "common/logging.h"
#include "common/net/tcp_connection.h"
#include "proto/update_codec.h"
#include "server/cascade/link_drain_meter.h"
#include "server/conflation_backlog.h"
#include "server/websocket/ws_session.h"
#include "wire/client.pb.h"
#include "wire/post.pb.h"
#include "wire/session.pb.h"

namespace mdcast::server {

struct ClientLimits {
    bool conflate = false;  // slow-consumer policy: conflate (else disconnect)
    uint32_t max_items_per_request = 0;
    uint32_t max_subscriptions = 0;
    uint32_t heartbeat_interval_ms = 0;
    uint32_t max_frame_bytes = 0;
    uint32_t max_held_trades =
        10000;  // trades a conflating client may hold (output.max_held_trades)
    // For a cascade link (server/cascade/link_role.h), once logged in:
    bool link_conflate = true;               // output.link_slow_consumer_policy
    uint32_t link_max_held_trades = 100000;  // output.link_max_held_trades
    uint64_t link_max_bytes = 0;     // output.link_max_bytes: queue bound of a link (0: max_bytes)
    uint32_t link_max_delay_ms = 0;  // output.link_max_delay_ms: the queue's bound in time (0: off)
    uint32_t link_unsent_bytes = 0;  // output.link_unsent_bytes: TCP_NOTSENT_LOWAT (0: kernel's)
};

class ClientSession final : public TcpConnection::Handler {
  public:
    class Owner {
      public:
        // A well-formed first login: the owner checks it and answers with
        // accept_login() or refuse_login(), now or later.
        virtual void on_login_request(ClientSession& client,
                                      const ::mdcast::wire::v1::LoginRequest& request) = 0;
        virtual void on_subscribe(ClientSession& client,
                                  const ::mdcast::wire::v1::Subscribe& request) = 0;
        virtual void on_unsubscribe(ClientSession& client, uint64_t item_id) = 0;
        virtual void on_directory_request(ClientSession& client) = 0;
        // A post (a contribution for a service's publisher); the owner answers
        // it with a PostAck, now or when the publisher has.
        virtual void on_post(ClientSession& client, const ::mdcast::wire::v1::Post& post) = 0;
        virtual void on_client_closed(ClientSession& client, CloseReason reason,
                                      const std::string& text) = 0;
        // A conflating client's queue drained: send it what its backlog names.
        virtual void on_client_drained(ClientSession& client) = 0;
        // Items the client holds (for its close log line).
        virtual size_t subscription_count(const ClientSession& client) const = 0;

      protected:
        virtual ~Owner() = default;
    };

    ClientSession(Owner& owner, const ClientLimits& limits, std::string server_id);

    // `ws`: the connection came in on the WebSocket port.
    void attach(std::unique_ptr<TcpConnection> connection, const WsSettings* ws = nullptr);
    // The JSON encoder when this client speaks WebSocket/JSON; null for binary.
    const JsonEncoder* json() const { return ws_ ? &ws_->encoder() : nullptr; }
    // WebSocket item streams are the client's ids: the server named the item of
    // service/name, and the item's stream was closed (ws_streams.h). No-ops for binary.
    void bind_json_stream(const std::string& service, const std::string& name, uint64_t item_id) {
        if (ws_) ws_->bind(service, name, item_id);
    }
    void json_stream_closed(uint64_t item_id) {
        if (ws_) ws_->item_closed(item_id);
    }
    // The client logged in with LoginRequest.group_status (binary protocol
    // only): it takes one GroupStatus for many items' statuses.
    bool takes_group_status() const { return group_status_; }
    // Housekeeping: WebSocket clients are pinged when silent.
    void keep_alive(int64_t now_ns) {
        if (ws_) ws_->keep_alive(now_ns);
    }
    // The requests, decoded from either protocol.
    void request_login(const ::mdcast::wire::v1::LoginRequest& request);
    void request_subscribe(const ::mdcast::wire::v1::Subscribe& request) {
        owner_.on_subscribe(*this, request);
    }
    void request_unsubscribe(uint64_t item_id) { owner_.on_unsubscribe(*this, item_id); }
    void request_directory() { owner_.on_directory_request(*this); }
    void request_post(const ::mdcast::wire::v1::Post& post) { owner_.on_post(*this, post); }
    TcpConnection& connection() { return *connection_; }
    const TcpConnection& connection() const { return *connection_; }
    bool is_open() const { return connection_ && connection_->is_open(); }
    bool logged_in() const { return login_.logged_in(); }
    // Answers the login: accepted with the user's entry (null: authentication
    // off), or refused with the verdict's status, then closed auth_failed.
    void accept_login(std::shared_ptr<const auth::UserEntry> account);
    void refuse_login(const auth::LoginVerdict& verdict);
    // Entitlements: everything when authentication is off.
    bool entitled(std::string_view service, std::string_view item) const {
        return !account_ || account_->entitlements.allows_item(service, item);
    }
    bool sees_service(std::string_view service) const {
        return !account_ || account_->entitlements.allows_service(service);
    }
    const std::shared_ptr<const auth::UserEntry>& account() const { return account_; }
    // SIGHUP: the user's entry from the reloaded users file.
    void set_account(std::shared_ptr<const auth::UserEntry> account) {
        account_ = std::move(account);
    }
    const std::string& user() const { return login_.user(); }
    const std::string& application_id() const { return login_.application_id(); }
    // "id peer user" for log lines.
    std::string describe() const;

    // What a conflating client still has to be sent for an item, by weight.
    using Owed = ConflationBacklog::Owed;

    // Hot path: queue an item's frame (status, image). When the queue is full
    // the slow-consumer policy applies: disconnect closes the client; conflate
    // stops queueing and records what is owed per item instead, until the
    // queue drains (conflation_backlog.h: one entry per subscribed item).
    void deliver_item(uint64_t item_id, Owed kind, std::span<const uint8_t> frame);
    // The same frame stored once for many subscribers (Fanout): queued by
    // reference, charged and limited as a copy would be.
    void deliver_item(uint64_t item_id, Owed kind, const SharedFrame& frame);
    // An update's frame, and the update it encodes: while conflating a quote is
    // merged and a trade held (never merged away). A client holding more than
    // limits().max_held_trades trades is closed slow_consumer, saying so.
    void deliver_update(uint64_t item_id, const proto::UpdateView& update,
                        std::span<const uint8_t> frame);
    void deliver_update(uint64_t item_id, const proto::UpdateView& update,
                        const SharedFrame& frame);
    // A GroupStatus standing for these items' statuses: queued like an item
    // frame; when it cannot be (conflating, or the queue is full under the
    // conflate policy) each item is owed its status instead, so the drain
    // brings every one of them level with the cache.
    void deliver_group(std::span<const uint8_t> frame, const std::vector<uint64_t>& item_ids);
    // A snapshot's Refresh (the item is not opened); a full queue closes the client.
    void deliver_snapshot(uint64_t item_id, std::span<const uint8_t> frame);
    // Messages not tied to an open item; a full queue closes the client.
    void deliver(std::span<const uint8_t> frame);
    void deliver(proto::FrameType type, const google::protobuf::MessageLite& message);

    // Messages queued for this client (updates, images, statuses, answers).
    uint64_t messages_out() const { return messages_out_; }
    // Output rates over the last sampling period (/stats); the server samples every second.
    struct Rates {
        int64_t sampled_ns = 0;
        uint64_t messages_out = 0;
        uint64_t bytes_out = 0;
        double messages_out_per_s = 0;
        double bytes_out_per_s = 0;
    };
    void sample_rates(int64_t now_ns);
    const Rates& rates() const { return rates_; }

    bool conflating() const { return conflating_; }
    // The conflation backlog after the queue drained: for each piece owed (item
    // by item in item order, each item's in order: conflation_backlog.h)
    // `frame_for` builds the frame to send (nullopt: nothing is owed any more).
    // Stops, keeping the rest, when the queue is full again; ends conflation
    // once everything owed is sent. Returns the frames sent.
    using OwedFrame = std::function<std::optional<std::string>(
        uint64_t item_id, const ConflationBacklog::Piece& piece)>;
    size_t drain_owed(const OwedFrame& frame_for);
    uint64_t conflation_episodes() const { return conflation_episodes_; }
    // Trades held while conflating (each sent later, in order), since connecting.
    uint64_t trades_held() const { return trades_held_; }
    // Trades held now, waiting for the drain.
    size_t trades_waiting() const { return backlog_.held_trades(); }
    // Closed because it held more than max_held_trades.
    bool held_trade_limit_reached() const { return held_trade_limit_reached_; }

    const ClientLimits& limits() const { return limits_; }
    // Logged in as a cascade link (an edge server): the link limits apply.
    bool is_link() const { return is_link_; }
    // A link's queue bound follows its drain rate (output.link_max_delay_ms):
    // the owner samples it periodically, after the loop's writes.
    void sample_link(int64_t now_ns);
    // What a link's queue may hold before it conflates (0: no bound of its own).
    uint64_t link_bound_bytes() const { return link_bound_; }

    void on_frame(TcpConnection& connection, const proto::Frame& frame) override;
    void on_closed(TcpConnection& connection, CloseReason reason, const std::string& text) override;
    void on_output_drained(TcpConnection& connection) override;
    void on_bytes(TcpConnection& connection, std::span<const uint8_t> bytes) override;
    bool close_frame(CloseReason reason, const std::string& text, std::string& frame) override;

  private:
    void fit_link_unsent();
    void on_login(const proto::Frame& frame);
    void on_ping(const proto::Frame& frame);
    void refuse_slow();
    template <class Frame>
    void queue_item(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                    const Frame& frame);
    void queue_json_item(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                         std::span<const uint8_t> frame);
    void on_item_refused(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                         std::span<const uint8_t> frame);
    bool over_link_bound(size_t bytes) const;
    // Writes the queue now; true when `bytes` then fit under the link's bound.
    bool flush_to_fit(size_t bytes);
    void start_conflating();
    void owe(uint64_t item_id, Owed kind, const proto::UpdateView* update,
             std::span<const uint8_t> frame);
    void hold_trade(uint64_t item_id, std::span<const uint8_t> frame);
    void end_conflation();
    void hold_control(proto::FrameType type, std::string frame);
    void send_held_control();
    template <class Message>
    bool parse(const proto::Frame& frame, Message& message);

    Owner& owner_;
    ClientLimits limits_;
    std::string server_id_;
    std::unique_ptr<TcpConnection> connection_;
    std::unique_ptr<WsSession> ws_;  // null: the binary protocol
    auth::LoginGate login_;
    std::shared_ptr<const auth::UserEntry> account_;
    bool group_status_ = false;
    bool conflating_ = false;
    ConflationBacklog backlog_;
    uint64_t conflation_episodes_ = 0;
    log::RateLimiter conflation_log_{std::chrono::seconds(10)};  // the episodes' log lines
    bool episode_logged_ = false;  // this episode's start was logged: log its end too
    uint64_t trades_held_ = 0;
    bool held_trade_limit_reached_ = false;
    bool is_link_ = false;
    LinkDrainMeter link_meter_;
    uint64_t link_bound_ = 0;
    uint32_t link_unsent_ = 0;  // the kernel's unsent bound now (fit_link_unsent)
    // Answers (pongs, directories, post acks) that did not fit while
    // conflating, sent first when the queue drains; bounded (kMaxHeldControl).
    std::vector<std::pair<proto::FrameType, std::string>> held_control_;
    uint64_t messages_out_ = 0;
    Rates rates_;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::server
