// A framed TCP connection on the process's event loop.
//
// Input: bytes are read straight into a FrameReader and complete frames handed
// to the Handler. Output: frames are appended to an output buffer and written
// once per flush round (FlushScheduler), so many frames go out in one write.
// A frame that breaks the rules closes this connection only, with a reason.
//
// Transport: plaintext (the socket, read and written directly: the hot path)
// or TLS (Limits::tls set: a TlsStream over the socket; each flush moves the
// queued frames into it without copying, and queued_bytes() counts them until
// they are handed to SSL_write). The Handler sees the same contract either way.
// Frames several connections get can be queued by reference to one shared
// copy (send_shared, common/net/shared_block.h): adjacent ones form a run that
// the flush queues as one evbuffer reference; the bytes are charged to this
// connection's queue and limits exactly as copies are.
// The process must not die of SIGPIPE (daemons and tools ignore it, the SDK
// blocks it on its I/O thread): a write to a peer that has gone fails with EPIPE.
//
// Ownership: the owner creates and destroys the connection. close() calls
// Handler::on_closed synchronously, possibly from inside on_frame, so the owner
// must only mark the connection there and destroy it later (reap), never inside
// its own callback.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/net/close_reason.h"
#include "common/net/flush_scheduler.h"
#include "common/net/output_pool.h"
#include "common/net/shared_block.h"
#include "common/net/tcp_progress.h"
#include "common/net/tls_context.h"
#include "common/net/tls_stream.h"
#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/limits.h"
#include "wire/common.pb.h"

struct event;
struct evbuffer;

namespace mdcast {

class TcpConnection final : public Flushable, private TlsStream::Owner {
  public:
    class Handler {
      public:
        virtual void on_frame(TcpConnection& connection, const proto::Frame& frame) = 0;
        virtual void on_closed(TcpConnection& connection, CloseReason reason,
                               const std::string& text) = 0;
        // The output queue fell to the low watermark or below after having been
        // above it (see set_low_watermark).
        virtual void on_output_drained(TcpConnection& connection) {}
        // Limits::raw_input: the bytes as read (valid during the call only).
        virtual void on_bytes(TcpConnection& connection, std::span<const uint8_t> bytes) {}
        // The last message a closing connection sends: true with `frame` set
        // (possibly empty: only what is queued goes out) to replace mdcast's
        // Close frame (a WebSocket close frame), false for the default (mdcast's
        // Close, when the reason has a wire code).
        virtual bool close_frame(CloseReason reason, const std::string& text, std::string& frame) {
            return false;
        }

      protected:
        virtual ~Handler() = default;
    };

    struct Limits {
        size_t max_frame_body_bytes = proto::kDefaultFrameBodyBytes;
        size_t max_output_bytes = 8 << 20;  // send() refuses beyond this (and beyond `pool`)
        OutputPool* pool = nullptr;         // shared budget, when set
        // Shared blocks this connection's queue may always reference at once;
        // more only while they hold at most twice its queued bytes. Runs beyond
        // that are copied (shared_block.h: a slow consumer pins a bounded amount).
        size_t max_shared_blocks = 8;
        bool tcp_nodelay = true;
        int send_buffer_bytes = 0;  // SO_SNDBUF (0: kernel default)
        size_t read_chunk_bytes = 64 << 10;
        int reads_per_wakeup = 4;  // fairness: then let other connections run
        // Input is not mdcast frames: bytes go to Handler::on_bytes as read
        // (WebSocket, whose framing the handler owns).
        bool raw_input = false;
        // TLS transport: set `context` (server or client). Frames flow only
        // after the handshake; one that does not finish within
        // handshake_timeout_ms closes with kTlsHandshakeTimeout.
        struct Tls {
            std::shared_ptr<const TlsContext> context;
            std::string host;  // client: the name or IP the certificate must carry
            uint32_t handshake_timeout_ms = 10000;
            TlsCounters* counters = nullptr;
        } tls;
    };

