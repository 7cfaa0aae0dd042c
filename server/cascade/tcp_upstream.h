// The edge server's upstream: a parent mdcast-server reached over TCP, for
// sites without multicast (cloud, WAN, a second site). The parent sees an
// ordinary logged-in client (its auth and entitlements apply); the server
// behind this class sees the same Upstream as with the backbone.
//
// Bytes unchanged: the parent's refreshes, updates and statuses are handed on
// as received (frame.whole), so an update encoded once by its publisher reaches
// the edge's clients in the same bytes; only the directory is re-encoded, cut
// per distributor. Sources are the distributors whose ids the parent's
// service ids carry (proto/source_ids.h), so item ids stay the distributors'.
//
// Interest-based: nothing flows that no client here wants. An image request
// subscribes the name at the parent; the server's interest reports release an
// item when its last subscriber here leaves (an Unsubscribe upstream, and the
// cached image marked not current, so the next subscriber gets a fresh one).
//
// Failure: liveness is judged by progress (nothing at all read for
// heartbeat_timeout_ms while pings go out every heartbeat_interval_ms), not by
// a pong queued behind data. A lost link makes every item held here suspect at
// once (SOURCE_DOWN naming the parent), then the next parent of the list is
// tried after reconnect_delay_ms; once logged in every name is asked again,
// paced (resync_pacer.h), with the sequence of the image held here: the parent
// sends an image only for items that changed, "unchanged" for the others.
//
// Warm standby (upstream.standby_link, two or more parents): a second link is
// kept logged in to the next parent, idle; when the active link is lost the
// resync goes out on it at once, with no connect or login to wait for, and a
// new standby is opened (server/cascade/link_slot.h).
//
// The link is the SDK's own (client-sdk/src/server_link.h: non-blocking
// connect, login, pings, the peer's Close) on the server's loop; the SDK's
// Consumer is not used: it decodes every message for an application thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client-sdk/src/server_link.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/host_port.h"
#include "proto/update_codec.h"
#include "server/cascade/link_slot.h"
#include "server/cascade/parent_posts.h"
#include "server/cascade/parent_subscriptions.h"
#include "server/cascade/resync_pacer.h"
#include "server/upstream.h"
#include "wire/common.pb.h"

namespace mdcast::server {

struct TcpUpstreamSettings {
    std::vector<HostPort> parents;  // tried in turn, at least one
    std::string user;
    std::string password;
    std::string application_id;
    uint32_t heartbeat_interval_ms = 1000;
    uint32_t heartbeat_timeout_ms = 2000;
    uint32_t reconnect_delay_ms = 500;
    bool standby_link = true;  // with two or more parents: a second one kept logged in
    uint32_t resync_max_outstanding = 1000;  // names asked again and not yet answered
    uint32_t max_frame_bytes = 16u << 20;
    std::shared_ptr<const TlsContext> tls;  // null: plaintext
    std::string tls_server_name;            // empty: each parent's host
};

struct TcpUpstreamCounters {
    uint64_t links_up = 0;    // logins accepted by a parent
    uint64_t links_lost = 0;  // links that went down after a login
    uint64_t connect_failures = 0;
    uint64_t subscribes = 0;    // Subscribe messages sent to a parent
    uint64_t unsubscribed = 0;  // items released at a parent
    uint64_t frames_in = 0;
    uint64_t posts_forwarded = 0;   // posts sent to a parent
    uint64_t posts_answered = 0;    // the parent's answers, accepted or not
    uint64_t posts_refused = 0;     // refused here: too many in flight, the link lost first
    uint64_t resync_images = 0;     // resync answers that were images (the item changed)
    uint64_t resync_unchanged = 0;  // resync answers "unchanged": no image needed
    uint64_t names_asked = 0;       // names in the Subscribe messages sent
    uint64_t requests_held = 0;     // image requests not sent: asked on this link, unanswered
    uint64_t failovers = 0;         // active links lost and replaced by the standby at once
};

class TcpUpstream final : public Upstream, private LinkSlot::Owner {
  public:
    TcpUpstream(EventLoop& loop, TcpUpstreamSettings settings, Handler& handler);
    ~TcpUpstream() override;

    // Upstream
    std::vector<uint16_t> sources() const override;
    bool ready(uint16_t source) const override;
    bool silent(uint16_t source) const override;
    bool request_image(uint16_t source, const ::mdcast::wire::v1::ImageRequest& request) override;
    bool query_directory(uint16_t source) override;
    bool send_interest(uint16_t source, ::mdcast::wire::v1::Interest& interest) override;
    // Sent to the parent as this edge's post (the parent checks the edge's post
    // rules, routes it and answers by post id). Refusals made here are answered
    // at the end of the loop iteration, never from inside the call.
    bool send_post(uint16_t source, ::mdcast::wire::v1::Post& post) override;
    void register_metrics(MetricsRegistry& metrics) const override;
    bool interest_based() const override { return true; }
    // Speaks of the link to the parent, not of distributors on a backbone.
    std::string unhealthy_reason() const override;

