// The public value types of libmdcast (mdcast/types.h, mdcast/event.h).
#include "mdcast/types.h"

#include <cmath>
#include <limits>
#include <ostream>
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
        case StatusCode::kAuthFailed:
            return "AUTH_FAILED";
        case StatusCode::kUnchanged:
            return "UNCHANGED";
        case StatusCode::kConnectionLost:
            return "CONNECTION_LOST";
        case StatusCode::kCancelled:
            return "CANCELLED";
    }
    return "UNKNOWN";
}

std::string to_string(StreamState state) {
    return state == StreamState::kOpen ? "open" : "closed";
}

std::string to_string(DataState state) {
    return state == DataState::kOk ? "ok" : "suspect";
}

std::string to_string(StatusCode code) {
    return std::string(status_code_name(code));
}

std::string to_string(const ItemState& state) {
    std::string text = to_string(state.stream) + "/" + to_string(state.data);
    if (state.code != StatusCode::kNone) text += " " + to_string(state.code);
    if (!state.text.empty()) text += ": " + state.text;
    return text;
}

std::string to_string(ConnectionState state) {
    return std::string(connection_state_name(state));
}

std::string to_string(EventType type) {
    return std::string(event_type_name(type));
}

std::ostream& operator<<(std::ostream& out, StreamState state) {
    return out << to_string(state);
}

std::ostream& operator<<(std::ostream& out, DataState state) {
    return out << to_string(state);
}

std::ostream& operator<<(std::ostream& out, StatusCode code) {
    return out << status_code_name(code);
}

std::ostream& operator<<(std::ostream& out, const ItemState& state) {
    return out << to_string(state);
}

std::ostream& operator<<(std::ostream& out, ConnectionState state) {
    return out << connection_state_name(state);
}

std::ostream& operator<<(std::ostream& out, EventType type) {
    return out << event_type_name(type);
}

std::ostream& operator<<(std::ostream& out, const ServerAddress& address) {
    return out << address.host << ':' << address.port;
}

std::ostream& operator<<(std::ostream& out, const FieldValue& value) {
    return out << value.to_string();
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

std::optional<double> Event::number(std::string_view name) const {
    const FieldValue* value = field(name);
    if (!value || value->kind == FieldKind::kBlank || value->kind == FieldKind::kString) {
        return std::nullopt;
    }
    return value->to_double();
}

std::optional<std::string> Event::text(std::string_view name) const {
    const FieldValue* value = field(name);
    if (!value) return std::nullopt;
    return value->to_string();
}

}  // namespace mdcast
