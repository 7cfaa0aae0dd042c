// AcceptGuard: a listener out of descriptors pauses (counted), does not spin,
// drops one waiting peer with the reserve descriptor, and accepts again once
// descriptors are free.
#include "common/net/accept_guard.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/net/tcp_connection.h"
#include "common/net/tcp_dial.h"
#include "common/net/tcp_listener.h"

using namespace mdcast;

namespace {

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

void run_for(EventLoop& loop, int ms) {
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(ms));
    loop.run();
}

// Opens descriptors until `spare` are left under the soft limit.
std::vector<int> fill_descriptors(int spare) {
    std::vector<int> held;
    for (;;) {
        const int fd = ::open("/dev/null", O_RDONLY);
        if (fd < 0) break;
        held.push_back(fd);
    }
    for (int i = 0; i < spare && !held.empty(); ++i) {
        ::close(held.back());
        held.pop_back();
    }
    return held;
}

}  // namespace

TEST_CASE("out of descriptors, accept pauses instead of spinning, then resumes", "[accept]") {
    rlimit saved{};
    getrlimit(RLIMIT_NOFILE, &saved);
    rlimit low = saved;
    low.rlim_cur = 256;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
    EventLoop loop;
    std::vector<int> accepted;
    TcpListener listener(loop, "127.0.0.1", 0, 64,
                         [&](int fd, std::string) { accepted.push_back(fd); });
    std::vector<int> clients;
    for (int i = 0; i < 8; ++i) {
        std::string error;
        const int fd = connect_tcp("127.0.0.1", listener.port(), 1000, error);
        REQUIRE(fd >= 0);
        clients.push_back(fd);
    }
    std::vector<int> held = fill_descriptors(0);
    const uint64_t pauses_before = AcceptGuard::pauses();
    const double cpu_before = cpu_seconds();
    run_for(loop, 500);
    const double cpu = cpu_seconds() - cpu_before;
    CHECK(AcceptGuard::pauses() > pauses_before);
    CHECK(AcceptGuard::pauses() - pauses_before <= 10);  // one per 100 ms, not one per try
    CHECK(cpu < 0.2);
    CHECK(accepted.empty());
    for (int fd : held) ::close(fd);
    run_for(loop, 300);
    CHECK(accepted.size() + AcceptGuard::dropped() >= clients.size());
    CHECK_FALSE(accepted.empty());
    for (int fd : accepted) ::close(fd);
    for (int fd : clients) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved);
}
