// The takeover rule: equal names are never proof; the owner's token, an
// authenticated login or the operator's shared secret (same user) is.
#include "distributor/takeover_rule.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
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
            .authenticated = authenticated,
            .shared_secret = {}};
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
                              .authenticated = false,
                              .shared_secret = {}};
    CHECK(judge_takeover(empty) == TakeoverVerdict::kNoProof);
}

TEST_CASE("with authentication, the same user's login is proof", "[takeover]") {
    CHECK(judge_takeover(claim(kFeed, "", true)) == TakeoverVerdict::kAllowed);
    CHECK(judge_takeover(claim({"intruder", "256", "10.0.0.1/net"}, "", true)) ==
          TakeoverVerdict::kOtherPublisher);
}

TEST_CASE("the operator's shared secret is proof for the same user from any host", "[takeover]") {
    const std::string secret = "a-shared-secret-of-the-operator";
    auto standby = claim({"feed", "standby", "10.0.0.2/net"}, secret);
    CHECK(judge_takeover(standby) == TakeoverVerdict::kOtherPublisher);  // none configured
    standby.shared_secret = secret;
    CHECK(judge_takeover(standby) == TakeoverVerdict::kAllowed);
    auto stranger = standby;
    stranger.claimant.user = "intruder";
    CHECK(judge_takeover(stranger) == TakeoverVerdict::kOtherPublisher);
    auto wrong = standby;
    wrong.presented_token = "a-shared-secret-of-the-operatoR";
    CHECK(judge_takeover(wrong) == TakeoverVerdict::kOtherPublisher);
    wrong.claimant = kFeed;
    CHECK(judge_takeover(wrong) == TakeoverVerdict::kNoProof);
}

TEST_CASE("a standby is the same user, proven by the shared secret or a login", "[takeover]") {
    const std::string secret = "a-shared-secret-of-the-operator";
    auto standby = claim({"feed", "standby", "10.0.0.2/net"}, secret);
    CHECK(judge_standby(standby) == TakeoverVerdict::kNoProof);  // no secret configured
    standby.shared_secret = secret;
    CHECK(judge_standby(standby) == TakeoverVerdict::kAllowed);
    // The owner's own token is not a standby's proof: it is the owner's reconnect.
    auto tokened = claim({"feed", "standby", "10.0.0.2/net"}, "");
    tokened.presented_token = tokened.owner_token;
    CHECK(judge_standby(tokened) == TakeoverVerdict::kNoProof);
    CHECK(judge_standby(claim({"feed", "standby", "10.0.0.2/net"}, "", true)) ==
          TakeoverVerdict::kAllowed);
    auto stranger = standby;
    stranger.claimant.user = "intruder";
    CHECK(judge_standby(stranger) == TakeoverVerdict::kOtherPublisher);
    CHECK(judge_standby(claim({"intruder", "256", "10.0.0.1/net"}, "", true)) ==
          TakeoverVerdict::kOtherPublisher);
    CHECK(takeover_refusal_text(TakeoverVerdict::kNotBroadcast).find("broadcast") !=
          std::string_view::npos);
}

TEST_CASE("the shared secret is the first line of its file, long enough", "[takeover]") {
    const std::string path = "takeover_rule_test.secret";
    std::ofstream(path) << "0123456789abcdef-secret\r\nsecond line\n";
    CHECK(load_takeover_secret(path) == "0123456789abcdef-secret");
    std::ofstream(path) << "short\n";
    CHECK_THROWS_WITH(load_takeover_secret(path), Catch::Contains("at least 16 characters"));
    std::remove(path.c_str());
    CHECK_THROWS_WITH(load_takeover_secret(path), Catch::Contains("cannot read"));
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
