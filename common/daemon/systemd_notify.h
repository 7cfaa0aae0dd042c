// Tells systemd how a daemon started as a `Type=notify` unit is doing
// (sd_notify(3), through libsystemd): READY=1 once it serves, STOPPING=1 when
// it begins to shut down, and WATCHDOG=1 from the event loop at half the unit's
// WatchdogSec, so a loop that wedges gets the daemon killed and restarted.
// Outside systemd (no NOTIFY_SOCKET in the environment) every call does nothing.
#pragma once

#include <chrono>
#include <string>

#include "common/logging.h"
#include "common/net/event_loop.h"

namespace mdcast {

class SystemdNotifier {
  public:
    // Starts the watchdog pings on `loop` when the service manager asked for them
    // (WATCHDOG_USEC set and WATCHDOG_PID, if set, is this process).
    explicit SystemdNotifier(EventLoop& loop);

    // READY=1 with a one-line STATUS shown by `systemctl status`.
    void ready(const std::string& status);
    // RELOADING=1 (SIGHUP); ready() again when the reload is done.
    void reloading();
    // STOPPING=1 with the reason; the watchdog keeps pinging while the loop drains.
    void stopping(const std::string& status);

    // Zero when systemd asked for no watchdog (or we are not under systemd).
    std::chrono::microseconds watchdog_interval() const { return watchdog_interval_; }

  private:
    void on_timer();
    void send(const std::string& state);

    std::chrono::microseconds watchdog_interval_{0};
    Timer watchdog_timer_;
    log::RateLimiter failure_log_{std::chrono::seconds(60)};
};

}  // namespace mdcast
