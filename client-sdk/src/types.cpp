// The public value types of libmdcast (mdcast/types.h, mdcast/event.h).
#include "mdcast/types.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/clock.h"
#include "common/net/host_port.h"
#include "event_writer.h"
#include "mdcast/dictionary.h"
#include "mdcast/event.h"
#include "proto/field_values.h"

namespace mdcast {

std::vector<ServerAddress> parse_server_list(std::string_view text) {
    std::vector<HostPort> parsed;
    std::string error;
    if (!parse_host_port_list(std::string(text), parsed, error)) throw std::invalid_argument(error);
    std::vector<ServerAddress> servers;
    for (auto& entry : parsed) servers.push_back(ServerAddress{std::move(entry.host), entry.port});
    return servers;
}

std::string_view status_code_name(StatusCode code) {
    switch (code) {
        case StatusCode::kNone:
            return "NONE";
        case StatusCode::kNotFound:
            return "NOT_FOUND";
        case StatusCode::kNotEntitled:
            return "NOT_ENTITLED";
        case StatusCode::kSourceDown:
            return "SOURCE_DOWN";
        case StatusCode::kUnrecoverableLoss:
            return "UNRECOVERABLE_LOSS";
        case StatusCode::kSourceReset:
            return "SOURCE_RESET";
        case StatusCode::kServerShutdown:
            return "SERVER_SHUTDOWN";
        case StatusCode::kLimitReached:
            return "LIMIT_REACHED";
        case StatusCode::kInvalidRequest:
            return "INVALID_REQUEST";
        case StatusCode::kRecovering:
            return "RECOVERING";
        case StatusCode::kConnectionLost:
            return "CONNECTION_LOST";
        case StatusCode::kCancelled:
            return "CANCELLED";
    }
    return "UNKNOWN";
}

std::string_view connection_state_name(ConnectionState state) {
    switch (state) {
        case ConnectionState::kConnecting:
            return "connecting";
        case ConnectionState::kUp:
            return "up";
        case ConnectionState::kDown:
            return "down";
        case ConnectionState::kStopped:
            return "stopped";
    }
    return "unknown";
}

std::string_view event_type_name(EventType type) {
    switch (type) {
        case EventType::kRefresh:
            return "refresh";
        case EventType::kUpdate:
            return "update";
        case EventType::kStatus:
            return "status";
        case EventType::kConnection:
            return "connection";
        case EventType::kDirectory:
            return "directory";
    }
    return "unknown";
}

uint64_t realtime_now_ns() {
    return static_cast<uint64_t>(realtime_ns());
}

double FieldValue::to_double() const {
    switch (kind) {
        case FieldKind::kInt:
        case FieldKind::kTime:
            return static_cast<double>(integer);
        case FieldKind::kDecimal:
            return static_cast<double>(integer) * std::pow(10.0, exponent);
        case FieldKind::kDouble:
            return real;
        default:
            return std::numeric_limits<double>::quiet_NaN();
    }
}

std::string FieldValue::to_string() const {
    wire::v1::FieldValue value;
    switch (kind) {
        case FieldKind::kInt:
            value.set_int_value(integer);
            break;
        case FieldKind::kDecimal:
            value.mutable_decimal_value()->set_mantissa(integer);
            value.mutable_decimal_value()->set_exponent(exponent);
            break;
        case FieldKind::kDouble:
            value.set_double_value(real);
            break;
        case FieldKind::kString:
            return std::string(text);
        case FieldKind::kTime:
            value.set_time_ns(integer);
            break;
        case FieldKind::kBlank:
            return std::string();
    }
    return proto::format_value(value);
}

Event::Event() = default;
Event::~Event() = default;

std::span<const FieldValue> Event::fields() const {
    detail::EventWriter::decode_all(*this);
    return fields_;
}

const FieldValue* Event::field(uint32_t id) const {
    return detail::EventWriter::find(*this, id);
}

const FieldValue* Event::field(std::string_view name) const {
    if (!dictionary_) return nullptr;
    const auto id = dictionary_->id(name);
    return id ? field(*id) : nullptr;
}

}  // namespace mdcast