    // Takes ownership of the connected socket `fd` (made non-blocking here).
    TcpConnection(EventLoop& loop, FlushScheduler& flusher, int fd, uint64_t id, std::string peer,
                  proto::FrameTypeSet accepted, Limits limits, Handler& handler);
    ~TcpConnection();
    TcpConnection(const TcpConnection&) = delete;
    TcpConnection& operator=(const TcpConnection&) = delete;

    void start();
    // Back-pressure: stop and resume reading from the peer (its TCP window fills).
    void pause_reading();
    void resume_reading();

    // Queue one complete frame. Returns false (and queues nothing) when the queue
    // would pass max_output_bytes; the caller applies its slow-consumer policy.
    bool send_frame(std::span<const uint8_t> frame);
    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    // Queue one complete frame stored in a shared block, as send_frame() does
    // (same limits, same order with every other frame) but without copying it
    // when it extends a run of at least kMinReferenceBytes.
    bool send_shared(const SharedFrame& frame);
    // Runs shorter than this are copied at the flush: a reference costs an
    // evbuffer chain, more than copying a few hundred bytes.
    static constexpr size_t kMinReferenceBytes = 512;

    // Closes once: tells the peer with a Close frame when the reason has a wire
    // code, writes what it can without blocking, and calls on_closed.
    void close(CloseReason reason, const std::string& text);
    // Graceful close (shutdown): queues the Close frame behind what is queued,
    // stops reading and accepting frames, and closes once all of it is written.
    // The owner bounds the wait by calling close() when its grace period ends.
    void close_after_flush(CloseReason reason, const std::string& text);
    bool closing() const { return closing_; }

    void flush() override;
    // What write_now() did.
    enum class DirectWrite : uint8_t {
        kRefused,  // nothing: the connection is not idle (see write_now)
        kWritten,  // every byte went to the kernel
        kQueued,   // the kernel took less (or none): the rest waits in the queue
    };
    // Writes `bytes` (whole frames) to the socket at once, from any thread,
    // with one non-blocking send, when the connection is open, plaintext, not
    // closing, and has nothing queued and no write waiting, so that they go
    // out in order after everything queued before. Whatever the kernel does
    // not take (a partial write, EAGAIN, an error) is queued as send_frame()
    // would, in order, but NOT scheduled: the owner then has flush() called
    // on the loop's thread, which finishes the write or meets the error. It
    // touches no event and no callback, only the socket and the queue, so
    // the caller must hold what keeps the loop's thread out of this connection
    // (EventLoop::set_callback_lock) or be that thread.
    DirectWrite write_now(std::span<const uint8_t> bytes);
    // on_output_drained fires when the queue falls to `bytes` after passing it
    // (a queue above `bytes` now has passed it).
    void set_low_watermark(size_t bytes);
    // The kernel is given no more than `bytes` not yet sent (bytes in flight
    // do not count): TCP_NOTSENT_LOWAT, and each write sized to the room left,
    // since the kernel fills a segment it has begun past that mark (a whole
    // 64 KiB one on loopback). Plaintext only; false when the socket refused it.
    bool limit_unsent(uint32_t bytes);
    // Room left before send() refuses (pool and max taken into account).
    bool can_queue(size_t bytes) const;

