#include "common/net/tcp_connection.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace mdcast {

TcpConnection::TcpConnection(EventLoop& loop, FlushScheduler& flusher, int fd, uint64_t id,
                             std::string peer, proto::FrameTypeSet accepted, Limits limits,
                             Handler& handler)
    : loop_(loop),
      flusher_(flusher),
      fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      limits_(limits),
      handler_(handler),
      reader_(limits.max_frame_body_bytes, accepted),
      output_(evbuffer_new()),
      read_event_(event_new(loop.base(), fd, EV_READ | EV_PERSIST, &on_readable, this)),
      write_event_(event_new(loop.base(), fd, EV_WRITE | EV_PERSIST, &on_writable, this)),
      pins_(limits.max_shared_blocks) {
    evutil_make_socket_nonblocking(fd_);
    const int nodelay = limits_.tcp_nodelay ? 1 : 0;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
    if (limits_.send_buffer_bytes > 0) {
        setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &limits_.send_buffer_bytes,
                   sizeof limits_.send_buffer_bytes);
    }
    last_input_ns_ = monotonic_ns();
    ready_ns_ = last_input_ns_;
    if (const auto& tls = limits_.tls; tls.context) {
        const TlsContext& context = *tls.context;
        tls_ = std::make_unique<TlsStream>(
            loop, fd_,
            context.is_server() ? context.new_server_ssl() : context.new_client_ssl(tls.host),
            context.is_server() ? TlsStream::Role::kAccept : TlsStream::Role::kConnect,
            std::chrono::milliseconds(tls.handshake_timeout_ms),
            limits_.max_frame_body_bytes + (64 << 10), tls.counters,
            static_cast<TlsStream::Owner&>(*this));
    }
}

TcpConnection::~TcpConnection() {
    if (limits_.pool) limits_.pool->on_change(queued_bytes(), 0);
    flusher_.cancel(*this);
    drop_run();
    event_free(read_event_);
    event_free(write_event_);
    evbuffer_free(output_);
    if (fd_ >= 0 && !tls_) ::close(fd_);  // a TLS stream closes its socket itself
}

void TcpConnection::start() {
    if (tls_) return tls_->set_reading(!reading_paused_);
    if (!reading_paused_) event_add(read_event_, nullptr);
}

void TcpConnection::pause_reading() {
    reading_paused_ = true;
    if (fd_ < 0) return;
    if (tls_) return tls_->set_reading(false);
    event_del(read_event_);
}

void TcpConnection::resume_reading() {
    reading_paused_ = false;
    if (fd_ < 0 || closing_) return;
    if (tls_) return tls_->set_reading(true);
    event_add(read_event_, nullptr);
}

size_t TcpConnection::queued_bytes() const {
    return evbuffer_get_length(output_) + tls_queued_ + run_bytes_;
}

bool TcpConnection::enqueue_allowed(size_t bytes) const {
    return admits(queued_bytes(), bytes);
}

bool TcpConnection::admits(size_t queued, size_t bytes) const {
    if (limits_.pool) return limits_.pool->admit(queued, bytes);
    return queued + bytes <= limits_.max_output_bytes;
}

void TcpConnection::set_low_watermark(size_t bytes) {
    low_watermark_ = bytes;
    above_watermark_ = queued_bytes() > bytes;
}

bool TcpConnection::limit_unsent(uint32_t bytes) {
    const int value = static_cast<int>(bytes);
    if (fd_ < 0 || setsockopt(fd_, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &value, sizeof value) != 0) {
        return false;
    }
    unsent_limit_ = bytes;
    return true;
}

long TcpConnection::unsent_room() const {
    int unsent = 0;
    if (unsent_limit_ == 0 || ioctl(fd_, SIOCOUTQNSD, &unsent) != 0) return -1;
    return unsent >= static_cast<int>(unsent_limit_) ? 0
                                                     : static_cast<long>(unsent_limit_) - unsent;
}

bool TcpConnection::can_queue(size_t bytes) const {
    return accepts_output() && enqueue_allowed(bytes);
}

// Keeps the shared pool and the drain watermark in step with the queue.
void TcpConnection::queue_changed(size_t before) {
    queue_changed(before, queued_bytes());
}

void TcpConnection::queue_changed(size_t before, size_t after) {
    if (limits_.pool) limits_.pool->on_change(before, after);
    if (after > low_watermark_) {
        above_watermark_ = true;
    } else if (above_watermark_ && after < before) {
        above_watermark_ = false;
        handler_.on_output_drained(*this);
    }
}

