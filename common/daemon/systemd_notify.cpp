#include "common/daemon/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <ctime>

namespace mdcast {

SystemdNotifier::SystemdNotifier(EventLoop& loop) : watchdog_timer_(loop, [this] { on_timer(); }) {
    uint64_t usec = 0;
    // Keeps WATCHDOG_USEC in the environment (0): we never fork, nothing inherits it.
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        watchdog_interval_ = std::chrono::microseconds(usec / 2);
        watchdog_timer_.start_periodic(watchdog_interval_);
        log::get("main")->info("systemd watchdog: {} ms, pinging every {} ms", usec / 1000,
                               watchdog_interval_.count() / 1000);
    }
}

void SystemdNotifier::ready(const std::string& status) {
    send("READY=1\nSTATUS=" + status);
}

void SystemdNotifier::reloading() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const uint64_t usec = static_cast<uint64_t>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
    send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading");
}

void SystemdNotifier::stopping(const std::string& status) {
    send("STOPPING=1\nSTATUS=" + status);
}

void SystemdNotifier::on_timer() {
    send("WATCHDOG=1");
}

// sd_notify returns 0 without NOTIFY_SOCKET, > 0 when sent, < 0 (an errno) on failure.
// A failure is logged, rate-limited, and otherwise ignored: the daemon keeps serving,
// and a watchdog that stops hearing from us restarts it anyway.
void SystemdNotifier::send(const std::string& state) {
    const int result = sd_notify(0, state.c_str());
    uint64_t suppressed = 0;
    if (result < 0 && failure_log_.allow(suppressed)) {
        log::get("main")->warn("sd_notify({}) failed: errno {} ({} suppressed)",
                               state.substr(0, state.find('\n')), -result, suppressed);
    }
}

}  // namespace mdcast
