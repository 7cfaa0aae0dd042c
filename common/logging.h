// Logging set-up: one spdlog logger per component, all sharing one sink.
// Logs go to stderr (journald picks them up under systemd) with the process
// name in every line, e.g. "[mdcast-server.1] [client] ...", or to a file that
// rotates at a size limit (log.file). Timestamps are local time with the UTC
// offset (2026-11-23T20:15:02.123456+00:00). log.format json writes one JSON
// object per line instead. When stderr is the journal, every line starts with
// its syslog priority ("<4>" for warn) so journald files it at the level's priority.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace mdcast::log {

// Valid names for the `log.level` config key.
inline const std::vector<std::string> kLevelNames{"trace", "debug", "info", "warn", "error", "off"};
// Valid names for the `log.format` config key.
inline const std::vector<std::string> kFormatNames{"text", "json"};

// `level` is a config level name; each -v makes it one step more verbose.
// A non-empty `file` sends every line there instead of stderr, rotating at
// `max_file_bytes` and keeping `max_files` old files (file.1 … file.N).
// Throws when the file cannot be opened.
void init(const std::string& process_name, const std::string& level, int verbosity,
          const std::string& file = "", uint64_t max_file_bytes = 0, uint32_t max_files = 0,
          const std::string& format = "text");

// Sends libprotobuf's own messages (e.g. "String field ... contains invalid
// UTF-8 data") to the "protobuf" logger, at most one line per second with the
// number suppressed, instead of raw lines on stderr for every bad message a
// peer sends. init() calls it (the daemons and tools; the SDK leaves the
// application's own handler alone). Thread-safe.
void route_protobuf_logs();

// Changes every logger's level (SIGHUP reload of log.level).
void set_level(const std::string& level, int verbosity);

// Every logger writes to `sink` from now on instead of stderr or the log file
// (the client SDK's application log handler); nullptr goes back to stderr.
void redirect(spdlog::sink_ptr sink);

// The logger for one component ("client", "backbone", ...); created on first use.
std::shared_ptr<spdlog::logger> get(const std::string& component);

// `text` from a peer (a user name, an item name, a peer's close text) made
// safe for one field of a log line: a backslash, every control byte (newline,
// carriage return, escape, ...) and DEL become \\, \n, \r, \t or \xHH, so
// a peer cannot forge a line or drive the terminal; the rest is kept as it is.
std::string escaped(std::string_view text);

// Lets a repeated warning through at most once per `interval`, and says how many
// were suppressed in between. Not thread-safe: one per event loop.
class RateLimiter {
  public:
    explicit RateLimiter(std::chrono::milliseconds interval = std::chrono::seconds(1))
        : interval_ns_(interval.count() * 1'000'000) {}
    // True when this occurrence should be logged; `suppressed` then holds the
    // number skipped since the last logged one.
    bool allow(uint64_t& suppressed);

  private:
    int64_t interval_ns_;
    int64_t last_ns_ = 0;
    uint64_t skipped_ = 0;
};

// The limiter shared by every connection's close warning for one close reason
// (its enum value) in this process (daemons run one event loop): a flood of
// peers misbehaving the same way costs one warning line a second, with the
// count of those suppressed; every close is still counted in the metrics.
RateLimiter& close_warnings(size_t reason);

}  // namespace mdcast::log
