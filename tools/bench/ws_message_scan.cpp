#include "ws_message_scan.h"

#include <charconv>

namespace mdcast::tools {

namespace {

constexpr size_t npos = std::string_view::npos;

// The position just past `pattern` ("\"Key\":") in `text` from `from`, or npos.
size_t after(std::string_view text, std::string_view pattern, size_t from = 0) {
    const size_t at = text.find(pattern, from);
    return at == npos ? npos : at + pattern.size();
}

// The string value starting at `pos` (its opening quote), without the quotes and
// with any escapes left as sent; false when there is none.
bool string_at(std::string_view text, size_t pos, std::string_view& value) {
    if (pos == npos || pos >= text.size() || text[pos] != '"') return false;
    size_t end = pos + 1;
    while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
    if (end >= text.size()) return false;
    value = text.substr(pos + 1, end - pos - 1);
    return true;
}

template <class Int>
bool number_at(std::string_view text, size_t pos, Int& value) {
    if (pos == npos || pos >= text.size()) return false;
    const auto [end, error] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    return error == std::errc() && end != text.data() + pos;
}

WsMessageType type_of(std::string_view type) {
    if (type == "Update") return WsMessageType::kUpdate;
    if (type == "Refresh") return WsMessageType::kRefresh;
    if (type == "Status") return WsMessageType::kStatus;
    if (type == "Ping") return WsMessageType::kPing;
    if (type == "Pong") return WsMessageType::kPong;
    if (type == "Error") return WsMessageType::kError;
    return WsMessageType::kOther;
}

// "Key":{"Service":..,"Name":..} and "State":{"Stream":..,"Data":..,"Code":..,"Text":..}.
bool scan_key_and_state(std::string_view head, WsMessage& out, std::string_view& why) {
    if (const size_t key = after(head, "\"Key\":{"); key != npos) {
        string_at(head, after(head, "\"Service\":", key), out.service);
        if (!string_at(head, after(head, "\"Name\":", key), out.name)) {
            why = "a Key without a Name string";
            return false;
        }
    }
    const size_t state = after(head, "\"State\":{");
    if (state == npos) {
        why = "no State";
        return false;
    }
    if (!string_at(head, after(head, "\"Stream\":", state), out.stream) ||
        !string_at(head, after(head, "\"Data\":", state), out.data)) {
        why = "a State without Stream and Data";
        return false;
    }
    string_at(head, after(head, "\"Code\":", state), out.code);
    string_at(head, after(head, "\"Text\":", state), out.text);
    return true;
}

// Takes `prefix` and the unsigned number after it off the front of `rest`; true
// when both were there (else `rest` is left as it was).
template <class Int>
bool take_number(std::string_view& rest, std::string_view prefix, Int& value) {
    if (!rest.starts_with(prefix)) return false;
    const char* at = rest.data() + prefix.size();
    const char* end = rest.data() + rest.size();
    const auto [after_number, error] = std::from_chars(at, end, value);
    if (error != std::errc() || after_number == at) return false;
    rest.remove_prefix(static_cast<size_t>(after_number - rest.data()));
    return true;
}

// The server's own Update layout, read without a search: {"ID":<id>,"Type":"Update",
// "SeqNumber":<seq>[,"PublishTime":<ns>][,"Conflated":true][,"ConflationInfo":{"Count":<n>,
// "Time":<ms>}],"Fields":...}. False when the message is laid out otherwise (a
// trade, say: the general scan reads it then).
bool scan_update_in_order(std::string_view message, WsMessage& out) {
    constexpr std::string_view kConflated = ",\"Conflated\":true";
    if (message.back() != '}') return false;
    std::string_view rest = message;
    if (!take_number(rest, "{\"ID\":", out.id) ||
        !take_number(rest, ",\"Type\":\"Update\",\"SeqNumber\":", out.seq))
        return false;
    take_number(rest, ",\"PublishTime\":", out.publish_time_ns);
    out.conflated = rest.starts_with(kConflated);
    if (out.conflated) rest.remove_prefix(kConflated.size());
    if (take_number(rest, ",\"ConflationInfo\":{\"Count\":", out.conflation_count)) {
        uint64_t time_ms = 0;
        if (!take_number(rest, ",\"Time\":", time_ms) || !rest.starts_with("}")) return false;
        rest.remove_prefix(1);
    }
    if (!rest.starts_with(",\"Fields\":")) return false;
    out.type = WsMessageType::kUpdate;
    out.type_text = "Update";
    out.has_seq = true;
    return true;
}

// The Update members after SeqNumber, wherever they are in `head`.
bool scan_update_members(std::string_view head, WsMessage& out, std::string_view& why) {
    out.conflated = head.find("\"Conflated\":true") != npos;
    if (const size_t at = after(head, "\"PublishTime\":");
        at != npos && !number_at(head, at, out.publish_time_ns)) {
        why = "PublishTime is not an unsigned integer";
        return false;
    }
    if (const size_t at = after(head, "\"ConflationInfo\":{\"Count\":");
        at != npos && !number_at(head, at, out.conflation_count)) {
        why = "ConflationInfo.Count is not an unsigned integer";
        return false;
    }
    if (!out.has_seq) why = "an Update without SeqNumber";
    return out.has_seq;
}

}  // namespace

bool scan_ws_message(std::string_view message, WsMessage& out, std::string_view& why) {
    out = WsMessage{};
    // The server sends each message as an array of one object (LSEG's framing).
    if (message.size() >= 2 && message.front() == '[' && message.back() == ']')
        message = message.substr(1, message.size() - 2);
    if (message.size() < 2 || message.front() != '{' || message.back() != '}') {
        why = "not a JSON object";
        return false;
    }
    if (scan_update_in_order(message, out)) return true;  // the hot path
    out = WsMessage{};
    // The stream members come before the fields (the server's order).
    const std::string_view head = message.substr(0, message.find("\"Fields\":"));
    const size_t type_at = after(head, "\"Type\":");
    if (!string_at(head, type_at, out.type_text)) {
        why = "no Type";
        return false;
    }
    out.type = type_of(out.type_text);
    if (const size_t id = after(head, "\"ID\":"); id != npos && !number_at(head, id, out.id)) {
        why = "ID is not an integer";
        return false;
    }
    if (const size_t seq = after(head, "\"SeqNumber\":"); seq != npos) {
        if (!number_at(head, seq, out.seq)) {
            why = "SeqNumber is not an unsigned integer";
            return false;
        }
        out.has_seq = true;
    }
    switch (out.type) {
        case WsMessageType::kUpdate:
            return scan_update_members(head, out, why);
        case WsMessageType::kRefresh:
        case WsMessageType::kStatus:
            out.login = head.find("\"Domain\":\"Login\"") != npos;
            return scan_key_and_state(head, out, why);
        case WsMessageType::kError:
            string_at(head, after(head, "\"Text\":", type_at), out.error_text);
            return true;
        default:
            return true;
    }
}

}  // namespace mdcast::tools
