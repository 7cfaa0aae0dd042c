// The admin HTTP endpoint of a daemon (libevent evhttp, on the daemon's loop):
//   GET  /metrics       every counter in Prometheus text format
//   GET  /healthz       200 "ok" or 503 with the reason
//   GET  /stats         JSON detail (per-client state, recent closes)
//   GET  /info          JSON: build, process, effective configuration, counts
//   GET  /items[?name=] JSON: one cached item, or every item's summary
//   POST /kick?id=N, /drain?seconds=S, /reload   change something: need the token
// Bound to 127.0.0.1 by default; small request limits. A POST must carry
// "Authorization: Bearer TOKEN" with the token of admin.token_file; without a
// token file every POST is refused. Port 0 picks a free port (logged).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "common/metrics.h"
#include "common/net/event_loop.h"

struct evhttp;
struct evhttp_request;

namespace mdcast {

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

    // Throws std::runtime_error naming the address when it cannot bind.
    // `token` empty: every POST is refused.
    AdminHttp(EventLoop& loop, const std::string& address, uint16_t port,
              const MetricsRegistry& metrics, Handlers handlers, std::string token = "");

    // The token in `path` (surrounding whitespace dropped); throws std::runtime_error
    // naming the file when it cannot be read or holds fewer than 16 characters.
    static std::string load_token(const std::string& path);
    ~AdminHttp();
    AdminHttp(const AdminHttp&) = delete;
    AdminHttp& operator=(const AdminHttp&) = delete;

    uint16_t port() const { return port_; }
    uint64_t requests() const { return requests_; }
    uint64_t refused_posts() const { return refused_posts_; }  // wrong or missing token

  private:
    static void on_request(evhttp_request* request, void* self);
    void handle(evhttp_request* request);
    void handle_post(evhttp_request* request, const std::string& route, const Query& query);
    bool authorized(evhttp_request* request) const;

    const MetricsRegistry& metrics_;
    Handlers handlers_;
    std::string token_;
    evhttp* http_;
    uint16_t port_ = 0;
    uint64_t requests_ = 0;
    uint64_t refused_posts_ = 0;
};

}  // namespace mdcast
