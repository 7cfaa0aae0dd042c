// The admin endpoint's parameter checks: whole numbers within range or a 400
// naming the parameter; unknown parameters refused.
#include "common/daemon/admin_query.h"

#include <catch2/catch.hpp>

using namespace mdcast;

TEST_CASE("a number parameter within its range is taken, absent is the fallback", "[admin]") {
    AdminHttp::Reply refusal{0, ""};
    CHECK(query_number({{"limit", "50"}}, {"limit", 100, 1, 1000}, refusal) == 50u);
    CHECK(query_number({}, {"limit", 100, 1, 1000}, refusal) == 100u);
    CHECK(query_number({{"limit", "1000"}}, {"limit", 100, 1, 1000}, refusal) == 1000u);
    CHECK(refusal.first == 0);
}

TEST_CASE("a number parameter out of range, signed or not a number is refused", "[admin]") {
    for (const char* text :
         {"-1", "1001", "0", "abc", "", "1e9", "12x", " 5", "99999999999999999999"}) {
        AdminHttp::Reply refusal{0, ""};
        CHECK_FALSE(query_number({{"seconds", text}}, {"seconds", 10, 1, 1000}, refusal));
        CHECK(refusal.first == 400);
        CHECK(refusal.second.find("seconds must be a whole number from 1 to 1000") == 0);
    }
}

TEST_CASE("parameters a route does not take are refused", "[admin]") {
    AdminHttp::Reply refusal{0, ""};
    CHECK(known_parameters({{"name", "X"}, {"limit", "5"}}, {"name", "limit"}, refusal));
    CHECK_FALSE(known_parameters({{"bogus", "1"}}, {"name", "limit"}, refusal));
    CHECK(refusal.first == 400);
    CHECK(refusal.second.find("'bogus'") != std::string::npos);
    CHECK_FALSE(known_parameters({{"x", "1"}}, {}, refusal));
    CHECK(refusal.second.find("none") != std::string::npos);
}
