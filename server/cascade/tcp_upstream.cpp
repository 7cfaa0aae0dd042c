#include "server/cascade/tcp_upstream.h"

#include <algorithm>

#include "common/clock.h"
#include "proto/frame.h"
#include "proto/post_checks.h"
#include "proto/source_ids.h"
#include "server/make_status.h"
#include "wire/client.pb.h"

namespace mdcast::server {

namespace wire = ::mdcast::wire::v1;
using proto::FrameType;

namespace {

constexpr uint32_t kLoginRefusedBackoff = 10;  // x upstream.reconnect_delay_ms
// A name asked on a live link is not asked again before this long without an
// answer (ParentSubscriptions::awaiting): a safety net, not a retry timer.
constexpr int64_t kReaskAfterNs = 30'000'000'000;

// A frame encoded here (a directory cut per source, a status of our own),
// handed to the server as if it had come from the parent.
struct OwnFrame {
    std::string bytes;
    proto::Frame frame;
    OwnFrame(FrameType type, const google::protobuf::MessageLite& message)
        : bytes(proto::encode_frame_string(type, message)) {
        const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
        frame = {type,
                 {data + proto::kFrameHeaderBytes, bytes.size() - proto::kFrameHeaderBytes},
                 {data, bytes.size()}};
    }
};

template <class Message>
bool parse(const proto::Frame& frame, Message& message) {
    return message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
}

}  // namespace

TcpUpstream::TcpUpstream(EventLoop& loop, TcpUpstreamSettings settings, Handler& handler)
    : settings_(std::move(settings)),
      handler_(handler),
      log_(log::get("cascade")),
      flusher_(loop, std::chrono::microseconds(0)),
      slot_a_(loop, flusher_, *this, log_),
      slot_b_(loop, flusher_, *this, log_),
      reconnect_timer_(loop, [this] { connect_next(); }),
      standby_timer_(loop, [this] { connect_standby(); }),
      directory_timer_(loop, [this] { on_heartbeat_tick(); }),
      subscribe_flush_(loop, [this] { flush_subscribes(); }),
      post_answers_(loop, [this] { answer_refused_posts(); }),
      resync_more_(loop, [this] { send_resync(); }),
      resync_(settings_.resync_max_outstanding) {
    connect_next();
    if (wants_standby()) connect_standby();
}

TcpUpstream::~TcpUpstream() {
    slot_a_.link().close(CloseReason::kShutdown, "server shutting down");
    slot_b_.link().close(CloseReason::kShutdown, "server shutting down");
}

std::string TcpUpstream::parent() const {
    return parent_;
}

// ---- the link ------------------------------------------------------------------------------

void TcpUpstream::connect_next() {
    open(*active_, *standby_);
}

void TcpUpstream::connect_standby() {
    open(*standby_, *active_);
}

// The next parent of the list, past the one `other` is logged in to.
void TcpUpstream::open(LinkSlot& slot, const LinkSlot& other) {
    const auto taken = [&other](const HostPort& p) {
        const auto& server = other.link().settings().server;
        return other.login() && server.host == p.host && server.port == p.port;
    };
    const HostPort* parent = &settings_.parents[next_parent_++ % settings_.parents.size()];
    if (taken(*parent) && settings_.parents.size() > 1) {
        parent = &settings_.parents[next_parent_++ % settings_.parents.size()];
    }
    sdk::LinkSettings link;
    link.server = {parent->host, parent->port};
    link.user = settings_.user;
    link.password = settings_.password;
    link.application_id = settings_.application_id;
    link.heartbeat_interval_ms = settings_.heartbeat_interval_ms;
    link.heartbeat_timeout_ms = settings_.heartbeat_timeout_ms;
    link.max_frame_bytes = settings_.max_frame_bytes;
    link.tls = settings_.tls;
    link.tls_server_name =
        settings_.tls_server_name.empty() ? parent->host : settings_.tls_server_name;
    link.group_status = false;  // an ItemStatus per item, each handed on as it came
    log_->debug("connecting to parent {}{}{}", link.server.to_string(), link.tls ? " (TLS)" : "",
                &slot == standby_ ? " (standby link)" : "");
    slot.link().open(link);
}

// ---- the warm standby ----------------------------------------------------------------------

void TcpUpstream::on_slot_up(LinkSlot& slot) {
    if (&slot == active_) return on_link_up(*slot.login());
    log_->info("standby link to parent {} logged in ({}): taken at once if the link to {} is lost",
               slot.parent(), slot.login()->server_id(), parent_.empty() ? "the parent" : parent_);
}

// The standby asked for nothing: whatever a parent sends on it is not used.
void TcpUpstream::on_slot_frame(LinkSlot& slot, const proto::Frame& frame) {
    if (&slot == active_) on_link_frame(frame);
}

void TcpUpstream::on_slot_down(LinkSlot& slot, sdk::LinkDown cause, const std::string& text) {
    if (&slot == active_) return on_link_down(cause, text);
    on_standby_down(cause, text);
}

void TcpUpstream::on_standby_down(sdk::LinkDown cause, const std::string& text) {
    const uint32_t delay_ms = settings_.reconnect_delay_ms *
                              (cause == sdk::LinkDown::kLoginRefused ? kLoginRefusedBackoff : 1);
    log_->warn("standby link to parent {} down ({}: {}); next attempt in {} ms", standby_->parent(),
               sdk::link_down_name(cause), text, delay_ms);
    standby_timer_.start_once(std::chrono::milliseconds(delay_ms));
}

void TcpUpstream::fail_over(const std::string& lost, sdk::LinkDown cause, const std::string& text) {
    std::swap(active_, standby_);
    ++counters_.failovers;
    log_->warn("failing over to the standby link to parent {} (the link to {} went: {}: {})",
               active_->parent(), lost, sdk::link_down_name(cause), text);
    standby_timer_.start_once(std::chrono::milliseconds(settings_.reconnect_delay_ms));
    on_link_up(*active_->login());
}

std::string TcpUpstream::standby_parent() const {
    return standby_->login() ? standby_->parent() : "";
}

void TcpUpstream::on_link_up(const wire::LoginResponse& response) {
    parent_ = active_->parent();
    ++counters_.links_up;
    log_->info("logged in to parent {}{} ({}) as {}; {} item(s) to subscribe again", parent_,
               settings_.tls ? " over TLS" : "", response.server_id(), settings_.user,
               subscriptions_.size());
    link().send(FrameType::kDirectoryRequest, wire::DirectoryRequest{});
    directory_timer_.start_periodic(std::chrono::milliseconds(settings_.heartbeat_interval_ms));
    start_resync();
}

// Polls the directory; a resync that heard no answer for a whole interval
// opens its window again rather than wait on a parent silent about some names.
void TcpUpstream::on_heartbeat_tick() {
    link().send(FrameType::kDirectoryRequest, wire::DirectoryRequest{});
    if (resync_.active() && !resync_.progressed()) {
        resync_.on_stall();
        send_resync();
    }
}

void TcpUpstream::on_link_down(sdk::LinkDown cause, const std::string& text) {
    directory_timer_.stop();
    pending_subscribes_.clear();  // subscribed again from subscriptions_ on the next login
    subscriptions_.link_lost();
    resync_.stop();
    const std::string attempted = link().settings().server.to_string();
    // A refused login (wrong password, not allowed) will not pass sooner for asking
    // more often, and a parent rate-limits logins: ten times the delay.
    const uint32_t delay_ms = settings_.reconnect_delay_ms *
                              (cause == sdk::LinkDown::kLoginRefused ? kLoginRefusedBackoff : 1);
    if (parent_.empty()) {
        ++counters_.connect_failures;
        log_->warn("parent {} not reached ({}: {}); next attempt in {} ms", attempted,
                   sdk::link_down_name(cause), text, delay_ms);
    } else {
        ++counters_.links_lost;
        const std::string why = "link to parent " + parent_ + " lost (" +
                                std::string(sdk::link_down_name(cause)) + ": " + text +
                                "); reconnecting";
        log_->warn("{}: {} item(s) suspect", why, subscriptions_.known_ids().size());
        auto unanswered = posts_.link_lost("link to parent " + parent_ +
                                           " lost before the post was answered: it may or may "
                                           "not have reached the publisher");
        parent_.clear();
        for (uint64_t id : subscriptions_.known_ids()) tell(id, wire::STATUS_SOURCE_DOWN, why);
        counters_.posts_refused += unanswered.size();
        for (auto& answer : unanswered) refused_posts_.push_back(std::move(answer));
        if (!unanswered.empty()) post_answers_.fire();
    }
    link_problem_ = fmt::format("no link to a parent server: {} {} ({})", attempted,
                                sdk::link_down_name(cause), text);
    if (standby_->login()) return fail_over(attempted, cause, text);
    reconnect_timer_.start_once(std::chrono::milliseconds(delay_ms));
}

void TcpUpstream::on_link_frame(const proto::Frame& frame) {
    ++counters_.frames_in;
    switch (frame.type) {
        case FrameType::kUpdate:
            return on_update(frame);
        case FrameType::kRefresh:
            return on_refresh(frame);
        case FrameType::kItemStatus:
            return on_item_status(frame);
        case FrameType::kDirectory:
            return on_directory(frame);
        case FrameType::kPostAck:
            return on_post_ack(frame);
        default:
            return;  // GroupStatus is not asked for (LoginRequest.group_status false)
    }
}

// ---- the parent's messages -------------------------------------------------------------------

void TcpUpstream::on_update(const proto::Frame& frame) {
    if (!proto::decode_update_header(frame.body, update_)) return link().abort("malformed update");
    handler_.on_upstream_message(proto::item_source(update_.item_id), frame);
}

void TcpUpstream::on_refresh(const proto::Frame& frame) {
    wire::Refresh refresh;
    if (!parse(frame, refresh) || refresh.item_id() == 0) {
        return link().abort("malformed refresh");
    }
    const uint16_t source = proto::item_source(refresh.item_id());
    if (subscriptions_.learn(refresh.item_id(), refresh.service_name(), refresh.item_name())) {
        new_generation(source, refresh.item_name());
    }
    handler_.on_upstream_message(source, frame);
    on_resync_answer(refresh.service_name(), refresh.item_name(), false);
}

// The parent names an item by another id than before: its distributor
// restarted and every id of that source is void. The edge cannot see the
// distributor's epoch, so it numbers the generations it has seen; the server
// then does what it does on a backbone epoch change (statuses, the items
// waited for again by name), and the refresh that told it serves the first.
void TcpUpstream::new_generation(uint16_t source, const std::string& item) {
    uint64_t& generation = generations_[source];
    const uint64_t previous = generation == 0 ? 1 : generation;
    generation = previous + 1;
    log_->warn("parent {} gives {} a new id: distributor {} restarted", parent_, item, source);
    handler_.on_source_reset(source, previous, generation);
}

void TcpUpstream::on_item_status(const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!parse(frame, status)) return link().abort("malformed item status");
    if (status.status().stream_state() == wire::STREAM_CLOSED) {
        if (status.item_id() != 0) {
            subscriptions_.drop(status.item_id());
        } else {
            subscriptions_.drop(status.service_name(), status.item_name());
        }
    }
    // A status for a name (no id yet: not found, not entitled at the parent)
    // belongs to the distributor of its service.
    const uint16_t source = status.item_id() != 0
                                ? proto::item_source(status.item_id())
                                : service_source(status.service_name()).value_or(0);
    handler_.on_upstream_message(source, frame);
    const bool unchanged = status.status().code() == wire::STATUS_UNCHANGED;
    if (status.item_id() == 0) {
        on_resync_answer(status.service_name(), status.item_name(), unchanged);
    } else if (const auto name = subscriptions_.name_of(status.item_id())) {
        on_resync_answer(name->first, name->second, unchanged);
    }
}

