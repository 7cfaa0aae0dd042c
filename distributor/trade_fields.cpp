#include "distributor/trade_fields.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace mdcast::distributor {

namespace {

bool parse_id(const std::string& text, uint32_t& id) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    return ec == std::errc() && end == text.data() + text.size();
}

uint32_t field_id(const std::string& service, const std::string& field,
                  const proto::FieldDictionary* dictionary) {
    uint32_t id = 0;
    if (parse_id(field, id)) return id;
    const proto::FieldDefinition* found = dictionary ? dictionary->find(field) : nullptr;
    if (!found)
        throw std::invalid_argument(service + ": field " + field + " is not in the dictionary");
    return found->id;
}

}  // namespace

TradeFields::TradeFields(const config::detail::StringListMap& by_service,
                         const proto::FieldDictionary* dictionary) {
    for (const auto& [service, fields] : by_service) {
        std::vector<uint32_t>& ids = by_service_[service];
        for (const std::string& field : fields) ids.push_back(field_id(service, field, dictionary));
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
}

bool TradeFields::names_fields(const config::detail::StringListMap& by_service) {
    uint32_t id = 0;
    for (const auto& [service, fields] : by_service) {
        for (const std::string& field : fields)
            if (!parse_id(field, id)) return true;
    }
    return false;
}

std::vector<uint32_t> TradeFields::for_service(const std::string& service) const {
    auto it = by_service_.find(service);
    if (it == by_service_.end()) it = by_service_.find("*");
    return it == by_service_.end() ? std::vector<uint32_t>{} : it->second;
}

bool TradeFields::carries_any(const std::vector<uint32_t>& ids, const proto::UpdateView& update) {
    if (ids.empty()) return false;
    return std::any_of(update.fields.begin(), update.fields.end(), [&](const proto::FieldEntry& f) {
        return std::binary_search(ids.begin(), ids.end(), f.id);
    });
}

}  // namespace mdcast::distributor
