// TcpConnection over a real socketpair: the output limits and closing for a
// reason, over plaintext and over the TLS transport, and write_now (a write
// from another thread: partial writes queued in order, a peer gone).
#include "common/net/tcp_connection.h"

#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "test_certificates.h"

using namespace mdcast;

namespace {

struct Recorder : TcpConnection::Handler {
    int frames = 0;
    bool closed = false;
    int closes = 0;
    CloseReason reason = CloseReason::kPeerClosed;
    void on_frame(TcpConnection&, const proto::Frame&) override { ++frames; }
    void on_closed(TcpConnection&, CloseReason r, const std::string&) override {
        closed = true;
        ++closes;
        reason = r;
    }
};

struct Pair {
    int ours = -1, theirs = -1;
    Pair() {
        int fds[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        ours = fds[0];
        theirs = fds[1];
    }
    ~Pair() { ::close(theirs); }
};

std::span<const uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("send refuses what would pass max_output_bytes", "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_output_bytes = 1000;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                             limits, handler);
    const std::string frame(600, 'x');
    CHECK(connection.send_frame(bytes(frame)));
    CHECK(connection.queued_bytes() == 600);
    CHECK_FALSE(connection.send_frame(bytes(frame)));  // 1200 > 1000
    CHECK(connection.queued_bytes() == 600);           // nothing half-queued
    CHECK(connection.can_queue(400));
    CHECK_FALSE(connection.can_queue(401));
}

TEST_CASE("the shared pool limits a connection beyond its guarantee", "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    OutputPool pool(100, 500, 10000);
    TcpConnection::Limits limits;
    limits.pool = &pool;
    {
        TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                                 limits, handler);
        CHECK(connection.send_frame(bytes(std::string(550, 'x'))));  // borrows 50
        CHECK(pool.borrowed() == 50);
        CHECK_FALSE(
            connection.send_frame(bytes(std::string(60, 'x'))));  // the pool has only 50 left
        connection.close(CloseReason::kSlowConsumer, "test");
        CHECK(pool.borrowed() == 0);  // a closed connection gives its loan back
    }
    CHECK(pool.borrowed() == 0);
}

TEST_CASE("an oversized frame closes the connection with its reason and tells the peer",
          "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = 100;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kClientToServerTypes,
                             limits, handler);
    connection.start();
    uint8_t header[proto::kFrameHeaderBytes];
    proto::encode_frame_header(
        proto::FrameHeader{101, static_cast<uint16_t>(proto::FrameType::kSubscribe), 0}, header);
    REQUIRE(::write(pair.theirs, header, sizeof header) == sizeof header);
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(200));
    loop.run();
    CHECK(handler.closed);
    CHECK(handler.reason == CloseReason::kFrameTooLarge);
    uint8_t reply[256];
    const ssize_t n = ::read(pair.theirs, reply, sizeof reply);
    REQUIRE(n >= static_cast<ssize_t>(proto::kFrameHeaderBytes));
    CHECK(proto::decode_frame_header(reply).type ==
          static_cast<uint16_t>(proto::FrameType::kClose));
}

TEST_CASE("a partly read frame is timed from its first byte, a new limit applies to the next",
          "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = 100;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kClientToServerTypes,
                             limits, handler);
    connection.start();
    const auto run_for = [&](int ms) {
        Timer stop(loop, [&] { loop.stop(); });
        stop.start_once(std::chrono::milliseconds(ms));
        loop.run();
    };
    const auto header = [](uint32_t body) {
        std::string bytes(proto::kFrameHeaderBytes, '\0');
        proto::encode_frame_header(
            proto::FrameHeader{body, static_cast<uint16_t>(proto::FrameType::kPing), 0},
            reinterpret_cast<uint8_t*>(bytes.data()));
        return bytes;
    };
    CHECK(connection.partial_frame_since_ns() == 0);
    const std::string first = header(4) + "ab";  // half a frame
    REQUIRE(::write(pair.theirs, first.data(), first.size()) == ssize_t(first.size()));
    run_for(20);
    const int64_t since = connection.partial_frame_since_ns();
    CHECK(since > 0);
    REQUIRE(::write(pair.theirs, "c", 1) == 1);  // more of the same frame: the clock keeps
    run_for(20);
    CHECK(connection.partial_frame_since_ns() == since);
    // The frame ends and a larger one (allowed by the new limit) begins: a new clock.
    connection.set_max_frame_body(1000);
    const std::string rest = "d" + header(500) + "x";
    REQUIRE(::write(pair.theirs, rest.data(), rest.size()) == ssize_t(rest.size()));
    run_for(20);
    CHECK(handler.frames == 1);
    CHECK_FALSE(handler.closed);
    CHECK(connection.partial_frame_since_ns() > since);
    const std::string body(499, 'y');  // the frame completes: nothing partial
    REQUIRE(::write(pair.theirs, body.data(), body.size()) == ssize_t(body.size()));
    run_for(20);
    CHECK(handler.frames == 2);
    CHECK(connection.partial_frame_since_ns() == 0);
}