void TcpUpstream::on_directory(const proto::Frame& frame) {
    wire::Directory directory;
    if (!parse(frame, directory)) return link().abort("malformed directory");
    directory_ = std::move(directory);
    std::set<uint16_t> listed;
    for (const auto& service : directory_.services()) {
        listed.insert(proto::service_source(service.service_id()));
    }
    for (uint16_t source : listed) {
        if (sources_.insert(source).second) {
            log_->info("parent {} serves distributor {}", parent_, source);
            handler_.on_source_reset(source, 0, 0);  // first heard
            handler_.on_source_ready(source);        // asks for its directory
        }
    }
    // Every known source gets its part, empty when the parent lists none of its services.
    for (uint16_t source : sources_) deliver_directory(source);
}

void TcpUpstream::deliver_directory(uint16_t source) {
    wire::Directory part;
    for (const auto& service : directory_.services()) {
        if (proto::service_source(service.service_id()) == source) *part.add_services() = service;
    }
    const OwnFrame own(FrameType::kDirectory, part);
    handler_.on_upstream_message(source, own.frame);
}

std::optional<uint16_t> TcpUpstream::service_source(const std::string& service) const {
    for (const auto& info : directory_.services()) {
        if (info.name() == service) return proto::service_source(info.service_id());
    }
    return std::nullopt;
}

