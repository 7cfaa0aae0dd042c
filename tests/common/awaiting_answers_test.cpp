// AwaitingAnswers: ids, answers taken once, expiry oldest first, and taking by a condition.
#include "common/awaiting_answers.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using mdcast::AwaitingAnswers;

TEST_CASE("an entry is found and taken once by its id, ids are never reused",
          "[awaiting_answers]") {
    AwaitingAnswers<std::string> waiting;
    const uint64_t a = waiting.add("a", 100);
    const uint64_t b = waiting.add("b", 100);
    CHECK(a != b);
    REQUIRE(waiting.find(a));
    CHECK(*waiting.find(a) == "a");
    CHECK(waiting.take(a) == "a");
    CHECK_FALSE(waiting.take(a));
    CHECK(waiting.add("c", 100) > b);
    CHECK(waiting.size() == 2);
}

TEST_CASE("expiry hands over what is due, oldest first, and skips what was answered",
          "[awaiting_answers]") {
    AwaitingAnswers<std::string> waiting;
    waiting.add("first", 10);
    const uint64_t answered = waiting.add("answered", 20);
    waiting.add("second", 30);
    waiting.add("later", 50);
    waiting.take(answered);
    std::vector<std::string> expired;
    waiting.expire(30, [&](uint64_t, std::string entry) { expired.push_back(entry); });
    CHECK(expired == std::vector<std::string>{"first", "second"});
    CHECK(waiting.size() == 1);
    waiting.expire(49, [&](uint64_t, std::string entry) { expired.push_back(entry); });
    CHECK(expired.size() == 2);
}

TEST_CASE("take_if takes exactly what the condition selects", "[awaiting_answers]") {
    AwaitingAnswers<int> waiting;
    for (int i = 0; i < 6; ++i) waiting.add(i, 100);
    const auto odd = waiting.take_if([](int v) { return v % 2 == 1; });
    CHECK(odd.size() == 3);
    CHECK(waiting.size() == 3);
    std::vector<int> left;
    waiting.expire(100, [&](uint64_t, int v) { left.push_back(v); });
    CHECK(left == std::vector<int>{0, 2, 4});
}
