#include "server/websocket/json_dictionary.h"

#include "proto/websocket/ws_frames.h"
#include "server/websocket/json_protocol.h"

namespace mdcast::server {

namespace {

constexpr std::string_view kFieldsName = "RWFFld";
constexpr std::string_view kEnumsName = "RWFEnum";
// LSEG's DictionaryId of a field dictionary and the enum tables that go with it.
constexpr int kDictionaryId = 1;
// Summary Type: DICTIONARY_FIELD_DEFINITIONS, DICTIONARY_ENUM_TABLES.
constexpr int kFieldDefinitions = 1;
constexpr int kEnumTables = 2;

// How LSEG's dictionary describes a field of each mdcast type: the Marketfeed type and
// length, the RWF type and its caching length (LSEG's numbering; docs/websocket.md).
struct RwfShape {
    int marketfeed_type;
    unsigned length;
    unsigned rwf_type;
    unsigned rwf_length;
};

RwfShape shape_of(proto::FieldType type) {
    switch (type) {
        case proto::FieldType::kInt:
            return {1, 15, 3, 8};  // INTEGER, INT
        case proto::FieldType::kDecimal:
            return {4, 17, 8, 9};  // PRICE, REAL: exact decimals as mdcast's
        case proto::FieldType::kDouble:
            return {2, 17, 6, 8};  // NUMERIC, DOUBLE
        case proto::FieldType::kString:
            return {5, 0, 18, 0};  // ALPHANUMERIC, UTF8_STRING: no fixed length
        case proto::FieldType::kTime:
            return {7, 30, 11, 12};  // TIME, DATETIME: date and time to the nanosecond
    }
    return {-1, 0, 0, 0};
}

// LSEG's JSON for an Int element (a bare number would read as a UInt).
std::string int_element(int64_t value) {
    return "{\"Type\":\"Int\",\"Data\":" + std::to_string(value) + "}";
}

std::string field_row(const proto::FieldDefinition& field, DictionaryVerbosity verbosity) {
    const RwfShape shape = shape_of(field.type);
    std::string row = "{\"Elements\":{\"NAME\":";
    append_json_string(row, field.name);
    row += ",\"FID\":" + int_element(field.id);
    row += ",\"RIPPLETO\":" + int_element(0);
    row += ",\"TYPE\":" + int_element(shape.marketfeed_type);
    row += ",\"LENGTH\":" + std::to_string(shape.length);
    row += ",\"RWFTYPE\":" + std::to_string(shape.rwf_type);
    row += ",\"RWFLEN\":" + std::to_string(shape.rwf_length);
    if (verbosity != DictionaryVerbosity::kMinimal) {
        row += ",\"ENUMLENGTH\":0,\"LONGNAME\":";
        append_json_string(row, field.name);  // mdcast's dictionary has one name per field
    }
    row += "}}";
    return row;
}

// FNV-1a of every definition: the dictionary's Version changes when a field does.
std::string version_of(const proto::FieldDictionary& dictionary) {
    uint32_t hash = 2166136261u;
    for (const auto& field : dictionary.fields()) {
        const std::string line = std::to_string(field.id) + ' ' + field.name + ' ' +
                                 std::string(proto::field_type_name(field.type)) + '\n';
        for (const char c : line) hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
    }
    return "1." + std::to_string(hash);
}

// The part's opening up to the Series' first member: the same for every part but for
// Complete (all but the last are not) and ClearCache (only the first part clears).
std::string opening(DictionaryKind kind, DictionaryVerbosity verbosity, bool streaming,
                    bool complete, bool first) {
    std::string out =
        "[{\"ID\":0,\"Type\":\"Refresh\",\"Domain\":\"Dictionary\",\"Key\":{\"Name\":\"";
    out += kind == DictionaryKind::kFields ? kFieldsName : kEnumsName;
    out += "\",\"Filter\":" + std::to_string(static_cast<uint32_t>(verbosity));
    out += "},\"State\":{\"Stream\":\"";
    out += streaming ? "Open" : "NonStreaming";
    out += "\",\"Data\":\"Ok\",\"Text\":\"\"}";
    if (!complete) out += ",\"Complete\":false";
    if (!first) out += ",\"ClearCache\":false";
    out += ",\"Series\":{";
    return out;
}

constexpr std::string_view kClosing = "}}]";

}  // namespace

std::optional<DictionaryKind> dictionary_kind(std::string_view name) {
    if (name == kFieldsName) return DictionaryKind::kFields;
    if (name == kEnumsName) return DictionaryKind::kEnums;
    return std::nullopt;
}

DictionaryVerbosity dictionary_verbosity(uint32_t filter) {
    for (const auto v : {DictionaryVerbosity::kVerbose, DictionaryVerbosity::kNormal,
                         DictionaryVerbosity::kMinimal}) {
        const auto bits = static_cast<uint32_t>(v);
        if ((filter & bits) == bits) return v;
    }
    return DictionaryVerbosity::kInfo;
}

JsonDictionary::JsonDictionary(const proto::FieldDictionary& dictionary, size_t part_bytes)
    : dictionary_(dictionary), part_bytes_(part_bytes), version_(version_of(dictionary)) {}

const std::vector<std::string>& JsonDictionary::refresh(DictionaryKind kind,
                                                        DictionaryVerbosity verbosity,
                                                        bool streaming) {
    const auto key = std::make_tuple(kind, verbosity, streaming);
    auto it = answers_.find(key);
    if (it == answers_.end()) {
        it = answers_.emplace(key, encode(kind, verbosity, streaming)).first;
        ++encodings_;
    }
    return it->second;
}

std::string JsonDictionary::summary(DictionaryKind kind) const {
    std::string out = "\"Summary\":{\"Elements\":{\"Type\":";
    out += std::to_string(kind == DictionaryKind::kFields ? kFieldDefinitions : kEnumTables);
    out += ",\"DictionaryId\":" + int_element(kDictionaryId) + ",\"Version\":";
    append_json_string(out, version_);
    if (kind == DictionaryKind::kEnums) {  // the field dictionary these tables go with
        out += ",\"RT_Version\":";
        append_json_string(out, version_);
        out += ",\"DT_Version\":";
        append_json_string(out, version_);
    }
    out += "}}";
    if (kind == DictionaryKind::kFields)
        out += ",\"CountHint\":" + std::to_string(dictionary_.fields().size());
    return out;
}

// Info has no entries; mdcast has no enum tables (its fields are numbers, text, times).
std::vector<std::string> JsonDictionary::entries(DictionaryKind kind,
                                                 DictionaryVerbosity verbosity) const {
    std::vector<std::string> rows;
    if (kind == DictionaryKind::kEnums || verbosity == DictionaryVerbosity::kInfo) return rows;
    rows.reserve(dictionary_.fields().size());
    for (const auto& field : dictionary_.fields()) rows.push_back(field_row(field, verbosity));
    return rows;
}

// Rows go into a part while its JSON stays within part_bytes_ (a part holds at least one
// row, so a row larger than the bound still goes out); the Summary rides in the first.
std::vector<std::string> JsonDictionary::encode(DictionaryKind kind, DictionaryVerbosity verbosity,
                                                bool streaming) const {
    const std::vector<std::string> rows = entries(kind, verbosity);
    const std::string head = summary(kind);
    std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) of rows, per part
    size_t begin = 0;
    do {
        const bool first = groups.empty();
        size_t size = opening(kind, verbosity, streaming, false, first).size() + kClosing.size() +
                      (first ? head.size() + 1 : 0) + std::string_view(",\"Entries\":[]").size();
        size_t end = begin;
        while (end < rows.size() && (end == begin || size + rows[end].size() + 1 <= part_bytes_))
            size += rows[end++].size() + 1;
        groups.emplace_back(begin, end);
        begin = end;
    } while (begin < rows.size());

