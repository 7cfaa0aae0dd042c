#include "server/websocket/json_requests.h"

#include <nlohmann/json.hpp>

#include "proto/limits.h"

namespace mdcast::server {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 8;

struct Refusal {
    JsonError error;
    std::string text;
};

const json* member(const json& object, const char* name) {
    const auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, const char* name, const char* where) {
    const json* value = member(object, name);
    if (!value) return "";
    if (!value->is_string())
        throw Refusal{JsonError::kBadRequest, std::string(where) + " is not a string"};
    return value->get<std::string>();
}

int64_t id_of(const json& value) {
    if (!value.is_number_integer()) throw Refusal{JsonError::kBadRequest, "ID is not an integer"};
    return value.get<int64_t>();
}

std::vector<std::string> strings(const json& value, const char* where, size_t limit) {
    std::vector<std::string> out;
    if (value.is_string()) {
        out.push_back(value.get<std::string>());
        return out;
    }
    if (!value.is_array())
        throw Refusal{JsonError::kBadRequest, std::string(where) + " is not a string or an array"};
    if (value.size() > limit)
        throw Refusal{JsonError::kTooMany, std::string(where) + " has " +
                                               std::to_string(value.size()) + " entries (limit " +
                                               std::to_string(limit) + ")"};
    for (const json& entry : value) {
        if (!entry.is_string())
            throw Refusal{JsonError::kBadRequest, std::string(where) + " has a non-string entry"};
        out.push_back(entry.get<std::string>());
    }
    return out;
}

const json& key_of(const json& message) {
    const json* key = member(message, "Key");
    if (!key || !key->is_object())
        throw Refusal{JsonError::kBadRequest, "Key missing or not an object"};
    return *key;
}

void read_login(const json& message, JsonRequest& r) {
    r.type = JsonRequest::Type::kLogin;
    const json& key = key_of(message);
    r.user = string_member(key, "Name", "Key.Name");
    if (const json* elements = member(key, "Elements")) {
        if (!elements->is_object())
            throw Refusal{JsonError::kBadRequest, "Key.Elements is not an object"};
        r.password = string_member(*elements, "Password", "Key.Elements.Password");
        r.application_id = string_member(*elements, "ApplicationId", "Key.Elements.ApplicationId");
        r.position = string_member(*elements, "Position", "Key.Elements.Position");
    }
}

// A View names fields by name ("BID") or by field id (22), as LSEG's does.
void read_view(const json& view, JsonRequest& r, const JsonLimits& limits) {
    if (view.is_string()) {
        r.view.push_back(view.get<std::string>());
        return;
    }
    if (!view.is_array()) throw Refusal{JsonError::kBadRequest, "View is not an array"};
    if (view.size() > limits.max_view)
        throw Refusal{JsonError::kTooMany, "View has " + std::to_string(view.size()) +
                                               " entries (limit " +
                                               std::to_string(limits.max_view) + ")"};
    for (const json& entry : view) {
        if (entry.is_string()) {
            r.view.push_back(entry.get<std::string>());
        } else if (entry.is_number_unsigned() && entry.get<uint64_t>() <= UINT32_MAX) {
            r.view_ids.push_back(entry.get<uint32_t>());
        } else {
            throw Refusal{JsonError::kBadRequest,
                          "View has an entry neither a name nor a field id"};
        }
    }
}

// LSEG's Qos: {"Timeliness": "Realtime", "Rate": "TickByTick" | "TimeConflated", "RateInfo": ms}.
void read_qos(const json& qos, JsonRequest& r) {
    if (!qos.is_object()) throw Refusal{JsonError::kBadRequest, "Qos is not an object"};
    const std::string timeliness = string_member(qos, "Timeliness", "Qos.Timeliness");
    if (!timeliness.empty() && timeliness != "Realtime")
        throw Refusal{JsonError::kBadRequest, "Qos.Timeliness '" + timeliness.substr(0, 32) +
                                                  "' is not offered (Realtime)"};
    const std::string rate = string_member(qos, "Rate", "Qos.Rate");
    if (rate.empty() || rate == "TickByTick" || rate == "Unspecified") return;
    if (rate != "TimeConflated")
        throw Refusal{JsonError::kBadRequest, "Qos.Rate '" + rate.substr(0, 32) +
                                                  "' is not offered (TickByTick, TimeConflated)"};
    const json* info = member(qos, "RateInfo");
    if (!info || !info->is_number_unsigned() || info->get<uint64_t>() == 0 ||
        info->get<uint64_t>() > proto::kMaxConflateMs)
        throw Refusal{JsonError::kBadRequest, "Qos.RateInfo (ms) must be 1 to " +
                                                  std::to_string(proto::kMaxConflateMs) +
                                                  " with Rate TimeConflated"};
    r.conflate_ms = info->get<uint32_t>();
}

void read_streaming(const json& message, JsonRequest& r) {
    if (const json* streaming = member(message, "Streaming")) {
        if (!streaming->is_boolean())
            throw Refusal{JsonError::kBadRequest, "Streaming is not true or false"};
        r.streaming = streaming->get<bool>();
    }
}

void read_item(const json& message, JsonRequest& r, const JsonLimits& limits) {
    r.type = JsonRequest::Type::kItem;
    const json& key = key_of(message);
    r.service = string_member(key, "Service", "Key.Service");
    const json* name = member(key, "Name");
    if (!name) throw Refusal{JsonError::kBadRequest, "Key.Name missing"};
    r.names = strings(*name, "Key.Name", limits.max_names);
    r.batch = name->is_array();
    if (r.names.empty()) throw Refusal{JsonError::kBadRequest, "Key.Name is empty"};
    if (const json* view = member(message, "View")) read_view(*view, r, limits);
    if (const json* qos = member(message, "Qos")) read_qos(*qos, r);
    read_streaming(message, r);
}

void read_filter(const json& key, JsonRequest& r) {
    const json* filter = member(key, "Filter");
    if (!filter) return;
    if (!filter->is_number_unsigned() || filter->get<uint64_t>() > UINT32_MAX)
        throw Refusal{JsonError::kBadRequest, "Key.Filter is not an unsigned integer"};
    r.filter = filter->get<uint32_t>();
}

// LSEG's Dictionary request: Key.Name the dictionary (RWFFld, RWFEnum), Key.Filter its
// verbosity; Key.Service, which LSEG's clients may send, is not needed (one dictionary).
void read_dictionary(const json& message, JsonRequest& r) {
    r.type = JsonRequest::Type::kDictionary;
    const json& key = key_of(message);
    (void)string_member(key, "Service", "Key.Service");
    r.names.push_back(string_member(key, "Name", "Key.Name"));
    if (r.names[0].empty()) throw Refusal{JsonError::kBadRequest, "Key.Name missing"};
    read_filter(key, r);
    read_streaming(message, r);
}

// The Source directory: every service the user may see; Key.Filter says which of their
// filter entries (1 Info, 2 State) to send.
void read_source(const json& message, JsonRequest& r) {
    r.type = JsonRequest::Type::kSource;
    const json* key = member(message, "Key");
    if (!key) return;
    if (!key->is_object()) throw Refusal{JsonError::kBadRequest, "Key is not an object"};
    read_filter(*key, r);
}

JsonScalar scalar_of(const json& value, const std::string& field) {
    JsonScalar s;
    if (value.is_null()) return s;
    if (value.is_number_integer()) {
        if (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX)
            throw Refusal{JsonError::kBadRequest,
                          "Fields." + field.substr(0, 64) + " is out of range"};
        s.kind = JsonScalar::Kind::kInt;
        s.integer = value.get<int64_t>();
    } else if (value.is_number_float()) {
        s.kind = JsonScalar::Kind::kFloat;
        s.real = value.get<double>();
    } else if (value.is_string()) {
        s.kind = JsonScalar::Kind::kString;
        s.text = value.get<std::string>();
    } else {
        throw Refusal{JsonError::kBadRequest,
                      "Fields." + field.substr(0, 64) + " is not a number, a string or null"};
    }
    return s;
}

// LSEG's Post: on an item stream's ID, or off-stream on the login's ID with a Key;
// the contribution is Message.Fields.
void read_post(const json& message, JsonRequest& r, const JsonLimits& limits) {
    r.type = JsonRequest::Type::kPost;
    const json* id = member(message, "ID");
    if (!id) throw Refusal{JsonError::kBadRequest, "ID missing"};
    r.id = id_of(*id);
    if (const json* key = member(message, "Key")) {
        if (!key->is_object()) throw Refusal{JsonError::kBadRequest, "Key is not an object"};
        r.service = string_member(*key, "Service", "Key.Service");
        r.names.push_back(string_member(*key, "Name", "Key.Name"));
        if (r.names[0].empty()) throw Refusal{JsonError::kBadRequest, "Key.Name missing"};
    }
    if (const json* post_id = member(message, "PostID")) {
        if (!post_id->is_number_unsigned())
            throw Refusal{JsonError::kBadRequest, "PostID is not an unsigned integer"};
        r.post_id = post_id->get<uint64_t>();
    }
    if (const json* ack = member(message, "Ack")) {
        if (!ack->is_boolean()) throw Refusal{JsonError::kBadRequest, "Ack is not true or false"};
        r.ack = ack->get<bool>();
    }
    const json* inner = member(message, "Message");
    const json* fields = inner && inner->is_object() ? member(*inner, "Fields") : nullptr;
    if (!fields || !fields->is_object() || fields->empty())
        throw Refusal{JsonError::kBadRequest, "Message.Fields missing or empty"};
    if (fields->size() > limits.max_view)
        throw Refusal{JsonError::kTooMany, "Message.Fields has " + std::to_string(fields->size()) +
                                               " entries (limit " +
                                               std::to_string(limits.max_view) + ")"};
    for (const auto& [name, value] : fields->items())
        r.post_fields.emplace_back(name, scalar_of(value, name));
}

void read_close(const json& message, JsonRequest& r, const JsonLimits& limits) {
    const std::string domain = string_member(message, "Domain", "Domain");
    if (domain == "Login") {
        r.type = JsonRequest::Type::kCloseLogin;
        return;
    }
    r.type = JsonRequest::Type::kClose;
    const json* id = member(message, "ID");
    if (!id) throw Refusal{JsonError::kBadRequest, "ID missing"};
    if (!id->is_array()) {
        r.close_ids.push_back(id_of(*id));
        return;
    }
    if (id->size() > limits.max_names)
        throw Refusal{JsonError::kTooMany, "ID has " + std::to_string(id->size()) + " entries"};
    for (const json& entry : *id) r.close_ids.push_back(id_of(entry));
}

JsonRequest read_message(const json& message, const JsonLimits& limits) {
    if (!message.is_object()) throw Refusal{JsonError::kBadRequest, "a message must be an object"};
    JsonRequest r;
    const std::string type =
        member(message, "Type") ? string_member(message, "Type", "Type") : std::string("Request");
    if (type == "Ping") {
        r.type = JsonRequest::Type::kPing;
        return r;
    }
    if (type == "Pong") {
        r.type = JsonRequest::Type::kPong;
        return r;
    }
    if (type == "Close") {
        read_close(message, r, limits);
        return r;
    }
    if (type == "Post") {
        read_post(message, r, limits);
        return r;
    }
    if (type != "Request")
        throw Refusal{JsonError::kUnknownType, "unknown message Type '" + type.substr(0, 32) +
                                                   "' (Request, Post, Close, Ping, Pong)"};
    const json* id = member(message, "ID");
    if (!id) throw Refusal{JsonError::kBadRequest, "ID missing"};
    r.id = id_of(*id);
    const std::string domain = member(message, "Domain")
                                   ? string_member(message, "Domain", "Domain")
                                   : std::string("MarketPrice");
    if (domain == "Login") {
        read_login(message, r);
    } else if (domain == "MarketPrice" || domain == "MarketByPrice" || domain == "MarketByOrder" ||
               domain == "SymbolList") {
        // A book's domain names the same item request: the refresh says the
        // item's own Domain (docs/websocket.md, "Books").
        read_item(message, r, limits);
    } else if (domain == "Source") {
        read_source(message, r);
    } else if (domain == "Dictionary") {
        read_dictionary(message, r);
    } else {
        throw Refusal{JsonError::kUnknownType,
                      "Domain '" + domain.substr(0, 32) +
                          "' is not served (Login, MarketPrice, MarketByPrice, MarketByOrder, "
                          "SymbolList, Source, Dictionary)"};
    }
    return r;
}

JsonMessage refused(JsonError error, std::string text) {
    JsonMessage m;
    m.error = error;
    m.error_text = std::move(text);
    return m;
}

}  // namespace

