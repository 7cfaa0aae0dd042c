// The admin HTTP endpoint of a daemon (libevent evhttp, on the daemon's loop):
//   GET /metrics  every counter in Prometheus text format
//   GET /healthz  200 "ok" or 503 with the reason
//   GET /stats    JSON detail (per-client state, recent closes)
// Bound to 127.0.0.1 by default; small request limits; anything but GET on
// these paths is refused. Port 0 picks a free port (logged).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "common/metrics.h"
#include "common/net/event_loop.h"

struct evhttp;
struct evhttp_request;

namespace mdcast {

class AdminHttp {
  public:
    struct Handlers {
        std::function<std::pair<bool, std::string>()> health;  // (healthy, reason)
        std::function<std::string()> stats;                    // a JSON document
    };

    // Throws std::runtime_error naming the address when it cannot bind.
    AdminHttp(EventLoop& loop, const std::string& address, uint16_t port,
              const MetricsRegistry& metrics, Handlers handlers);
    ~AdminHttp();
    AdminHttp(const AdminHttp&) = delete;
    AdminHttp& operator=(const AdminHttp&) = delete;

    uint16_t port() const { return port_; }
    uint64_t requests() const { return requests_; }

  private:
    static void on_request(evhttp_request* request, void* self);
    void handle(evhttp_request* request);

    const MetricsRegistry& metrics_;
    Handlers handlers_;
    evhttp* http_;
    uint16_t port_ = 0;
    uint64_t requests_ = 0;
};

}  // namespace mdcast
