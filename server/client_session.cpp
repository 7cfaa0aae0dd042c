#include "server/client_session.h"

#include <algorithm>
#include <type_traits>

#include "common/logging.h"
#include "proto/limits.h"
#include "server/cascade/link_role.h"

namespace mdcast::server {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {
// Answers a conflating client may owe before it is a slow consumer after all:
// a peer that keeps asking while it does not read.
constexpr size_t kMaxHeldControl = 1024;

// A link's time bound never shrinks its queue below this: a few frames, so a
// link measured while nearly idle is not conflated by the next small burst.
constexpr uint64_t kMinLinkBoundBytes = 4096;
constexpr uint64_t kMinLinkUnsentBytes = 2048;  // at least a segment or so in the kernel

// A later answer of these kinds replaces an earlier one not yet sent.
bool replaces_earlier(FrameType type) {
    return type == FrameType::kPong || type == FrameType::kDirectory;
}
}  // namespace

ClientSession::ClientSession(Owner& owner, const ClientLimits& limits, std::string server_id)
    : owner_(owner), limits_(limits), server_id_(std::move(server_id)), log_(log::get("client")) {}

void ClientSession::attach(std::unique_ptr<TcpConnection> connection, const WsSettings* ws) {
    connection_ = std::move(connection);
    if (ws) ws_ = std::make_unique<WsSession>(*this, *ws);
    connection_->start();
}

void ClientSession::on_bytes(TcpConnection&, std::span<const uint8_t> bytes) {
    if (ws_) ws_->on_bytes(bytes);
}

bool ClientSession::close_frame(CloseReason reason, const std::string& text, std::string& frame) {
    return ws_ && ws_->close_frame(reason, text, frame);
}

std::string ClientSession::describe() const {
    return "client " + std::to_string(connection_->id()) + " " + connection_->peer() +
           " user=" + login_.user_or_dash();
}

void ClientSession::refuse_slow() {
    connection_->close(CloseReason::kSlowConsumer,
                       "output queue full: output.max_bytes or output.pool_bytes reached (" +
                           std::to_string(connection_->queued_bytes()) + " bytes queued)");
}

void ClientSession::deliver(std::span<const uint8_t> frame) {
    if (!connection_->accepts_output()) return;
    if (!connection_->send_frame(frame)) return refuse_slow();
    ++messages_out_;
}

// Under the conflate policy an answer that does not fit waits for the drain
// (a pong too: the peer judges the link by the bytes it reads, and a full
// queue is being read), rather than cutting a client that conflation keeps.
void ClientSession::deliver(FrameType type, const google::protobuf::MessageLite& message) {
    if (!connection_->accepts_output()) return;
    if (ws_) return ws_->translate(type, message);  // it delivers the JSON
    if (!conflating_ && connection_->send(type, message)) {
        ++messages_out_;
        return;
    }
    if (!limits_.conflate || !login_.logged_in()) return refuse_slow();
    hold_control(type, proto::encode_frame_string(type, message));
}

void ClientSession::hold_control(FrameType type, std::string frame) {
    if (!conflating_) start_conflating();
    if (replaces_earlier(type)) {
        for (auto& [held_type, held] : held_control_) {
            if (held_type == type) return void(held = std::move(frame));
        }
    }
    if (held_control_.size() >= kMaxHeldControl) {
        return connection_->close(CloseReason::kSlowConsumer,
                                  "conflating and owing " + std::to_string(held_control_.size()) +
                                      " answers not yet sent");
    }
    held_control_.emplace_back(type, std::move(frame));
}

void ClientSession::send_held_control() {
    size_t sent = 0;
    for (; sent < held_control_.size(); ++sent) {
        const std::string& frame = held_control_[sent].second;
        if (!connection_->send_frame(
                {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()})) {
            break;
        }
        ++messages_out_;
    }
    held_control_.erase(held_control_.begin(), held_control_.begin() + static_cast<long>(sent));
}

// What the backlog is told of a frame not queued: a trade is held as it is, a
// quote merged, anything else owed by its kind (sent from the cache).
void ClientSession::owe(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                        std::span<const uint8_t> frame) {
    if (!update) return backlog_.owe(item_id, kind);
    if (update->trade) return hold_trade(item_id, frame);
    backlog_.owe_update(item_id, *update);
}

// Bounded: past output.max_held_trades the client is a slow consumer after
// all (closed, counted and told, like one the disconnect policy closes).
void ClientSession::hold_trade(uint64_t item_id, std::span<const uint8_t> frame) {
    if (backlog_.held_trades() >= limits_.max_held_trades) {
        held_trade_limit_reached_ = true;
        connection_->close(CloseReason::kSlowConsumer,
                           "conflating and holding " + std::to_string(backlog_.held_trades()) +
                               " trades not yet sent: output.max_held_trades reached");
        return;
    }
    backlog_.hold_trade(item_id, frame);
    ++trades_held_;
}

// Every kind of item frame: queued unless the client conflates; a full queue
// applies the slow-consumer policy.
template <class Frame>
void ClientSession::queue_item(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                               const Frame& frame) {
    if (!connection_->accepts_output()) return;
    std::span<const uint8_t> bytes;
    if constexpr (std::is_same_v<Frame, SharedFrame>) {
        bytes = frame.bytes;
    } else {
        bytes = frame;
    }
    if (conflating_) return owe(item_id, kind, update, bytes);
    if (over_link_bound(bytes.size()) && !flush_to_fit(bytes.size())) {
        if (!connection_->accepts_output()) return;  // the write failed: closed
        return on_item_refused(item_id, kind, update, bytes);
    }
    if (ws_) return queue_json_item(item_id, kind, update, bytes);
    bool queued;
    if constexpr (std::is_same_v<Frame, SharedFrame>) {
        queued = connection_->send_shared(frame);
    } else {
        queued = connection_->send_frame(frame);
    }
    if (queued) {
        ++messages_out_;
        return;
    }
    on_item_refused(item_id, kind, update, bytes);
}

// Each of the client's streams of the item gets its own copy, restamped with
// the stream's id. What conflation holds is the frame before restamping.
void ClientSession::queue_json_item(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                                    std::span<const uint8_t> frame) {
    ws_->send_item(item_id, frame, false, [&](std::span<const uint8_t> stamped) {
        if (connection_->send_frame(stamped)) {
            ++messages_out_;
            return true;
        }
        on_item_refused(item_id, kind, update, frame);
        return false;
    });
}

void ClientSession::deliver_snapshot(uint64_t item_id, std::span<const uint8_t> frame) {
    if (!ws_) return deliver(frame);
    ws_->send_item(item_id, frame, true, [&](std::span<const uint8_t> stamped) {
        deliver(stamped);
        return is_open();
    });
}

void ClientSession::deliver_item(uint64_t item_id, Owed kind, std::span<const uint8_t> frame) {
    queue_item(item_id, kind, nullptr, frame);
}

void ClientSession::deliver_item(uint64_t item_id, Owed kind, const SharedFrame& frame) {
    queue_item(item_id, kind, nullptr, frame);
}

void ClientSession::deliver_update(uint64_t item_id, const proto::UpdateView& update,
                                   std::span<const uint8_t> frame) {
    queue_item(item_id, Owed::kUpdate, &update, frame);
}

void ClientSession::deliver_update(uint64_t item_id, const proto::UpdateView& update,
                                   const SharedFrame& frame) {
    queue_item(item_id, Owed::kUpdate, &update, frame);
}

void ClientSession::deliver_group(std::span<const uint8_t> frame,
                                  const std::vector<uint64_t>& item_ids) {
    if (!connection_->accepts_output()) return;
    if (!conflating_) {
        if (connection_->send_frame(frame)) {
            ++messages_out_;
            return;
        }
        if (!limits_.conflate) return refuse_slow();
        start_conflating();
    }
    for (uint64_t item_id : item_ids) backlog_.owe(item_id, Owed::kStatus);
}

// A link's queue is bounded by time more than memory: what it holds is how
// stale the edge is (its bytes over the link's bandwidth), so it has its own.
// An empty queue takes any frame: one larger than the bound must still pass.
bool ClientSession::over_link_bound(size_t bytes) const {
    if (!is_link_ || link_bound_ == 0) return false;
    const size_t queued = connection_->queued_bytes();
    return queued > 0 && queued + bytes > link_bound_;
}

// A link whose queue reached its bound only because the coalescing timer
// (output.flush_interval_ms) has not fired yet is not slow: what is queued is
// written now, and the link conflates only when the kernel does not take it.
// Without this a fast link fed faster than its bound per interval (1 MiB per
// 20 ms at a million updates/s) conflated at every interval.
bool ClientSession::flush_to_fit(size_t bytes) {
    connection_->flush();
    return connection_->accepts_output() && !over_link_bound(bytes);
}

// The bound is what the link drains in output.link_max_delay_ms, never above
// output.link_max_bytes (the memory it may take), and that until a rate is known.
void ClientSession::sample_link(int64_t now_ns) {
    if (!is_link_ || limits_.link_max_delay_ms == 0 || !connection_->is_open()) return;
    link_meter_.sample(now_ns, connection_->bytes_out(), connection_->queued_bytes(),
                       connection_->progress());
    const uint64_t cap = limits_.link_max_bytes;
    const uint64_t bound =
        link_meter_.bound_bytes(limits_.link_max_delay_ms, kMinLinkBoundBytes, cap);
    link_bound_ = cap == 0 ? bound : std::min(bound, cap);
    fit_link_unsent();
}

// The kernel holds what the link drains in a fifth of output.link_max_delay_ms
// unsent, between kMinLinkUnsentBytes and output.link_unsent_bytes: on a slow
// link a fixed 8 KiB was a quarter of a second of staleness at 36 KB/s before
// any of the queue's; a fast link keeps the configured figure.
void ClientSession::fit_link_unsent() {
    const double rate = link_meter_.bytes_per_second();
    if (limits_.link_unsent_bytes == 0 || rate <= 0) return;
    const auto share = static_cast<uint64_t>(rate * limits_.link_max_delay_ms / 5 / 1000);
    const auto want = static_cast<uint32_t>(std::clamp<uint64_t>(
        share, std::min<uint64_t>(kMinLinkUnsentBytes, limits_.link_unsent_bytes),
        limits_.link_unsent_bytes));
    if (want != link_unsent_ && connection_->limit_unsent(want)) link_unsent_ = want;
}

// The queue is full: the slow-consumer policy.
void ClientSession::on_item_refused(uint64_t item_id, Owed kind, const proto::UpdateView* update,
                                    std::span<const uint8_t> frame) {
    if (!limits_.conflate) return refuse_slow();
    start_conflating();
    owe(item_id, kind, update, frame);
}

// Conflate: from now on only remember what is owed; the queue is sent as is.
void ClientSession::start_conflating() {
    conflating_ = true;
    ++conflation_episodes_;
    connection_->set_low_watermark(connection_->queued_bytes() / 2);
    // One line per client per 10 s at most: a link at its bound conflates many times a second
    // (every episode is counted in conflation_episodes_total).
    uint64_t unlogged = 0;
    episode_logged_ = conflation_log_.allow(unlogged);
    if (!episode_logged_) return;
    log_->warn("{} is a slow consumer: conflating its updates until its queue drains{}", describe(),
               unlogged ? fmt::format(" ({} more episodes since the last line)", unlogged) : "");
}

void ClientSession::sample_rates(int64_t now_ns) {
    if (rates_.sampled_ns != 0 && now_ns > rates_.sampled_ns) {
        const double seconds = static_cast<double>(now_ns - rates_.sampled_ns) / 1e9;
        rates_.messages_out_per_s =
            static_cast<double>(messages_out_ - rates_.messages_out) / seconds;
        rates_.bytes_out_per_s =
            static_cast<double>(connection_->bytes_out() - rates_.bytes_out) / seconds;
    }
    rates_.sampled_ns = now_ns;
    rates_.messages_out = messages_out_;
    rates_.bytes_out = connection_->bytes_out();
}

size_t ClientSession::drain_owed(const OwedFrame& frame_for) {
    send_held_control();
    if (!held_control_.empty()) return 0;  // the queue is full again
    size_t sent = 0;
    const bool done = backlog_.drain([&](uint64_t item_id, const ConflationBacklog::Piece& piece) {
        const std::optional<std::string> frame = frame_for(item_id, piece);
        if (!frame) return true;
        if (!connection_->can_queue(frame->size()) || over_link_bound(frame->size())) {
            return false;  // more at the next drain
        }
        const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(frame->data()),
                                             frame->size()};
        if (ws_) {
            ws_->send_item(item_id, bytes, false, [&](std::span<const uint8_t> stamped) {
                return connection_->send_frame(stamped);
            });
        } else {
            connection_->send_frame(bytes);
        }
        ++sent;
        return true;
    });
    // The next drain once half of what is queued now went out: the mark set
    // when conflation started may lie above a link's bound, which moves.
    if (done) {
        end_conflation();
    } else {
        connection_->set_low_watermark(connection_->queued_bytes() / 2);
    }
    return sent;
}

