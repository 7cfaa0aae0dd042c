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
#include "ws_client_handshake.h"
#include "ws_message_scan.h"

namespace {

using namespace mdcast;

constexpr size_t kReadBytes = 256 * 1024;         // one recv()
constexpr size_t kReadBudgetBytes = 1024 * 1024;  // per connection per loop turn: fairness
constexpr size_t kMaxMessageBytes = 16 << 20;     // a server message larger than this is an error
constexpr size_t kMaxRequestBytes = 60000;        // under the server's default 64 KiB limit
constexpr int kSetupTimeoutS = 30;  // connect, handshake: generous, a loaded machine answers late
constexpr int kErrorsShown = 10;    // error lines printed; all are counted

struct Options : tools::BenchClientOptions {
    std::string password;
    int64_t conflate_ms = 0;  // > 0: requests carry Qos Rate TimeConflated, RateInfo this
};

// What every connection adds to: one thread, so no locks.
struct Shared {
    const Options& options;
    std::vector<std::string> names;
    tools::ClientStats stats;
    uint64_t errors = 0;
    uint64_t stands_for = 0;  // the ConflationInfo.Count of every conflated update
    // Published updates the steady state's Updates stand for (1 each unless counted).
    uint64_t steady_represented = 0;
    std::string fatal;  // set: the run ends with this error (handshake or login refused)

    void error(int connection, const std::string& what) {
        if (++errors <= kErrorsShown)
            std::fprintf(stderr, "connection %d: %s\n", connection, what.c_str());
    }
};

std::string quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

// One WebSocket connection on a non-blocking socket. Framing is wslay's frame
// API: wslay_frame_recv parses each frame's header and hands over its payload,
// read in place when a message arrives whole; control frames are answered here
// (a ping with a pong, a close with a close). Not wslay's event API: it checks
// every text byte for UTF-8 and, at a million messages a second, would make the
// client the bottleneck of the bench. What is sent (login, requests, pongs) is
// framed into out_ and written as the socket takes it.
class WsConnection {
  public:
    WsConnection(int index, HostPort server, Shared& shared)
        : index_(index), server_(std::move(server)), shared_(shared), in_(kReadBytes) {}
    ~WsConnection() {
        if (frames_) wslay_frame_context_free(frames_);
        if (fd_ >= 0) close(fd_);
    }
    WsConnection(const WsConnection&) = delete;
    WsConnection& operator=(const WsConnection&) = delete;

    // Connects, upgrades and sends the login. Throws when refused.
    void open() {
        fd_ = tools::connect_blocking(server_, kSetupTimeoutS);
        const std::string early = tools::ws_upgrade(fd_, server_);
        std::copy(early.begin(), early.end(), in_.begin());
        in_len_ = early.size();
        const timeval none{0, 0};
        setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
        setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
        if (fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK) != 0)
            throw std::runtime_error("fcntl: " + std::string(std::strerror(errno)));
        static const wslay_frame_callbacks callbacks = {on_send, on_recv, on_genmask};
        if (wslay_frame_context_init(&frames_, &callbacks, this) != 0)
            throw std::runtime_error("wslay_frame_context_init failed");
        send_text(
            "{\"ID\":1,\"Domain\":\"Login\",\"Key\":{\"Name\":" + quoted(shared_.options.user) +
            ",\"Elements\":{\"ApplicationId\":\"256\",\"Password\":" +
            quoted(shared_.options.password) + "}}}");
    }

    int fd() const { return fd_; }
    bool wants_write() const { return !ended_ && !out_.empty(); }

    // Reads and handles what arrived (up to kReadBudgetBytes), then writes what
    // is owed. False once the connection has ended (counted and explained).
    bool on_ready() {
        read_budget_ = kReadBudgetBytes;
        while (!ended_) {
            wslay_frame_iocb iocb{};
            const ssize_t r = wslay_frame_recv(frames_, &iocb);
            if (r == WSLAY_ERR_WANT_READ) break;
            if (r < 0) {
                end("a framing error from the server");
                break;
            }
            on_frame_data(iocb);
        }
        if (!ended_ && (eof_ || io_errno_)) end(eof_ ? "" : "read failed");
        if (!ended_) flush();
        if (closing_ && out_.empty() && !ended_) end("");
        return !ended_;
    }

  private:
    // ---- output ----------------------------------------------------------------------------

    void send_frame(uint8_t opcode, std::string_view payload) {
        wslay_frame_iocb iocb{};
        iocb.fin = 1;
        iocb.opcode = opcode;
        iocb.mask = 1;  // a client masks every frame (RFC 6455 section 5.3)
        iocb.payload_length = payload.size();
        iocb.data = reinterpret_cast<const uint8_t*>(payload.data());
        iocb.data_length = payload.size();
        if (wslay_frame_send(frames_, &iocb) != static_cast<ssize_t>(payload.size()))
            shared_.error(index_, "wslay_frame_send failed");
    }

    void send_text(const std::string& text) { send_frame(WSLAY_TEXT_FRAME, text); }

