// Shared output blocks: reference counts, the writer's blocks, the pin bound,
// and TcpConnection::send_shared over real socketpairs (same bytes, same order,
// same accounting as copies; the block freed once the last connection sent it).
#include "common/net/shared_block.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

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
    CHECK(pins.can_pin(*a));
    pins.pin(*a, 200);  // the same block again: still one pin
    CHECK(pins.pinned() == 1);
    pins.pin(*b, 300);
    CHECK(pins.pinned() == 2);
    CHECK_FALSE(pins.can_pin(*c));
    CHECK(pins.can_pin(*b));  // extending the last block needs no new pin
    pins.written_to(199);
    CHECK(pins.pinned() == 2);
    pins.written_to(200);
    CHECK(pins.pinned() == 1);
    CHECK(pins.can_pin(*c));
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

TEST_CASE("a consumer that does not read pins at most max_shared_blocks, the rest is copied",
          "[shared_block][tcp_connection]") {
    const size_t live = SharedBlock::live_blocks();
    EventLoop loop;
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    TcpConnection::Limits limits;
    limits.max_shared_blocks = 2;
    limits.max_output_bytes = 64 << 20;
    Wire wire(loop, flusher, limits);
    {
        SharedBlockWriter writer(4096);  // a 1,000-byte frame per block: every run a new block
        const std::string frame = frame_of('z', 1000);
        for (int i = 0; i < 12; ++i) {
            REQUIRE(wire.connection->send_shared(writer.store(bytes(frame))));
            REQUIRE(wire.connection->send_shared(writer.store(bytes(frame))));
            REQUIRE(wire.connection->send_shared(writer.store(bytes(frame))));
            REQUIRE(writer.store(bytes(frame_of('-', 1000))));  // another group's frame
        }
    }
    // Nothing written yet (the loop has not run): 11 runs went into the queue,
    // two by reference, the rest copied; the last run is pending.
    CHECK(wire.connection->runs_referenced() == 2);
    CHECK(wire.connection->runs_copied() == 9);
    CHECK(wire.connection->pinned_blocks() == 2);
    CHECK(SharedBlock::live_blocks() == live + 3);  // two pinned, one under the pending run
    CHECK(wire.connection->queued_bytes() == 36 * 1000);
    run_for(loop, 20);
    CHECK(wire.received() == std::string(36 * 1000, 'z'));  // every byte, no other group's
    CHECK(wire.connection->pinned_blocks() == 0);
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
