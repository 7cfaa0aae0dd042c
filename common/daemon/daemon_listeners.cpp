#include "common/daemon/daemon_listeners.h"

#include <stdexcept>

#include "common/logging.h"

namespace mdcast {

DaemonListeners::DaemonListeners(EventLoop& loop, const ListenerSettings& settings,
                                 AcceptCallback on_accept)
    : settings_(settings), log_(log::get("tls")) {
    const std::string& n = settings.name;
    if (!settings.plaintext && !settings.tls) {
        throw std::runtime_error(n + ".plaintext is false and " + n +
                                 ".tls is false: no listener is left");
    }
    if (settings.tls)
        context_ = TlsContext::server(settings.tls_settings);  // throws naming the file
    if (settings.plaintext) {
        plaintext_ = std::make_unique<TcpListener>(
            loop, settings.address, settings.port, settings.backlog,
            [on_accept](int fd, std::string peer) { on_accept(fd, std::move(peer), false); });
    }
    if (settings.tls) {
        tls_listener_ = std::make_unique<TcpListener>(
            loop, settings.address, settings.tls_port, settings.backlog,
            [on_accept](int fd, std::string peer) { on_accept(fd, std::move(peer), true); });
    }
}

std::string DaemonListeners::describe() const {
    std::string text = "on ";
    if (plaintext_) text += settings_.address + ":" + std::to_string(port());
    if (tls_listener_) {
        text += (plaintext_ ? ", TLS on " : "") + settings_.address + ":" +
                std::to_string(tls_port()) + " (TLS " + settings_.tls_settings.min_version + "+, " +
                context_->description() + ", client certificates " +
                settings_.tls_settings.client_certs + ")";
    }
    return text;
}

void DaemonListeners::disable() {
    if (plaintext_) plaintext_->disable();
    if (tls_listener_) tls_listener_->disable();
}

TcpConnection::Limits::Tls DaemonListeners::tls_limits() {
    return {context_, {}, settings_.handshake_timeout_ms, &counters_};
}

bool DaemonListeners::reload_tls(const TlsServerSettings& settings, uint32_t handshake_timeout_ms) {
    if (!tls_listener_) return false;
    try {
        context_ = TlsContext::server(settings);
    } catch (const std::exception& error) {
        log_->error("SIGHUP: {}; keeping the running TLS certificate ({})", error.what(),
                    context_->description());
        return false;
    }
    settings_.tls_settings = settings;
    settings_.handshake_timeout_ms = handshake_timeout_ms;
    log_->info("SIGHUP: TLS files re-read ({} / {}): {}; new {} connections use it",
               settings.cert_file, settings.key_file, context_->description(), settings_.name);
    return true;
}

void DaemonListeners::log_handshake_failure(uint64_t id, const std::string& peer,
                                            CloseReason reason, const std::string& text) {
    uint64_t suppressed = 0;
    if (!failure_log_.allow(suppressed)) return;
    log_->warn(
        "{} connection {} from {}: {}: {}{}", settings_.name, id, peer, close_reason_name(reason),
        text,
        suppressed ? fmt::format(" ({} more handshake failures not logged)", suppressed) : "");
}

void DaemonListeners::register_metrics(MetricsRegistry& m,
                                       std::function<double()> tls_connections) {
    const TlsCounters& c = counters_;
    m.gauge("tls_connections", "Connections on the TLS listener open now",
            std::move(tls_connections));
    m.counter("tls_handshakes_ok_total", "TLS handshakes completed",
              [&c] { return c.handshakes_ok; });
    m.counter("tls_handshakes_failed_total",
              "TLS handshakes failed (bad or missing certificate, not TLS)",
              [&c] { return c.handshakes_failed; });
    m.counter("tls_handshakes_timed_out_total",
              "TLS handshakes not finished within tls.handshake_timeout_ms",
              [&c] { return c.handshakes_timed_out; });
}

}  // namespace mdcast
