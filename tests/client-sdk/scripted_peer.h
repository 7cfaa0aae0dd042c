// A scripted peer for the SDK's tests: a loopback listener that accepts the
// SDK's connection and speaks the wire protocol exactly as a test dictates
// (tests/client-sdk/consumer_test.cpp plays servers, publisher_test.cpp a
// distributor). It runs on a Script thread, so it throws instead of using
// Catch's macros, which belong to the main thread; Script::join() reports it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "proto/frame.h"
#include "wire/common.pb.h"
#include "wire/session.pb.h"

namespace scripted {

namespace wire = mdcast::wire::v1;
using mdcast::proto::FrameType;
using std::chrono::milliseconds;

inline void fail(const std::string& what) {
    throw std::runtime_error(what);
}

class Peer {
  public:
    Peer() {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listen_fd_, 4) != 0) {
            fail("cannot listen on loopback");
        }
        socklen_t length = sizeof address;
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
    }
    virtual ~Peer() {
        drop();
        ::close(listen_fd_);
    }

    uint16_t port() const { return port_; }
    // The receive buffer of connections accepted from now on (a peer that
    // takes little at a time: the SDK's writes then fill up and go partial).
    void set_receive_buffer(int bytes) {
        setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    }

    bool accept(milliseconds timeout = milliseconds(5000)) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
        fd_ = ::accept(listen_fd_, nullptr, nullptr);
        return fd_ >= 0;
    }
    void drop() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        buffer_.clear();  // the next connection starts afresh
    }

    // The next frame that is not a Ping (pings are answered).
    std::optional<std::pair<FrameType, std::string>> read(
        milliseconds timeout = milliseconds(5000)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            while (buffer_.size() >= mdcast::proto::kFrameHeaderBytes) {
                const auto header = mdcast::proto::decode_frame_header(
                    reinterpret_cast<const uint8_t*>(buffer_.data()));
                const size_t total = mdcast::proto::kFrameHeaderBytes + header.body_bytes;
                if (buffer_.size() < total) break;
                std::string body =
                    buffer_.substr(mdcast::proto::kFrameHeaderBytes, header.body_bytes);
                buffer_.erase(0, total);
                const auto type = static_cast<FrameType>(header.type);
                if (type == FrameType::kPing) {
                    send(FrameType::kPong, wire::Pong());
                    continue;
                }
                return std::make_pair(type, std::move(body));
            }
            const auto left = std::chrono::duration_cast<milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{fd_, POLLIN, 0};
            if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1)
                return std::nullopt;
            char chunk[65536];
            const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n <= 0) return std::nullopt;
            buffer_.append(chunk, static_cast<size_t>(n));
        }
    }
    template <class Message>
    Message expect(FrameType type) {
        auto frame = read();
        if (!frame)
            fail("expected " + std::string(mdcast::proto::frame_type_name(type)) + ", got nothing");
        if (frame->first != type) {
            fail("expected " + std::string(mdcast::proto::frame_type_name(type)) + ", got " +
                 std::string(mdcast::proto::frame_type_name(frame->first)));
        }
        Message message;
        if (!message.ParseFromString(frame->second)) fail("malformed frame");
        return message;
    }
    void send(FrameType type, const google::protobuf::MessageLite& message) {
        send_raw(mdcast::proto::encode_frame_string(type, message));
    }
    // Bytes as they are: a frame a test has altered (its flags, say).
    void send_raw(const std::string& bytes) {
        if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(bytes.size())) {
            fail("send failed");
        }
    }

    // Accepts, reads the login and answers it (0: a limit not announced).
    void accept_login(bool accepted = true, uint32_t max_items_per_request = 0,
                      uint32_t max_frame_bytes = 0) {
        if (!accept()) fail("no connection from the SDK");
        expect<wire::LoginRequest>(FrameType::kLoginRequest);
        wire::LoginResponse response;
        response.set_accepted(accepted);
        response.set_server_id("scripted/" + std::to_string(port_));
        response.set_heartbeat_interval_ms(1000);
        response.set_max_items_per_request(max_items_per_request);
        response.set_max_frame_bytes(max_frame_bytes);
        send(FrameType::kLoginResponse, response);
    }

  private:
    int listen_fd_ = -1;
    int fd_ = -1;
    uint16_t port_ = 0;
    std::string buffer_;
};

// A peer's part of a test, on its own thread.
class Script {
  public:
    explicit Script(std::function<void()> body)
        : thread_([this, body = std::move(body)] {
              try {
                  body();
              } catch (const std::exception& e) {
                  error_ = e.what();
              }
          }) {}
    // Waits for the script; what went wrong in it, or "".
    std::string join() {
        thread_.join();
        return error_;
    }

  private:
    std::string error_;
    std::thread thread_;
};

}  // namespace scripted
