#include "linkshim_app.h"

#include <poll.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "packet_port.h"

namespace mdcast::linkshim {

namespace {

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_cut_request = 0;  // 1 cut, 2 restore (the latest signal wins)

void on_signal(int signal_number) {
    if (signal_number == SIGUSR1)
        g_cut_request = 1;
    else if (signal_number == SIGUSR2)
        g_cut_request = 2;
    else
        g_stop = 1;
}

int64_t now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The signals are blocked except inside ppoll(), so none is lost between a check
// of the flags and the wait.
sigset_t install_signals() {
    sigset_t handled;
    sigemptyset(&handled);
    struct sigaction action {};
    action.sa_handler = on_signal;
    for (const int s : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) {
        sigaction(s, &action, nullptr);
        sigaddset(&handled, s);
    }
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &handled, &previous);
    return previous;
}

std::string describe(const LinkShape& s) {
    char text[200];
    std::snprintf(
        text, sizeof text,
        "delay %.3f ms, rate %llu bit/s%s, loss %.3f %%, queue %zu bytes, held %zu bytes",
        static_cast<double>(s.delay_us) / 1000, static_cast<unsigned long long>(s.rate_bps),
        s.rate_bps == 0 ? " (unlimited)" : "", s.loss_percent, s.queue_bytes, s.held_bytes);
    return text;
}

// One direction: frames read on `from`, shaped, sent out of `to`.
struct Direction {
    PacketPort& from;
    PacketPort& to;
    LinkSchedule schedule;
    std::string name;
};

// Reads what is waiting on the direction's input, at most a batch so that the other
// side and the deliveries are served in between.
void read_frames(Direction& d, std::vector<uint8_t>& frame) {
    constexpr int kBatch = 256;
    for (int i = 0; i < kBatch; ++i) {
        const PacketPort::Read got = d.from.read(frame);
        if (got == PacketPort::Read::kNone) return;
        if (got == PacketPort::Read::kTooLarge)
            d.schedule.reject_oversize(frame.size());
        else
            d.schedule.offer(std::move(frame), now_ns());
    }
}

void deliver_due(Direction& d, std::vector<std::vector<uint8_t>>& due) {
    due.clear();
    d.schedule.take_due(now_ns(), due);
    for (const auto& frame : due) {
        if (d.to.send(frame))
            d.schedule.count_sent(frame.size());
        else
            d.schedule.count_send_error();
    }
}

// How long ppoll may sleep: until the next frame is due, the deadline, or 100 ms.
timespec wait_time(const Direction (&directions)[2], int64_t deadline_ns) {
    const int64_t now = now_ns();
    int64_t until = std::min({deadline_ns, now + 100'000'000, directions[0].schedule.next_due_ns(),
                              directions[1].schedule.next_due_ns()});
    const int64_t wait = std::max<int64_t>(0, until - now);
    return timespec{static_cast<time_t>(wait / 1'000'000'000),
                    static_cast<long>(wait % 1'000'000'000)};
}

void apply_cut_request(Direction (&directions)[2]) {
    const int request = g_cut_request;
    if (request == 0) return;
    g_cut_request = 0;
    for (auto& d : directions) d.schedule.set_cut(request == 1);
    std::fprintf(stderr, "mdcast-linkshim: link %s\n", request == 1 ? "cut" : "restored");
}

void loop(Direction (&directions)[2], double seconds, const sigset_t& wait_mask) {
    const int64_t deadline = now_ns() + static_cast<int64_t>(seconds * 1e9);
    std::vector<uint8_t> frame;
    std::vector<std::vector<uint8_t>> due;
    while (!g_stop && now_ns() < deadline) {
        pollfd fds[2] = {{directions[0].from.fd(), POLLIN, 0},
                         {directions[1].from.fd(), POLLIN, 0}};
        const timespec wait = wait_time(directions, deadline);
        if (ppoll(fds, 2, &wait, &wait_mask) < 0 && errno != EINTR)
            throw std::runtime_error("ppoll failed");
        apply_cut_request(directions);
        for (int i = 0; i < 2; ++i) {
            if (fds[i].revents & (POLLERR | POLLNVAL))
                throw std::runtime_error("interface " + directions[i].from.name() + " failed");
            if (fds[i].revents & POLLIN) read_frames(directions[i], frame);
        }
        for (auto& d : directions) deliver_due(d, due);
    }
}

}  // namespace

int run_shim(const ShimOptions& options) {
    const sigset_t wait_mask = install_signals();
    try {
        PacketPort a(options.side_a), b(options.side_b);
        Direction directions[2] = {
            {a, b, LinkSchedule(options.a_to_b, options.seed),
             options.side_a + "->" + options.side_b},
            {b, a, LinkSchedule(options.b_to_a, options.seed + 1),
             options.side_b + "->" + options.side_a},
        };
        for (auto& d : directions) d.schedule.set_cut(options.start_cut);
        std::fprintf(stderr, "mdcast-linkshim: bridging %s <-> %s for at most %g s%s\n",
                     a.name().c_str(), b.name().c_str(), options.seconds,
                     options.start_cut ? " (starting cut)" : "");
        std::fprintf(stderr, "mdcast-linkshim: %s: %s\nmdcast-linkshim: %s: %s\n",
                     directions[0].name.c_str(), describe(options.a_to_b).c_str(),
                     directions[1].name.c_str(), describe(options.b_to_a).c_str());
        loop(directions, options.seconds, wait_mask);
        for (auto& d : directions) d.schedule.count_overrun(d.from.take_kernel_drops());
        for (const auto& d : directions)
            std::fprintf(stderr, "mdcast-linkshim: %s: %s\n", d.name.c_str(),
                         d.schedule.counters().summary().c_str());
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mdcast-linkshim: error: %s\n", error.what());
        return 1;
    }
}

}  // namespace mdcast::linkshim
