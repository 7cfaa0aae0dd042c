// TcpConnection over a real socketpair: the output limits and closing for a reason.
#include "common/tcp_connection.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

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

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

TEST_CASE("send refuses what would pass max_output_bytes", "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_output_bytes = 1000;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes, limits, handler);
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
        TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes, limits, handler);
        CHECK(connection.send_frame(bytes(std::string(550, 'x'))));  // borrows 50
        CHECK(pool.borrowed() == 50);
        CHECK_FALSE(connection.send_frame(bytes(std::string(60, 'x'))));  // the pool has only 50 left
        connection.close(CloseReason::kSlowConsumer, "test");
        CHECK(pool.borrowed() == 0);  // a closed connection gives its loan back
    }
    CHECK(pool.borrowed() == 0);
}

TEST_CASE("an oversized frame closes the connection with its reason and tells the peer", "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = 100;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kClientToServerTypes, limits, handler);
    connection.start();
    uint8_t header[proto::kFrameHeaderBytes];
    proto::encode_frame_header(proto::FrameHeader{101, static_cast<uint16_t>(proto::FrameType::kSubscribe), 0}, header);
    REQUIRE(::write(pair.theirs, header, sizeof header) == sizeof header);
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(200));
    loop.run();
    CHECK(handler.closed);
    CHECK(handler.reason == CloseReason::kFrameTooLarge);
    uint8_t reply[256];
    const ssize_t n = ::read(pair.theirs, reply, sizeof reply);
    REQUIRE(n >= static_cast<ssize_t>(proto::kFrameHeaderBytes));
    CHECK(proto::decode_frame_header(reply).type == static_cast<uint16_t>(proto::FrameType::kClose));
}

TEST_CASE("close_after_flush sends what is queued, then Close, then closes once", "[tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Recorder handler;
    Pair pair;
    OutputPool pool(100, 500, 10000);
    TcpConnection::Limits limits;
    limits.pool = &pool;
    TcpConnection connection(loop, flusher, pair.ours, 1, "test", proto::kServerToClientTypes, limits, handler);
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
    CHECK(proto::decode_frame_header(close_header).type == static_cast<uint16_t>(proto::FrameType::kClose));
    connection.close(CloseReason::kShutdown, "again");  // already closed: no second on_closed
    CHECK(handler.closes == 1);
}