void ClientSession::end_conflation() {
    conflating_ = false;
    backlog_.clear();
    if (episode_logged_) log_->info("{} caught up: conflation ended", describe());
}

void ClientSession::on_output_drained(TcpConnection&) {
    if (conflating_) owner_.on_client_drained(*this);
}

template <class Message>
bool ClientSession::parse(const proto::Frame& frame, Message& message) {
    if (message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) return true;
    connection_->close(CloseReason::kProtocolError,
                       "malformed " + std::string(proto::frame_type_name(frame.type)) + " body");
    return false;
}

void ClientSession::on_frame(TcpConnection&, const proto::Frame& frame) {
    if (!login_.logged_in() && frame.type != FrameType::kLoginRequest) {
        // Also while the login is being checked: the peer must wait for the answer.
        connection_->close(CloseReason::kNotLoggedIn, "the first message must be a login");
        return;
    }
    switch (frame.type) {
        case FrameType::kLoginRequest:
            return on_login(frame);
        case FrameType::kPing:
            return on_ping(frame);
        case FrameType::kPong:
            return;
        case FrameType::kClose:
            return connection_->close(CloseReason::kPeerClosed, "client said goodbye");
        case FrameType::kDirectoryRequest:
            return request_directory();
        case FrameType::kSubscribe: {
            wire::Subscribe request;
            if (parse(frame, request)) request_subscribe(request);
            return;
        }
        case FrameType::kUnsubscribe: {
            wire::Unsubscribe request;
            if (!parse(frame, request)) return;
            for (uint64_t id : request.item_ids()) request_unsubscribe(id);
            return;
        }
        case FrameType::kPost: {
            wire::Post post;
            if (parse(frame, post)) request_post(post);
            return;
        }
        default:
            return connection_->close(CloseReason::kProtocolError, "unexpected frame type");
    }
}

