#include "common/net/tls_stream.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace mdcast {

TlsStream::TlsStream(EventLoop& loop, int fd, SSL* ssl, Role role,
                     std::chrono::milliseconds handshake_timeout, size_t max_input_bytes,
                     TlsCounters* counters, Owner& owner)
    : loop_(loop),
      owner_(owner),
      ssl_(ssl),
      counters_(counters),
      handshake_timeout_(handshake_timeout) {
    bev_ = bufferevent_openssl_socket_new(
        loop.base(), fd, ssl,
        role == Role::kAccept ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING,
        BEV_OPT_CLOSE_ON_FREE);
    if (!bev_) throw std::bad_alloc();
    // A peer that closes TCP without a close_notify is an end of stream, not an error.
    bufferevent_openssl_set_allow_dirty_shutdown(bev_, 1);
    bufferevent_setcb(bev_, &on_read, nullptr, &on_event, this);
    bufferevent_setwatermark(bev_, EV_READ, 0, max_input_bytes);
    output_watch_ = evbuffer_add_cb(bufferevent_get_output(bev_), &on_output_changed, this);
    bufferevent_enable(bev_, EV_READ | EV_WRITE);
    handshake_timer_ = evtimer_new(loop.base(), &on_handshake_timeout, this);
    const auto ms = handshake_timeout.count();
    const timeval deadline{static_cast<time_t>(ms / 1000),
                           static_cast<suseconds_t>((ms % 1000) * 1000)};
    evtimer_add(handshake_timer_, &deadline);
}

TlsStream::~TlsStream() {
    event_free(handshake_timer_);
    if (output_watch_) evbuffer_remove_cb_entry(bufferevent_get_output(bev_), output_watch_);
    bufferevent_free(bev_);  // frees the SSL object and closes the socket
}

void TlsStream::set_reading(bool on) {
    if (shut_) return;
    if (!on) {
        bufferevent_disable(bev_, EV_READ);
        return;
    }
    bufferevent_enable(bev_, EV_READ);
    // Input decrypted before the pause waits in the buffer and would not wake
    // us: hand it over from the loop, never from inside the caller.
    if (evbuffer_get_length(bufferevent_get_input(bev_)) > 0) {
        bufferevent_trigger(bev_, EV_READ, BEV_TRIG_DEFER_CALLBACKS | BEV_TRIG_IGNORE_WATERMARKS);
    }
}

void TlsStream::write(evbuffer* frames) {
    if (!shut_) evbuffer_add_buffer(bufferevent_get_output(bev_), frames);
}

void TlsStream::shut(std::span<const uint8_t> last) {
    if (shut_) return;
    shut_ = true;
    evtimer_del(handshake_timer_);
    evbuffer* output = bufferevent_get_output(bev_);
    evbuffer_remove_cb_entry(output, output_watch_);
    output_watch_ = nullptr;
    bufferevent_setcb(bev_, nullptr, nullptr, nullptr, nullptr);
    bufferevent_disable(bev_, EV_READ | EV_WRITE);
    // Only with nothing half-written: SSL_write must not be given other bytes
    // while an earlier write is waiting to be retried.
    if (established_ && evbuffer_get_length(output) == 0) {
        if (!last.empty()) SSL_write(ssl_, last.data(), static_cast<int>(last.size()));
        SSL_shutdown(ssl_);
    }
    ERR_clear_error();
    evbuffer_drain(output, evbuffer_get_length(output));
    ::shutdown(bufferevent_getfd(bev_), SHUT_RDWR);
}

void TlsStream::on_read(bufferevent* bev, void* self) {
    auto* stream = static_cast<TlsStream*>(self);
    const EventLoop::CallbackScope scope(stream->loop_);
    stream->owner_.on_tls_input(bufferevent_get_input(bev));
}

// Also from inside libevent's own write callback of the bufferevent (SSL_write drained it).
void TlsStream::on_output_changed(evbuffer*, const evbuffer_cb_info* info, void* self) {
    if (info->n_deleted == 0) return;
    auto* stream = static_cast<TlsStream*>(self);
    const EventLoop::CallbackScope scope(stream->loop_);
    stream->owner_.on_tls_written(info->n_deleted);
}

void TlsStream::on_handshake_timeout(int, short, void* self) {
    auto* stream = static_cast<TlsStream*>(self);
    const EventLoop::CallbackScope scope(stream->loop_);
    if (stream->established_ || stream->shut_) return;
    if (stream->counters_) ++stream->counters_->handshakes_timed_out;
    stream->owner_.on_tls_ended(
        CloseReason::kTlsHandshakeTimeout,
        "no TLS handshake within " + std::to_string(stream->handshake_timeout_.count()) + " ms");
}

void TlsStream::end_handshake(CloseReason reason, const std::string& text) {
    if (counters_) ++counters_->handshakes_failed;
    owner_.on_tls_ended(reason, text);
}

void TlsStream::on_event(bufferevent* bev, short what, void* self) {
    auto* stream = static_cast<TlsStream*>(self);
    const EventLoop::CallbackScope scope(stream->loop_);
    if ((what & BEV_EVENT_CONNECTED) != 0) {
        stream->established_ = true;
        evtimer_del(stream->handshake_timer_);
        if (stream->counters_) ++stream->counters_->handshakes_ok;
        stream->owner_.on_tls_established();
        return;
    }
    const std::string text = stream->error_text(what);
    if (!stream->established_ && BIO_number_read(SSL_get_rbio(stream->ssl_)) == 0) {
        // Connected and left without a byte (a port probe, a health check): not a failed handshake.
        return stream->owner_.on_tls_ended(CloseReason::kPeerClosed,
                                           "peer closed before starting the TLS handshake");
    }
    if (!stream->established_) {
        return stream->end_handshake(CloseReason::kTlsHandshakeFailed, text);
    }
    // Bytes decrypted before the end still belong to the stream.
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        stream->owner_.on_tls_input(bufferevent_get_input(bev));
    if (stream->shut_) return;
    if ((what & BEV_EVENT_EOF) != 0) {
        stream->owner_.on_tls_ended(CloseReason::kPeerClosed, "peer closed the connection");
    } else {
        stream->owner_.on_tls_ended(
            (what & BEV_EVENT_WRITING) != 0 ? CloseReason::kWriteError : CloseReason::kReadError,
            text);
    }
}

// OpenSSL's reasons first (with the certificate check's verdict), then errno.
std::string TlsStream::error_text(short what) const {
    std::string text;
    while (const unsigned long code = bufferevent_get_openssl_error(bev_)) {
        char buffer[256];
        ERR_error_string_n(code, buffer, sizeof buffer);
        if (!text.empty()) text += "; ";
        text += buffer;
    }
    const long verdict = SSL_get_verify_result(ssl_);
    if (verdict != X509_V_OK) {
        text += (text.empty() ? "" : "; ") + std::string("certificate: ") +
                X509_verify_cert_error_string(verdict);
    }
    if (text.empty() && (what & BEV_EVENT_EOF) != 0) {
        text = established_ ? "peer closed the connection" : "peer closed during the TLS handshake";
    }
    if (text.empty() && errno != 0) text = std::strerror(errno);
    return text.empty() ? "TLS error" : text;
}

std::string TlsStream::describe() const {
    if (!established_) return "TLS handshake in progress";
    std::string text = std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
    if (X509* peer = SSL_get1_peer_certificate(ssl_)) {
        char subject[256] = "?";
        X509_NAME_oneline(X509_get_subject_name(peer), subject, sizeof subject);
        text += std::string(", peer ") + subject;
        X509_free(peer);
    }
    return text;
}

}  // namespace mdcast