    bool is_open() const { return fd_ >= 0; }
    // What the kernel says of the connection's progress (TCP_INFO).
    std::optional<TcpProgress> progress() const { return tcp_progress(fd_); }
    // Open and not closing: send() would queue (limits permitting).
    bool accepts_output() const { return fd_ >= 0 && !closing_; }
    bool is_tls() const { return tls_ != nullptr; }
    // TLS connection whose handshake has not finished yet.
    bool tls_handshaking() const { return tls_ && !tls_->established(); }
    // Protocol, cipher and peer certificate of a TLS connection ("" for plaintext).
    std::string tls_description() const { return tls_ ? tls_->describe() : std::string(); }
    uint64_t id() const { return id_; }
    const std::string& peer() const { return peer_; }
    size_t queued_bytes() const;
    uint64_t bytes_in() const { return bytes_in_; }
    uint64_t bytes_out() const { return bytes_out_; }
    uint64_t frames_in() const { return frames_in_; }
    uint64_t writes() const { return writes_; }
    // Shared runs queued by reference and by copy.
    uint64_t runs_referenced() const { return runs_referenced_; }
    uint64_t runs_copied() const { return runs_copied_; }
    size_t pinned_blocks() const { return pins_.pinned(); }
    int64_t last_input_ns() const { return last_input_ns_; }
    // When frames could first flow: accept (or connect) for plaintext, the end
    // of the handshake for TLS. Login deadlines count from here, never from the
    // last byte, so a peer trickling bytes cannot hold a slot without logging in.
    int64_t ready_ns() const { return ready_ns_; }
    // When the frame now partly read began to arrive (0: none is): a peer that
    // takes longer than its owner allows to finish one is a slow-loris.
    // Framed input only (raw input is framed by the handler).
    int64_t partial_frame_since_ns() const { return partial_since_ns_; }
    // A frame has been partly read for `timeout_ms` or more at `now_ns`.
    bool frame_overdue(int64_t now_ns, uint32_t timeout_ms) const {
        return partial_since_ns_ > 0 &&
               now_ns - partial_since_ns_ >= int64_t{timeout_ms} * 1'000'000;
    }
    // The largest frame body accepted from now on (a small one before login).
    void set_max_frame_body(size_t bytes) { reader_.set_max_body_bytes(bytes); }
    size_t max_frame_body() const { return reader_.max_body_bytes(); }

  private:
    static void on_readable(int, short, void* self);
    static void on_writable(int, short, void* self);
    // Bytes the next write may hand the kernel (limit_unsent), -1: any.
    long unsent_room() const;
    void wait_writable();
    void read_some();
    bool deliver_frames();
    void note_partial_frame(bool frame_completed);
    std::span<uint8_t> input_space(size_t bytes);
    bool take_input(size_t bytes);
    void write_some();
    void commit_run();
    void drop_run();
    void written_to();
    bool enqueue_allowed(size_t bytes) const;
    bool admits(size_t queued, size_t bytes) const;
    void queue_changed(size_t before);
    void queue_changed(size_t before, size_t after);
    bool queue_close_frame(CloseReason reason, const std::string& text);
    // The last message for the peer; nullopt when it is not told (nothing more is written).
    std::optional<std::string> close_frame(CloseReason reason, const std::string& text);
    void close_socket(CloseReason reason, const std::string& text);
    void close_tls(CloseReason reason, const std::string& text);
    void write_tls();
    void on_tls_established() override;
    void on_tls_input(evbuffer* input) override;
    void on_tls_written(size_t bytes) override;
    void on_tls_ended(CloseReason reason, const std::string& text) override;

    const EventLoop& loop_;
    FlushScheduler& flusher_;
    int fd_;
    uint64_t id_;
    std::string peer_;
    Limits limits_;
    Handler& handler_;
    proto::FrameReader reader_;
    evbuffer* output_;
    event* read_event_;
    event* write_event_;
    std::unique_ptr<TlsStream> tls_;  // null: plaintext
    size_t tls_queued_ = 0;           // moved to tls_, not yet given to SSL_write
    // The shared run not yet in output_ (it holds a reference on run_block_).
    SharedBlock* run_block_ = nullptr;
    const uint8_t* run_begin_ = nullptr;
    size_t run_bytes_ = 0;
    PinnedBlocks pins_;
    uint64_t runs_referenced_ = 0;
    uint64_t runs_copied_ = 0;
    bool write_waiting_ = false;
    bool reading_paused_ = false;
    bool closing_ = false;
    CloseReason closing_reason_ = CloseReason::kShutdown;
    std::string closing_text_;
    size_t low_watermark_ = 0;
    uint32_t unsent_limit_ = 0;  // limit_unsent (0: the kernel's send buffer)
    bool above_watermark_ = false;
    uint64_t bytes_in_ = 0;
    uint64_t bytes_out_ = 0;
    uint64_t frames_in_ = 0;
    uint64_t writes_ = 0;
    int64_t last_input_ns_ = 0;
    int64_t ready_ns_ = 0;
    int64_t partial_since_ns_ = 0;
};

}  // namespace mdcast
