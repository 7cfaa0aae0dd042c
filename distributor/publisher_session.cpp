#include "distributor/publisher_session.h"

#include "common/logging.h"
#include "proto/book_image.h"
#include "proto/limits.h"

namespace mdcast::distributor {

using proto::FrameType;

PublisherSession::PublisherSession(Owner& owner, ItemRegistry& registry, BackboneOut& backbone,
                                   PublisherCounters& counters, uint32_t heartbeat_interval_ms)
    : owner_(owner),
      registry_(registry),
      backbone_(backbone),
      counters_(counters),
      heartbeat_interval_ms_(heartbeat_interval_ms),
      log_(log::get("publisher")) {}

void PublisherSession::attach(std::unique_ptr<TcpConnection> connection) {
    connection_ = std::move(connection);
    connection_->start();
}

template <class Message>
bool PublisherSession::parse(const proto::Frame& frame, Message& message) {
    if (message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) return true;
    protocol_error("malformed " + std::string(proto::frame_type_name(frame.type)) + " body");
    return false;
}

// Refresh, Update and ItemStatus: a body that fails to parse only because of
// its content is refused alone (refuse_content); broken framing still closes.
template <class Message>
bool PublisherSession::parse_item_message(const proto::Frame& frame, Message& message) {
    if (message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) return true;
    refuse_content(frame);
    return false;
}

void PublisherSession::refuse_content(const proto::Frame& frame) {
    wire::ItemRef ref;
    if (!ref.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        ref.item_id() == 0) {
        return protocol_error("malformed " + std::string(proto::frame_type_name(frame.type)) +
                              " body");
    }
    ++counters_.invalid_content;
    reject(ref.item_id(), wire::STATUS_INVALID_REQUEST,
           std::string(proto::frame_type_name(frame.type)) +
               " refused: a value is not valid UTF-8 or not well-formed; the item keeps its "
               "previous image");
}

void PublisherSession::protocol_error(const std::string& text) {
    connection_->close(CloseReason::kProtocolError, text);
}

void PublisherSession::on_frame(TcpConnection&, const proto::Frame& frame) {
    owner_.on_publisher_input();
    if (!login_.logged_in() && frame.type != FrameType::kLoginRequest) {
        connection_->close(CloseReason::kNotLoggedIn, "the first message must be a login");
        return;
    }
    switch (frame.type) {
        case FrameType::kLoginRequest:
            on_login(frame);
            break;
        case FrameType::kServiceAnnounce:
            on_service_announce(frame);
            break;
        case FrameType::kItemRegister:
            on_item_register(frame);
            break;
        case FrameType::kRefresh:
            on_refresh(frame);
            break;
        case FrameType::kUpdate:
            on_update(frame);
            break;
        case FrameType::kItemStatus:
            on_item_status(frame);
            break;
        case FrameType::kFlush:
            on_flush(frame);
            break;
        case FrameType::kPostAck: {
            wire::PostAck ack;
            if (parse(frame, ack)) owner_.on_post_ack(*this, ack);
            break;
        }
        case FrameType::kPing:
            on_ping(frame);
            break;
        case FrameType::kPong:
            break;
        case FrameType::kClose:
            connection_->close(CloseReason::kPeerClosed, "publisher said goodbye");
            break;
        default:
            protocol_error("unexpected frame type");
    }
}

// Every earlier frame of this connection has been applied by now: acknowledge.
void PublisherSession::on_flush(const proto::Frame& frame) {
    wire::Flush flush;
    if (!parse(frame, flush)) return;
    wire::FlushAck ack;
    ack.set_token(flush.token());
    connection_->send(FrameType::kFlushAck, ack);
}

void PublisherSession::on_login(const proto::Frame& frame) {
    wire::LoginRequest request;
    if (!parse(frame, request)) return;
    switch (login_.start(request)) {
        case auth::LoginGate::Start::kSecondLogin:
            return protocol_error("second login on one connection");
        case auth::LoginGate::Start::kInvalid:
            return connection_->close(CloseReason::kAuthFailed,
                                      "user name missing or fields too long");
        case auth::LoginGate::Start::kAsk:
            return owner_.on_login_request(*this, request);
    }
}

void PublisherSession::accept_login() {
    login_.accepted();
    wire::LoginResponse response;
    response.set_accepted(true);
    response.set_server_id("mdcast-distributor");
    // The frame limit this connection now enforces (publishers.max_frame_bytes):
    // the SDK refuses a larger refresh or update at the call instead of being
    // closed frame_too_large and sending the same image again after every
    // reconnect. (Before, this said backbone.max_message_bytes.)
    response.set_max_frame_bytes(static_cast<uint32_t>(connection_->max_frame_body()));
    response.set_heartbeat_interval_ms(heartbeat_interval_ms_);
    connection_->send(FrameType::kLoginResponse, response);
    log_->info("publisher {} logged in: user={} application={} position={}", connection_->peer(),
               log::escaped(login_.user()), log::escaped(login_.application_id()),
               log::escaped(login_.position()));
}

void PublisherSession::refuse_login(const auth::LoginVerdict& verdict) {
    login_.refused();
    connection_->send(FrameType::kLoginResponse,
                      auth::refusal_response(verdict, "mdcast-distributor"));
    connection_->close(CloseReason::kAuthFailed, verdict.text);
}

// A publisher's reconnect can overtake the close of its earlier connection
// (seen here only later): the newer connection, once it proves it is the same
// publisher, takes its services over. Anyone else is refused (`takeover` says why).
ItemRegistry::AnnounceResult PublisherSession::claim_service(const wire::ServiceAnnounce& announce,
                                                             ServiceEntry*& entry,
                                                             TakeoverVerdict& takeover) {
    const auto mode = announce.mode() == wire::SERVICE_INTERACTIVE ? wire::SERVICE_INTERACTIVE
                                                                   : wire::SERVICE_BROADCAST;
    const auto result = registry_.announce(announce.name(), mode, connection_->id(), entry);
    if (result != ItemRegistry::AnnounceResult::kOwnedByAnother) return result;
    ServiceEntry* owned = registry_.service(announce.name());
    if (!owned) return result;
    // A ranked publisher without the owner's token is another process: a
    // standby. With the token it is the owner's reconnect, as without a rank.
    if (announce.standby_rank() > 0 &&
        !same_secret(announce.takeover_token(), owned->takeover_token)) {
        takeover = mode == wire::SERVICE_BROADCAST
                       ? owner_.join_as_standby(*this, *owned, announce.takeover_token())
                       : TakeoverVerdict::kNotBroadcast;
        if (takeover == TakeoverVerdict::kAllowed) entry = owned;
        return takeover == TakeoverVerdict::kAllowed ? ItemRegistry::AnnounceResult::kAccepted
                                                     : result;
    }
    takeover = owner_.replace_earlier_connection(*this, *owned, announce.takeover_token());
    if (takeover != TakeoverVerdict::kAllowed) return result;
    return registry_.announce(announce.name(), mode, connection_->id(), entry);
}

void PublisherSession::on_service_announce(const proto::Frame& frame) {
    wire::ServiceAnnounce announce;
    if (!parse(frame, announce)) return;
    takes_posts_ = takes_posts_ || announce.takes_posts();
    standby_rank_ = announce.standby_rank();
    wire::ServiceAnnounceResponse response;
    response.set_name(announce.name());
    auto* status = response.mutable_status();
    ServiceEntry* entry = nullptr;
    auto takeover = TakeoverVerdict::kOtherPublisher;
    const auto result = claim_service(announce, entry, takeover);
    const bool standby = entry && entry->owner_session != connection_->id();
    if (result == ItemRegistry::AnnounceResult::kAccepted) {
        response.set_service_id(entry->id);
        // A standby has no token: it proves itself again as a standby.
        if (!standby) response.set_takeover_token(entry->takeover_token);
        status->set_stream_state(wire::STREAM_OPEN);
        status->set_data_state(wire::DATA_OK);
        if (standby) status->set_text("standby (rank " + std::to_string(standby_rank_) + ")");
        log_->info("publisher {} (user {}) announced service {} as id {}{}", connection_->peer(),
                   login_.user_or_dash(), log::escaped(entry->name), entry->id,
                   standby ? ", a standby" : "");
    } else {
        status->set_stream_state(wire::STREAM_CLOSED);
        status->set_data_state(wire::DATA_SUSPECT);
        const bool owned = result == ItemRegistry::AnnounceResult::kOwnedByAnother;
        status->set_code(owned ? wire::STATUS_NOT_ENTITLED : wire::STATUS_LIMIT_REACHED);
        status->set_text(owned ? std::string(takeover_refusal_text(takeover))
                               : "service name invalid or registry.max_services reached");
        // A refused takeover is logged by the owner, rate-limited.
        if (!owned) {
            log_->warn("publisher {} (user {}) refused service '{}': {}", connection_->peer(),
                       login_.user_or_dash(), log::escaped(announce.name()), status->text());
        }
    }
    connection_->send(FrameType::kServiceAnnounceResponse, response);
    if (entry && !standby) {
        owner_.on_directory_changed();
        owner_.on_service_announced(*this, *entry);
    }
}

void PublisherSession::request_item(const ServiceEntry& service, const ItemEntry& item) {
    wire::ImageRequest request;
    request.set_service_id(service.id);
    request.set_service_name(service.name);
    request.set_item_name(item.name);
    request.set_item_id(item.id);
    connection_->send(FrameType::kImageRequest, request);
}

void PublisherSession::unsubscribe_items(const std::vector<uint64_t>& item_ids) {
    wire::Unsubscribe unsubscribe;
    unsubscribe.mutable_item_ids()->Add(item_ids.begin(), item_ids.end());
    connection_->send(FrameType::kUnsubscribe, unsubscribe);
}

void PublisherSession::on_item_register(const proto::Frame& frame) {
    wire::ItemRegister request;
    if (!parse(frame, request)) return;
    wire::ItemRegistered response;
    response.set_service_id(request.service_id());
    const bool owned = may_register(registry_.service(request.service_id()));
    GroupMember* standby = owner_.standby_of(request.service_id(), connection_->id());
    uint64_t refused = 0;
    for (const auto& entry : request.items()) {
        auto* out = response.add_items();
        out->set_ref(entry.ref());
        ItemEntry* item =
            owned ? registry_.register_item(request.service_id(), entry.name()) : nullptr;
        if (item) {
            out->set_item_id(item->id);
            out->set_last_item_seq(item->item_seq);
            if (standby) {
                const auto own = standby->items.find(item->id);
                if (own != standby->items.end()) out->set_last_item_seq(own->second.item_seq);
            } else {  // the active publisher (re)starts the item's sequence where it is
                item->seq_shift = 0;
                item->realign_seq = false;
            }
        } else {
            ++refused;
        }
    }
    if (refused > 0) {
        auto* status = response.mutable_status();
        status->set_code(owned ? wire::STATUS_LIMIT_REACHED : wire::STATUS_NOT_ENTITLED);
        status->set_text(owned ? std::to_string(refused) +
                                     " items refused: empty or long name, or registry.max_items"
                               : "service is not owned by this publisher");
        log_->warn("publisher {} (user {}): {}", connection_->peer(), login_.user_or_dash(),
                   status->text());
    }
    connection_->send(FrameType::kItemRegistered, response);
}

ItemEntry* PublisherSession::target_item(uint64_t item_id, const char* what,
                                         StandbyItem*& standby) {
    ItemEntry* item = registry_.item(item_id);
    const ServiceEntry* service = item ? registry_.service(item->service_id) : nullptr;
    if (service && service->owner_session == connection_->id()) return item;
    if (GroupMember* member =
            service ? owner_.standby_of(service->id, connection_->id()) : nullptr) {
        standby = &member->items[item->id];
        return item;
    }
    reject(item_id, wire::STATUS_NOT_ENTITLED,
           std::string(what) + " for an item that is unknown or not owned by this publisher");
    return nullptr;
}

void PublisherSession::reject(uint64_t item_id, wire::StatusCode code, const std::string& text) {
    ++counters_.rejected_messages;
    uint64_t suppressed = 0;
    if (reject_log_limit_.allow(suppressed)) {
        log_->warn("publisher {} (user {}): item {}: {} ({} similar suppressed)",
                   connection_->peer(), login_.user_or_dash(), item_id, text, suppressed);
    }
    wire::ItemStatus status;
    status.set_item_id(item_id);
    status.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    status.mutable_status()->set_data_state(wire::DATA_SUSPECT);
    status.mutable_status()->set_code(code);
    status.mutable_status()->set_text(text);
    connection_->send(FrameType::kItemStatus, status);
}

void PublisherSession::on_refresh(const proto::Frame& frame) {
    wire::Refresh refresh;
    if (!parse_item_message(frame, refresh)) return;
    StandbyItem* standby = nullptr;
    ItemEntry* item = target_item(refresh.item_id(), "refresh", standby);
    if (!item) return;
    if (standby) return keep_standby_refresh(*standby, refresh);
    if (item->realign_seq) {  // the first image since a switch to this publisher
        item->seq_shift = item->item_seq + 1 - refresh.item_seq();
        item->realign_seq = false;
    }
    refresh.set_item_seq(backbone_seq(*item, refresh.item_seq()));
    const ServiceEntry* service = registry_.service(item->service_id);
    // Refreshes are re-encoded (not the hot path): names come from the registry,
    // so servers can trust them.
    refresh.set_service_id(service->id);
    refresh.set_service_name(service->name);
    refresh.set_item_name(item->name);
    if (!refresh.has_status()) {
        refresh.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        refresh.mutable_status()->set_data_state(wire::DATA_OK);
    }
    // A book is checked whole before anything is forwarded (docs/books.md).
    std::string why;
    proto::FieldImage image;
    const auto book = proto::assign_refresh(image, refresh, registry_.max_book_entries(), why);
    if (book == proto::BookOutcome::kMalformed) {
        return reject(item->id, wire::STATUS_INVALID_REQUEST, "refresh refused: " + why);
    }
    if (book == proto::BookOutcome::kFull)
        return refuse_image(*item, refresh, why + " (registry.max_book_entries)");
    if (!backbone_.send(FrameType::kRefresh, refresh)) {
        return refuse_image(*item, refresh,
                            "image of " + std::to_string(proto::frame_bytes(refresh)) +
                                " bytes is over backbone.max_message_bytes (" +
                                std::to_string(backbone_.max_frame_bytes()) + ")");
    }
    item->image = std::move(image);
    item->closed_text.clear();
    item->item_seq = refresh.item_seq();
    item->has_image = true;
    item->unwanted = false;
    remember_state(*item, refresh.status());
    ++counters_.refreshes;
}

// The state the publisher gave the item, with its code and text: an image served
// from the cache later says the same (image_service.cpp).
void PublisherSession::remember_state(ItemEntry& item, const wire::Status& status) {
    item.data_state = status.data_state();
    item.status_code = status.code();
    item.status_text = status.text();
    item.closed = status.stream_state() == wire::STREAM_CLOSED;
}

// An image over backbone.max_message_bytes (or a book over
// registry.max_book_entries): the publisher and every server are told, naming
// the limit, and the item's stream is closed, so its subscribers hold a final
// status rather than a stale image or a request that never ends.
void PublisherSession::refuse_image(ItemEntry& item, const wire::Refresh& refresh,
                                    const std::string& text) {
    reject(item.id, wire::STATUS_LIMIT_REACHED, text);
    wire::ItemStatus status;
    status.set_item_id(item.id);
    status.set_service_id(refresh.service_id());
    status.set_service_name(refresh.service_name());
    status.set_item_name(refresh.item_name());
    auto& closed = *status.mutable_status();
    closed.set_stream_state(wire::STREAM_CLOSED);
    closed.set_data_state(wire::DATA_SUSPECT);
    closed.set_code(wire::STATUS_LIMIT_REACHED);
    closed.set_text(text);
    backbone_.send(FrameType::kItemStatus, status);
    item.has_image = false;
    item.closed = true;
    item.closed_text = text;
}

// The hot path: decoded without allocation, merged into the image cache, and
// forwarded as the publisher's own bytes; an update carrying one of its
// service's trades.fields is marked a trade first (two bytes more).
void PublisherSession::on_update(const proto::Frame& frame) {
    if (!proto::decode_update(frame.body, update_)) return refuse_content(frame);
    StandbyItem* standby = nullptr;
    ItemEntry* item = target_item(update_.item_id, "update", standby);
    if (!item) return;
    if (standby) return keep_standby_update(*item, *standby);
    if (!item->has_image || item->realign_seq) {
        return reject(item->id, wire::STATUS_INVALID_REQUEST, "update before the item's refresh");
    }
    std::string why;
    if (!proto::book_update_valid(item->image, update_, why)) {
        return reject(item->id, wire::STATUS_INVALID_REQUEST, "update refused: " + why);
    }
    std::span<const uint8_t> out = frame.whole;
    if (item->seq_shift != 0) {
        resequenced_.clear();
        proto::append_resequenced_frame(resequenced_, frame.whole,
                                        backbone_seq(*item, update_.item_seq));
        out = {reinterpret_cast<const uint8_t*>(resequenced_.data()), resequenced_.size()};
        ++counters_.resequenced;
    }
    // A book's actions are never merged by conflation: marked like a trade.
    if (!update_.trade &&
        (!update_.map_bytes.empty() ||
         TradeFields::carries_any(registry_.service(item->service_id)->trade_fields, update_))) {
        marked_.clear();
        proto::append_trade_marked_frame(marked_, out);
        out = {reinterpret_cast<const uint8_t*>(marked_.data()), marked_.size()};
        ++counters_.trades_marked;
    }
    if (!backbone_.send_frame(out)) {
        return reject(item->id, wire::STATUS_LIMIT_REACHED,
                      "update larger than backbone.max_message_bytes");
    }
    owner_.on_update_forwarded(update_.publish_time_ns);
    if (proto::apply_update(item->image, update_, registry_.max_book_entries(), why) ==
        proto::BookOutcome::kFull) {
        book_full(*item, why);
    }
    item->item_seq = backbone_seq(*item, update_.item_seq);
    ++counters_.updates;
}

// The image cache's book went over registry.max_book_entries: images served from
// it say so (suspect, LIMIT_REACHED) until the next refresh; the publisher is told once.
void PublisherSession::book_full(ItemEntry& item, const std::string& why) {
    if (item.status_code == wire::STATUS_LIMIT_REACHED) return;
    item.data_state = wire::DATA_SUSPECT;
    item.status_code = wire::STATUS_LIMIT_REACHED;
    item.status_text = why + " (registry.max_book_entries)";
    reject(item.id, wire::STATUS_LIMIT_REACHED, item.status_text);
}

void PublisherSession::on_item_status(const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!parse_item_message(frame, status)) return;
    StandbyItem* standby = nullptr;
    ItemEntry* item = target_item(status.item_id(), "status", standby);
    if (!item) return;
    if (standby) {
        ++counters_.standby_messages;
        standby->data_state = status.status().data_state();
        standby->status_code = status.status().code();
        standby->status_text = status.status().text();
        standby->closed = status.status().stream_state() == wire::STREAM_CLOSED;
        if (standby->closed) standby->has_image = false;
        return;
    }
    const ServiceEntry* service = registry_.service(item->service_id);
    status.set_service_id(service->id);
    status.set_service_name(service->name);
    status.set_item_name(item->name);
    if (!backbone_.send(FrameType::kItemStatus, status)) {
        return reject(item->id, wire::STATUS_LIMIT_REACHED, "status text too long");
    }
    remember_state(*item, status.status());
    if (item->closed) item->has_image = false;
    ++counters_.statuses;
}

void PublisherSession::on_ping(const proto::Frame& frame) {
    wire::Ping ping;
    if (!parse(frame, ping)) return;
    wire::Pong pong;
    pong.set_ping_sent_time_ns(ping.sent_time_ns());
    connection_->send(FrameType::kPong, pong);
}

void PublisherSession::on_closed(TcpConnection& connection, CloseReason reason,
                                 const std::string& text) {
    // A refused login was logged (rate-limited) where it was refused.
    const auto level = login_.close_log_level(reason);
    // The listener's owner logs failed handshakes, rate-limited.
    uint64_t suppressed = 0;  // warnings share one limit
    if (!is_tls_handshake_failure(reason) &&
        (level != spdlog::level::warn ||
         log::close_warnings(static_cast<size_t>(reason)).allow(suppressed))) {
        log_->log(level, "publisher {} (user {}) closed: {}: {}{}", connection.peer(),
                  login_.user_or_dash(), close_reason_name(reason), text,
                  suppressed ? fmt::format(" ({} similar suppressed)", suppressed) : "");
    }
    owner_.on_publisher_closed(*this, reason, text);
}

}  // namespace mdcast::distributor
