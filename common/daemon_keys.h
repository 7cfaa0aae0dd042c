// Configuration keys every daemon has, declared once for any config struct
// with the matching members (log_level, log_file, log_max_file_bytes,
// log_max_files, shutdown_grace_ms).
#pragma once

#include "common/config_schema.h"
#include "common/logging.h"

namespace mdcast {

template <class C>
void add_log_keys(config::Schema<C>& s) {
    s.choice("log.level", &C::log_level, "info", log::kLevelNames,
             "Log level; each -v on the command line makes it one step more verbose. "
             "Reloads on SIGHUP.");
    s.string("log.file", &C::log_file, "",
             "Write the log to this file instead of stderr/journald; {name} becomes the "
             "process name (mdcast-server.2), so instances keep separate files. Empty: stderr.");
    s.template integer<uint64_t>("log.max_file_bytes", &C::log_max_file_bytes, 100ull << 20,
                                 4096, 1ull << 40,
                                 "The log file rotates when it reaches this size.");
    s.template integer<uint32_t>("log.max_files", &C::log_max_files, 5, 1, 1000,
                                 "Rotated files kept (name.1.log … name.N.log); older ones are deleted.");
}

template <class C>
void add_shutdown_keys(config::Schema<C>& s) {
    s.template integer<uint32_t>(
        "shutdown.grace_ms", &C::shutdown_grace_ms, 2000, 0, 600000,
        "On SIGTERM: stop accepting, send every peer a shutdown Close behind what is queued for "
        "it, and exit when all of it is written or after this long, whichever is first. A second "
        "SIGTERM exits at once.");
}

}  // namespace mdcast