void TcpUpstream::tell(uint64_t item_id, wire::StatusCode code, const std::string& text) {
    wire::ItemStatus status;
    status.set_item_id(item_id);
    *status.mutable_status() = make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, code, text);
    const OwnFrame own(FrameType::kItemStatus, status);
    handler_.on_upstream_message(proto::item_source(item_id), own.frame);
}

// ---- what the server asks ------------------------------------------------------------------

std::vector<uint16_t> TcpUpstream::sources() const {
    return {sources_.begin(), sources_.end()};
}

bool TcpUpstream::ready(uint16_t source) const {
    return !parent_.empty() && sources_.contains(source);
}

bool TcpUpstream::silent(uint16_t) const {
    return parent_.empty();
}

std::string TcpUpstream::unhealthy_reason() const {
    if (parent_.empty()) {
        return link_problem_.empty() ? "no link to a parent server yet" : link_problem_;
    }
    if (sources_.empty()) return "parent " + parent_ + " has listed no distributor yet";
    return {};
}

bool TcpUpstream::query_directory(uint16_t source) {
    if (!ready(source)) return false;
    deliver_directory(source);
    return true;
}

// By name, or by the id of an item already held (a fresh image after an item
// gap): either way a Subscribe, which the parent answers with a fresh image.
// A name asked on this link and not yet answered is not asked again: the
// server's image retries (backbone.image_request_timeout_ms) are for a lossy
// backbone, and on a slow parent they would only multiply its images.
bool TcpUpstream::request_image(uint16_t, const wire::ImageRequest& request) {
    if (parent_.empty()) return false;
    std::optional<ParentSubscriptions::Name> name;
    if (!request.item_name().empty()) {
        name.emplace(request.service_name(), request.item_name());
    } else {
        name = subscriptions_.name_of(request.item_id());
        if (!name) return false;
    }
    if (subscriptions_.awaiting(name->first, name->second, monotonic_ns(), kReaskAfterNs)) {
        ++counters_.requests_held;
        return true;
    }
    queue_subscribe(name->first, name->second);
    return true;
}