    const TcpUpstreamCounters& counters() const { return counters_; }
    // The parent now logged in to ("" while down).
    std::string parent() const;
    // The standby link's parent while it is logged in ("" otherwise).
    std::string standby_parent() const;

  private:
    void on_slot_up(LinkSlot& slot) override;
    void on_slot_frame(LinkSlot& slot, const proto::Frame& frame) override;
    void on_slot_down(LinkSlot& slot, sdk::LinkDown cause, const std::string& text) override;
    void on_link_up(const ::mdcast::wire::v1::LoginResponse& response);
    void on_link_frame(const proto::Frame& frame);
    void on_link_down(sdk::LinkDown cause, const std::string& text);
    void on_standby_down(sdk::LinkDown cause, const std::string& text);
    // The standby link becomes the active one; the old one reopens as standby.
    void fail_over(const std::string& lost, sdk::LinkDown cause, const std::string& text);
    bool wants_standby() const { return settings_.standby_link && settings_.parents.size() >= 2; }

    sdk::ServerLink& link() { return active_->link(); }
    const sdk::ServerLink& link() const { return active_->link(); }
    void connect_next();
    void connect_standby();
    // Opens `slot` to the next parent of the list that `other` is not logged in to.
    void open(LinkSlot& slot, const LinkSlot& other);
    void on_directory(const proto::Frame& frame);
    void deliver_directory(uint16_t source);
    void on_refresh(const proto::Frame& frame);
    void on_update(const proto::Frame& frame);
    void on_item_status(const proto::Frame& frame);
    void new_generation(uint16_t source, const std::string& item);
    // Names are subscribed at the end of the loop iteration, batched per service.
    void queue_subscribe(const std::string& service, const std::string& name);
    void flush_subscribes();
    void subscribe(const std::string& service, const std::vector<std::string>& names);
    // Subscribe messages for `entries` of one service, batched as the parent takes them.
    void send_subscribes(const std::string& service,
                         const std::vector<ResyncPacer::Entry>& entries);
    // After a login: every wanted name again, with the image held here.
    void start_resync();
    void send_resync();
    // A refresh or status for the name: answered on this link, and for the resync.
    void on_resync_answer(const std::string& service, const std::string& name, bool unchanged);
    void on_heartbeat_tick();
    void release(const std::vector<uint64_t>& item_ids);
    void on_post_ack(const proto::Frame& frame);
    void refuse_post(uint16_t source, uint64_t post_id, ::mdcast::wire::v1::StatusCode code,
                     const std::string& text);
    void answer_refused_posts();
    // Hands the server a status of our own for an item (its id's source).
    void tell(uint64_t item_id, ::mdcast::wire::v1::StatusCode code, const std::string& text);
    std::optional<uint16_t> service_source(const std::string& service) const;

    TcpUpstreamSettings settings_;
    Handler& handler_;
    std::shared_ptr<spdlog::logger> log_;
    FlushScheduler flusher_;
    LinkSlot slot_a_;
    LinkSlot slot_b_;
    LinkSlot* active_ = &slot_a_;
    LinkSlot* standby_ = &slot_b_;
    Timer reconnect_timer_;
    Timer standby_timer_;    // reopens the standby link
    Timer directory_timer_;  // the parent sends its directory only when asked
    Trigger subscribe_flush_;
    Trigger post_answers_;
    Trigger resync_more_;
    ResyncPacer resync_;
    int64_t resync_started_ns_ = 0;
    TcpUpstreamCounters resync_base_;  // counters when the resync started (for its log line)
    std::vector<std::pair<uint16_t, ::mdcast::wire::v1::PostAck>> refused_posts_;
    std::map<std::string, std::vector<std::string>> pending_subscribes_;
    proto::UpdateView update_;  // reused: only the item id is read
    size_t next_parent_ = 0;
    std::string parent_;        // "" while down
    std::string link_problem_;  // why the last link went down or was not made
    ::mdcast::wire::v1::Directory directory_;
    std::set<uint16_t> sources_;
    std::map<uint16_t, uint64_t> generations_;  // of each source's ids, as seen here
    ParentSubscriptions subscriptions_;
    ParentPosts posts_;
    TcpUpstreamCounters counters_;
};

}  // namespace mdcast::server
