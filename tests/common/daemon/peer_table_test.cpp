// PeerTable over real socketpairs: the connection limit, reaping after the
// close callbacks, and the graceful shutdown both daemons share (tell every
// peer, wait for their queues up to the grace period, cut off the rest).
#include "common/daemon/peer_table.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

using namespace mdcast;

namespace {

struct Peer;
using Table = PeerTable<Peer>;

// The least a daemon's session does: hold its connection, tell the table when it closed.
struct Peer : TcpConnection::Handler {
    explicit Peer(Table*& table) : table_(table) {}
    void attach(std::unique_ptr<TcpConnection> connection) { connection_ = std::move(connection); }
    TcpConnection& connection() { return *connection_; }
    const TcpConnection& connection() const { return *connection_; }
    void on_frame(TcpConnection&, const proto::Frame&) override {}
    void on_closed(TcpConnection&, CloseReason reason, const std::string&) override {
        table_->on_closed(*this, reason);
    }

  private:
    Table*& table_;
    std::unique_ptr<TcpConnection> connection_;
};

struct Fixture {
    EventLoop loop;
    FlushScheduler flusher{loop, std::chrono::microseconds(0)};
    Table* table_ptr = nullptr;
    std::vector<uint64_t> erased;
    std::vector<std::pair<std::string, size_t>> finished;
    Table table{loop,
                "peer",
                "test shutting down",
                {[this](Peer& peer) { erased.push_back(peer.connection().id()); },
                 [this](const std::string& why, size_t cut) {
                     finished.emplace_back(why, cut);
                     loop.stop();
                 }}};
    std::vector<int> theirs;  // the far ends, closed at the end

    Fixture() {
        table_ptr = &table;
        std::signal(SIGPIPE, SIG_IGN);
    }
    ~Fixture() {
        for (int fd : theirs) ::close(fd);
    }

    // Connects a peer; returns whether the table admitted it.
    bool connect(size_t max, size_t send_buffer = 0) {
        int fds[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        theirs.push_back(fds[1]);
        TcpConnection::Limits limits;
        limits.max_output_bytes = 64 << 20;
        limits.send_buffer_bytes = static_cast<int>(send_buffer);
        auto peer = std::make_unique<Peer>(table_ptr);
        auto connection =
            std::make_unique<TcpConnection>(loop, flusher, fds[0], table.next_id(), "test",
                                            proto::kServerToClientTypes, limits, *peer);
        return table.admit(std::move(peer), std::move(connection), max, "peers.max_connections");
    }

    void run_for(int ms) {
        Timer stop(loop, [&] { loop.stop(); });
        stop.start_once(std::chrono::milliseconds(ms));
        loop.run();
    }
};

}  // namespace

TEST_CASE("peers beyond the limit are refused with its name, counted and reaped", "[peer_table]") {
    Fixture f;
    CHECK(f.connect(2));
    CHECK(f.connect(2));
    CHECK_FALSE(f.connect(2));
    CHECK(f.table.accepted() == 2);
    CHECK(f.table.refused() == 1);
    CHECK(f.table.closes(static_cast<size_t>(CloseReason::kLimitReached)) == 1);
    CHECK(f.table.size() == 3);  // the refused one is still there until its callbacks return
    f.run_for(20);
    CHECK(f.table.size() == 2);
    REQUIRE(f.erased.size() == 1);
    CHECK(f.erased[0] == 3);
    CHECK(f.table.find(3) == nullptr);
    CHECK(f.table.find(1) != nullptr);
    CHECK(f.table.open_count() == 2);
    // The refused peer was told why.
    char buffer[256];
    const ssize_t n = ::read(f.theirs[2], buffer, sizeof buffer);
    REQUIRE(n > 0);
    CHECK(std::string(buffer, static_cast<size_t>(n)).find("peers.max_connections (2) reached") !=
          std::string::npos);
}

TEST_CASE("a shutdown ends when every peer has closed", "[peer_table]") {
    Fixture f;
    REQUIRE(f.connect(10));
    REQUIRE(f.connect(10));
    f.table.begin_shutdown("SIGTERM", std::chrono::milliseconds(5000));
    CHECK(f.table.shutting_down());
    CHECK_FALSE(f.connect(10));  // nobody new while stopping
    f.run_for(2000);             // stopped by `finished`, well before the grace period
    REQUIRE(f.finished.size() == 1);
    CHECK(f.finished[0].first == "every peer closed");
    CHECK(f.finished[0].second == 0);
    CHECK(f.table.stopped());
    CHECK(f.table.size() == 0);
    CHECK(f.erased.size() == 3);
    CHECK(f.table.closes(static_cast<size_t>(CloseReason::kShutdown)) == 3);
}

TEST_CASE("a peer that does not read is cut off when the grace period ends", "[peer_table]") {
    Fixture f;
    REQUIRE(f.connect(10, 4096));
    Peer& stuck = *f.table.find(1);
    const std::string frame(1 << 20, 'x');
    for (int i = 0; i < 4; ++i) {
        REQUIRE(stuck.connection().send_frame(
            {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()}));
    }
    f.table.begin_shutdown("SIGTERM", std::chrono::milliseconds(100));
    f.run_for(3000);
    REQUIRE(f.finished.size() == 1);
    CHECK(f.finished[0].first == "grace period over");
    CHECK(f.finished[0].second == 1);
}

TEST_CASE("a second shutdown request cuts off at once", "[peer_table]") {
    Fixture f;
    REQUIRE(f.connect(10, 4096));
    const std::string frame(1 << 20, 'x');
    REQUIRE(f.table.find(1)->connection().send_frame(
        {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()}));
    f.table.begin_shutdown("SIGTERM", std::chrono::milliseconds(60000));
    f.table.begin_shutdown("SIGTERM", std::chrono::milliseconds(60000));
    REQUIRE(f.finished.size() == 1);
    CHECK(f.finished[0].first == "second SIGTERM");
    CHECK(f.finished[0].second == 1);
}
