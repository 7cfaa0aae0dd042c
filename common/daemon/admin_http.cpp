#include "common/daemon/admin_http.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <stdexcept>

namespace mdcast {

namespace {

void reply(evhttp_request* request, int code, const char* reason, const std::string& body,
           const char* content_type) {
    evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type", content_type);
    evbuffer* buffer = evbuffer_new();
    evbuffer_add(buffer, body.data(), body.size());
    evhttp_send_reply(request, code, reason, buffer);
    evbuffer_free(buffer);
}

}  // namespace

AdminHttp::AdminHttp(EventLoop& loop, const std::string& address, uint16_t port,
                     const MetricsRegistry& metrics, Handlers handlers)
    : metrics_(metrics), handlers_(std::move(handlers)), http_(evhttp_new(loop.base())) {
    if (!http_) throw std::runtime_error("evhttp_new failed");
    evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET);
    evhttp_set_max_headers_size(http_, 8192);
    evhttp_set_max_body_size(http_, 1024);
    evhttp_set_timeout(http_, 10);
    evhttp_set_gencb(http_, &AdminHttp::on_request, this);
    evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, address.c_str(), port);
    if (!bound) {
        evhttp_free(http_);
        throw std::runtime_error("admin http: cannot listen on " + address + ":" +
                                 std::to_string(port) + ": " + std::strerror(errno));
    }
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&local), &length);
    port_ = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
}

AdminHttp::~AdminHttp() {
    evhttp_free(http_);
}

void AdminHttp::on_request(evhttp_request* request, void* self) {
    static_cast<AdminHttp*>(self)->handle(request);
}

void AdminHttp::handle(evhttp_request* request) {
    ++requests_;
    const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
    const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
    const std::string route = path ? path : "";
    if (route == "/metrics") {
        return reply(request, 200, "OK", metrics_.prometheus(), "text/plain; version=0.0.4");
    }
    if (route == "/healthz") {
        const auto [healthy, reason] =
            handlers_.health ? handlers_.health() : std::pair{true, std::string("ok")};
        return reply(request, healthy ? 200 : 503, healthy ? "OK" : "Service Unavailable",
                     reason + "\n", "text/plain");
    }
    if (route == "/stats") {
        return reply(request, 200, "OK", handlers_.stats ? handlers_.stats() : "{}",
                     "application/json");
    }
    reply(request, 404, "Not Found", "try /metrics, /healthz or /stats\n", "text/plain");
}

}  // namespace mdcast
