// The takeover rule: equal names are never proof; the owner's token or an
// authenticated login is.
#include "distributor/takeover_rule.h"

#include <catch2/catch.hpp>
#include <set>

using namespace mdcast::distributor;

namespace {

const PublisherIdentity kFeed{"feed", "256", "10.0.0.1/net"};

TakeoverClaim claim(PublisherIdentity claimant, std::string_view presented,
                    bool authenticated = false) {
    static const std::string token = new_takeover_token();
    return {.owner = kFeed,
            .claimant = claimant,
            .owner_token = token,
            .presented_token = presented.empty() ? std::string_view() : presented,
            .authenticated = authenticated};
}

}  // namespace

TEST_CASE("the same names with no token, or a wrong one, are not proof", "[takeover]") {
    CHECK(judge_takeover(claim(kFeed, "")) == TakeoverVerdict::kNoProof);
    CHECK(judge_takeover(claim(kFeed, std::string(kTakeoverTokenBytes, '\0'))) ==
          TakeoverVerdict::kNoProof);
    CHECK(judge_takeover(claim(kFeed, "a shorter guess")) == TakeoverVerdict::kNoProof);
}

TEST_CASE("the owner's token is proof for the same names only", "[takeover]") {
    auto proven = claim(kFeed, "");
    proven.presented_token = proven.owner_token;
    CHECK(judge_takeover(proven) == TakeoverVerdict::kAllowed);
    for (const PublisherIdentity other : {PublisherIdentity{"feed2", "256", "10.0.0.1/net"},
                                          PublisherIdentity{"feed", "257", "10.0.0.1/net"},
                                          PublisherIdentity{"feed", "256", "10.0.0.2/net"}}) {
        auto mismatch = proven;
        mismatch.claimant = other;
        CHECK(judge_takeover(mismatch) == TakeoverVerdict::kOtherPublisher);
    }
}

TEST_CASE("an owner without a token cannot be taken over by an empty one", "[takeover]") {
    const TakeoverClaim empty{.owner = kFeed,
                              .claimant = kFeed,
                              .owner_token = {},
                              .presented_token = {},
                              .authenticated = false};
    CHECK(judge_takeover(empty) == TakeoverVerdict::kNoProof);
}

TEST_CASE("with authentication, the same user's login is proof", "[takeover]") {
    CHECK(judge_takeover(claim(kFeed, "", true)) == TakeoverVerdict::kAllowed);
    CHECK(judge_takeover(claim({"intruder", "256", "10.0.0.1/net"}, "", true)) ==
          TakeoverVerdict::kOtherPublisher);
}

TEST_CASE("takeover tokens are 16 random bytes, never repeated", "[takeover]") {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const std::string token = new_takeover_token();
        CHECK(token.size() == kTakeoverTokenBytes);
        CHECK(seen.insert(token).second);
    }
    CHECK(same_secret("abc", "abc"));
    CHECK_FALSE(same_secret("abc", "abd"));
    CHECK_FALSE(same_secret("abc", "abcd"));
}

TEST_CASE("every refusal says why", "[takeover]") {
    CHECK(takeover_refusal_text(TakeoverVerdict::kOtherPublisher) ==
          "service is owned by another publisher");
    CHECK(takeover_refusal_text(TakeoverVerdict::kNoProof).find("takeover token") !=
          std::string_view::npos);
}
