// What a peer can send the server's client listeners from its first byte:
// the real session code (ClientSession, and WsSession on clients.ws_port) on
// a real TcpConnection over a socketpair, with the limits the server gives a
// connection that has not logged in. The first byte picks the listener:
//   0  the client port: mdcast frames (login, anything before or after it);
//   1  the WebSocket port from its HTTP request head;
//   2  the WebSocket port after a valid upgrade: WebSocket frames with any
//      length encoding (7, 16 or 64 bits), reserved bits set as a compression
//      extension would set them, masked or not, control frames between fragments.
// The second byte is the size of each read; the rest is the stream. The
// session may close for any reason, but must not crash, read out of bounds,
// leak, throw, or hold more output than its limit. Logins are accepted (as
// with authentication off), so what follows a login is reached too.
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/tcp_connection.h"
#include "fuzz_input.h"
#include "proto/field_dictionary.h"
#include "server/client_session.h"
#include "server/websocket/json_protocol.h"
#include "server/websocket/ws_session.h"

namespace {

using namespace mdcast;
using server::ClientSession;

constexpr size_t kMaxOutputBytes = 64 << 10;
constexpr size_t kLoginFrameBytes = 4096;  // clients.max_login_frame_bytes default

// The server's side of the session, reduced to what a connection that has
// just logged in can reach: the login is accepted, requests find nothing.
struct Owner final : ClientSession::Owner {
    void on_login_request(ClientSession& client, const wire::v1::LoginRequest&) override {
        client.accept_login(nullptr);
    }
    void on_subscribe(ClientSession&, const wire::v1::Subscribe&) override {}
    void on_unsubscribe(ClientSession&, uint64_t) override {}
    void on_directory_request(ClientSession&) override {}
    void on_post(ClientSession&, const wire::v1::Post&) override {}
    void on_client_closed(ClientSession&, CloseReason, const std::string&) override {}
    void on_client_drained(ClientSession&) override {}
    size_t subscription_count(const ClientSession&) const override { return 0; }
};

const std::string kUpgrade =
    "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Protocol: tr_json2\r\n\r\n";

struct Fixture {
    Fixture()
        : encoder(proto::FieldDictionary::parse(
              "22 BID DECIMAL\n25 ASK DECIMAL\n3 DSPLY_NAME STRING\n", "fuzz.dict")) {
        std::signal(SIGPIPE, SIG_IGN);  // as the daemons: a write to a gone peer fails with EPIPE
        // Sessions log their closes (rate-limited); a fuzzer closes thousands a second.
        for (const char* component : {"client", "ws", "listener", "server"})
            log::get(component)->set_level(spdlog::level::off);
        ws.max_message_bytes = 4096;
        ws.max_fragments = 8;
        ws.encoder = &encoder;
        ws.page = &page;
        ws.counters = &counters;
    }
    server::JsonEncoder encoder;
    std::string page = "<html></html>";
    server::WsCounters counters;
    server::WsSettings ws;
};

// Reads and drops what the session sent, so its writes never stall.
void drain(int fd) {
    char sink[65536];
    while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
}

void feed(int mode, size_t read_size, std::span<const uint8_t> stream) {
    static Fixture fixture;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) return;
    EventLoop loop(EventLoop::Timers::kCoarse);
    FlushScheduler flusher(loop, std::chrono::microseconds(0));
    Owner owner;
    const server::ClientLimits limits{false, 16, 16, 5000, 65536};
    ClientSession session(owner, limits, "fuzz");
    TcpConnection::Limits connection_limits;
    connection_limits.max_frame_body_bytes = kLoginFrameBytes;
    connection_limits.max_output_bytes = kMaxOutputBytes;
    connection_limits.read_chunk_bytes = 4096;
    connection_limits.raw_input = mode != 0;
    session.attach(
        std::make_unique<TcpConnection>(loop, flusher, fds[0], 1, "fuzz:1",
                                        proto::kClientToServerTypes, connection_limits, session),
        mode != 0 ? &fixture.ws : nullptr);
    std::string prefix = mode == 2 ? kUpgrade : "";
    const auto pump = [&](const uint8_t* data, size_t size) {
        if (::send(fds[1], data, size, MSG_NOSIGNAL) < 0) return false;
        event_base_loop(loop.base(), EVLOOP_NONBLOCK);
        drain(fds[1]);
        if (session.is_open() && session.connection().queued_bytes() > kMaxOutputBytes)
            std::abort();
        return session.is_open();
    };
    bool open =
        prefix.empty() || pump(reinterpret_cast<const uint8_t*>(prefix.data()), prefix.size());
    for (size_t at = 0; open && at < stream.size(); at += read_size)
        open = pump(stream.data() + at, std::min(read_size, stream.size() - at));
    ::close(fds[1]);
    event_base_loop(loop.base(), EVLOOP_NONBLOCK);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    const int mode = input.byte() % 3;
    const size_t read_size = 1 + input.byte() * 16u;
    feed(mode, read_size, input.rest());
    return 0;
}