// The hot path reads the queue's length once per frame.
bool TcpConnection::send_frame(std::span<const uint8_t> frame) {
    if (!accepts_output()) return false;
    const size_t before = queued_bytes();
    if (!admits(before, frame.size())) return false;
    commit_run();
    evbuffer_add(output_, frame.data(), frame.size());
    queue_changed(before, before + frame.size());
    flusher_.schedule(*this);
    return true;
}

bool TcpConnection::send_shared(const SharedFrame& frame) {
    if (!accepts_output()) return false;
    const size_t size = frame.bytes.size();
    const size_t before = queued_bytes();
    if (!admits(before, size)) return false;
    if (run_block_ == frame.block && run_begin_ + run_bytes_ == frame.bytes.data()) {
        run_bytes_ += size;
    } else {
        commit_run();
        frame.block->retain();
        run_block_ = frame.block;
        run_begin_ = frame.bytes.data();
        run_bytes_ = size;
    }
    queue_changed(before, before + size);
    flusher_.schedule(*this);
    return true;
}

// The pending run into output_, behind what is there: by reference when it is
// long enough and the pin bound allows (the chain then holds the run's
// reference on the block), else copied. queued_bytes() does not change.
void TcpConnection::commit_run() {
    if (!run_block_) return;
    SharedBlock* block = std::exchange(run_block_, nullptr);
    const size_t bytes = std::exchange(run_bytes_, 0);
    if (bytes >= kMinReferenceBytes && pins_.can_pin(*block, queued_bytes() + bytes) &&
        evbuffer_add_reference(output_, run_begin_, bytes, &SharedBlock::release_reference,
                               block) == 0) {
        pins_.pin(*block, bytes_out_ + tls_queued_ + evbuffer_get_length(output_));
        ++runs_referenced_;
        return;
    }
    evbuffer_add(output_, run_begin_, bytes);
    ++runs_copied_;
    block->release();
}

void TcpConnection::drop_run() {
    if (run_block_) std::exchange(run_block_, nullptr)->release();
    run_bytes_ = 0;
}

// Bytes written: the pins of references written in full are gone.
void TcpConnection::written_to() {
    pins_.written_to(bytes_out_);
}

bool TcpConnection::send(proto::FrameType type, const google::protobuf::MessageLite& message) {
    if (!accepts_output()) return false;
    const size_t size = proto::frame_bytes(message);
    if (!enqueue_allowed(size)) return false;
    const size_t before = queued_bytes();
    commit_run();
    evbuffer_iovec vec;
    if (evbuffer_reserve_space(output_, static_cast<ev_ssize_t>(size), &vec, 1) < 1) return false;
    proto::encode_frame(type, message, static_cast<uint8_t*>(vec.iov_base));
    vec.iov_len = size;
    evbuffer_commit_space(output_, &vec, 1);
    queue_changed(before);
    flusher_.schedule(*this);
    return true;
}

void TcpConnection::flush() {
    if (fd_ < 0 || write_waiting_) return;  // the write event drains a backlog
    if (tls_) return write_tls();
    write_some();
}

void TcpConnection::write_some() {
    commit_run();
    while (evbuffer_get_length(output_) > 0) {
        const size_t before = queued_bytes();
        const long room = unsent_room();
        if (room == 0) return wait_writable();  // woken below half of the limit
        const int written =
            room < 0 ? evbuffer_write(output_, fd_) : evbuffer_write_atmost(output_, fd_, room);
        if (written > 0) {
            bytes_out_ += static_cast<uint64_t>(written);
            ++writes_;
            written_to();
            queue_changed(before);
            if (fd_ < 0) return;  // the drain handler closed us
            continue;
        }
        if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            return wait_writable();
        }
        close(CloseReason::kWriteError, written < 0 ? std::strerror(errno) : "write returned 0");
        return;
    }
    if (write_waiting_) {
        write_waiting_ = false;
        event_del(write_event_);
    }
    if (closing_) close(closing_reason_, closing_text_);  // everything, Close included, is out
}

void TcpConnection::wait_writable() {
    if (write_waiting_) return;
    write_waiting_ = true;
    event_add(write_event_, nullptr);
}

