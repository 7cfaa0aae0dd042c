#include "item_printer.h"

#include "proto/field_values.h"
#include "proto/limits.h"

namespace mdcast::tools {

namespace wire = mdcast::wire::v1;
using proto::json_escape;

namespace {

const char* stream_name(wire::StreamState state) {
    return state == wire::STREAM_CLOSED ? "closed" : "open";
}

const char* data_name(wire::DataState state) {
    return state == wire::DATA_OK ? "ok" : "suspect";
}

const char* action_name(proto::MapAction action) {
    switch (action) {
        case proto::MapAction::kAdd:
            return "add";
        case proto::MapAction::kUpdate:
            return "update";
        case proto::MapAction::kDelete:
            return "delete";
    }
    return "unknown";
}

std::string key_text(const proto::MapEntryView& entry) {
    return entry.is_price ? proto::format_decimal(entry.mantissa, entry.exponent)
                          : std::string(entry.name);
}

std::string code_name(wire::StatusCode code) {
    std::string name = wire::StatusCode_Name(code);
    return name.rfind("STATUS_", 0) == 0 ? name.substr(7) : name;
}

}  // namespace

ItemPrinter::ItemPrinter(OutputFormat format, const proto::FieldDictionary& dictionary,
                         std::FILE* out)
    : format_(format), dictionary_(dictionary), out_(out) {}

std::string ItemPrinter::field_name(uint32_t id) const {
    const auto* definition = dictionary_.find(id);
    return definition ? definition->name : "FID" + std::to_string(id);
}

std::string ItemPrinter::fields_json(const wire::FieldList& fields) const {
    std::string out = "{";
    for (const auto& field : fields.fields()) {
        if (out.size() > 1) out += ",";
        out += "\"" + json_escape(field_name(field.id())) + "\":" + proto::format_value_json(field);
    }
    return out + "}";
}

std::string ItemPrinter::fields_text(const wire::FieldList& fields) const {
    std::string out;
    for (const auto& field : fields.fields()) {
        out += " " + field_name(field.id()) + "=" + proto::format_value(field);
    }
    return out;
}

bool ItemPrinter::decode_entries(std::span<const uint8_t> map, std::string& why) {
    return proto::decode_map(map, proto::kMaxMapEntries, entries_, why);
}

wire::FieldList& ItemPrinter::entry_fields(const proto::MapEntryView& entry) {
    entry_fields_.ParseFromArray(entry.field_bytes.data(),
                                 static_cast<int>(entry.field_bytes.size()));
    return entry_fields_;
}

std::string ItemPrinter::entries_json(std::span<const uint8_t> map) {
    std::string why;
    if (!decode_entries(map, why)) return "null,\"map_error\":\"" + json_escape(why) + "\"";
    std::string out = "[";
    for (const auto& entry : entries_) {
        if (out.size() > 1) out += ",";
        out += "{\"key\":\"" + json_escape(key_text(entry)) + "\",\"action\":\"" +
               action_name(entry.action) + "\",\"fields\":" + fields_json(entry_fields(entry)) +
               "}";
    }
    return out + "]";
}

std::string ItemPrinter::entries_text(std::span<const uint8_t> map) {
    std::string why;
    if (!decode_entries(map, why)) return "\n    malformed map: " + why;
    std::string out;
    for (const auto& entry : entries_) {
        out += "\n    " + std::string(action_name(entry.action)) + " " + key_text(entry) +
               fields_text(entry_fields(entry));
    }
    return out;
}

std::string ItemPrinter::status_text(const wire::Status& status) {
    std::string out =
        std::string(stream_name(status.stream_state())) + "/" + data_name(status.data_state());
    if (status.code() != wire::STATUS_NONE) out += " " + code_name(status.code());
    if (!status.text().empty()) out += " \"" + status.text() + "\"";
    return out;
}

std::string ItemPrinter::status_json(const wire::Status& status) {
    return "\"stream\":\"" + std::string(stream_name(status.stream_state())) + "\",\"data\":\"" +
           data_name(status.data_state()) + "\",\"code\":\"" + code_name(status.code()) +
           "\",\"text\":\"" + json_escape(status.text()) + "\"";
}

void ItemPrinter::refresh(int connection, const wire::Refresh& r) {
    const bool book = proto::is_book_domain(r.domain());
    const std::span<const uint8_t> map{reinterpret_cast<const uint8_t*>(r.map().data()),
                                       r.map().size()};
    if (format_ == OutputFormat::kJson) {
        const std::string entries = book ? ",\"entries\":" + entries_json(map) : "";
        std::fprintf(
            out_,
            "{\"type\":\"refresh\",\"conn\":%d,\"service\":\"%s\",\"item\":\"%s\",\"id\":%llu,"
            "\"seq\":%llu,\"clear_cache\":%s,%s,\"domain\":\"%s\",\"fields\":%s%s}\n",
            connection, json_escape(r.service_name()).c_str(), json_escape(r.item_name()).c_str(),
            static_cast<unsigned long long>(r.item_id()),
            static_cast<unsigned long long>(r.item_seq()), r.clear_cache() ? "true" : "false",
            status_json(r.status()).c_str(), std::string(proto::domain_name(r.domain())).c_str(),
            fields_json(r.fields()).c_str(), entries.c_str());
    } else if (format_ == OutputFormat::kText) {
        const std::string entries =
            book ? " " + std::string(proto::domain_name(r.domain())) + entries_text(map) : "";
        std::fprintf(out_, "[%d] REFRESH %s/%s id=%llu seq=%llu %s%s%s\n", connection,
                     r.service_name().c_str(), r.item_name().c_str(),
                     static_cast<unsigned long long>(r.item_id()),
                     static_cast<unsigned long long>(r.item_seq()), status_text(r.status()).c_str(),
                     fields_text(r.fields()).c_str(), entries.c_str());
    }
}

void ItemPrinter::update(int connection, const std::string& service, const std::string& item,
                         const wire::Update& u, int64_t latency_ns) {
    const std::span<const uint8_t> map{reinterpret_cast<const uint8_t*>(u.map().data()),
                                       u.map().size()};
    if (format_ == OutputFormat::kJson) {
        const std::string entries = map.empty() ? "" : ",\"entries\":" + entries_json(map);
        std::fprintf(
            out_,
            "{\"type\":\"update\",\"conn\":%d,\"service\":\"%s\",\"item\":\"%s\",\"id\":%llu,"
            "\"seq\":%llu,\"publish_ns\":%llu,\"latency_ns\":%lld,\"conflated\":%s,"
            "\"fields\":%s%s}\n",
            connection, json_escape(service).c_str(), json_escape(item).c_str(),
            static_cast<unsigned long long>(u.item_id()),
            static_cast<unsigned long long>(u.item_seq()),
            static_cast<unsigned long long>(u.publish_time_ns()),
            static_cast<long long>(latency_ns), u.conflated() ? "true" : "false",
            fields_json(u.fields()).c_str(), entries.c_str());
    } else if (format_ == OutputFormat::kText) {
        const std::string entries = map.empty() ? "" : entries_text(map);
        std::fprintf(
            out_, "[%d] UPDATE  %s/%s seq=%llu%s%s%s\n", connection, service.c_str(), item.c_str(),
            static_cast<unsigned long long>(u.item_seq()),
            latency_ns >= 0 ? (" latency=" + std::to_string(latency_ns / 1000) + "us").c_str() : "",
            fields_text(u.fields()).c_str(), entries.c_str());
    }
}

void ItemPrinter::status(int connection, const std::string& service, const std::string& item,
                         const wire::ItemStatus& s) {
    if (format_ == OutputFormat::kJson) {
        std::fprintf(
            out_,
            "{\"type\":\"status\",\"conn\":%d,\"service\":\"%s\",\"item\":\"%s\",\"id\":%llu,%s}\n",
            connection, json_escape(service).c_str(), json_escape(item).c_str(),
            static_cast<unsigned long long>(s.item_id()), status_json(s.status()).c_str());
    } else if (format_ == OutputFormat::kText) {
        std::fprintf(out_, "[%d] STATUS  %s/%s id=%llu %s\n", connection, service.c_str(),
                     item.c_str(), static_cast<unsigned long long>(s.item_id()),
                     status_text(s.status()).c_str());
    }
}

void ItemPrinter::closed(int connection, const std::string& reason, const std::string& text) {
    if (format_ == OutputFormat::kJson) {
        std::fprintf(out_, "{\"type\":\"closed\",\"conn\":%d,\"reason\":\"%s\",\"text\":\"%s\"}\n",
                     connection, json_escape(reason).c_str(), json_escape(text).c_str());
    } else if (format_ == OutputFormat::kText) {
        std::fprintf(out_, "[%d] CLOSED  %s: %s\n", connection, reason.c_str(), text.c_str());
    }
}

void ItemPrinter::json_line(const std::string& object) {
    std::fprintf(out_, "%s\n", object.c_str());
}

}  // namespace mdcast::tools
