// Configuration keys every daemon has, declared once for any config struct
// with the matching members (log_level, log_file, log_max_file_bytes,
// log_max_files, log_format, process_sched_slice_us, shutdown_grace_ms, tls_*).
#pragma once

#include "common/config/config_schema.h"
#include "common/daemon/admin_http.h"
#include "common/logging.h"
#include "common/net/tls_context.h"
#include "common/scheduling.h"

namespace mdcast {

template <class C>
void add_log_keys(config::Schema<C>& s) {
    s.choice("log.level", &C::log_level, "info", log::kLevelNames,
             "Log level; each -v on the command line makes it one step more verbose.")
        .reloads();
    s.choice("log.format", &C::log_format, "text", log::kFormatNames,
             "text: one line per event (time with UTC offset, level, process, component, "
             "message). json: one JSON object per line with the same fields, for log shippers.");
    s.string("log.file", &C::log_file, "",
             "Write the log to this file instead of stderr/journald; {name} becomes the "
             "process name (mdcast-server.2), so instances keep separate files. Empty: stderr.");
    s.template integer<uint64_t>("log.max_file_bytes", &C::log_max_file_bytes, 100ull << 20, 4096,
                                 1ull << 40, "The log file rotates when it reaches this size.");
    s.template integer<uint32_t>(
        "log.max_files", &C::log_max_files, 5, 1, 1000,
        "Rotated files kept (name.1.log … name.N.log); older ones are deleted.");
}

template <class C>
void add_admin_token_key(config::Schema<C>& s) {
    s.string("admin.token_file", &C::admin_token_file, "",
             "File holding the token (at least 16 characters) that POSTs to the admin endpoint "
             "(/kick, /drain, /reload; mdcastctl) must carry. Empty: those are refused. Keep it "
             "readable by the daemon's user and the operators only.");
}

// The members add_admin_limit_keys fills; a daemon's config struct derives from it.
struct AdminLimitKeys {
    uint32_t admin_max_connections = 0;
    uint32_t admin_request_timeout_ms = 0;
};

// How much of the daemon one admin caller can hold: connections and time.
template <class C>
void add_admin_limit_keys(config::Schema<C>& s) {
    s.template integer<uint32_t>(
        "admin.max_connections", &C::admin_max_connections, 16, 1, 1024,
        "Admin connections open at once; more are refused (503 when their request arrives "
        "first) and counted in admin_connections_refused_total.");
    s.template integer<uint32_t>(
        "admin.request_timeout_ms", &C::admin_request_timeout_ms, 5000, 100, 600000,
        "An admin connection lives at most this long from accept: one trickling its request, or "
        "idle between keep-alive requests, is closed (admin_timeouts_total), so slow callers "
        "cannot hold the daemon's descriptors.");
}

inline AdminHttp::Limits admin_limits(const AdminLimitKeys& config, bool protect_reads) {
    return {config.admin_max_connections, config.admin_request_timeout_ms, protect_reads};
}

template <class C>
void add_process_keys(config::Schema<C>& s) {
    s.template integer<uint32_t>(
        "process.sched_slice_us", &C::process_sched_slice_us, 0, 0, kMaxSchedSliceUs,
        "The daemon's scheduler time slice (Linux 6.12 or later, no privilege needed), 0: the "
        "kernel's default (1.4 ms on 2 CPUs, more on larger machines). A short slice such as 100 "
        "lets the daemon preempt a busier task on its core when data arrives instead of waiting "
        "for that task's slice to end: a shorter latency tail on a shared core, for the same CPU. "
        "Below 100 is refused. A kernel without custom slices logs a warning and runs as before.");
    s.rule([](const C& c, config::Problems& problems) {  // the setter's own range rule
        std::string problem = sched_slice_problem(c.process_sched_slice_us);
        if (!problem.empty()) problems.push_back({"process.sched_slice_us", std::move(problem)});
    });
}

template <class C>
void add_shutdown_keys(config::Schema<C>& s) {
    s.template integer<uint32_t>(
        "shutdown.grace_ms", &C::shutdown_grace_ms, 2000, 0, 600000,
        "On SIGTERM: stop accepting, send every peer a shutdown Close behind what is queued for "
        "it, and exit when all of it is written or after this long, whichever is first. A second "
        "SIGTERM exits at once.");
}

// The members add_tls_keys fills; a daemon's config struct derives from it.
struct TlsKeys {
    TlsServerSettings tls;  // the rows bind straight into the listener's TLS settings
    uint32_t tls_handshake_timeout_ms = 0;
};

// The TLS identity and policy of a daemon's TLS listener (clients.tls at the
// server, publishers.tls at the distributor). Every key reloads: a SIGHUP builds a new
// context from them (the files are re-read even when no key changed), used by new
// connections; when it does not build, the changed keys are reported failed.
template <class C>
void add_tls_keys(config::Schema<C>& s) {
    s.string("tls.cert_file", config::nested(&C::tls, &TlsServerSettings::cert_file), "",
             "PEM certificate chain of this daemon (leaf first), presented on its TLS listener. "
             "Re-read on every SIGHUP: new connections get the new certificate, open ones keep "
             "theirs; a file that does not load is logged and the running certificate kept.")
        .reloads();
    s.string("tls.key_file", config::nested(&C::tls, &TlsServerSettings::key_file), "",
             "PEM private key of tls.cert_file (keep it readable by the daemon's user only).")
        .reloads();
    s.string("tls.ca_file", config::nested(&C::tls, &TlsServerSettings::ca_file), "",
             "PEM CA certificates that client certificates must chain to; needed when "
             "tls.client_certs is optional or required.")
        .reloads();
    s.choice("tls.min_version", config::nested(&C::tls, &TlsServerSettings::min_version), "1.2",
             kTlsVersionNames,
             "Lowest TLS version accepted (1.2 is the floor; 1.3 refuses 1.2 clients).")
        .reloads();
    s.choice("tls.client_certs", config::nested(&C::tls, &TlsServerSettings::client_certs), "none",
             kTlsClientCertModes,
             "none: no client certificate is asked for. optional: asked for and, when sent, "
             "verified against tls.ca_file. required: a client without a valid certificate fails "
             "the handshake (tls_handshake_failed).")
        .reloads();
    s.template integer<uint32_t>(
         "tls.handshake_timeout_ms", &C::tls_handshake_timeout_ms, 5000, 100, 600000,
         "A TLS connection whose handshake has not finished after this long is closed with "
         "reason tls_handshake_timeout (counted; guards against idle or slow-loris peers).")
        .reloads();
}

inline const TlsServerSettings& tls_server_settings(const TlsKeys& config) {
    return config.tls;
}

}  // namespace mdcast
