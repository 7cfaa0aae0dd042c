#include "proto/field_dictionary.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mdcast::proto {

namespace {

std::optional<FieldType> parse_type(const std::string& word) {
    if (word == "INT") return FieldType::kInt;
    if (word == "DECIMAL") return FieldType::kDecimal;
    if (word == "DOUBLE") return FieldType::kDouble;
    if (word == "STRING") return FieldType::kString;
    if (word == "TIME") return FieldType::kTime;
    return std::nullopt;
}

}  // namespace

std::string_view field_type_name(FieldType type) {
    switch (type) {
        case FieldType::kInt:
            return "INT";
        case FieldType::kDecimal:
            return "DECIMAL";
        case FieldType::kDouble:
            return "DOUBLE";
        case FieldType::kString:
            return "STRING";
        case FieldType::kTime:
            return "TIME";
    }
    return "?";
}

FieldDictionary FieldDictionary::parse(std::string_view text, const std::string& file_name) {
    FieldDictionary dict;
    std::istringstream in{std::string(text)};
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        auto fail = [&](const std::string& why) {
            throw std::runtime_error(file_name + ":" + std::to_string(line_no) + ": " + why);
        };
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string id_text, name, type_text, extra;
        if (!(words >> id_text)) continue;  // blank or comment
        if (!(words >> name >> type_text) || (words >> extra))
            fail("expected '<id> <NAME> <TYPE>'");
        uint32_t id = 0;
        try {
            size_t used = 0;
            const unsigned long value = std::stoul(id_text, &used);
            if (used != id_text.size() || value == 0 || value > 65535)
                throw std::out_of_range("id");
            id = static_cast<uint32_t>(value);
        } catch (const std::exception&) {
            fail("field id '" + id_text + "' is not a number in 1..65535");
        }
        const auto type = parse_type(type_text);
        if (!type)
            fail("unknown field type '" + type_text + "' (INT, DECIMAL, DOUBLE, STRING, TIME)");
        if (dict.by_id_.contains(id)) fail("duplicate field id " + id_text);
        if (dict.by_name_.contains(name)) fail("duplicate field name " + name);
        dict.by_id_[id] = dict.fields_.size();
        dict.by_name_[name] = dict.fields_.size();
        dict.fields_.push_back(FieldDefinition{id, name, *type});
    }
    return dict;
}

FieldDictionary FieldDictionary::load_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open field dictionary");
    std::stringstream text;
    text << in.rdbuf();
    return parse(text.str(), path);
}

const FieldDefinition* FieldDictionary::find(uint32_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &fields_[it->second];
}

const FieldDefinition* FieldDictionary::find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &fields_[it->second];
}

}  // namespace mdcast::proto
