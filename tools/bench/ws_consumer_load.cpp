// mdcast-bench-ws-consumer: the benchmark's WebSocket/JSON client
// (`mdcast-bench --client ws`), native so that it can take what one server
// instance sends to 50 browser-style clients (docs/websocket.md).
//
// One thread, one epoll loop, N connections: each does the HTTP upgrade
// (checking Sec-WebSocket-Accept), logs in, requests every item in batch
// requests once the login is accepted, and then counts Refresh, Update and
// Status messages (with --conflate-ms, each request asks for LSEG's
// TimeConflated Qos). wslay's frame API does the framing (a message that arrives
// whole is read in place, never copied); each message is scanned for its Type,
// ID and SeqNumber (ws_message_scan.h), so gaps and duplicates per item stream
// are checked as the binary clients check them. When the server stamps messages
// (clients.ws_publish_time), now - PublishTime at receipt, the age of what a
// grid shows, is recorded as the update's latency; conflated updates count the
// updates they stand for (ConflationInfo.Count, "stands_for"). Anything unreadable, an
// Error message or a refused request is counted as an error and shown. Text is
// not checked for valid UTF-8 (the server's tests do that; here it would cost
// more than the rest of the client).
//
// It speaks the subset of mdcast-client's command line that the bench uses and
// prints the same JSON summary and CSV rows (ClientStats) plus "errors". A
// refused handshake or login ends it at once with exit code 1 and the server's
// answer; a connection the server closes later is counted (closed) with its
// close code and reason, and the others go on.
#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_client_options.h"
#include "client_stats.h"
#include "common/clock.h"
#include "common/config/command_line.h"
#include "common/net/host_port.h"
#include "item_table.h"
#include "tools/process_usage.h"
#include "tools/sample_items.h"
#include "tools/threaded_tool.h"
#include "ws_load_connection.h"