    std::vector<std::string> parts;
    for (size_t i = 0; i < groups.size(); ++i) {
        const bool first = i == 0;
        std::string payload = opening(kind, verbosity, streaming, i + 1 == groups.size(), first);
        if (first) payload += head;
        const auto [from, to] = groups[i];
        if (from < to) {
            payload += first ? ",\"Entries\":[" : "\"Entries\":[";
            for (size_t r = from; r < to; ++r) {
                if (r > from) payload += ',';
                payload += rows[r];
            }
            payload += ']';
        }
        payload += kClosing;
        std::string frame;
        proto::append_ws_frame(frame, proto::WsOpcode::kText, payload);
        parts.push_back(std::move(frame));
    }
    return parts;
}

std::string JsonDictionary::refused(int64_t id, const std::string& name, std::string_view code,
                                    std::string_view text) {
    std::string out = "[{\"ID\":" + std::to_string(id) +
                      ",\"Type\":\"Status\",\"Domain\":\"Dictionary\",\"Key\":{\"Name\":";
    append_json_string(out, name);
    out += "},\"State\":{\"Stream\":\"Closed\",\"Data\":\"Suspect\",\"Code\":\"";
    out += code;
    out += "\",\"Text\":";
    append_json_string(out, text);
    out += "}}]";
    std::string frame;
    proto::append_ws_frame(frame, proto::WsOpcode::kText, out);
    return frame;
}

}  // namespace mdcast::server