bool TcpUpstream::send_interest(uint16_t, wire::Interest& interest) {
    for (uint64_t id : interest.held_item_ids()) {
        // Renewals of what is subscribed already cost nothing; an item the
        // server serves from its cache again is subscribed again.
        const auto name = subscriptions_.name_of(id);
        if (name && !subscriptions_.wanted(name->first, name->second) && !parent_.empty()) {
            queue_subscribe(name->first, name->second);
        }
    }
    release({interest.released_item_ids().begin(), interest.released_item_ids().end()});
    return true;
}

// The post goes to the parent on the link, under the post id the server's
// PostRouter gave it; the user it was posted by rides along, and the parent
// shows the publisher "<this edge's login>/<that user>" (proto::posting_user).
bool TcpUpstream::send_post(uint16_t source, wire::Post& post) {
    if (!posts_.start(post.post_id(), source)) {
        refuse_post(source, post.post_id(), wire::STATUS_LIMIT_REACHED,
                    "too many posts await an answer from parent " + parent_);
    } else if (!link().send(FrameType::kPost, post)) {
        posts_.forget(post.post_id());
        refuse_post(source, post.post_id(), wire::STATUS_SOURCE_DOWN,
                    "the link to parent " + parent_ + " could not take the post");
    } else {
        ++counters_.posts_forwarded;
    }
    return true;
}

