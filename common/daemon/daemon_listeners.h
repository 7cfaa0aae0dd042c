// The TCP listeners of one daemon endpoint (the server's clients, the
// distributor's publishers): a plaintext port, a TLS port, or both, with the
// TLS context they hand to new connections and its SIGHUP reload.
//
// Connections accepted on the TLS port get tls_limits() (the context that is
// current at accept time, the handshake deadline and the shared counters); a
// reload swaps the context for new connections only, and keeps the running
// one when the new files do not load.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/logging.h"
#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "common/net/tcp_connection.h"
#include "common/net/tcp_listener.h"
#include "common/net/tls_context.h"

namespace mdcast {

struct ListenerSettings {
    std::string name;  // config section, for messages: "clients", "publishers"
    std::string address;
    bool plaintext = true;
    uint16_t port = 0;  // 0: pick a free port
    bool tls = false;
    uint16_t tls_port = 0;
    int backlog = 128;
    TlsServerSettings tls_settings;
    uint32_t handshake_timeout_ms = 5000;
};

class DaemonListeners {
  public:
    using AcceptCallback = std::function<void(int fd, std::string peer, bool tls)>;

    // Loads the TLS files and binds the ports. Throws std::runtime_error naming
    // the key or file: neither listener on, TLS files that do not load, a port in use.
    DaemonListeners(EventLoop& loop, const ListenerSettings& settings, AcceptCallback on_accept);

    // 0 when that listener is off.
    uint16_t port() const { return plaintext_ ? plaintext_->port() : 0; }
    uint16_t tls_port() const { return tls_listener_ ? tls_listener_->port() : 0; }
    bool tls_enabled() const { return tls_listener_ != nullptr; }
    // "on 127.0.0.1:14002, TLS on 127.0.0.1:14102 (TLS 1.2+, subject ...)" for the start-up log
    // ("on 127.0.0.1:14102 (TLS 1.2+, ...)" when TLS only).
    std::string describe() const;
    void disable();

    // The TLS part of a new TLS connection's limits.
    TcpConnection::Limits::Tls tls_limits();

    // SIGHUP: re-reads the TLS files (whether or not their names changed).
    // Returns true when the new context took over; false (logged, running
    // context kept) when they do not load or TLS is off.
    bool reload_tls(const TlsServerSettings& settings, uint32_t handshake_timeout_ms);

    // tls_handshakes_{ok,failed,timed_out}_total and the tls_connections gauge.
    void register_metrics(MetricsRegistry& metrics, std::function<double()> tls_connections);
    const TlsCounters& counters() const { return counters_; }
    // Failed handshakes are logged at most once a second (a scanner or a
    // misconfigured fleet must not flood the log), with the number suppressed.
    void log_handshake_failure(uint64_t id, const std::string& peer, CloseReason reason,
                               const std::string& text);

  private:
    ListenerSettings settings_;
    std::shared_ptr<const TlsContext> context_;
    TlsCounters counters_;
    std::unique_ptr<TcpListener> plaintext_;
    std::unique_ptr<TcpListener> tls_listener_;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter failure_log_;
};

}  // namespace mdcast