void ClientSession::on_login(const proto::Frame& frame) {
    wire::LoginRequest request;
    if (parse(frame, request)) request_login(request);
}

void ClientSession::request_login(const wire::LoginRequest& request) {
    switch (login_.start(request)) {
        case auth::LoginGate::Start::kSecondLogin:
            return connection_->close(CloseReason::kProtocolError, "second login");
        case auth::LoginGate::Start::kInvalid:
            return connection_->close(CloseReason::kAuthFailed,
                                      "user name missing or fields too long");
        case auth::LoginGate::Start::kAsk:
            group_status_ = request.group_status() && !ws_;
            return owner_.on_login_request(*this, request);
    }
}

void ClientSession::accept_login(std::shared_ptr<const auth::UserEntry> account) {
    login_.accepted();
    connection_->set_max_frame_body(limits_.max_frame_bytes);  // the small pre-login cap ends
    account_ = std::move(account);
    if (is_cascade_link(login_.application_id())) {
        is_link_ = true;
        limits_.conflate = limits_.link_conflate;
        limits_.max_held_trades = limits_.link_max_held_trades;
        link_bound_ = limits_.link_max_bytes;
        // The kernel's unsent bytes are staleness too: kept small on links only
        // (bytes in flight are not limited, so a long fat link keeps its speed).
        if (limits_.link_unsent_bytes != 0 && connection_->limit_unsent(limits_.link_unsent_bytes))
            link_unsent_ = limits_.link_unsent_bytes;
    }
    wire::LoginResponse response;
    response.set_accepted(true);
    response.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    response.mutable_status()->set_data_state(wire::DATA_OK);
    response.set_server_id(server_id_);
    response.set_heartbeat_interval_ms(limits_.heartbeat_interval_ms);
    response.set_max_frame_bytes(limits_.max_frame_bytes);
    response.set_max_items_per_request(limits_.max_items_per_request);
    deliver(FrameType::kLoginResponse, response);
    log_->info("{} logged in: application={} position={}{}{}", describe(),
               log::escaped(login_.application_id()), log::escaped(login_.position()),
               account_ ? "" : " (authentication off)",
               is_link_ ? (limits_.conflate ? " (cascade link: conflated when slow)"
                                            : " (cascade link: cut when slow)")
                        : "");
}