namespace {

using namespace mdcast;
using namespace mdcast::tools::ws_load;

// Connection i goes to server i mod count; all are open (logins sent) on return.
std::vector<std::unique_ptr<WsConnection>> open_all(const Options& o, Shared& shared, int epoll) {
    std::vector<HostPort> servers;
    std::string bad;
    if (!parse_host_port_list(o.servers, servers, bad) || servers.empty())
        throw std::runtime_error("--server: " + (bad.empty() ? "no server given" : bad));
    std::vector<std::unique_ptr<WsConnection>> connections;
    for (int64_t i = 0; i < o.connections; ++i) {
        const int index = static_cast<int>(i);
        connections.push_back(std::make_unique<WsConnection>(
            index, servers[static_cast<size_t>(i) % servers.size()], shared));
        connections.back()->open();
        epoll_event event{};
        event.events = EPOLLIN | EPOLLOUT;
        event.data.u32 = static_cast<uint32_t>(index);
        if (epoll_ctl(epoll, EPOLL_CTL_ADD, connections.back()->fd(), &event) != 0)
            throw std::runtime_error("epoll_ctl: " + std::string(std::strerror(errno)));
        connections.back()->on_ready();  // sends the login
    }
    return connections;
}

// One connection's turn; its epoll interest follows what it still wants.
void serve(WsConnection& c, uint32_t index, int epoll) {
    if (!c.on_ready()) {
        epoll_ctl(epoll, EPOLL_CTL_DEL, c.fd(), nullptr);
        return;
    }
    epoll_event event{};
    event.events = EPOLLIN | (c.wants_write() ? EPOLLOUT : 0u);
    event.data.u32 = index;
    epoll_ctl(epoll, EPOLL_CTL_MOD, c.fd(), &event);
}

void write_interval(Shared& shared, tools::CpuMeter& cpu, std::FILE* csv) {
    const int64_t now = monotonic_ns();
    const tools::ProcessUsage usage = tools::process_usage();
    const tools::StatsSample sample = shared.stats.take_sample(now, cpu.sample(now), usage.rss_mb);
    if (csv) {
        std::fputs(tools::stats_csv_row(sample, shared.stats.totals).c_str(), csv);
        std::fflush(csv);
    }
}

// The loop until --duration, SIGTERM or a fatal error; false on a fatal error.
bool run_loop(const Options& o, Shared& shared, std::vector<std::unique_ptr<WsConnection>>& all,
              int epoll, std::FILE* csv) {
    tools::CpuMeter cpu(monotonic_ns());
    const int64_t begin = monotonic_ns();
    const auto at = [&](double s) { return begin + static_cast<int64_t>(s * 1e9); };
    const int64_t end = at(o.duration_s);
    int64_t next_sample = o.stats_interval_s > 0 ? at(o.stats_interval_s) : end;
    epoll_event events[64];
    for (int64_t now = begin; !tools::stop_requested && now < end; now = monotonic_ns()) {
        const int64_t wake = std::min(next_sample, end);
        const int timeout_ms =
            static_cast<int>(std::clamp<int64_t>((wake - now) / 1'000'000, 0, 50));
        const int n = epoll_wait(epoll, events, 64, timeout_ms);
        for (int i = 0; i < n; ++i) serve(*all[events[i].data.u32], events[i].data.u32, epoll);
        if (!shared.fatal.empty()) return false;
        now = monotonic_ns();
        if (!shared.stats.steady() && now >= at(o.warmup_s)) shared.stats.begin_steady(now);
        if (now >= next_sample && o.stats_interval_s > 0) {
            write_interval(shared, cpu, csv);
            next_sample += static_cast<int64_t>(o.stats_interval_s * 1e9);
        }
    }
    if (csv && o.stats_interval_s > 0) write_interval(shared, cpu, csv);
    return true;
}

int run(const Options& o) {
    std::FILE* csv = nullptr;
    if (!o.csv_path.empty()) {
        csv = std::fopen(o.csv_path.c_str(), "w");
        if (!csv) throw std::runtime_error("cannot write --csv " + o.csv_path);
        std::fputs(tools::stats_csv_header().c_str(), csv);
    }
    std::unique_ptr<std::FILE, decltype(&std::fclose)> csv_file(csv, std::fclose);
    const int64_t start = monotonic_ns();
    Shared shared{o, tools::bench_item_names(o), tools::ClientStats(start), 0, 0, 0, ""};
    const int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) throw std::runtime_error("epoll_create1: " + std::string(std::strerror(errno)));
    std::unique_ptr<int, void (*)(int*)> epoll_fd(new int(epoll), [](int* fd) {
        close(*fd);
        delete fd;
    });
    std::vector<std::unique_ptr<WsConnection>> connections;
    try {
        connections = open_all(o, shared, epoll);
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "mdcast-bench-ws-consumer: error: %s\n", e.what());
        return 1;
    }
    // The warm-up and the window count from here: mdcast-bench waits for this
    // line (thousands of handshakes take seconds on a loaded machine).
    std::fprintf(stderr, "connections open: %zu\n", connections.size());
    std::fflush(stderr);
    if (!run_loop(o, shared, connections, epoll, csv)) {
        std::fprintf(stderr, "mdcast-bench-ws-consumer: error: %s\n", shared.fatal.c_str());
        return 1;
    }
    std::string summary = shared.stats.summary_json(monotonic_ns(), o.connections, o.warmup_s,
                                                    tools::process_usage());
    summary.pop_back();  // the closing brace: the WebSocket client's own count goes in too
    summary += ",\"errors\":" + std::to_string(shared.errors) +
               ",\"stands_for\":" + std::to_string(shared.stands_for) +
               ",\"steady_represented\":" + std::to_string(shared.steady_represented) + "}";
    std::fprintf(stderr, "%s\n", summary.c_str());
    std::fflush(stderr);
    return 0;
}

// Names go into JSON strings as they are: refuse what would need escaping.
bool plain_json_text(const std::string& text) {
    return std::none_of(text.begin(), text.end(),
                        [](unsigned char c) { return c == '"' || c == '\\' || c < 0x20; });
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    o.servers = "127.0.0.1:15000";  // docs/websocket.md's example ws_port
    cli::CommandLine command_line(
        "mdcast-bench-ws-consumer",
        "Opens N WebSocket/JSON connections (docs/websocket.md), logs in, requests every item in "
        "batch requests and counts Refresh/Update/Status messages, checking each item stream's "
        "SeqNumber. Prints mdcast-client's JSON summary (plus \"errors\") on stderr at the end. "
        "A refused handshake or login ends it with exit code 1. Used by mdcast-bench --client ws.");
    tools::add_bench_client_options(command_line, o,
                                    "WebSocket ports (clients.ws_port, docs/websocket.md)")
        .option("password", &o.password, "TEXT", "Password for the login (with authentication on)")
        .option("conflate-ms", &o.conflate_ms, "MS",
                "Ask for LSEG's TimeConflated Qos with this RateInfo on every request (0: every "
                "update)",
                0, 60000);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (o.output != "none") {
        std::cerr << "mdcast-bench-ws-consumer: error: --output must be none\n";
        return 2;
    }
    for (const std::string* text : {&o.user, &o.password, &o.service, &o.prefix}) {
        if (!plain_json_text(*text)) {
            std::cerr << "mdcast-bench-ws-consumer: error: quotes, backslashes and control "
                         "characters are not accepted in --user, --password, --service, "
                         "--item-prefix\n";
            return 2;
        }
    }
    return tools::run_until_stopped("mdcast-bench-ws-consumer", [&] { return run(o); });
}
