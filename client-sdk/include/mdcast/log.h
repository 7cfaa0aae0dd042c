// Where libmdcast's log lines go: stderr by default, or a handler the
// application installs so they join its own log.
//
// Everything here is process-wide (one setting for every Consumer and
// Publisher) and safe to call from any thread, except from inside the handler.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "mdcast/export.h"

namespace mdcast {

enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// `message` is one line without a newline, "<component>: <text>", e.g.
// "sdk.consumer: 127.0.0.1:14002 lost: connection closed by peer". It is
// valid during the call only.
using LogHandler = std::function<void(LogLevel level, std::string_view message)>;

// From now on every SDK log line at or above the level threshold goes to
// `handler` instead of stderr; an empty handler restores stderr. The handler is
// called on the SDK's I/O threads, one call at a time; it must not block for
// long, must not call set_log_handler(), and what it throws is dropped.
MDCAST_API void set_log_handler(LogHandler handler);

// The threshold of the SDK's log lines (default kWarn). A non-empty
// ConnectionOptions::log_level overrides it for the consumer's (or
// publisher's) lines when that Consumer (Publisher) is constructed.
MDCAST_API void set_log_level(LogLevel level);

// "trace", "debug", "info", "warn", "error", "off".
MDCAST_API std::string to_string(LogLevel level);
MDCAST_API std::ostream& operator<<(std::ostream& out, LogLevel level);

}  // namespace mdcast
