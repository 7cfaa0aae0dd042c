#include "common/net/accept_guard.h"

#include <event2/listener.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace mdcast {

namespace {

// One event loop per process: plain process-wide state, no locks.
struct ProcessState {
    int reserve = -1;
    uint64_t pauses = 0;
    uint64_t dropped = 0;
    int paused_listeners = 0;
    log::RateLimiter log_limit;
    // libevent hands the error callback the listener's own argument (the
    // TcpListener, the evhttp), so the guard is found by listener.
    std::unordered_map<evconnlistener*, AcceptGuard*> guards;
};

ProcessState& state() {
    static ProcessState process;
    return process;
}

void take_reserve() {
    if (state().reserve < 0) state().reserve = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool out_of_descriptors(int error) {
    return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

}  // namespace

AcceptGuard::AcceptGuard(EventLoop& loop, evconnlistener* listener, std::string name)
    : listener_(listener), name_(std::move(name)), resume_timer_(loop, [this] { resume(); }) {
    take_reserve();
    state().guards[listener_] = this;
    evconnlistener_set_error_cb(listener_, &AcceptGuard::on_error);
}

AcceptGuard::~AcceptGuard() {
    evconnlistener_set_error_cb(listener_, nullptr);
    state().guards.erase(listener_);
    if (paused_) --state().paused_listeners;
}

uint64_t AcceptGuard::pauses() {
    return state().pauses;
}

uint64_t AcceptGuard::dropped() {
    return state().dropped;
}

bool AcceptGuard::paused_now() {
    return state().paused_listeners > 0;
}

void AcceptGuard::on_error(evconnlistener* listener, void*) {
    const int error = errno;
    const auto found = state().guards.find(listener);
    if (found != state().guards.end()) found->second->pause(error);
}

void AcceptGuard::pause(int error) {
    uint64_t suppressed = 0;
    const bool log_now = state().log_limit.allow(suppressed);
    const std::string more =
        suppressed ? fmt::format(" ({} more accept errors not logged)", suppressed) : "";
    if (!out_of_descriptors(error)) {
        if (log_now)
            log::get("listener")->warn("{}: accept: {}{}", name_, std::strerror(error), more);
        return;
    }
    ++state().pauses;
    if (log_now) {
        log::get("listener")
            ->warn(
                "{}: accept: {}: not accepting for {} ms (process descriptor limit reached: raise "
                "LimitNOFILE or lower max_connections){}",
                name_, std::strerror(error), kPauseMs, more);
    }
    drop_one_waiting();
    if (paused_) return;
    paused_ = true;
    ++state().paused_listeners;
    evconnlistener_disable(listener_);
    resume_timer_.start_once(std::chrono::milliseconds(kPauseMs));
}

// The reserve descriptor buys one accept: the peer waiting longest is closed
// at once (it can try another server) instead of timing out in the backlog.
void AcceptGuard::drop_one_waiting() {
    if (state().reserve < 0) return;
    ::close(state().reserve);
    state().reserve = -1;
    const int fd = ::accept4(evconnlistener_get_fd(listener_), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
        ::close(fd);
        ++state().dropped;
    }
    take_reserve();
}

void AcceptGuard::resume() {
    if (!paused_) return;
    paused_ = false;
    --state().paused_listeners;
    take_reserve();  // spent and not yet taken back when descriptors were short
    evconnlistener_enable(listener_);
}

}  // namespace mdcast
