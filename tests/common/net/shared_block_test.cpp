// Shared output blocks: reference counts, the writer's blocks, the pin bound,
// and TcpConnection::send_shared over real socketpairs (same bytes, same order,
// same accounting as copies; the block freed once the last connection sent it).
#include "common/net/shared_block.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/net/tcp_connection.h"

using namespace mdcast;

namespace {

std::span<const uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Recorder : TcpConnection::Handler {
    bool closed = false;
    void on_frame(TcpConnection&, const proto::Frame&) override {}
    void on_closed(TcpConnection&, CloseReason, const std::string&) override { closed = true; }
};

// A connection on one end of a socketpair; the test reads the other end.
struct Wire {
    int theirs = -1;
    Recorder handler;
    std::unique_ptr<TcpConnection> connection;
    Wire(EventLoop& loop, FlushScheduler& flusher, TcpConnection::Limits limits = {}) {
        int fds[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        theirs = fds[1];
        fcntl(theirs, F_SETFL, O_NONBLOCK);
        connection = std::make_unique<TcpConnection>(loop, flusher, fds[0], 1, "test",
                                                     proto::kServerToClientTypes, limits, handler);
    }
    ~Wire() {
        connection.reset();
        ::close(theirs);
    }
    std::string received() {
        std::string all;
        char buffer[65536];
        ssize_t n;
        while ((n = ::read(theirs, buffer, sizeof buffer)) > 0) all.append(buffer, n);
        return all;
    }
};

void run_for(EventLoop& loop, int ms) {
    Timer stop(loop, [&] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(ms));
    loop.run();
}

std::string frame_of(char c, size_t size) {
    return std::string(size, c);
}

}  // namespace

TEST_CASE("a block is freed with its last reference", "[shared_block]") {
    const size_t live = SharedBlock::live_blocks();
    SharedBlock* block = SharedBlock::create(1024);
    CHECK(SharedBlock::live_blocks() == live + 1);
    CHECK(SharedBlock::live_bytes() >= 1024);
    block->retain();
    CHECK(block->references() == 2);
    block->release();
    CHECK(SharedBlock::live_blocks() == live + 1);
    SharedBlock::release_reference(nullptr, 0, block);  // the evbuffer's cleanup
    CHECK(SharedBlock::live_blocks() == live);
}

TEST_CASE("the writer fills a block, starts the next, and keeps big frames out", "[shared_block]") {
    const size_t live = SharedBlock::live_blocks();
    {
        SharedBlockWriter writer(1000);
        const SharedFrame a = writer.store(bytes(frame_of('a', 200)));
        const SharedFrame b = writer.store(bytes(frame_of('b', 200)));
        REQUIRE(a);
        REQUIRE(b);
        CHECK(a.block == b.block);
        CHECK(a.bytes.data() + 200 == b.bytes.data());  // adjacent: one run
        CHECK(std::string(reinterpret_cast<const char*>(b.bytes.data()), 200) ==
              frame_of('b', 200));
        CHECK_FALSE(writer.store(bytes(frame_of('c', 251))));  // over a quarter: copied instead
        for (int i = 0; i < 4; ++i) REQUIRE(writer.store(bytes(frame_of('d', 200))));
        CHECK(writer.blocks_started() == 2);            // the sixth 200 did not fit the first
        CHECK(SharedBlock::live_blocks() == live + 1);  // nobody referenced the first
    }
    CHECK(SharedBlock::live_blocks() == live);
}

TEST_CASE("pins count distinct blocks in queue order and go when written", "[shared_block]") {
    SharedBlock* a = SharedBlock::create(64);
    SharedBlock* b = SharedBlock::create(64);
    SharedBlock* c = SharedBlock::create(64);
    PinnedBlocks pins(2);
    pins.pin(*a, 100);
    CHECK(pins.can_pin(*a, 0));
    pins.pin(*a, 200);  // the same block again: still one pin
    CHECK(pins.pinned() == 1);
    pins.pin(*b, 300);
    CHECK(pins.pinned() == 2);
    CHECK_FALSE(pins.can_pin(*c, 0));
    CHECK(pins.can_pin(*b, 0));  // extending the last block needs no new pin
    // Beyond max(): only while three blocks of 64 stay within twice the bytes charged.
    CHECK_FALSE(pins.can_pin(*c, 95));
    CHECK(pins.can_pin(*c, 96));
    pins.written_to(199);
    CHECK(pins.pinned() == 2);
    pins.written_to(200);
    CHECK(pins.pinned() == 1);
    CHECK(pins.can_pin(*c, 0));
    for (SharedBlock* block : {a, b, c}) block->release();
}

TEST_CASE("shared frames reach every connection byte for byte, in order with copies",
          "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Wire one(loop, flusher), two(loop, flusher);
    std::string expected_one, expected_two;
    {
        SharedBlockWriter writer;
        for (int i = 0; i < 20; ++i) {  // 20 x 100 bytes: a run long enough to reference
            const std::string frame = frame_of(static_cast<char>('a' + i), 100);
            const SharedFrame shared = writer.store(bytes(frame));
            REQUIRE(one.connection->send_shared(shared));
            REQUIRE(two.connection->send_shared(shared));
            expected_one += frame;
            expected_two += frame;
            if (i == 9) {  // a frame of its own (a status) in the middle of one stream
                const std::string own = frame_of('#', 30);
                REQUIRE(one.connection->send_frame(bytes(own)));
                expected_one += own;
            }
        }
        CHECK(one.connection->queued_bytes() == expected_one.size());
        CHECK(two.connection->queued_bytes() == expected_two.size());
    }  // the writer let go of its block: the queues hold it now
    CHECK(SharedBlock::live_blocks() == live + 1);
    run_for(loop, 50);
    CHECK(one.received() == expected_one);
    CHECK(two.received() == expected_two);
    CHECK(two.connection->runs_referenced() == 1);  // one run of 2,000 bytes
    CHECK(one.connection->runs_referenced() == 2);  // split by its own frame
    CHECK(one.connection->pinned_blocks() == 0);
    CHECK(SharedBlock::live_blocks() == live);  // freed when the last connection sent it
}

TEST_CASE("a short run is copied and the block is not held", "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Wire wire(loop, flusher);
    SharedBlockWriter writer;
    const std::string frame = frame_of('s', TcpConnection::kMinReferenceBytes - 1);
    REQUIRE(wire.connection->send_shared(writer.store(bytes(frame))));
    run_for(loop, 20);
    CHECK(wire.received() == frame);
    CHECK(wire.connection->runs_copied() == 1);
    CHECK(wire.connection->runs_referenced() == 0);
    CHECK(SharedBlock::live_blocks() == live + 1);  // the writer's current block only
}

TEST_CASE("shared frames count against the output limits like copies",
          "[shared_block][tcp_connection]") {
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    OutputPool pool(100, 1000, 10000);
    TcpConnection::Limits limits;
    limits.pool = &pool;
    Wire wire(loop, flusher, limits);
    SharedBlockWriter writer;
    const std::string frame = frame_of('x', 250);
    for (int i = 0; i < 4; ++i) REQUIRE(wire.connection->send_shared(writer.store(bytes(frame))));
    CHECK(wire.connection->queued_bytes() == 1000);
    CHECK(pool.borrowed() == 0);
    REQUIRE(wire.connection->send_frame(bytes(frame_of('y', 100))));  // borrows the pool's 100
    CHECK(pool.borrowed() == 100);
    CHECK_FALSE(wire.connection->send_shared(writer.store(bytes(frame))));  // refused: slow
    CHECK(wire.connection->queued_bytes() == 1100);
    wire.connection->close(CloseReason::kSlowConsumer, "test");
    CHECK(pool.borrowed() == 0);
}

// The peer reads nothing until the loop runs; every run is in a block of its own.
struct UnreadRuns {
    EventLoop loop;
    FlushScheduler flusher{loop, std::chrono::microseconds(0)};
    Wire wire{loop, flusher, limits()};
    static TcpConnection::Limits limits() {
        TcpConnection::Limits l;
        l.max_shared_blocks = 2;
        l.max_output_bytes = 64 << 20;
        return l;
    }
    // 12 runs of `ours` 1,000-byte frames, each in its own 4 KiB block, with
    // 4 - `ours` frames of another group behind them. Returns what the peer must get.
    std::string send_runs(int ours) {
        SharedBlockWriter writer(4096);
        std::string expected;
        for (int run = 0; run < 12; ++run) {
            for (int i = 0; i < ours; ++i) {
                REQUIRE(wire.connection->send_shared(writer.store(bytes(frame_of('z', 1000)))));
                expected += frame_of('z', 1000);
            }
            for (int i = ours; i < 4; ++i) REQUIRE(writer.store(bytes(frame_of('-', 1000))));
        }
        return expected;
    }
    // The bound: max_shared_blocks, or twice the bytes charged.
    void check_bound() {
        TcpConnection& c = *wire.connection;
        CHECK(c.pinned_blocks() * 4096 <= std::max<size_t>(2 * 4096, 2 * c.queued_bytes()));
    }
};

TEST_CASE_METHOD(UnreadRuns, "a consumer of sparse runs pins a bounded number of blocks",
                 "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    const std::string expected = send_runs(1);  // a quarter of each block is ours
    // Nothing written yet: 11 runs went into the queue, the last is pending.
    TcpConnection& c = *wire.connection;
    CHECK(c.runs_referenced() + c.runs_copied() == 11);
    CHECK(c.runs_referenced() > 2);  // beyond max_shared_blocks while within twice the queue
    CHECK(c.runs_copied() > 0);      // the rest copied
    check_bound();
    CHECK(SharedBlock::live_blocks() == live + c.pinned_blocks() + 1);  // + the pending run's
    run_for(loop, 20);
    CHECK(wire.received() == expected);
    CHECK(c.pinned_blocks() == 0);
    CHECK(SharedBlock::live_blocks() == live);
}

TEST_CASE_METHOD(UnreadRuns, "a consumer of whole runs references them all",
                 "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    const std::string expected = send_runs(4);  // every frame of every block is ours
    TcpConnection& c = *wire.connection;
    CHECK(c.runs_referenced() == 11);
    CHECK(c.runs_copied() == 0);
    CHECK(c.pinned_blocks() == 11);
    check_bound();
    run_for(loop, 20);
    CHECK(wire.received() == expected);
    CHECK(SharedBlock::live_blocks() == live);
}

TEST_CASE("closing discards the queue and releases its blocks", "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Wire wire(loop, flusher);
    {
        SharedBlockWriter writer;
        for (int i = 0; i < 10; ++i)
            REQUIRE(wire.connection->send_shared(writer.store(bytes(frame_of('q', 100)))));
    }
    CHECK(SharedBlock::live_blocks() == live + 1);  // the pending run holds it
    wire.connection->close(CloseReason::kSlowConsumer, "test");
    CHECK(wire.connection->queued_bytes() == 0);
    CHECK(SharedBlock::live_blocks() == live);
}