TcpConnection::DirectWrite TcpConnection::write_now(std::span<const uint8_t> bytes) {
    if (!accepts_output() || tls_ || write_waiting_ || unsent_limit_ != 0 || queued_bytes() > 0 ||
        !admits(0, bytes.size())) {
        return DirectWrite::kRefused;
    }
    // MSG_NOSIGNAL: the caller's thread may not block SIGPIPE as the SDK's I/O thread does.
    const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    const size_t written = sent > 0 ? static_cast<size_t>(sent) : 0;
    if (written > 0) {
        bytes_out_ += written;
        ++writes_;
        written_to();
    }
    if (written == bytes.size()) return DirectWrite::kWritten;
    evbuffer_add(output_, bytes.data() + written, bytes.size() - written);
    queue_changed(0, bytes.size() - written);
    return DirectWrite::kQueued;
}

void TcpConnection::on_writable(int, short, void* self) {
    auto* connection = static_cast<TcpConnection*>(self);
    const EventLoop::CallbackScope scope(connection->loop_);
    connection->write_some();
}

void TcpConnection::on_readable(int, short, void* self) {
    auto* connection = static_cast<TcpConnection*>(self);
    const EventLoop::CallbackScope scope(connection->loop_);
    connection->read_some();
}

void TcpConnection::read_some() {
    for (int round = 0; round < limits_.reads_per_wakeup && fd_ >= 0; ++round) {
        auto space = input_space(limits_.read_chunk_bytes);
        const ssize_t n = ::read(fd_, space.data(), space.size());
        if (n > 0) {
            if (!take_input(static_cast<size_t>(n))) return;
            if (static_cast<size_t>(n) < space.size()) return;  // socket drained
            continue;
        }
        if (n == 0) {
            close(CloseReason::kPeerClosed, "peer closed the connection");
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            close(CloseReason::kReadError, std::strerror(errno));
        }
        return;
    }
}

// Where the next read goes: the frame reader, or (raw input) a scratch buffer
// the handler consumes before the read returns, so an idle connection keeps none.
std::span<uint8_t> TcpConnection::input_space(size_t bytes) {
    if (!limits_.raw_input) return reader_.prepare(bytes);
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < bytes) scratch.resize(bytes);
    return {scratch.data(), bytes};
}

// `bytes` were read into input_space(). Returns false once the connection closed.
bool TcpConnection::take_input(size_t bytes) {
    bytes_in_ += bytes;
    last_input_ns_ = monotonic_ns();
    if (!limits_.raw_input) {
        reader_.commit(bytes);
        const uint64_t frames_before = frames_in_;
        if (!deliver_frames()) return false;
        note_partial_frame(frames_in_ != frames_before);
        return true;
    }
    handler_.on_bytes(*this, input_space(bytes).first(bytes));
    return fd_ >= 0;
}

// Hands every complete frame to the handler. Returns false once the connection closed.
bool TcpConnection::deliver_frames() {
    proto::Frame frame;
    while (fd_ >= 0) {
        switch (reader_.next(frame)) {
            case proto::FrameReader::Result::kFrame:
                ++frames_in_;
                handler_.on_frame(*this, frame);
                break;
            case proto::FrameReader::Result::kNeedMore:
                return true;
            case proto::FrameReader::Result::kError:
                close(reader_.error() == proto::FrameError::kTooLarge ? CloseReason::kFrameTooLarge
                                                                      : CloseReason::kProtocolError,
                      reader_.error_text());
                return false;
        }
    }
    return false;
}

// A frame left partly read starts its clock when its first byte came: now,
// unless the same frame was already waiting (no frame completed since).
void TcpConnection::note_partial_frame(bool frame_completed) {
    if (reader_.buffered_bytes() == 0) {
        partial_since_ns_ = 0;
    } else if (frame_completed || partial_since_ns_ == 0) {
        partial_since_ns_ = last_input_ns_;
    }
}

std::optional<std::string> TcpConnection::close_frame(CloseReason reason, const std::string& text) {
    std::string frame;
    if (handler_.close_frame(reason, text, frame)) return frame;
    if (close_reason_wire(reason) == wire::v1::CLOSE_REASON_UNSPECIFIED) return std::nullopt;
    wire::v1::Close message;
    message.set_reason(close_reason_wire(reason));
    message.set_text(text);
    return proto::encode_frame_string(proto::FrameType::kClose, message);
}

bool TcpConnection::queue_close_frame(CloseReason reason, const std::string& text) {
    const std::optional<std::string> frame = close_frame(reason, text);
    if (!frame) return false;
    const size_t before = queued_bytes();
    commit_run();
    evbuffer_add(output_, frame->data(), frame->size());  // past the limits: it is the last frame
    if (limits_.pool) limits_.pool->on_change(before, queued_bytes());
    return true;
}

