// Why a connection closed: one enumerated reason that is logged, counted per
// reason in the metrics, and sent to the peer where the protocol has a code.
#pragma once

#include <cstddef>
#include <string_view>

#include "wire/common.pb.h"

namespace mdcast {

// Why a connection closed; logged, counted and (where possible) sent to the peer.
enum class CloseReason {
    kPeerClosed,
    kReadError,
    kWriteError,
    kProtocolError,
    kFrameTooLarge,
    kAuthFailed,
    kNotLoggedIn,
    kSlowConsumer,
    kIdleTimeout,
    kShutdown,
    kLimitReached,
    kTlsHandshakeFailed,   // bad certificate, wrong CA, not TLS at all, closed mid-handshake
    kTlsHandshakeTimeout,  // the handshake did not finish within its time limit
    kKicked,               // an operator closed it (mdcastctl kick)
    kHttpAnswered,         // the WebSocket port answered a plain HTTP request (the page, a 404)
    kFrameTimeout,         // a frame begun and not finished within its time limit (slow-loris)
};
constexpr size_t kCloseReasonCount = static_cast<size_t>(CloseReason::kFrameTimeout) + 1;

std::string_view close_reason_name(CloseReason reason);
// The wire code for a reason, or CLOSE_REASON_UNSPECIFIED when the peer is not told.
wire::v1::CloseReason close_reason_wire(CloseReason reason);
CloseReason close_reason_from_wire(wire::v1::CloseReason reason);
// A TLS handshake that failed or timed out: logged rate-limited by the listener's owner.
inline bool is_tls_handshake_failure(CloseReason reason) {
    return reason == CloseReason::kTlsHandshakeFailed ||
           reason == CloseReason::kTlsHandshakeTimeout;
}

}  // namespace mdcast
