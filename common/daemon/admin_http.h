// The admin HTTP endpoint of a daemon (libevent evhttp, on the daemon's loop):
//   GET  /metrics       every counter in Prometheus text format
//   GET  /healthz       200 "ok" or 503 with the reason
//   GET  /stats         JSON detail (per-client state, recent closes)
//   GET  /info          JSON: build, process, effective configuration, counts
//   GET  /items[?name=] JSON: one cached item, or every item's summary
//   POST /kick?id=N, /drain?seconds=S, /reload   change something: need the token
// Bound to 127.0.0.1 by default; small request limits, a bounded number of
// connections each living at most Limits::request_timeout_ms (AdminConnections),
// and accept paused, not spinning, when descriptors run out (AcceptGuard).
// A POST must carry "Authorization: Bearer TOKEN" with the token of
// admin.token_file; without a token file every POST is refused. With
// Limits::protect_reads (authentication on) the same holds for /stats and
// /items, which show clients and data. Port 0 picks a free port (logged).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "common/daemon/admin_connections.h"
#include "common/metrics.h"
#include "common/net/accept_guard.h"
#include "common/net/event_loop.h"

struct evhttp;
struct evhttp_request;

namespace mdcast {

struct AdminLimits {
    size_t max_connections = 16;         // admin.max_connections
    uint32_t request_timeout_ms = 5000;  // admin.request_timeout_ms
    bool protect_reads = false;          // /stats and /items need the token (auth on)
};

class AdminHttp {
  public:
    using Query = std::map<std::string, std::string>;
    // (HTTP status, body); the body is JSON for 2xx and a line of text otherwise.
    using Reply = std::pair<int, std::string>;

    struct Handlers {
        std::function<std::pair<bool, std::string>()> health;  // (healthy, reason)
        std::function<std::string()> stats;                    // a JSON document
        std::function<std::string()> info;                     // a JSON document
        std::function<Reply(const Query&)> items;              // GET /items
        // POST /kick, /drain, /reload: `action` is the path without the slash.
        std::function<Reply(const std::string& action, const Query&)> act;
    };

    using Limits = AdminLimits;

    // Throws std::runtime_error naming the address when it cannot bind.
    // `token` empty: every POST (and with protect_reads every /stats, /items) is refused.
    AdminHttp(EventLoop& loop, const std::string& address, uint16_t port,
              const MetricsRegistry& metrics, Handlers handlers, std::string token = "",
              Limits limits = {});

    // The token in `path` (surrounding whitespace dropped); throws std::runtime_error
    // naming the file when it cannot be read or holds fewer than 16 characters.
    static std::string load_token(const std::string& path);
    ~AdminHttp();
    AdminHttp(const AdminHttp&) = delete;
    AdminHttp& operator=(const AdminHttp&) = delete;

    uint16_t port() const { return port_; }
    uint64_t requests() const { return requests_; }
    uint64_t refused_posts() const { return refused_posts_; }  // wrong or missing token
    uint64_t refused_reads() const { return refused_reads_; }  // protect_reads, no token
    uint64_t refused_connections() const { return connections_.refused(); }
    uint64_t timed_out() const { return connections_.timed_out(); }
    size_t open_connections() const { return connections_.open(); }
    // admin_requests_total and the counters above, with the daemon's prefix.
    void register_metrics(MetricsRegistry& metrics) const;

  private:
    static void on_request(evhttp_request* request, void* self);
    void handle(evhttp_request* request);
    void handle_post(evhttp_request* request, const std::string& route, const Query& query);
    bool authorized(evhttp_request* request) const;
    // A read that shows clients or data, refused when protected and unauthorized.
    bool refuse_read(evhttp_request* request);

    const MetricsRegistry& metrics_;
    Handlers handlers_;
    std::string token_;
    Limits limits_;
    AdminConnections connections_;
    evhttp* http_;
    std::unique_ptr<AcceptGuard> guard_;
    uint16_t port_ = 0;
    uint64_t requests_ = 0;
    uint64_t refused_posts_ = 0;
    uint64_t refused_reads_ = 0;
};

}  // namespace mdcast
