#include "server/websocket/json_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "proto/book_image.h"
#include "proto/websocket/ws_frames.h"

namespace mdcast::server {

using proto::append_ws_frame;
using proto::frame_ws_text;
using proto::WsOpcode;

namespace {

void append_int(std::string& out, int64_t value) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out.append(digits, end);
}

}  // namespace

void append_json_decimal(std::string& out, int64_t mantissa, int32_t exponent) {
    const bool negative = mantissa < 0;
    const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(mantissa) : mantissa;
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, magnitude).ptr;
    std::string_view text(digits, static_cast<size_t>(end - digits));
    exponent = std::clamp(exponent, -30, 30);  // hostile input stays printable
    if (negative) out += '-';
    if (exponent >= 0) {
        out += text;
        if (magnitude != 0) out.append(static_cast<size_t>(exponent), '0');
        return;
    }
    const auto scale = static_cast<size_t>(-exponent);
    if (text.size() <= scale) {
        out += "0.";
        out.append(scale - text.size(), '0');
        out += text;
        return;
    }
    out += text.substr(0, text.size() - scale);
    out += '.';
    out += text.substr(text.size() - scale);
}

namespace {

void append_time(std::string& out, int64_t ns) {
    const time_t seconds = static_cast<time_t>(ns / 1'000'000'000);
    const long nanos = static_cast<long>(ns % 1'000'000'000);
    std::tm tm{};
    if (nanos < 0 || gmtime_r(&seconds, &tm) == nullptr) return append_int(out, ns);
    char text[64];
    const size_t n = std::strftime(text, sizeof text, "\"%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(text + n, sizeof text - n, ".%09ldZ\"", nanos);
    out += text;
}

void append_value(std::string& out, const proto::FieldEntry& field) {
    switch (field.kind) {
        case proto::FieldKind::kInt:
            return append_int(out, field.integer);
        case proto::FieldKind::kDecimal:
            return append_json_decimal(out, field.integer, field.exponent);
        case proto::FieldKind::kDouble: {
            if (!std::isfinite(field.real)) break;
            char text[32];
            const auto end = std::to_chars(text, text + sizeof text, field.real).ptr;
            out.append(text, end);
            return;
        }
        case proto::FieldKind::kString:
            return append_json_string(out, field.text);
        case proto::FieldKind::kTime:
            return append_time(out, field.integer);
        case proto::FieldKind::kBlank:
        case proto::FieldKind::kNone:
            break;
    }
    out += "null";
}

std::string_view stream_name(const wire::Status& status, bool snapshot) {
    if (status.stream_state() == wire::STREAM_CLOSED) return "Closed";
    return snapshot ? "NonStreaming" : "Open";
}

std::string_view code_name(wire::StatusCode code) {
    switch (code) {
        case wire::STATUS_NOT_FOUND:
            return "NotFound";
        case wire::STATUS_NOT_ENTITLED:
            return "NotEntitled";
        case wire::STATUS_SOURCE_DOWN:
            return "SourceDown";
        case wire::STATUS_UNRECOVERABLE_LOSS:
            return "UnrecoverableLoss";
        case wire::STATUS_SOURCE_RESET:
            return "SourceReset";
        case wire::STATUS_SERVER_SHUTDOWN:
            return "ServerShutdown";
        case wire::STATUS_LIMIT_REACHED:
            return "LimitReached";
        case wire::STATUS_INVALID_REQUEST:
            return "InvalidRequest";
        case wire::STATUS_RECOVERING:
            return "Recovering";
        case wire::STATUS_AUTH_FAILED:
            return "AuthFailed";
        case wire::STATUS_UNCHANGED:
            return "Unchanged";
        default:
            return "";
    }
}

// "State":{"Stream":..,"Data":..,"Code":..,"Text":..}
void append_state(std::string& out, const wire::Status& status, bool snapshot) {
    out += "\"State\":{\"Stream\":\"";
    out += stream_name(status, snapshot);
    out += "\",\"Data\":\"";
    out += status.data_state() == wire::DATA_SUSPECT ? "Suspect" : "Ok";
    out += '"';
    if (const auto code = code_name(status.code()); !code.empty()) {
        out += ",\"Code\":\"";
        out += code;
        out += '"';
    }
    out += ",\"Text\":";
    append_json_string(out, status.text());
    out += '}';
}

void append_key(std::string& out, const std::string& service, const std::string& name) {
    out += "\"Key\":{\"Service\":";
    append_json_string(out, service);
    out += ",\"Name\":";
    append_json_string(out, name);
    out += '}';
}

// Every message goes out as a JSON array of one object, as LSEG's servers send
// them: LSEG's clients iterate over the array (docs/websocket.md).
std::string framed(std::string_view object) {
    std::string payload;
    payload.reserve(object.size() + 2);
    payload += '[';
    payload += object;
    payload += ']';
    std::string frame;
    append_ws_frame(frame, WsOpcode::kText, payload);
    return frame;
}

}  // namespace

bool in_view(const std::vector<uint32_t>& view, uint32_t id) {
    return view.empty() || std::binary_search(view.begin(), view.end(), id);
}

void append_json_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
            out += escaped;
        } else {
            out += c;
        }
    }
    out += '"';
}

