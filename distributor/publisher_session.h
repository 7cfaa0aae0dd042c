// One publisher connection: login, service announcement, item registration,
// then refresh / update / status for its items.
//
// Updates are validated (the item must belong to a service this publisher
// owns), merged into the distributor's image cache, and forwarded onto the
// backbone as the exact bytes the publisher encoded. A refresh, update or
// status that is well-formed protobuf but whose content is invalid (a string
// that is not UTF-8) is refused alone: an INVALID_REQUEST status for that item
// goes back to the publisher, the connection and its other items stay up.
// Anything else malformed closes this publisher with protocol_error; other
// publishers are unaffected.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/auth/authenticator.h"
#include "common/auth/login_gate.h"
#include "common/logging.h"
#include "common/net/tcp_connection.h"
#include "distributor/backbone_out.h"
#include "distributor/item_registry.h"
#include "distributor/publisher_group.h"
#include "distributor/takeover_rule.h"
#include "proto/update_codec.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/post.pb.h"
#include "wire/publisher.pb.h"
#include "wire/session.pb.h"

namespace mdcast::distributor {

struct PublisherCounters {
    uint64_t refreshes = 0;
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t rejected_messages = 0;  // unknown item, not owned, too large, invalid content
    uint64_t invalid_content = 0;    // of which: well-formed but invalid (not UTF-8)
    uint64_t takeovers = 0;          // services taken over by a proven reconnect
    uint64_t takeovers_refused = 0;  // claims on an owned service without proof
    uint64_t trades_marked = 0;      // updates marked trades by their service's trades.fields
    uint64_t standby_messages = 0;   // refreshes, updates, statuses of standbys (kept, not sent)
    uint64_t resequenced = 0;        // updates renumbered after a standby switch
};

class PublisherSession final : public TcpConnection::Handler {
  public:
    class Owner {
      public:
        // A well-formed login: the owner checks it and answers with
        // accept_login() or refuse_login(), now or later.
        virtual void on_login_request(PublisherSession& session,
                                      const wire::LoginRequest& request) = 0;
        virtual void on_directory_changed() = 0;
        virtual void on_publisher_closed(PublisherSession& session, CloseReason reason,
                                         const std::string& text) = 0;
        // The session now owns `service` (interactive sources are asked again
        // for the items someone wants).
        virtual void on_service_announced(PublisherSession& session, const ServiceEntry& service) {}
        // `claimant` announces `service`, which another session owns: kAllowed
        // when the owner was an earlier connection of the same publisher, proven
        // by `presented_token` or an authenticated login (takeover_rule.h), now
        // closed, so the service is free. Otherwise the owner is untouched.
        virtual TakeoverVerdict replace_earlier_connection(PublisherSession& claimant,
                                                           const ServiceEntry& service,
                                                           std::string_view presented_token) {
            return TakeoverVerdict::kOtherPublisher;
        }
        // `claimant`, stating a standby rank, announces `service`, which another
        // session owns: kAllowed when it joined the service's group as a standby
        // (publisher_group.h, judge_standby). Also kAllowed when it already is one.
        virtual TakeoverVerdict join_as_standby(PublisherSession& claimant,
                                                const ServiceEntry& service,
                                                std::string_view presented_token) {
            return TakeoverVerdict::kOtherPublisher;
        }
        // This session's membership of the service's group while it is a
        // standby there; nullptr otherwise (active, or not a member).
        virtual GroupMember* standby_of(uint32_t service_id, uint64_t session) { return nullptr; }
        // The publisher's answer to a post sent with send_post().
        virtual void on_post_ack(PublisherSession& session, const wire::PostAck& ack) = 0;
        // A frame arrived (the idle strategy polls on while they do).
        virtual void on_publisher_input() {}
        // An update stamped `publish_time_ns` (0: unstamped) went onto the backbone.
        virtual void on_update_forwarded(uint64_t publish_time_ns) {}

      protected:
        virtual ~Owner() = default;
    };

