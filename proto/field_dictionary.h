// The field dictionary: field id <-> name <-> type (etc/fields.dict).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mdcast::proto {

enum class FieldType { kInt, kDecimal, kDouble, kString, kTime };

std::string_view field_type_name(FieldType type);

struct FieldDefinition {
    uint32_t id;
    std::string name;
    FieldType type;
};

class FieldDictionary {
  public:
    // Parses the text format; throws std::runtime_error naming file:line on any error
    // (bad id, unknown type, duplicate id or name).
    static FieldDictionary parse(std::string_view text, const std::string& file_name);
    static FieldDictionary load_file(const std::string& path);

    const FieldDefinition* find(uint32_t id) const;
    const FieldDefinition* find(std::string_view name) const;
    const std::vector<FieldDefinition>& fields() const { return fields_; }

  private:
    std::vector<FieldDefinition> fields_;
    std::unordered_map<uint32_t, size_t> by_id_;
    std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace mdcast::proto