TEST_CASE("close_after_flush sends what is queued, then Close, then closes once",
          "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    OutputPool pool(100, 500, 10000);
    TcpConnection::Limits limits;
    limits.pool = &pool;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                             limits, handler);
    const std::string data(300, 'x');
    REQUIRE(connection.send_frame(bytes(data)));
    connection.close_after_flush(CloseReason::kShutdown, "going away");
    CHECK_FALSE(connection.accepts_output());
    CHECK_FALSE(connection.send_frame(bytes(data)));  // nothing after the Close
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(200));
    loop.run();
    CHECK(handler.closed);
    CHECK(handler.reason == CloseReason::kShutdown);
    CHECK(pool.borrowed() == 0);
    std::string received(4096, '\0');
    const ssize_t n = ::read(pair.theirs, received.data(), received.size());
    REQUIRE(n > 300);
    CHECK(received.compare(0, 300, data) == 0);  // the queued bytes first, whole
    const auto* close_header = reinterpret_cast<const uint8_t*>(received.data() + 300);
    CHECK(proto::decode_frame_header(close_header).type ==
          static_cast<uint16_t>(proto::FrameType::kClose));
    connection.close(CloseReason::kShutdown, "again");  // already closed: no second on_closed
    CHECK(handler.closes == 1);
}

namespace {

// libevent's own warnings, caught for the test below (it logs to stderr otherwise).
std::vector<std::string> libevent_warnings;
void catch_libevent_log(int, const char* message) {
    libevent_warnings.emplace_back(message);
}

}  // namespace

TEST_CASE("close deletes the events before the descriptor goes", "[tcp_connection]") {
    // Both events registered (reading, and writing to a peer that does not
    // read): deleting one of them from a closed descriptor makes libevent's
    // epoll backend fail a MOD with EBADF, and a reused descriptor number could
    // get someone else's change.
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_output_bytes = 64 << 20;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                             limits, handler);
    connection.start();
    const std::string frame(1 << 20, 'x');
    for (int i = 0; i < 8; ++i) REQUIRE(connection.send_frame(bytes(frame)));
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(50));
    loop.run();
    REQUIRE(connection.queued_bytes() > 0);  // the peer's buffer is full: the write event waits
    libevent_warnings.clear();
    event_set_log_callback(catch_libevent_log);
    connection.close(CloseReason::kSlowConsumer, "test");
    event_set_log_callback(nullptr);
    CHECK(handler.closed);
    CHECK(libevent_warnings.empty());
    for (const auto& warning : libevent_warnings) UNSCOPED_INFO(warning);
}

// ---- the TLS transport ---------------------------------------------------------------------

namespace {

struct TypeRecorder : Recorder {
    std::vector<proto::FrameType> types;
    void on_frame(TcpConnection& c, const proto::Frame& f) override {
        Recorder::on_frame(c, f);
        types.push_back(f.type);
    }
};

std::shared_ptr<const TlsContext> server_context(const testing::TestCertificates& certs) {
    TlsServerSettings s;
    s.cert_file = certs.path("server.pem");
    s.key_file = certs.path("server.key");
    return TlsContext::server(s);
}

std::shared_ptr<const TlsContext> client_context(const testing::TestCertificates& certs) {
    TlsClientSettings s;
    s.ca_file = certs.path("ca.pem");
    return TlsContext::client(s);
}

// Like every process that uses TcpConnection (daemons and tools ignore it, the
// SDK blocks it on its I/O thread): OpenSSL writes with write(), and a write to
// a peer that has gone must fail with EPIPE rather than kill the process.
const bool kSigpipeIgnored = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
}();

void run_for(EventLoop& loop, int ms) {
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(ms));
    loop.run();
}