void TcpUpstream::on_post_ack(const proto::Frame& frame) {
    wire::PostAck ack;
    if (!parse(frame, ack)) return link().abort("malformed PostAck");
    auto answer = posts_.answer(ack);
    if (!answer) return;  // a post refused here when the link was lost
    ++counters_.posts_answered;
    handler_.on_source_post_ack(answer->first, answer->second);
}

void TcpUpstream::refuse_post(uint16_t source, uint64_t post_id, wire::StatusCode code,
                              const std::string& text) {
    ++counters_.posts_refused;
    refused_posts_.emplace_back(source, proto::make_post_ack(post_id, false, code, text));
    post_answers_.fire();
}

void TcpUpstream::answer_refused_posts() {
    auto refused = std::move(refused_posts_);
    refused_posts_.clear();
    for (const auto& [source, ack] : refused) handler_.on_source_post_ack(source, ack);
}

void TcpUpstream::release(const std::vector<uint64_t>& item_ids) {
    wire::Unsubscribe unsubscribe;
    for (uint64_t id : item_ids) {
        if (!subscriptions_.drop(id)) continue;
        unsubscribe.add_item_ids(id);
        // No longer fed: the next subscriber here must get a fresh image, not this one.
        tell(id, wire::STATUS_RECOVERING,
             "not fed since its last subscriber here left; a fresh image is asked for the next");
    }
    if (unsubscribe.item_ids_size() == 0) return;
    counters_.unsubscribed += static_cast<uint64_t>(unsubscribe.item_ids_size());
    if (!parent_.empty()) link().send(FrameType::kUnsubscribe, unsubscribe);
}

void TcpUpstream::queue_subscribe(const std::string& service, const std::string& name) {
    subscriptions_.want(service, name);
    subscriptions_.asked(service, name, monotonic_ns());
    pending_subscribes_[service].push_back(name);
    subscribe_flush_.fire();
}

void TcpUpstream::flush_subscribes() {
    auto pending = std::move(pending_subscribes_);
    pending_subscribes_.clear();
    if (parent_.empty()) return;  // all of it again at the next login
    for (auto& [service, names] : pending) {
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        subscribe(service, names);
    }
}

void TcpUpstream::subscribe(const std::string& service, const std::vector<std::string>& names) {
    std::vector<ResyncPacer::Entry> entries;
    entries.reserve(names.size());
    for (const auto& name : names) entries.push_back({service, name});
    send_subscribes(service, entries);
}

// One Subscribe per batch the parent takes: at most its LoginResponse's
// max_items_per_request names, and half its max_frame_bytes (a frame past it
// closes the link frame_too_large). The images held here ride along when there
// are any (Subscribe.known_seqs).
void TcpUpstream::send_subscribes(const std::string& service,
                                  const std::vector<ResyncPacer::Entry>& entries) {
    constexpr size_t kPerNameBytes = 24;  // tag, length, known id and sequence at most
    const size_t batch = std::max<size_t>(link().max_items_per_request(), 1);
    const size_t max_bytes = std::max<size_t>(
        link().peer_max_frame_bytes() ? link().peer_max_frame_bytes() / 2 : 32768, 1024);
    for (size_t first = 0; first < entries.size();) {
        wire::Subscribe request;
        request.set_service_name(service);
        size_t bytes = service.size();
        bool held = false;
        for (; first < entries.size() && static_cast<size_t>(request.item_names_size()) < batch &&
               (request.item_names_size() == 0 ||
                bytes + entries[first].name.size() + kPerNameBytes <= max_bytes);
             ++first) {
            const auto& entry = entries[first];
            request.add_item_names(entry.name);
            request.add_known_item_ids(entry.item_id);
            request.add_known_seqs(entry.item_seq);
            bytes += entry.name.size() + kPerNameBytes;
            held = held || entry.item_id != 0;
        }
        counters_.names_asked += static_cast<uint64_t>(request.item_names_size());
        if (!held) {
            request.clear_known_item_ids();
            request.clear_known_seqs();
        }
        ++counters_.subscribes;
        link().send(FrameType::kSubscribe, request);
    }
}

}  // namespace mdcast::server