JsonEncoder::JsonEncoder(proto::FieldDictionary dictionary) : dictionary_(std::move(dictionary)) {
    for (const auto& field : dictionary_.fields()) {
        std::string key;
        append_json_string(key, field.name);
        keys_[field.id] = key + ':';
    }
}

void JsonEncoder::append_fields(std::string& out, std::span<const proto::FieldEntry> fields,
                                const std::vector<uint32_t>& view) const {
    out += "\"Fields\":{";
    bool first = true;
    for (const auto& field : fields) {
        if (!in_view(view, field.id)) continue;
        if (!first) out += ',';
        first = false;
        if (const auto it = keys_.find(field.id); it != keys_.end()) {
            out += it->second;
        } else {  // not in the dictionary: named by its id
            out += '"';
            append_int(out, field.id);
            out += "\":";
        }
        append_value(out, field);
    }
    out += '}';
}

void JsonEncoder::append_image_fields(std::string& out, const proto::FieldImage& image,
                                      const std::vector<uint32_t>& view) const {
    std::vector<proto::FieldEntry> fields;
    fields.reserve(image.size());
    for (const auto& slot : image.slots()) fields.push_back(slot.entry());
    append_fields(out, fields, view);
}

void JsonEncoder::append_publish_time(std::string& out, uint64_t publish_time_ns) const {
    if (!publish_time_ || publish_time_ns == 0) return;  // 0: no stamp known
    out += ",\"PublishTime\":";
    append_int(out, static_cast<int64_t>(publish_time_ns));
}

void JsonEncoder::append_update(std::string& out, const proto::UpdateView& update,
                                const std::vector<uint32_t>& view) const {
    const size_t start = out.size();
    out += "[{\"ID\":";
    append_int(out, static_cast<int64_t>(update.item_id));
    out += ",\"Type\":\"Update\",\"SeqNumber\":";
    append_int(out, static_cast<int64_t>(update.item_seq));
    append_publish_time(out, update.publish_time_ns);  // conflated: the latest merged stamp
    if (update.trade) out += ",\"UpdateType\":\"Trade\"";
    if (update.conflated) out += ",\"Conflated\":true";
    if (update.stands_for > 0) {  // LSEG's ConflationInfo: updates merged, over what time (ms)
        out += ",\"ConflationInfo\":{\"Count\":";
        append_int(out, update.stands_for);
        out += ",\"Time\":";
        const bool spanned = update.first_publish_time_ns != 0 &&
                             update.publish_time_ns >= update.first_publish_time_ns;
        append_int(
            out, spanned ? static_cast<int64_t>(
                               (update.publish_time_ns - update.first_publish_time_ns) / 1'000'000)
                         : 0);
        out += '}';
    }
    out += ',';
    if (update.map_bytes.empty() || !append_update_map(out, update, view))
        append_fields(out, update.fields, view);
    out += "}]";
    frame_ws_text(out, start);
}

