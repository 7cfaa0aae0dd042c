// The link to a parent in /metrics (docs/cascade.md).
#include "server/cascade/tcp_upstream.h"

namespace mdcast::server {

void TcpUpstream::register_metrics(MetricsRegistry& m) const {
    const TcpUpstreamCounters& c = counters_;
    m.gauge("upstream_link_up", "1 while logged in to a parent server (upstream.kind: tcp)",
            [this] { return parent_.empty() ? 0.0 : 1.0; });
    m.gauge("upstream_items_wanted", "Item names subscribed (or being subscribed) at the parent",
            [this] { return static_cast<double>(subscriptions_.size()); });
    m.counter("upstream_links_up_total", "Logins accepted by a parent server",
              [&c] { return static_cast<double>(c.links_up); });
    m.counter("upstream_links_lost_total", "Links to a parent that went down after a login",
              [&c] { return static_cast<double>(c.links_lost); });
    m.counter("upstream_connect_failures_total", "Attempts that did not reach a logged-in parent",
              [&c] { return static_cast<double>(c.connect_failures); });
    m.gauge("upstream_standby_link_up",
            "1 while a second parent is logged in, idle, to take over at once if the link is "
            "lost (upstream.standby_link)",
            [this] { return standby_->login() ? 1.0 : 0.0; });
    m.counter("upstream_failovers_total",
              "Links lost and replaced at once by the standby link (no connect or login to wait)",
              [&c] { return static_cast<double>(c.failovers); });
    m.counter("upstream_subscribes_total", "Subscribe messages sent to a parent",
              [&c] { return static_cast<double>(c.subscribes); });
    m.counter("upstream_released_total", "Items released at a parent (last subscriber here left)",
              [&c] { return static_cast<double>(c.unsubscribed); });
    m.counter("upstream_frames_in_total", "Frames read from a parent",
              [&c] { return static_cast<double>(c.frames_in); });
    m.counter("upstream_resync_images_total",
              "Items asked again after a reconnect that came back as images (they changed)",
              [&c] { return static_cast<double>(c.resync_images); });
    m.counter("upstream_resync_unchanged_total",
              "Items asked again after a reconnect that the parent said were unchanged (no image)",
              [&c] { return static_cast<double>(c.resync_unchanged); });
    m.counter("upstream_names_asked_total", "Item names in the Subscribe messages sent to a parent",
              [&c] { return static_cast<double>(c.names_asked); });
    m.counter("upstream_requests_held_total",
              "Image requests not sent again: the name was asked on this link and not yet answered",
              [&c] { return static_cast<double>(c.requests_held); });
    m.gauge("upstream_resync_waiting",
            "Items of the resync under way not yet answered (asked or waiting to be asked)",
            [this] { return static_cast<double>(resync_.waiting() + resync_.outstanding()); });
    m.counter("upstream_posts_forwarded_total", "Posts sent to the parent",
              [&c] { return static_cast<double>(c.posts_forwarded); });
    m.counter("upstream_posts_answered_total", "The parent's answers to posts, accepted or not",
              [&c] { return static_cast<double>(c.posts_answered); });
    m.counter("upstream_posts_refused_total",
              "Posts refused by the edge: too many in flight, or the link lost before the answer",
              [&c] { return static_cast<double>(c.posts_refused); });
}

}  // namespace mdcast::server
