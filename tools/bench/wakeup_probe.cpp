// mdcast-wakeup-probe: what one hop costs on this machine before any mdcast code
// runs. A writer sends a CLOCK_MONOTONIC stamp every --interval-us over a pipe,
// UDP or TCP on loopback; a reader that sleeps in recv() between messages (as
// every mdcast process does in epoll) records receipt - stamp. With --spin the
// reader polls instead of sleeping, which leaves only the kernel's path.
// --kind stall measures what no hop can beat: a thread spinning on each CPU at
// once, reading the clock, counts the gaps where it did not run (the host took
// the virtual CPU, an interrupt, another task): the machine's own latency tail.
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

// One spinner per CPU, all at once: each reports the gaps in its clock reads.
struct Stalls {
    int64_t over_100us = 0, over_1ms = 0, lost_ns = 0, longest_ns = 0;
};

Stalls spin_and_count(int64_t seconds) {
    Stalls s;
    const int64_t end = now_ns() + seconds * 1'000'000'000;
    for (int64_t last = now_ns(), t = last; t < end; last = t) {
        t = now_ns();
        const int64_t gap = t - last;
        if (gap <= 100'000) continue;
        ++s.over_100us;
        s.lost_ns += gap;
        if (gap > 1'000'000) ++s.over_1ms;
        s.longest_ns = std::max(s.longest_ns, gap);
    }
    return s;
}

int measure_stalls(int64_t seconds) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    std::vector<int> pipes;
    std::vector<pid_t> children;
    for (long cpu = 0; cpu < cpus; ++cpu) {
        int fds[2];
        if (pipe(fds) != 0) return 2;
        const pid_t child = fork();
        if (child == 0) {
            pin(cpu);
            const Stalls s = spin_and_count(seconds);
            _exit(write(fds[1], &s, sizeof s) == sizeof s ? 0 : 1);
        }
        close(fds[1]);
        pipes.push_back(fds[0]);
        children.push_back(child);
    }
    Stalls all;
    for (size_t cpu = 0; cpu < pipes.size(); ++cpu) {
        Stalls s;
        const bool got = read(pipes[cpu], &s, sizeof s) == sizeof s;
        waitpid(children[cpu], nullptr, 0);
        if (!got) return 1;
        std::printf(
            "stall cpu%zu: %lld stalls > 100 us (%.1f ms lost), %lld > 1 ms, longest %.2f ms\n",
            cpu, static_cast<long long>(s.over_100us), static_cast<double>(s.lost_ns) / 1e6,
            static_cast<long long>(s.over_1ms), static_cast<double>(s.longest_ns) / 1e6);
        all.over_100us += s.over_100us;
        all.over_1ms += s.over_1ms;
        all.lost_ns += s.lost_ns;
        all.longest_ns = std::max(all.longest_ns, s.longest_ns);
    }
    std::printf(
        "stall all %zu cpus, %lld s: %lld stalls > 100 us, %lld > 1 ms, %.3f %% of the time lost, "
        "longest %.2f ms\n",
        pipes.size(), static_cast<long long>(seconds), static_cast<long long>(all.over_100us),
        static_cast<long long>(all.over_1ms),
        100.0 * static_cast<double>(all.lost_ns) /
            (static_cast<double>(seconds) * 1e9 * static_cast<double>(pipes.size())),
        static_cast<double>(all.longest_ns) / 1e6);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string kind = "udp";
    int64_t interval_us = 1000, count = 2000, reader_cpu = -1, writer_cpu = -1, seconds = 2;
    bool spin = false;
    mdcast::cli::CommandLine command_line(
        "mdcast-wakeup-probe",
        "Measures one loopback hop (pipe, UDP or TCP) from a writer's stamp to a reader that "
        "sleeps "
        "between messages, as mdcast's processes do: the floor under every hop of the stack.");
    command_line
        .option("kind", &kind, "KIND",
                "pipe, udp or tcp; stall: spin on every CPU at once and count the machine's own "
                "stalls")
        .option("interval-us", &interval_us, "MICROS", "Time between messages", 1, 1'000'000)
        .option("count", &count, "N", "Messages", 10, 10'000'000)
        .option("reader-cpu", &reader_cpu, "CPU", "Pin the reader (-1: no)", -1, 1023)
        .option("writer-cpu", &writer_cpu, "CPU", "Pin the writer (-1: no)", -1, 1023)
        .flag("spin", &spin, "The reader polls instead of sleeping")
        .option("seconds", &seconds, "S", "--kind stall: how long to spin", 1, 600);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != mdcast::cli::CommandLine::Outcome::kRun) {
        return outcome == mdcast::cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (kind == "stall") return measure_stalls(seconds);
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
