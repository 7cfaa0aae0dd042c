#include "common/net/close_reason.h"

namespace mdcast {

std::string_view close_reason_name(CloseReason reason) {
    switch (reason) {
        case CloseReason::kPeerClosed:
            return "peer_closed";
        case CloseReason::kReadError:
            return "read_error";
        case CloseReason::kWriteError:
            return "write_error";
        case CloseReason::kProtocolError:
            return "protocol_error";
        case CloseReason::kFrameTooLarge:
            return "frame_too_large";
        case CloseReason::kAuthFailed:
            return "auth_failed";
        case CloseReason::kNotLoggedIn:
            return "not_logged_in";
        case CloseReason::kSlowConsumer:
            return "slow_consumer";
        case CloseReason::kIdleTimeout:
            return "idle_timeout";
        case CloseReason::kShutdown:
            return "shutdown";
        case CloseReason::kLimitReached:
            return "limit_reached";
        case CloseReason::kTlsHandshakeFailed:
            return "tls_handshake_failed";
        case CloseReason::kTlsHandshakeTimeout:
            return "tls_handshake_timeout";
        case CloseReason::kKicked:
            return "kicked";
        case CloseReason::kHttpAnswered:
            return "http_answered";
        case CloseReason::kFrameTimeout:
            return "frame_timeout";
    }
    return "unknown";
}

wire::v1::CloseReason close_reason_wire(CloseReason reason) {
    switch (reason) {
        case CloseReason::kProtocolError:
        case CloseReason::kFrameTimeout:  // the text says which rule
            return wire::v1::CLOSE_PROTOCOL_ERROR;
        case CloseReason::kFrameTooLarge:
            return wire::v1::CLOSE_FRAME_TOO_LARGE;
        case CloseReason::kAuthFailed:
            return wire::v1::CLOSE_AUTH_FAILED;
        case CloseReason::kNotLoggedIn:
            return wire::v1::CLOSE_NOT_LOGGED_IN;
        case CloseReason::kSlowConsumer:
            return wire::v1::CLOSE_SLOW_CONSUMER;
        case CloseReason::kIdleTimeout:
            return wire::v1::CLOSE_IDLE_TIMEOUT;
        case CloseReason::kShutdown:
            return wire::v1::CLOSE_SHUTDOWN;
        case CloseReason::kLimitReached:
            return wire::v1::CLOSE_LIMIT_REACHED;
        case CloseReason::kKicked:
            return wire::v1::CLOSE_KICKED;
        default:
            return wire::v1::CLOSE_REASON_UNSPECIFIED;
    }
}

CloseReason close_reason_from_wire(wire::v1::CloseReason reason) {
    switch (reason) {
        case wire::v1::CLOSE_PROTOCOL_ERROR:
            return CloseReason::kProtocolError;
        case wire::v1::CLOSE_FRAME_TOO_LARGE:
            return CloseReason::kFrameTooLarge;
        case wire::v1::CLOSE_AUTH_FAILED:
            return CloseReason::kAuthFailed;
        case wire::v1::CLOSE_NOT_LOGGED_IN:
            return CloseReason::kNotLoggedIn;
        case wire::v1::CLOSE_SLOW_CONSUMER:
            return CloseReason::kSlowConsumer;
        case wire::v1::CLOSE_IDLE_TIMEOUT:
            return CloseReason::kIdleTimeout;
        case wire::v1::CLOSE_SHUTDOWN:
            return CloseReason::kShutdown;
        case wire::v1::CLOSE_LIMIT_REACHED:
            return CloseReason::kLimitReached;
        case wire::v1::CLOSE_KICKED:
            return CloseReason::kKicked;
        default:
            return CloseReason::kPeerClosed;
    }
}

}  // namespace mdcast