std::string_view json_error_name(JsonError error) {
    switch (error) {
        case JsonError::kNone:
            return "none";
        case JsonError::kNotJson:
            return "not_json";
        case JsonError::kUnknownType:
            return "unknown_type";
        case JsonError::kBadRequest:
            return "bad_request";
        case JsonError::kTooMany:
            return "too_many";
    }
    return "unknown";
}

std::vector<JsonMessage> parse_json_requests(std::string_view text, const JsonLimits& limits) {
    // Nesting is refused while parsing, before the tree grows deep.
    bool too_deep = false;
    const json::parser_callback_t depth_check = [&too_deep](int depth, json::parse_event_t, json&) {
        if (depth > kMaxDepth) too_deep = true;
        return !too_deep;
    };
    json document = json::parse(text.begin(), text.end(), depth_check, false);
    if (too_deep)
        return {refused(JsonError::kNotJson,
                        "nested deeper than " + std::to_string(kMaxDepth) + " levels")};
    if (document.is_discarded()) return {refused(JsonError::kNotJson, "not JSON text")};
    std::vector<JsonMessage> out;
    const auto read_one = [&](const json& message) {
        try {
            out.push_back(JsonMessage{JsonError::kNone, "", read_message(message, limits)});
        } catch (const Refusal& refusal) {
            out.push_back(refused(refusal.error, refusal.text));
        }
    };
    if (!document.is_array()) {
        read_one(document);
        return out;
    }
    // Every text message is answered: an empty array would get no answer at all.
    if (document.empty()) return {refused(JsonError::kBadRequest, "an empty array: no request")};
    if (document.size() > limits.max_messages) {
        return {refused(JsonError::kTooMany, std::to_string(document.size()) +
                                                 " messages in one array (limit " +
                                                 std::to_string(limits.max_messages) + ")")};
    }
    for (const json& message : document) read_one(message);
    return out;
}

}  // namespace mdcast::server