void ClientSession::refuse_login(const auth::LoginVerdict& verdict) {
    login_.refused();
    deliver(FrameType::kLoginResponse, auth::refusal_response(verdict, server_id_));
    connection_->close(CloseReason::kAuthFailed, verdict.text);
}

void ClientSession::on_ping(const proto::Frame& frame) {
    wire::Ping ping;
    if (!parse(frame, ping)) return;
    wire::Pong pong;
    pong.set_ping_sent_time_ns(ping.sent_time_ns());
    deliver(FrameType::kPong, pong);
}

void ClientSession::on_closed(TcpConnection&, CloseReason reason, const std::string& text) {
    // A refused login was logged (rate-limited) where it was refused.
    const auto level = login_.close_log_level(reason);
    // The listener's owner logs failed handshakes, rate-limited; warnings share one limit.
    uint64_t suppressed = 0;
    if (!is_tls_handshake_failure(reason) &&
        (level != spdlog::level::warn ||
         log::close_warnings(static_cast<size_t>(reason)).allow(suppressed))) {
        log_->log(level, "{} closed: {}: {} (in {} bytes, out {} bytes, {} subscriptions){}",
                  describe(), close_reason_name(reason), text, connection_->bytes_in(),
                  connection_->bytes_out(), owner_.subscription_count(*this),
                  suppressed ? fmt::format(" ({} similar suppressed)", suppressed) : "");
    }
    owner_.on_client_closed(*this, reason, text);
}

}  // namespace mdcast::server
