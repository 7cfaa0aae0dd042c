// mdcast-wakeup-probe: what one hop costs on this machine before any mdcast code
// runs. A writer sends a CLOCK_MONOTONIC stamp every --interval-us over a pipe,
// UDP or TCP on loopback; a reader that sleeps in recv() between messages (as
// every mdcast process does in epoll) records receipt - stamp. With --spin the
// reader polls instead of sleeping, which leaves only the kernel's path.
// Used in docs/benchmarks.md ("Where the latency goes").
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "common/config/command_line.h"

namespace {

int64_t now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

void pin(int64_t cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<int>(cpu), &set);
    sched_setaffinity(0, sizeof set, &set);
}

sockaddr_in loopback() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

// A connected (reader, writer) pair of descriptors of the chosen kind; false on error.
bool make_channel(const std::string& kind, int& reader, int& writer) {
    if (kind == "pipe") {
        int fds[2];
        if (pipe(fds) != 0) return false;
        reader = fds[0];
        writer = fds[1];
        return true;
    }
    const bool udp = kind == "udp";
    if (!udp && kind != "tcp") return false;
    sockaddr_in a = loopback();
    socklen_t length = sizeof a;
    const int bound = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (bound < 0 || bind(bound, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(bound, reinterpret_cast<sockaddr*>(&a), &length) != 0 ||
        (!udp && listen(bound, 1) != 0)) {
        return false;
    }
    writer = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (writer < 0 || connect(writer, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    if (udp) {
        reader = bound;
        return true;
    }
    const int one = 1;
    setsockopt(writer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reader = accept(bound, nullptr, nullptr);
    close(bound);
    return reader >= 0;
}

// read() serves pipes and sockets alike; a spinning reader's descriptor is non-blocking.
bool read_stamp(int fd, int64_t& stamp) {
    size_t got = 0;
    while (got < sizeof stamp) {
        const ssize_t n = read(fd, reinterpret_cast<char*>(&stamp) + got, sizeof stamp - got);
        if (n > 0) {
            got += static_cast<size_t>(n);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            return false;
        }
    }
    return true;
}

void report(const std::string& kind, bool spin, std::vector<int64_t>& v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (int64_t x : v) sum += static_cast<double>(x);
    const auto at = [&](double q) {
        return static_cast<double>(v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]) /
               1e3;
    };
    std::printf("%s %s: %zu hops, mean %.1f us, p50 %.1f, p90 %.1f, p99 %.1f, max %.1f\n",
                kind.c_str(), spin ? "spinning reader" : "sleeping reader", v.size(),
                sum / static_cast<double>(v.size()) / 1e3, at(0.5), at(0.9), at(0.99), at(1.0));
}

}  // namespace

int main(int argc, char** argv) {
    std::string kind = "udp";
    int64_t interval_us = 1000, count = 2000, reader_cpu = -1, writer_cpu = -1;
    bool spin = false;
    mdcast::cli::CommandLine command_line(
        "mdcast-wakeup-probe",
        "Measures one loopback hop (pipe, UDP or TCP) from a writer's stamp to a reader that "
        "sleeps "
        "between messages, as mdcast's processes do: the floor under every hop of the stack.");
    command_line.option("kind", &kind, "KIND", "pipe, udp or tcp")
        .option("interval-us", &interval_us, "MICROS", "Time between messages", 1, 1'000'000)
        .option("count", &count, "N", "Messages", 10, 10'000'000)
        .option("reader-cpu", &reader_cpu, "CPU", "Pin the reader (-1: no)", -1, 1023)
        .option("writer-cpu", &writer_cpu, "CPU", "Pin the writer (-1: no)", -1, 1023)
        .flag("spin", &spin, "The reader polls instead of sleeping");
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != mdcast::cli::CommandLine::Outcome::kRun) {
        return outcome == mdcast::cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    int reader = -1, writer = -1;
    if (!make_channel(kind, reader, writer)) {
        std::fprintf(stderr, "mdcast-wakeup-probe: cannot set up '%s': %s\n", kind.c_str(),
                     std::strerror(errno));
        return 2;
    }
    const pid_t child = fork();
    if (child == 0) {
        pin(reader_cpu);
        if (spin) fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK);
        std::vector<int64_t> latency;
        latency.reserve(static_cast<size_t>(count));
        int64_t stamp = 0;
        while (static_cast<int64_t>(latency.size()) < count && read_stamp(reader, stamp)) {
            latency.push_back(now_ns() - stamp);
        }
        if (latency.empty()) return 1;
        report(kind, spin, latency);
        return 0;
    }
    pin(writer_cpu);
    usleep(100'000);  // let the reader block first
    for (int64_t i = 0; i < count; ++i) {
        const timespec pause{0, static_cast<long>(interval_us * 1000)};
        nanosleep(&pause, nullptr);
        const int64_t stamp = now_ns();
        if (write(writer, &stamp, sizeof stamp) != sizeof stamp) break;
    }
    close(writer);
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
