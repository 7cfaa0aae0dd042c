// One TLS session over a connected socket, run by a libevent OpenSSL
// bufferevent: the handshake (with a deadline), decrypted input, and encrypted
// output. TcpConnection uses it as its transport when a listener or a client
// asks for TLS; the plaintext path does not touch it.
//
// Output: write() moves the owner's queued frames into the bufferevent's
// output without copying; the owner hears of every byte that has been handed
// to SSL_write (on_tls_written), which keeps its queue accounting exact.
// Input: the owner takes decrypted bytes from input() in on_tls_input.
//
// Ownership: the stream owns the SSL object and the socket (freed and closed
// in the destructor). shut() stops all I/O at once and may be called from
// inside any of the owner's callbacks; the stream must then only be destroyed
// later, outside them.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "common/net/close_reason.h"
#include "common/net/event_loop.h"

struct bufferevent;
struct evbuffer;
struct evbuffer_cb_entry;
struct evbuffer_cb_info;
struct event;
struct ssl_st;

namespace mdcast {

// Handshake outcomes of one listener (or one client), for the metrics.
struct TlsCounters {
    uint64_t handshakes_ok = 0;
    uint64_t handshakes_failed = 0;
    uint64_t handshakes_timed_out = 0;
};

class TlsStream {
  public:
    class Owner {
      public:
        virtual void on_tls_established() {}
        // Decrypted bytes wait in `input`; take what you can.
        virtual void on_tls_input(evbuffer* input) = 0;
        // `bytes` of the output went to SSL_write.
        virtual void on_tls_written(size_t bytes) = 0;
        // The handshake failed or timed out, the peer closed, or the socket
        // failed. The owner closes (calls shut()).
        virtual void on_tls_ended(CloseReason reason, const std::string& text) = 0;

      protected:
        virtual ~Owner() = default;
    };

    enum class Role { kAccept, kConnect };

    // Takes ownership of `ssl` and `fd` (connected, non-blocking) and starts
    // the handshake. Input beyond `max_input_bytes` stays in the socket.
    TlsStream(EventLoop& loop, int fd, ssl_st* ssl, Role role,
              std::chrono::milliseconds handshake_timeout, size_t max_input_bytes,
              TlsCounters* counters, Owner& owner);
    ~TlsStream();
    TlsStream(const TlsStream&) = delete;
    TlsStream& operator=(const TlsStream&) = delete;

    void set_reading(bool on);
    // Moves every byte of `frames` to the TLS output (sent once the handshake is done).
    void write(evbuffer* frames);
    // Hard close: when the handshake is done and nothing is waiting in the
    // output, `last` (e.g. a Close frame) and a close_notify are tried once
    // without blocking; then the output is discarded, I/O stops and the peer
    // sees the socket shut down. No owner callback runs after this.
    void shut(std::span<const uint8_t> last);

    bool established() const { return established_; }
    // "TLSv1.3 TLS_AES_256_GCM_SHA384, peer CN=..." once established.
    std::string describe() const;

  private:
    static void on_read(bufferevent*, void* self);
    static void on_event(bufferevent*, short what, void* self);
    static void on_output_changed(evbuffer*, const evbuffer_cb_info* info, void* self);
    static void on_handshake_timeout(int, short, void* self);
    void end_handshake(CloseReason reason, const std::string& text);
    std::string error_text(short what) const;

    const EventLoop& loop_;
    Owner& owner_;
    ssl_st* ssl_;
    bufferevent* bev_;
    event* handshake_timer_;
    evbuffer_cb_entry* output_watch_;
    TlsCounters* counters_;
    std::chrono::milliseconds handshake_timeout_;
    bool established_ = false;
    bool shut_ = false;
};

}  // namespace mdcast