// Both ends of a socketpair as TLS TcpConnections, started: the server's output
// on a pool, its handshakes counted.
struct TlsPair {
    TlsPair()
        : server(loop, flusher, pair.ours, 1, "server", proto::kClientToServerTypes,
                 server_limits(), server_handler),
          client(loop, flusher, ::dup(pair.theirs), 2, "client", proto::kServerToClientTypes,
                 client_limits(), client_handler) {
        server.start();
        client.start();
    }
    TcpConnection::Limits server_limits() {
        TcpConnection::Limits l;
        l.pool = &pool;
        l.tls = {server_context(certs), {}, 5000, &counters};
        return l;
    }
    TcpConnection::Limits client_limits() {
        TcpConnection::Limits l;
        l.tls = {client_context(certs), "localhost", 5000, nullptr};
        return l;
    }
    testing::TestCertificates certs;
    EventLoop loop;
    FlushScheduler flusher{loop, std::chrono::microseconds(0)};
    TypeRecorder server_handler, client_handler;
    Pair pair;
    OutputPool pool{1 << 20, 1000, 1 << 20};
    TlsCounters counters;
    TcpConnection server;
    TcpConnection client;
};

}  // namespace

TEST_CASE("TLS: frames both ways, exact queue accounting, and the Close frame on close",
          "[tcp_connection][tls]") {
    TlsPair tls;
    CHECK(tls.server.is_tls());
    CHECK(tls.server.tls_handshaking());
    wire::v1::Ping ping;
    REQUIRE(tls.client.send(proto::FrameType::kPing,
                            ping));  // queued before the handshake: sent after it
    for (int i = 0; i < 200; ++i) REQUIRE(tls.server.send(proto::FrameType::kPong, ping));
    CHECK(tls.pool.borrowed() > 0);
    run_for(tls.loop, 300);
    CHECK_FALSE(tls.server.tls_handshaking());
    CHECK(tls.counters.handshakes_ok == 1);
    CHECK(tls.server_handler.frames == 1);
    CHECK(tls.client_handler.frames == 200);
    CHECK(tls.server.queued_bytes() == 0);
    CHECK(tls.pool.borrowed() == 0);
    CHECK(tls.server.bytes_out() == tls.client.bytes_in());
    CHECK(tls.server.tls_description().find("TLSv1.3") != std::string::npos);
    tls.server.close(CloseReason::kSlowConsumer, "test");
    CHECK(tls.server_handler.reason == CloseReason::kSlowConsumer);
    run_for(tls.loop, 200);
    REQUIRE_FALSE(tls.client_handler.types.empty());
    CHECK(tls.client_handler.types.back() == proto::FrameType::kClose);  // the peer was told why
    CHECK(tls.client_handler.closed);
    CHECK(tls.pool.borrowed() == 0);
}

TEST_CASE("TLS: shared frames go out by reference, and their blocks go once written",
          "[tcp_connection][tls][shared_block]") {
    TlsPair tls;
    const size_t live = SharedBlock::live_blocks();
    {
        SharedBlockWriter writer;
        const std::string pong =
            proto::encode_frame_string(proto::FrameType::kPong, wire::v1::Pong());
        for (int i = 0; i < 300; ++i) REQUIRE(tls.server.send_shared(writer.store(bytes(pong))));
        CHECK(tls.server.queued_bytes() == 300 * pong.size());
    }
    run_for(tls.loop, 300);
    CHECK(tls.client_handler.frames == 300);
    CHECK(tls.server.runs_referenced() == 1);
    CHECK(tls.server.queued_bytes() == 0);
    CHECK(tls.pool.borrowed() == 0);
    CHECK(tls.server.pinned_blocks() == 0);  // released by the bytes the TLS stream wrote
    CHECK(SharedBlock::live_blocks() == live);
}

// A TLS server connection on one end of a socketpair; the test plays the peer on `pair.theirs`.
struct TlsServerEnd {
    explicit TlsServerEnd(uint32_t handshake_timeout_ms)
        : limits(make_limits(handshake_timeout_ms)),
          server(loop, flusher, pair.ours, 1, "server", proto::kClientToServerTypes, limits,
                 handler) {
        server.start();
    }
    TcpConnection::Limits make_limits(uint32_t handshake_timeout_ms) {
        TcpConnection::Limits l;
        l.tls = {server_context(certs), {}, handshake_timeout_ms, &counters};
        return l;
    }
    testing::TestCertificates certs;
    EventLoop loop;
    FlushScheduler flusher{loop, std::chrono::microseconds(0)};
    Recorder handler;
    Pair pair;
    TlsCounters counters;
    TcpConnection::Limits limits;
    TcpConnection server;
};