    void flush() {
        while (!out_.empty()) {
            const ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    io_errno_ = errno;
                    end("write failed");
                }
                return;
            }
            out_.erase(0, static_cast<size_t>(n));
        }
    }

    // The item requests: batches of names, each under kMaxRequestBytes and the
    // server's MaxItemsPerRequest.
    void request_items(size_t max_items) {
        const auto& o = shared_.options;
        int64_t id = 2;
        const std::string qos = o.conflate_ms > 0 ? ",\"Qos\":{\"Timeliness\":\"Realtime\","
                                                    "\"Rate\":\"TimeConflated\",\"RateInfo\":" +
                                                        std::to_string(o.conflate_ms) + "}"
                                                  : "";
        std::string names;
        size_t count = 0;
        // A batch on ID n opens its names on n+1, n+2, ... (LSEG's numbering).
        auto request = [&] {
            send_text("{\"ID\":" + std::to_string(id) + ",\"Key\":{\"Service\":" +
                      quoted(o.service) + ",\"Name\":[" + names + "]}" + qos + "}");
            id += static_cast<int64_t>(count) + 1;
            names.clear();
            count = 0;
        };
        for (const auto& name : shared_.names) {
            if (count == max_items || names.size() + name.size() + 100 > kMaxRequestBytes)
                request();
            if (count++) names += ',';
            names += quoted(name);
        }
        if (count) request();
    }

    // ---- input -----------------------------------------------------------------------------

    // A piece of a frame's payload. A text message that arrives whole is read in
    // place; anything else is gathered first.
    void on_frame_data(const wslay_frame_iocb& iocb) {
        if (frame_done_) {  // a new frame
            frame_done_ = false;
            frame_received_ = 0;
            if (iocb.mask) shared_.error(index_, "a masked frame from the server");
            if (iocb.opcode == WSLAY_TEXT_FRAME || iocb.opcode == WSLAY_BINARY_FRAME) {
                message_opcode_ = iocb.opcode;
                message_.clear();
            }
        }
        frame_received_ += iocb.data_length;
        frame_done_ = frame_received_ == iocb.payload_length;
        const std::string_view data(reinterpret_cast<const char*>(iocb.data), iocb.data_length);
        if (iocb.opcode >= WSLAY_CONNECTION_CLOSE) {  // control frames: at most 125 bytes
            if (frame_received_ == iocb.data_length) control_.clear();
            control_.append(data);
            if (frame_done_) on_control(iocb.opcode);
            return;
        }
        if (message_opcode_ == WSLAY_BINARY_FRAME) {
            if (frame_done_ && iocb.fin) shared_.error(index_, "a binary message from the server");
            return;
        }
        if (frame_done_ && iocb.fin && message_.empty() && frame_received_ == data.size())
            return on_text(data);
        if (message_.size() + data.size() > kMaxMessageBytes) {
            shared_.error(index_, "a message over 16 MiB");
            message_.clear();
            return;
        }
        message_.append(data);
        if (frame_done_ && iocb.fin) {
            on_text(message_);
            message_.clear();
        }
    }

    void on_control(uint8_t opcode) {
        if (opcode == WSLAY_PING) return send_frame(WSLAY_PONG, control_);
        if (opcode != WSLAY_CONNECTION_CLOSE) return;
        close_code_ = 1005;  // no status code
        if (control_.size() >= 2) {
            close_code_ = static_cast<uint16_t>(static_cast<uint8_t>(control_[0]) << 8 |
                                                static_cast<uint8_t>(control_[1]));
            close_reason_ = control_.substr(2);
        }
        send_frame(WSLAY_CONNECTION_CLOSE, control_.substr(0, 2));
        closing_ = true;
    }

    // The hot path: one complete text message.
    void on_text(std::string_view text) {
        tools::WsMessage m;
        std::string_view why;
        if (!tools::scan_ws_message(text, m, why)) {
            shared_.error(index_, "unreadable message (" + std::string(why) +
                                      "): " + std::string(text.substr(0, 200)));
            return;
        }
        tools::ClientTotals& totals = shared_.stats.totals;
        switch (m.type) {
            case tools::WsMessageType::kUpdate:
                return on_update(m, totals);
            case tools::WsMessageType::kRefresh:
                return m.login ? on_login(text) : on_refresh(m);
            case tools::WsMessageType::kStatus:
                return on_status(m, totals);
            case tools::WsMessageType::kPing:
                return send_text("{\"Type\":\"Pong\"}");
            case tools::WsMessageType::kPong:
                return;
            case tools::WsMessageType::kError:
                return shared_.error(index_, "server Error: " + std::string(m.error_text));
            case tools::WsMessageType::kOther:
                return shared_.error(index_, "unexpected Type " + quoted(m.type_text));
        }
    }

    void on_update(const tools::WsMessage& m, tools::ClientTotals& totals) {
        ++totals.updates;
        if (m.conflated) ++totals.conflated;
        shared_.stands_for += m.conflation_count;
        if (shared_.stats.steady()) shared_.steady_represented += std::max(m.conflation_count, 1u);
        if (m.publish_time_ns != 0)  // the age of what the grid now shows
            shared_.stats.record_latency(realtime_ns() - static_cast<int64_t>(m.publish_time_ns));
        tools::ItemState* item = items_.find(static_cast<uint64_t>(m.id));
        if (item == nullptr) {
            ++totals.unknown_items;
            shared_.error(index_,
                          "Update for stream " + std::to_string(m.id) + " before its Refresh");
            return;
        }
        tools::count_sequence(totals, *item, m.seq, m.conflated);
    }

    void on_refresh(const tools::WsMessage& m) {
        shared_.stats.on_image(monotonic_ns());
        if (!m.has_seq)
            shared_.error(index_, "Refresh without SeqNumber for " + std::string(m.name));
        items_.on_image(static_cast<uint64_t>(m.id), std::string(m.service), std::string(m.name),
                        m.seq);
    }

    void on_status(const tools::WsMessage& m, tools::ClientTotals& totals) {
        ++totals.statuses;
        if (m.login) {
            // After the login, the login stream's Closed status precedes the server's close
            // frame and says the same: the close reports it.
            if (logged_in_) return;
            shared_.fatal = "login refused by " + tools::text_of(server_) + " for user '" +
                            shared_.options.user + "': " + std::string(m.code) + " " +
                            quoted(m.text);
            return;
        }
        // A batch's own ID is closed with no Key once its names are opened.
        if (m.stream == "Closed" && !m.name.empty())
            shared_.error(index_, "request for " + std::string(m.name) +
                                      " refused: " + std::string(m.code) + " " + quoted(m.text));
    }

    void on_login(std::string_view text) {
        if (logged_in_) return;
        logged_in_ = true;
        size_t max_items = 1000;
        const std::string_view key = "\"MaxItemsPerRequest\":";
        if (const size_t at = text.find(key); at != std::string_view::npos) {
            const size_t value = std::strtoull(text.data() + at + key.size(), nullptr, 10);
            if (value > 0) max_items = std::min(max_items, value);
        }
        request_items(max_items);
    }

    // The connection is over: counted as closed, and why said once.
    void end(const std::string& failure) {
        ended_ = true;
        ++shared_.stats.totals.closed;
        std::string why;
        if (close_code_ != 0) {
            why = "closed by the server: code " + std::to_string(close_code_) +
                  (close_reason_.empty() ? "" : " reason " + quoted(close_reason_));
        } else if (eof_) {
            why = "the server ended the TCP connection without a close frame";
        } else {
            why = failure + (io_errno_ ? std::string(": ") + std::strerror(io_errno_) : "");
        }
        std::fprintf(stderr, "connection %d to %s: %s\n", index_, tools::text_of(server_).c_str(),
                     why.c_str());
        if (!logged_in_ && shared_.fatal.empty())
            shared_.fatal =
                "connection to " + tools::text_of(server_) + " " + why + " before the login";
    }

    // ---- wslay callbacks -------------------------------------------------------------------

    static WsConnection& self(void* user) { return *static_cast<WsConnection*>(user); }

    // Serves wslay from in_, refilled by one large recv(); -1 (want read) when
    // the socket is drained or this turn's budget is spent.
    static ssize_t on_recv(uint8_t* buf, size_t len, int, void* user) {
        WsConnection& c = self(user);
        if (c.in_pos_ == c.in_len_) {
            if (c.read_budget_ == 0 || c.eof_ || c.io_errno_) return -1;
            const ssize_t n = recv(c.fd_, c.in_.data(), c.in_.size(), 0);
            if (n <= 0) {
                if (n == 0) c.eof_ = true;
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) c.io_errno_ = errno;
                return -1;
            }
            c.in_pos_ = 0;
            c.in_len_ = static_cast<size_t>(n);
            c.read_budget_ -= std::min(c.read_budget_, c.in_len_);
        }
        const size_t take = std::min(len, c.in_len_ - c.in_pos_);
        std::memcpy(buf, c.in_.data() + c.in_pos_, take);
        c.in_pos_ += take;
        return static_cast<ssize_t>(take);
    }

    // Frames go to out_ whole; flush() writes them.
    static ssize_t on_send(const uint8_t* data, size_t len, int, void* user) {
        self(user).out_.append(reinterpret_cast<const char*>(data), len);
        return static_cast<ssize_t>(len);
    }

    static int on_genmask(uint8_t* buf, size_t len, void*) {
        return RAND_bytes(buf, static_cast<int>(len)) == 1 ? 0 : -1;
    }

    int index_;
    HostPort server_;
    Shared& shared_;
    int fd_ = -1;
    wslay_frame_context_ptr frames_ = nullptr;
    tools::ItemTable items_;
    bool logged_in_ = false;
    bool closing_ = false;  // the server's close frame came and ours is being written
    bool ended_ = false;
    std::vector<char> in_;
    size_t in_pos_ = 0;
    size_t in_len_ = 0;
    size_t read_budget_ = 0;
    bool eof_ = false;
    int io_errno_ = 0;
    std::string out_;
    bool frame_done_ = true;
    uint64_t frame_received_ = 0;
    uint8_t message_opcode_ = 0;  // of the message's first frame
    std::string message_;
    std::string control_;
    uint16_t close_code_ = 0;
    std::string close_reason_;
};

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