    // `heartbeat_interval_ms` is what publishers are asked to ping at (0: not asked).
    PublisherSession(Owner& owner, ItemRegistry& registry, BackboneOut& backbone,
                     PublisherCounters& counters, uint32_t heartbeat_interval_ms);

    void attach(std::unique_ptr<TcpConnection> connection);
    TcpConnection& connection() { return *connection_; }
    const TcpConnection& connection() const { return *connection_; }
    bool logged_in() const { return login_.logged_in(); }
    void accept_login();
    // Sends the refusal, then closes auth_failed.
    void refuse_login(const auth::LoginVerdict& verdict);
    const std::string& user() const { return login_.user(); }
    const std::string& application_id() const { return login_.application_id(); }
    const std::string& position() const { return login_.position(); }
    // The standby rank of its last service announcement (0: none stated).
    uint32_t standby_rank() const { return standby_rank_; }
    // "connection N (user U, application A, position P)", for logs and /info.
    std::string label() const;
    // Interactive services: asks the publisher to publish `item` (an
    // ImageRequest with the item id the distributor gave it).
    void request_item(const ServiceEntry& service, const ItemEntry& item);
    // Interactive: nobody wants these items any more; the source stops them.
    void unsubscribe_items(const std::vector<uint64_t>& item_ids);

    // The publisher said (ServiceAnnounce.takes_posts) that it answers posts.
    bool takes_posts() const { return takes_posts_; }
    // A post for one of its services; the answer comes to Owner::on_post_ack.
    void send_post(const wire::Post& post) { connection_->send(proto::FrameType::kPost, post); }

    void on_frame(TcpConnection& connection, const proto::Frame& frame) override;
    void on_closed(TcpConnection& connection, CloseReason reason, const std::string& text) override;

  private:
    void on_login(const proto::Frame& frame);
    void on_service_announce(const proto::Frame& frame);
    ItemRegistry::AnnounceResult claim_service(const wire::ServiceAnnounce& announce,
                                               ServiceEntry*& entry, TakeoverVerdict& takeover);
    void on_item_register(const proto::Frame& frame);
    void on_refresh(const proto::Frame& frame);
    void on_flush(const proto::Frame& frame);
    void on_update(const proto::Frame& frame);
    void on_item_status(const proto::Frame& frame);
    void on_ping(const proto::Frame& frame);

    // The item if it exists and this publisher owns its service, or is a
    // standby of it (then `standby` is its own view of the item); else counts,
    // logs and returns nullptr.
    ItemEntry* target_item(uint64_t item_id, const char* what, StandbyItem*& standby);
    bool may_register(const ServiceEntry* service);
    void keep_standby_refresh(StandbyItem& standby, const wire::Refresh& refresh);
    void keep_standby_update(ItemEntry& item, StandbyItem& standby);
    // The active publisher's sequence on the backbone (ItemEntry::seq_shift).
    static uint64_t backbone_seq(ItemEntry& item, uint64_t publisher_seq);
    void refuse_image(ItemEntry& item, const wire::Refresh& refresh, const std::string& text);
    void book_full(ItemEntry& item, const std::string& why);
    static void remember_state(ItemEntry& item, const wire::Status& status);
    void reject(uint64_t item_id, wire::StatusCode code, const std::string& text);
    void protocol_error(const std::string& text);
    template <class Message>
    bool parse(const proto::Frame& frame, Message& message);
    template <class Message>
    bool parse_item_message(const proto::Frame& frame, Message& message);
    void refuse_content(const proto::Frame& frame);

    Owner& owner_;
    ItemRegistry& registry_;
    BackboneOut& backbone_;
    PublisherCounters& counters_;
    uint32_t heartbeat_interval_ms_;
    std::unique_ptr<TcpConnection> connection_;
    auth::LoginGate login_;
    bool takes_posts_ = false;
    uint32_t standby_rank_ = 0;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter reject_log_limit_;
    // Reused on the hot path to avoid allocation per message.
    proto::UpdateView update_;
    std::string marked_;       // an update marked a trade (trades.fields)
    std::string resequenced_;  // an update renumbered (ItemEntry::seq_shift)
};

}  // namespace mdcast::distributor
