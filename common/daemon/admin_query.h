// The query parameters of an admin request, checked before anything acts on
// them: a value that is not a whole number within its range, or a parameter
// the route does not know, is refused (400, naming the parameter and what it
// accepts) rather than read as some other value ("seconds=-1" as 0, "limit=1e9").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/daemon/admin_http.h"

namespace mdcast {

struct QueryNumber {
    std::string_view key;
    uint64_t fallback;  // when the parameter is absent
    uint64_t min;
    uint64_t max;
};

// The parameter as a decimal integer in [min, max], or `fallback` when absent.
// nullopt with the 400 answer in `refusal` otherwise.
std::optional<uint64_t> query_number(const AdminHttp::Query& query, const QueryNumber& rule,
                                     AdminHttp::Reply& refusal);

// False with the 400 answer in `refusal` when `query` has a key not in `known`.
bool known_parameters(const AdminHttp::Query& query, std::initializer_list<std::string_view> known,
                      AdminHttp::Reply& refusal);

}  // namespace mdcast
