#include "common/daemon/admin_http.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <sstream>
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

void reply(evhttp_request* request, const AdminHttp::Reply& answer) {
    const bool ok = answer.first >= 200 && answer.first < 300;
    reply(request, answer.first, ok ? "OK" : "Refused", answer.second,
          ok ? "application/json" : "text/plain");
}

AdminHttp::Query parse_query(const evhttp_uri* uri) {
    AdminHttp::Query query;
    const char* text = uri ? evhttp_uri_get_query(uri) : nullptr;
    if (!text) return query;
    evkeyvalq pairs{};
    if (evhttp_parse_query_str(text, &pairs) != 0) return query;
    for (evkeyval* pair = pairs.tqh_first; pair; pair = pair->next.tqe_next)
        query[pair->key] = pair->value;
    evhttp_clear_headers(&pairs);
    return query;
}

}  // namespace

std::string AdminHttp::load_token(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error(path + ": cannot read the admin token file");
    std::stringstream text;
    text << file.rdbuf();
    std::string token = text.str();
    const auto first = token.find_first_not_of(" \t\r\n");
    const auto last = token.find_last_not_of(" \t\r\n");
    token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
    if (token.size() < 16)
        throw std::runtime_error(path + ": the admin token must have at least 16 characters");
    return token;
}

AdminHttp::AdminHttp(EventLoop& loop, const std::string& address, uint16_t port,
                     const MetricsRegistry& metrics, Handlers handlers, std::string token,
                     Limits limits)
    : metrics_(metrics),
      handlers_(std::move(handlers)),
      token_(std::move(token)),
      limits_(limits),
      connections_(loop, limits.max_connections, limits.request_timeout_ms),
      http_(evhttp_new(loop.base())) {
    if (!http_) throw std::runtime_error("evhttp_new failed");
    evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_max_headers_size(http_, 8192);
    evhttp_set_max_body_size(http_, 1024);
    evhttp_set_timeout(http_, static_cast<int>((limits.request_timeout_ms + 999) / 1000));
    connections_.attach(http_);
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
    guard_ = std::make_unique<AcceptGuard>(loop, evhttp_bound_socket_get_listener(bound),
                                           "admin http on " + address);
}

AdminHttp::~AdminHttp() {
    guard_.reset();
    evhttp_free(http_);
}

void AdminHttp::register_metrics(MetricsRegistry& m) const {
    m.counter("admin_requests_total", "Requests to the admin endpoint",
              [this] { return static_cast<double>(requests_); });
    m.counter("admin_refused_total",
              "Admin requests refused: POSTs and (auth on) reads of /stats or /items without the "
              "admin token",
              [this] { return static_cast<double>(refused_posts_ + refused_reads_); });
    m.counter("admin_connections_refused_total",
              "Admin connections refused: admin.max_connections were open",
              [this] { return static_cast<double>(connections_.refused()); });
    m.counter("admin_timeouts_total",
              "Admin connections closed with no answer within admin.request_timeout_ms",
              [this] { return static_cast<double>(connections_.timed_out()); });
    m.gauge("admin_connections", "Admin connections open now",
            [this] { return static_cast<double>(connections_.open()); });
}

void AdminHttp::on_request(evhttp_request* request, void* self) {
    static_cast<AdminHttp*>(self)->handle(request);
}

void AdminHttp::handle(evhttp_request* request) {
    ++requests_;
    if (connections_.over_limit(
            evhttp_connection_get_bufferevent(evhttp_request_get_connection(request)))) {
        return reply(
            request, 503, "Service Unavailable",
            "admin.max_connections (" + std::to_string(limits_.max_connections) + ") reached\n",
            "text/plain");
    }
    const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
    const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
    const std::string route = path ? path : "";
    const Query query = parse_query(uri);
    if (evhttp_request_get_command(request) == EVHTTP_REQ_POST)
        return handle_post(request, route, query);
    if (route == "/metrics") {
        return reply(request, 200, "OK", metrics_.prometheus(), "text/plain; version=0.0.4");
    }
    if (route == "/healthz") {
        const auto [healthy, reason] =
            handlers_.health ? handlers_.health() : std::pair{true, std::string("ok")};
        return reply(request, healthy ? 200 : 503, healthy ? "OK" : "Service Unavailable",
                     reason + "\n", "text/plain");
    }
    if ((route == "/stats" || route == "/items") && refuse_read(request)) return;
    if (route == "/stats") {
        return reply(request, 200, "OK", handlers_.stats ? handlers_.stats() : "{}",
                     "application/json");
    }
    if (route == "/info" && handlers_.info) {
        return reply(request, 200, "OK", handlers_.info(), "application/json");
    }
    if (route == "/items" && handlers_.items) return reply(request, handlers_.items(query));
    reply(request, 404, "Not Found", "try /metrics, /healthz, /stats, /info or /items\n",
          "text/plain");
}

// "Authorization: Bearer TOKEN", compared in constant time.
bool AdminHttp::authorized(evhttp_request* request) const {
    const char* header =
        evhttp_find_header(evhttp_request_get_input_headers(request), "Authorization");
    const std::string expected = "Bearer " + token_;
    return !token_.empty() && header && std::strlen(header) == expected.size() &&
           CRYPTO_memcmp(header, expected.data(), expected.size()) == 0;
}

bool AdminHttp::refuse_read(evhttp_request* request) {
    if (!limits_.protect_reads || authorized(request)) return false;
    ++refused_reads_;
    reply(request, token_.empty() ? 403 : 401, token_.empty() ? "Forbidden" : "Unauthorized",
          token_.empty() ? "authentication is on and admin.token_file is not set: /stats and "
                           "/items, which show clients and data, are off\n"
                         : "authentication is on: /stats and /items need the admin token\n",
          "text/plain");
    return true;
}

void AdminHttp::handle_post(evhttp_request* request, const std::string& route, const Query& query) {
    const bool known = route == "/kick" || route == "/drain" || route == "/reload";
    if (!known || !handlers_.act) {
        return reply(request, 405, "Method Not Allowed", "POST only to /kick, /drain or /reload\n",
                     "text/plain");
    }
    if (token_.empty()) {
        return reply(request, 403, "Forbidden",
                     "admin.token_file is not set: changes through the admin endpoint are off\n",
                     "text/plain");
    }
    if (!authorized(request)) {
        ++refused_posts_;
        return reply(request, 401, "Unauthorized", "missing or wrong admin token\n", "text/plain");
    }
    reply(request, handlers_.act(route.substr(1), query));
}

}  // namespace mdcast
