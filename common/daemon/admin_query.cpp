#include "common/daemon/admin_query.h"

#include <charconv>

namespace mdcast {

std::optional<uint64_t> query_number(const AdminHttp::Query& query, const QueryNumber& rule,
                                     AdminHttp::Reply& refusal) {
    const auto found = query.find(std::string(rule.key));
    if (found == query.end()) return rule.fallback;
    const std::string& text = found->second;
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size() && !text.empty() &&
        value >= rule.min && value <= rule.max) {
        return value;
    }
    refusal = {400, std::string(rule.key) + " must be a whole number from " +
                        std::to_string(rule.min) + " to " + std::to_string(rule.max) + ", not '" +
                        text.substr(0, 32) + "'\n"};
    return std::nullopt;
}

bool known_parameters(const AdminHttp::Query& query, std::initializer_list<std::string_view> known,
                      AdminHttp::Reply& refusal) {
    for (const auto& [key, value] : query) {
        bool ok = false;
        for (std::string_view name : known) ok = ok || key == name;
        if (ok) continue;
        std::string names;
        for (std::string_view name : known)
            names += (names.empty() ? "" : ", ") + std::string(name);
        refusal = {400, "unknown parameter '" + key.substr(0, 32) + "' (this route takes " +
                            (names.empty() ? std::string("none") : names) + ")\n"};
        return false;
    }
    return true;
}

}  // namespace mdcast
