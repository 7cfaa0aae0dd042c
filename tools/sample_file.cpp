#include "tools/sample_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace mdcast::tools {

namespace wire = mdcast::wire::v1;

namespace {

[[noreturn]] void fail(const std::string& file, int line, const std::string& what) {
    throw std::runtime_error(file + ":" + std::to_string(line) + ": " + what);
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::vector<SampleItem> load_text(std::istream& in) {
    std::vector<SampleItem> items;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string name = trim(line.substr(0, line.find('#')));
        if (!name.empty()) items.push_back({name, {}, number});
    }
    return items;
}

SampleItem yaml_item(const YAML::Node& entry, const std::string& path) {
    const int line = entry.Mark().line + 1;
    if (entry.IsScalar()) return {entry.as<std::string>(), {}, line};
    if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) {
        fail(path, line, "an item is a name or a mapping with 'name' (and optional 'fields')");
    }
    SampleItem item{entry["name"].as<std::string>(), {}, line};
    for (const auto& key : entry) {
        const auto k = key.first.as<std::string>();
        if (k != "name" && k != "fields")
            fail(path, key.first.Mark().line + 1, "unknown key '" + k + "'");
    }
    if (const YAML::Node fields = entry["fields"]) {
        if (!fields.IsMap())
            fail(path, fields.Mark().line + 1, "'fields' must map field names to values");
        for (const auto& field : fields) {
            if (!field.second.IsScalar()) {
                fail(path, field.second.Mark().line + 1,
                     "value of " + field.first.as<std::string>() + " must be a scalar");
            }
            item.fields.emplace_back(field.first.as<std::string>(), field.second.as<std::string>());
        }
    }
    return item;
}

std::vector<SampleItem> load_yaml(const std::string& text, const std::string& path) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& error) {
        fail(path, error.mark.line + 1, error.msg);
    }
    if (!root.IsMap() || !root["items"] || !root["items"].IsSequence()) {
        fail(path, 1, "expected a mapping with an 'items:' list");
    }
    for (const auto& key : root) {
        const auto k = key.first.as<std::string>();
        if (k != "items") fail(path, key.first.Mark().line + 1, "unknown key '" + k + "'");
    }
    std::vector<SampleItem> items;
    for (const auto& entry : root["items"]) items.push_back(yaml_item(entry, path));
    return items;
}

// "131.25" -> mantissa 13125, exponent -2. False on anything but [-]digits[.digits].
bool parse_decimal(const std::string& text, wire::Decimal& out) {
    std::string digits;
    int exponent = 0;
    bool point = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '-' && i == 0) {
            digits += c;
        } else if (c == '.' && !point) {
            point = true;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            digits += c;
            if (point) --exponent;
        } else {
            return false;
        }
    }
    int64_t mantissa = 0;
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), mantissa);
    if (error != std::errc() || end != digits.data() + digits.size()) return false;
    out.set_mantissa(mantissa);
    out.set_exponent(exponent);
    return true;
}

bool parse_date(const std::string& text, int64_t& ns) {
    std::tm tm{};
    std::istringstream in(text);
    in >> std::get_time(&tm, "%Y-%m-%d");
    if (in.fail() || !in.eof()) return false;
    ns = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000;
    return true;
}

bool set_value(proto::FieldType type, const std::string& text, wire::FieldValue& value) {
    const char* begin = text.data();
    const char* end = begin + text.size();
    switch (type) {
        case proto::FieldType::kInt: {
            int64_t v = 0;
            const auto r = std::from_chars(begin, end, v);
            if (r.ec != std::errc() || r.ptr != end) return false;
            value.set_int_value(v);
            return true;
        }
        case proto::FieldType::kDouble: {
            char* stop = nullptr;
            const double v = std::strtod(text.c_str(), &stop);
            if (text.empty() || *stop != '\0') return false;
            value.set_double_value(v);
            return true;
        }
        case proto::FieldType::kDecimal:
            return parse_decimal(text, *value.mutable_decimal_value());
        case proto::FieldType::kString:
            value.set_string_value(text);
            return true;
        case proto::FieldType::kTime: {
            int64_t ns = 0;
            if (!parse_date(text, ns)) return false;
            value.set_time_ns(ns);
            return true;
        }
    }
    return false;
}

}  // namespace

std::vector<SampleItem> load_sample_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot read the item file");
    if (!ends_with(path, ".yaml") && !ends_with(path, ".yml")) return load_text(in);
    std::stringstream text;
    text << in.rdbuf();
    return load_yaml(text.str(), path);
}

void add_template_fields(const SampleItem& item, const proto::FieldDictionary& dictionary,
                         const std::string& file_name, wire::FieldList& out) {
    for (const auto& [name, text] : item.fields) {
        const proto::FieldDefinition* definition = dictionary.find(name);
        if (!definition)
            fail(file_name, item.line,
                 item.name + ": no field named '" + name + "' in the dictionary");
        wire::FieldValue* value = out.add_fields();
        value->set_id(definition->id);
        if (!set_value(definition->type, text, *value)) {
            fail(file_name, item.line,
                 item.name + ": " + name + " is " +
                     std::string(proto::field_type_name(definition->type)) + ", not '" + text +
                     "'");
        }
    }
}

std::string find_dictionary(const std::string& given) {
    if (!given.empty()) return given;
    if (const char* env = std::getenv("MDCAST_DICTIONARY")) return env;
    for (const char* candidate : {"/etc/mdcast/fields.dict", MDCAST_SOURCE_ETC "/fields.dict"}) {
        if (std::filesystem::exists(candidate)) return candidate;
    }
    return MDCAST_SOURCE_ETC "/fields.dict";
}

}  // namespace mdcast::tools