void TcpConnection::close_after_flush(CloseReason reason, const std::string& text) {
    if (fd_ < 0 || closing_) return;
    // Mid-handshake there is nothing to flush and the handshake would stall without reads.
    if (tls_handshaking()) return close(reason, text);
    closing_ = true;
    closing_reason_ = reason;
    closing_text_ = text;
    queue_close_frame(reason, text);
    flusher_.cancel(*this);
    if (tls_) {
        tls_->set_reading(false);
        return write_tls();
    }
    event_del(read_event_);
    if (!write_waiting_) write_some();
}

void TcpConnection::close(CloseReason reason, const std::string& text) {
    if (fd_ < 0) return;
    commit_run();  // what is queued goes out before the Close frame, as far as it can
    // The events go before the descriptor: deleting them after close() makes
    // libevent touch a closed (or already reused) descriptor.
    event_del(read_event_);
    event_del(write_event_);
    if (tls_) {
        close_tls(reason, text);
    } else {
        close_socket(reason, text);
    }
    const size_t accounted = queued_bytes();  // what the pool holds for us
    flusher_.cancel(*this);
    drop_run();
    evbuffer_drain(output_, evbuffer_get_length(output_));  // unsent output is discarded
    pins_.clear();
    tls_queued_ = 0;
    if (limits_.pool) limits_.pool->on_change(accounted, 0);
    fd_ = -1;
    handler_.on_closed(*this, reason, text);
}

// Plaintext: the Close frame behind what is queued, one non-blocking attempt
// to write it all (a peer that does not read will not get it), then the socket goes.
void TcpConnection::close_socket(CloseReason reason, const std::string& text) {
    if (!closing_ && queue_close_frame(reason, text)) {
        const size_t before = queued_bytes();
        while (evbuffer_get_length(output_) > 0 && evbuffer_write(output_, fd_) > 0) {
        }
        if (limits_.pool)
            limits_.pool->on_change(before, queued_bytes());  // the pool saw the Close frame go in
        // Input left unread makes the kernel answer close() with a reset, which can
        // destroy the Close frame before the peer reads it (a client closed in the
        // middle of sending): take in what has arrived (bounded) and let it go.
        char discard[4096];
        for (int i = 0; i < 16 && ::read(fd_, discard, sizeof discard) > 0; ++i) {
        }
    }
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
}

// TLS: the same last attempt, through the stream (which keeps its socket until
// the connection is destroyed, so the descriptor cannot be reused under it).
void TcpConnection::close_tls(CloseReason reason, const std::string& text) {
    std::string last;
    if (!closing_ && tls_->established()) {
        if (const std::optional<std::string> frame = close_frame(reason, text)) {
            last.resize(evbuffer_get_length(output_));
            evbuffer_copyout(output_, last.data(), last.size());
            last += *frame;
        }
    }
    tls_->shut({reinterpret_cast<const uint8_t*>(last.data()), last.size()});
}

// ---- TLS transport -------------------------------------------------------------------------

void TcpConnection::write_tls() {
    commit_run();
    if (const size_t queued = evbuffer_get_length(output_); queued > 0) {
        tls_queued_ += queued;
        tls_->write(output_);  // moves the chains; queued_bytes() is unchanged
    }
    if (closing_ && tls_queued_ == 0) close(closing_reason_, closing_text_);
}

void TcpConnection::on_tls_written(size_t bytes) {
    const size_t before = queued_bytes();
    tls_queued_ -= std::min(bytes, tls_queued_);
    bytes_out_ += bytes;
    ++writes_;
    written_to();
    queue_changed(before);
    if (fd_ >= 0 && closing_ && queued_bytes() == 0) close(closing_reason_, closing_text_);
}

void TcpConnection::on_tls_established() {
    ready_ns_ = monotonic_ns();
}

void TcpConnection::on_tls_input(evbuffer* input) {
    while (fd_ >= 0 && !reading_paused_ && !closing_) {
        const size_t available = evbuffer_get_length(input);
        if (available == 0) return;
        const size_t want = std::min(available, limits_.read_chunk_bytes);
        auto space = input_space(want);
        const int n = evbuffer_remove(input, space.data(), want);
        if (n <= 0) return;
        if (!take_input(static_cast<size_t>(n))) return;
    }
}

void TcpConnection::on_tls_ended(CloseReason reason, const std::string& text) {
    close(reason, text);
}

}  // namespace mdcast
