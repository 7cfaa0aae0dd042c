#include "common/auth/glob_match.h"

#include <catch2/catch.hpp>

using mdcast::glob_match;

TEST_CASE("glob patterns match item and service names", "[glob_match]") {
    CHECK(glob_match("*", ""));
    CHECK(glob_match("*", "anything"));
    CHECK(glob_match("EUR*", "EUR="));
    CHECK(glob_match("EUR*", "EUR"));
    CHECK_FALSE(glob_match("EUR*", "XEUR"));
    CHECK(glob_match("*.L", "VOD.L"));
    CHECK_FALSE(glob_match("*.L", "VOD.LN"));
    CHECK(glob_match("VOD.?", "VOD.L"));
    CHECK_FALSE(glob_match("VOD.?", "VOD."));
    CHECK(glob_match("a*b*c", "a-b-b-c"));
    CHECK_FALSE(glob_match("a*b*c", "a-b-b-d"));
    CHECK(glob_match("ITEM000001", "ITEM000001"));
    CHECK_FALSE(glob_match("ITEM000001", "item000001"));  // case-sensitive
    CHECK_FALSE(glob_match("", "x"));
    CHECK(glob_match("**", "x"));
}

TEST_CASE("a pathological pattern still ends quickly", "[glob_match]") {
    const std::string text(2000, 'a');
    CHECK_FALSE(glob_match("*a*a*a*a*a*a*a*a*b", text));
}