TEST_CASE("TLS: a peer that never starts the handshake is closed with its own reason",
          "[tcp_connection][tls]") {
    TlsServerEnd end(100);
    run_for(end.loop, 400);
    CHECK(end.handler.closed);
    CHECK(end.handler.reason == CloseReason::kTlsHandshakeTimeout);
    CHECK(end.counters.handshakes_timed_out == 1);
    char byte;
    CHECK(::read(end.pair.theirs, &byte, 1) == 0);  // the socket was shut down
}

TEST_CASE("TLS: a peer that speaks plaintext fails the handshake", "[tcp_connection][tls]") {
    TlsServerEnd end(5000);
    const std::string junk(64, 'x');
    REQUIRE(::write(end.pair.theirs, junk.data(), junk.size()) == 64);
    run_for(end.loop, 200);
    CHECK(end.handler.reason == CloseReason::kTlsHandshakeFailed);
    CHECK(end.counters.handshakes_failed == 1);
}

TEST_CASE("TLS: a graceful close during the handshake closes at once", "[tcp_connection][tls]") {
    TlsServerEnd end(60000);
    run_for(end.loop, 50);
    REQUIRE(end.server.tls_handshaking());
    end.server.close_after_flush(CloseReason::kShutdown, "server shutting down");
    CHECK(end.handler.closed);  // not after the 60 s handshake timeout or a grace period
    CHECK(end.handler.reason == CloseReason::kShutdown);
    CHECK(end.handler.closes == 1);
}

TEST_CASE("write_now writes at once while nothing is queued, and queues the rest in order",
          "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    const int small = 4096;
    REQUIRE(setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
    REQUIRE(setsockopt(pair.theirs, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                             TcpConnection::Limits{}, handler);
    std::string expected;
    auto frame = [&](int i) { return std::string(1000, static_cast<char>('a' + i % 26)); };
    // Nobody reads: the kernel soon takes only part of a write, then nothing.
    int written = 0;
    TcpConnection::DirectWrite result = TcpConnection::DirectWrite::kWritten;
    while (result == TcpConnection::DirectWrite::kWritten && written < 10000) {
        const std::string f = frame(written++);
        expected += f;
        result = connection.write_now(bytes(f));
    }
    REQUIRE(result == TcpConnection::DirectWrite::kQueued);
    CHECK(connection.queued_bytes() > 0);
    CHECK(connection.queued_bytes() <= 1000);
    // Something queued: refused (nothing taken); send_frame() queues behind.
    CHECK(connection.write_now(bytes(frame(0))) == TcpConnection::DirectWrite::kRefused);
    for (int i = 0; i < 20; ++i) {
        const std::string f = frame(written++);
        expected += f;
        REQUIRE(connection.send_frame(bytes(f)));
    }
    std::string received;
    std::thread reader([&] {
        char chunk[8192];
        while (received.size() < expected.size()) {
            const ssize_t n = ::read(pair.theirs, chunk, sizeof chunk);
            if (n <= 0) break;
            received.append(chunk, static_cast<size_t>(n));
        }
    });
    // The owner's part: the loop's thread flushes what write_now() queued.
    connection.flush();
    Timer check(loop, [&] {
        if (connection.queued_bytes() == 0) loop.stop();
    });
    check.start_periodic(std::chrono::milliseconds(1));
    Timer give_up(loop, [&] { loop.stop(); });
    give_up.start_once(std::chrono::seconds(5));
    loop.run();
    reader.join();
    CHECK(received == expected);
    CHECK(connection.bytes_out() == expected.size());
    CHECK_FALSE(handler.closed);
    // Idle again: written at once.
    CHECK(connection.write_now(bytes(frame(1))) == TcpConnection::DirectWrite::kWritten);
}

TEST_CASE("write_now to a peer that has gone queues the bytes for the loop to meet the error",
          "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes,
                             TcpConnection::Limits{}, handler);
    ::shutdown(pair.theirs, SHUT_RDWR);
    // MSG_NOSIGNAL: no SIGPIPE on this thread (the default action would end the test).
    CHECK(connection.write_now(bytes("frame")) == TcpConnection::DirectWrite::kQueued);
    CHECK(connection.queued_bytes() == 5);
    connection.flush();
    CHECK(handler.closed);
    CHECK(handler.reason == CloseReason::kWriteError);
    CHECK(connection.write_now(bytes("frame")) == TcpConnection::DirectWrite::kRefused);
}