std::string JsonEncoder::refresh(const CachedItem& item, const proto::FieldImage* image,
                                 const std::vector<uint32_t>& view, bool solicited,
                                 bool snapshot) const {
    std::string out = "{\"ID\":";
    append_int(out, static_cast<int64_t>(item.id));
    out += ",\"Type\":\"Refresh\",";
    const proto::BookImage* book = image ? image->book() : nullptr;
    if (book) {
        out += "\"Domain\":\"";
        out += proto::domain_name(book->domain());
        out += "\",";
    }
    append_key(out, item.service_name, item.name);
    out += ',';
    append_state(out, item.status, snapshot);
    out += ",\"SeqNumber\":";
    append_int(out, static_cast<int64_t>(item.item_seq));
    append_publish_time(out, item.publish_time_ns);
    if (!solicited) out += ",\"Solicited\":false";
    out += ',';
    if (book) {
        append_book_map(out, *image, view);
    } else if (image) {
        append_image_fields(out, *image, view);
    } else {
        out += "\"Fields\":{}";
    }
    out += '}';
    return framed(out);
}

std::string JsonEncoder::status(const std::string& service, const std::string& name, int64_t stream,
                                const wire::Status& status) const {
    std::string out = "{\"ID\":";
    append_int(out, stream);
    out += ",\"Type\":\"Status\",";
    append_key(out, service, name);
    out += ',';
    append_state(out, status, false);
    out += '}';
    return framed(out);
}

std::string JsonEncoder::post_ack(int64_t stream, uint64_t ack_id, std::string_view nak_code,
                                  const std::string& text, const std::string* service,
                                  const std::string* name) {
    std::string out = "{\"ID\":";
    append_int(out, stream);
    out += ",\"Type\":\"Ack\",\"AckID\":";
    out += std::to_string(ack_id);
    if (service && name) {
        out += ',';
        append_key(out, *service, *name);
    }
    if (!nak_code.empty()) {
        out += ",\"NakCode\":\"";
        out += nak_code;
        out += "\",\"Text\":";
        append_json_string(out, text);
    }
    out += '}';
    return framed(out);
}

// LSEG's answer to a batch on the batch's own ID: that stream closes, each name
// opens on ID+1, ID+2, ...
std::string JsonEncoder::batch_status(int64_t id, size_t names) {
    std::string out = "{\"ID\":";
    append_int(out, id);
    out +=
        ",\"Type\":\"Status\",\"State\":{\"Stream\":\"Closed\",\"Data\":\"Ok\",\"Text\":"
        "\"Processed ";
    append_int(out, static_cast<int64_t>(names));
    out += " total items from Batch Request.\"}}";
    return framed(out);
}

namespace {

// Filter 1 (Info): name, MarketPrice capability, real-time tick-by-tick QoS, the mdcast
// mode and item count; for a member of a redundancy group (docs/operations.md,
// "Redundancy") the group's size and whether this member is the one serving.
void append_source_info(std::string& out, const wire::ServiceInfo& service) {
    out += "{\"ID\":1,\"Action\":\"Set\",\"Elements\":{\"Name\":";
    append_json_string(out, service.name());
    out +=
        ",\"Capabilities\":[6],\"QoS\":[{\"Timeliness\":\"Realtime\",\"Rate\":"
        "\"TickByTick\"}],\"IsSource\":1,\"Vendor\":\"mdcast\",\"Mode\":\"";
    out += service.mode() == wire::SERVICE_INTERACTIVE ? "interactive" : "broadcast";
    out += "\",\"ItemCount\":";
    append_int(out, static_cast<int64_t>(service.item_count()));
    if (service.group_members() > 0) {
        out += ",\"GroupMembers\":";
        append_int(out, static_cast<int64_t>(service.group_members()));
        out += service.group_active() ? ",\"GroupActive\":1" : ",\"GroupActive\":0";
    }
    out += "}}";
}

// Filter 2 (State): up or down, and whether it takes requests.
void append_source_state(std::string& out, const wire::ServiceInfo& service) {
    const bool up = service.state() == wire::SERVICE_UP;
    out += "{\"ID\":2,\"Action\":\"Set\",\"Elements\":{\"ServiceState\":";
    out += up ? "1,\"AcceptingRequests\":1" : "0,\"AcceptingRequests\":0";
    out += "}}";
}

}  // namespace

