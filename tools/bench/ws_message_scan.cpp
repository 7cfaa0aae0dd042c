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

// The server's own Update layout, read without a search:
// {"ID":<id>,"Type":"Update","SeqNumber":<seq>[,"Conflated":true],"Fields":...}.
// False when the message is laid out otherwise (the general scan reads it then).
bool scan_update_in_order(std::string_view message, WsMessage& out) {
    constexpr std::string_view kStart = "{\"ID\":";
    constexpr std::string_view kType = ",\"Type\":\"Update\",\"SeqNumber\":";
    constexpr std::string_view kConflated = ",\"Conflated\":true";
    constexpr std::string_view kFields = ",\"Fields\":";
    if (!message.starts_with(kStart) || message.back() != '}') return false;
    const char* end = message.data() + message.size();
    const char* at = message.data() + kStart.size();
    auto [after_id, id_error] = std::from_chars(at, end, out.id);
    if (id_error != std::errc() || !std::string_view(after_id, end).starts_with(kType))
        return false;
    at = after_id + kType.size();
    auto [after_seq, seq_error] = std::from_chars(at, end, out.seq);
    if (seq_error != std::errc() || after_seq == at) return false;
    std::string_view rest(after_seq, static_cast<size_t>(end - after_seq));
    out.conflated = rest.starts_with(kConflated);
    if (out.conflated) rest.remove_prefix(kConflated.size());
    if (!rest.starts_with(kFields)) return false;
    out.type = WsMessageType::kUpdate;
    out.type_text = "Update";
    out.has_seq = true;
    return true;
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
            out.conflated = head.find("\"Conflated\":true") != npos;
            if (!out.has_seq) why = "an Update without SeqNumber";
            return out.has_seq;
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
