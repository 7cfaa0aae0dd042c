// Real PublisherSessions over socketpairs for the distributor's unit tests, in
// the manner of tests/server/client_fixture.h: the test writes a publisher's
// frames into the other end, runs the loop, and reads back what the session
// answered; what it put on the backbone is read from a real multicast backbone
// on loopback (backbone_tap.h), which no server talks to. The fixture is the
// sessions' Owner and records what it is told.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backbone_tap.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/tcp_connection.h"
#include "control_peer.h"
#include "distributor/multicast_backbone.h"
#include "distributor/publisher_session.h"
#include "proto/frame_reader.h"

namespace mdcast::distributor::testing {

struct PublisherFrame {
    proto::FrameType type;
    std::string body;
};

class PublisherFixture : public PublisherSession::Owner, public NoServersAsk {
  public:
    // `trade_fields`: the services' trades.fields; `max_book_entries`: registry.max_book_entries.
    explicit PublisherFixture(TradeFields trade_fields = {}, uint64_t max_book_entries = 10000)
        : config_(loopback_config("239.255.77.21")),
          tap_(config_),
          flusher_(loop_, std::chrono::microseconds(0)),
          registry_(1, 10, 100, std::move(trade_fields), max_book_entries),
          backbone_(loop_, config_, 7, *this) {}
    ~PublisherFixture() override {
        sessions_.clear();
        for (int fd : peer_fds_) ::close(fd);
    }

    // A connected publisher session (connection ids 1, 2, ...).
    PublisherSession& connect() {
        int fds[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        REQUIRE(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
        peer_fds_.push_back(fds[1]);
        auto session = std::make_unique<PublisherSession>(*this, registry_, backbone_, counters_,
                                                          kHeartbeatIntervalMs);
        const uint64_t id = sessions_.size() + 1;
        session->attach(std::make_unique<TcpConnection>(loop_, flusher_, fds[0], id, "peer",
                                                        proto::kPublisherToDistributorTypes,
                                                        TcpConnection::Limits{}, *session));
        sessions_.push_back(std::move(session));
        return *sessions_.back();
    }

    // The publisher of `session` sends one frame; the loop runs until the
    // session has read it.
    void send(PublisherSession& session, proto::FrameType type,
              const google::protobuf::MessageLite& message) {
        send_bytes(session, proto::encode_frame_string(type, message));
    }
    void send_bytes(PublisherSession& session, const std::string& bytes) {
        const int fd = peer_fds_.at(index_of(session));
        REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
        const uint64_t before = session.connection().bytes_in();
        REQUIRE(pump(loop_, [&] {
            return !session.connection().is_open() ||
                   session.connection().bytes_in() >= before + bytes.size();
        }));
    }

    // Writes what `session` has queued and returns every frame its publisher received.
    std::vector<PublisherFrame> received(PublisherSession& session) {
        if (session.connection().is_open()) session.connection().flush();
        const int fd = peer_fds_.at(index_of(session));
        proto::FrameReader reader(1 << 20, proto::kDistributorToPublisherTypes);
        char buffer[65536];
        for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
            reader.append({reinterpret_cast<const uint8_t*>(buffer), static_cast<size_t>(n)});
        }
        std::vector<PublisherFrame> frames;
        proto::Frame frame;
        while (reader.next(frame) == proto::FrameReader::Result::kFrame) {
            frames.push_back({frame.type, std::string(frame.body.begin(), frame.body.end())});
        }
        return frames;
    }

    // What the backbone carried since the last call.
    std::vector<BackboneMessage> backbone_messages() {
        backbone_.flush();
        return tap_.messages();
    }

    // A session logged in as `user` (the owner accepts every login).
    PublisherSession& logged_in(const std::string& user = "feed",
                                const std::string& position = "") {
        PublisherSession& session = connect();
        wire::LoginRequest login;
        login.set_user(user);
        login.set_position(position);
        send(session, proto::FrameType::kLoginRequest, login);
        REQUIRE(session.logged_in());
        received(session);  // the LoginResponse
        return session;
    }

    EventLoop& loop() { return loop_; }
    ItemRegistry& registry() { return registry_; }
    BackboneOut& backbone() { return backbone_; }
    const PublisherCounters& counters() const { return counters_; }

    static constexpr uint32_t kHeartbeatIntervalMs = 5000;
    static constexpr uint32_t kMaxFrameBytes = 2u << 20;  // publishers.max_frame_bytes

    // What the owner is told, and how it answers.
    bool accept_logins = true;
    bool authenticated = false;  // logins checked by password (for the takeover rule)
    std::string shared_secret;   // the operator's takeover secret (empty: none)
    std::vector<std::string> events;
    std::vector<CloseReason> closes;

    void on_login_request(PublisherSession& session, const wire::LoginRequest& request) override {
        events.push_back("login " + request.user());
        if (accept_logins) {  // as the distributor does: the login's limit ends
            session.connection().set_max_frame_body(kMaxFrameBytes);
            return session.accept_login();
        }
        auth::LoginVerdict verdict;
        verdict.kind = auth::LoginVerdict::Kind::kBadCredentials;
        verdict.text = "no such user";
        session.refuse_login(verdict);
    }
    void on_directory_changed() override { events.push_back("directory changed"); }
    // As the distributor does: a closed connection's services are free.
    void on_publisher_closed(PublisherSession& session, CloseReason reason,
                             const std::string&) override {
        closes.push_back(reason);
        registry_.release(session.connection().id());
    }
    void on_post_ack(PublisherSession&, const wire::PostAck& ack) override {
        post_acks.push_back(ack);
    }
    std::vector<wire::PostAck> post_acks;
    void on_service_announced(PublisherSession&, const ServiceEntry& service) override {
        events.push_back("announced " + service.name);
    }
    // The takeover rule, applied as the distributor does: a proven claim
    // closes (kicks) the earlier connection.
    TakeoverVerdict replace_earlier_connection(PublisherSession& claimant,
                                               const ServiceEntry& service,
                                               std::string_view token) override {
        events.push_back("replace " + std::to_string(service.owner_session));
        PublisherSession& owner = *sessions_.at(service.owner_session - 1);
        const auto verdict = judge_takeover({.owner = identity(owner),
                                             .claimant = identity(claimant),
                                             .owner_token = service.takeover_token,
                                             .presented_token = token,
                                             .authenticated = authenticated,
                                             .shared_secret = shared_secret});
        if (verdict == TakeoverVerdict::kAllowed) {
            owner.connection().close(CloseReason::kKicked, "replaced");
        }
        return verdict;
    }

  private:
    static PublisherIdentity identity(const PublisherSession& session) {
        return {session.user(), session.application_id(), session.position()};
    }
    size_t index_of(const PublisherSession& session) const {
        for (size_t i = 0; i < sessions_.size(); ++i) {
            if (sessions_[i].get() == &session) return i;
        }
        FAIL("not a session of this fixture");
        return 0;
    }

    EventLoop loop_;
    DistributorConfig config_;
    BackboneTap tap_;
    FlushScheduler flusher_;
    ItemRegistry registry_;
    MulticastBackbone backbone_;
    PublisherCounters counters_;
    std::vector<int> peer_fds_;
    std::vector<std::unique_ptr<PublisherSession>> sessions_;
};

}  // namespace mdcast::distributor::testing