// Each service keyed by service id, with the filter entries `filter` asks for among those
// served (Info, State); Key.Filter says which. A snapshot: the directory is not streamed
// (ask again for a fresh one).
std::string JsonEncoder::source_refresh(int64_t id, const wire::Directory& directory,
                                        uint32_t filter) {
    filter &= kSourceInfo | kSourceState;
    std::string out = "{\"ID\":";
    append_int(out, id);
    out += ",\"Type\":\"Refresh\",\"Domain\":\"Source\",\"Key\":{\"Filter\":";
    append_int(out, filter);
    out +=
        "},\"State\":{\"Stream\":\"NonStreaming\",\"Data\":\"Ok\",\"Text\":\"\"},"
        "\"Map\":{\"KeyType\":\"UInt\",\"Entries\":[";
    bool first = true;
    for (const auto& service : directory.services()) {
        if (!first) out += ',';
        first = false;
        out += "{\"Action\":\"Add\",\"Key\":";
        append_int(out, service.service_id());
        out += ",\"FilterList\":{\"Entries\":[";
        if (filter & kSourceInfo) append_source_info(out, service);
        if (filter == (kSourceInfo | kSourceState)) out += ',';
        if (filter & kSourceState) append_source_state(out, service);
        out += "]}}";
    }
    out += "]}}";
    return framed(out);
}

std::string JsonEncoder::login_refresh(int64_t id, const std::string& user,
                                       const wire::LoginResponse& response) {
    std::string out = "{\"ID\":";
    append_int(out, id);
    out += ",\"Type\":\"Refresh\",\"Domain\":\"Login\",\"Key\":{\"Name\":";
    append_json_string(out, user);
    // LSEG's login refresh carries the connection's terms in the top-level
    // Elements (its clients read PingTimeout there), not inside Key.
    out += "},\"Elements\":{\"ServerId\":";
    append_json_string(out, response.server_id());
    out += ",\"PingTimeout\":";
    append_int(out, response.heartbeat_interval_ms() / 1000);
    out += ",\"MaxMsgSize\":";
    append_int(out, response.max_frame_bytes());
    out += ",\"MaxItemsPerRequest\":";
    append_int(out, response.max_items_per_request());
    out += "},";
    append_state(out, response.status(), false);
    out += '}';
    return framed(out);
}

std::string JsonEncoder::login_status(int64_t id, const std::string& user,
                                      const wire::Status& status) {
    std::string out = "{\"ID\":";
    append_int(out, id);
    out += ",\"Type\":\"Status\",\"Domain\":\"Login\",\"Key\":{\"Name\":";
    append_json_string(out, user);
    out += "},";
    append_state(out, status, false);
    out += '}';
    return framed(out);
}

std::string JsonEncoder::error(std::string_view text, std::string_view offending) {
    constexpr size_t kEcho = 200;
    std::string echo(offending.substr(0, kEcho));
    // Never echo half a UTF-8 sequence.
    while (!echo.empty() && (static_cast<unsigned char>(echo.back()) & 0x80)) echo.pop_back();
    std::string out = "{\"Type\":\"Error\",\"Text\":";
    append_json_string(out, text);
    out += ",\"Debug\":{\"Message\":";
    append_json_string(out, echo);
    out += "}}";
    return framed(out);
}

std::string JsonEncoder::ping() {
    return framed("{\"Type\":\"Ping\"}");
}

std::string JsonEncoder::pong() {
    return framed("{\"Type\":\"Pong\"}");
}

}  // namespace mdcast::server
