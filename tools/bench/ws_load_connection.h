// One connection of the bench's WebSocket/JSON client (ws_consumer_load.cpp):
// the upgrade, the login, the batch requests, and the count of what arrives
// (each message scanned for its Type, ID and SeqNumber, ws_message_scan.h),
// with what all the connections of the one thread add to (Shared).
#pragma once

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_client_options.h"
#include "client_stats.h"
#include "common/clock.h"
#include "common/net/host_port.h"
#include "item_table.h"
#include "ws_client_handshake.h"
#include "ws_message_scan.h"

namespace mdcast::tools::ws_load {

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

inline std::string quoted(std::string_view text) {
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

}  // namespace mdcast::tools::ws_load
