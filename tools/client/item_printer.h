// Renders what mdcast-client receives as human-readable lines or JSON lines
// (one object per line; the format is documented in docs/tools.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "proto/book_codec.h"
#include "proto/field_dictionary.h"
#include "wire/common.pb.h"

namespace mdcast::tools {

enum class OutputFormat { kText, kJson, kNone };

class ItemPrinter {
  public:
    ItemPrinter(OutputFormat format, const proto::FieldDictionary& dictionary, std::FILE* out);

    void refresh(int connection, const wire::v1::Refresh& refresh);
    void update(int connection, const std::string& service, const std::string& item,
                const wire::v1::Update& update, int64_t latency_ns);
    void status(int connection, const std::string& service, const std::string& item,
                const wire::v1::ItemStatus& status);
    void closed(int connection, const std::string& reason, const std::string& text);
    // Raw JSON object text (already formatted), e.g. the summary.
    void json_line(const std::string& object);
    // Hands what is buffered to the output: a reader of a pipe or a file sees
    // each line within one flush interval, without a write per line.
    void flush() { std::fflush(out_); }
    bool enabled() const { return format_ != OutputFormat::kNone; }
    OutputFormat format() const { return format_; }

  private:
    std::string fields_json(const wire::v1::FieldList& fields) const;
    std::string fields_text(const wire::v1::FieldList& fields) const;
    std::string field_name(uint32_t id) const;
    // A book's entries (an encoded Map): a JSON array of {key, action, fields}, or
    // one text line per entry. A map that does not decode is shown as its error.
    std::string entries_json(std::span<const uint8_t> map);
    std::string entries_text(std::span<const uint8_t> map);
    bool decode_entries(std::span<const uint8_t> map, std::string& why);
    wire::v1::FieldList& entry_fields(const proto::MapEntryView& entry);
    static std::string status_text(const wire::v1::Status& status);
    static std::string status_json(const wire::v1::Status& status);

    OutputFormat format_;
    const proto::FieldDictionary& dictionary_;
    std::FILE* out_;
    std::vector<proto::MapEntryView> entries_;  // reused between maps
    wire::v1::FieldList entry_fields_;
};

}  // namespace mdcast::tools
