#include "common/auth/credential_verifier.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "common/net/event_loop.h"

using namespace mdcast;
using namespace mdcast::auth;

namespace {

const PasswordHash kStored = hash_password("secret", 1000);
const std::string kStoredText = kStored.to_string();

// Runs the loop until `want` answers arrived, at most two seconds.
void run_until(EventLoop& loop, const int& answers, int want) {
    Timer poll(loop, [&] {
        if (answers >= want) loop.stop();
    });
    Timer limit(loop, [&] { loop.stop(); });
    poll.start_periodic(std::chrono::milliseconds(1));
    limit.start_once(std::chrono::seconds(2));
    loop.run();
}

}  // namespace

TEST_CASE("passwords are checked off the loop and answered on it", "[credential_verifier]") {
    EventLoop loop;
    CredentialVerifier verifier(loop, VerifierSettings{10, 100, 3600});
    int answers = 0;
    bool right = false, wrong = true;
    CHECK(verifier.verify("alice", "secret", kStored, kStoredText, [&](bool ok) {
        right = ok, ++answers;
    }) == CredentialVerifier::Result::kQueued);
    CHECK(verifier.verify("alice", "guess", kStored, kStoredText, [&](bool ok) {
        wrong = ok, ++answers;
    }) == CredentialVerifier::Result::kQueued);
    CHECK(answers == 0);  // never inside verify() for a queued check
    run_until(loop, answers, 2);
    REQUIRE(answers == 2);
    CHECK(right);
    CHECK_FALSE(wrong);
    CHECK(verifier.counters().hashes == 2);
    CHECK(verifier.cached() == 1);  // only the success

    // The right password again: from the cache, at once, no hash.
    bool cached = false;
    CHECK(verifier.verify("alice", "secret", kStored, kStoredText, [&](bool ok) { cached = ok; }) ==
          CredentialVerifier::Result::kDone);
    CHECK(cached);
    CHECK(verifier.counters().cache_hits == 1);
    // A different stored hash (password changed in the file) misses the cache.
    const PasswordHash changed = hash_password("secret", 1000);
    CHECK(verifier.verify("alice", "secret", changed, changed.to_string(),
                          [&](bool) { ++answers; }) == CredentialVerifier::Result::kQueued);
    run_until(loop, answers, 3);
    CHECK(verifier.counters().hashes == 3);
}

TEST_CASE("identical logins share one check, distinct ones are bounded", "[credential_verifier]") {
    EventLoop loop;
    CredentialVerifier verifier(loop, VerifierSettings{2, 0, 3600});
    int answers = 0, accepted = 0;
    for (int i = 0; i < 50; ++i) {
        verifier.verify("bob", "secret", kStored, kStoredText,
                        [&](bool ok) { ++answers, accepted += ok; });
    }
    verifier.verify("carol", "x", kStored, kStoredText, [&](bool) { ++answers; });
    CHECK(verifier.verify("dave", "y", kStored, kStoredText, [&](bool) { ++answers; }) ==
          CredentialVerifier::Result::kBusy);
    CHECK(verifier.counters().busy == 1);
    CHECK(verifier.counters().joined == 49);
    run_until(loop, answers, 51);
    CHECK(answers == 51);
    CHECK(accepted == 50);
    CHECK(verifier.counters().hashes == 2);
    CHECK(verifier.cached() == 0);  // cache_entries 0: nothing kept
}

TEST_CASE("several hashing threads answer every distinct login once, rightly",
          "[credential_verifier]") {
    EventLoop loop;
    CredentialVerifier verifier(loop, VerifierSettings{100, 0, 3600, 3});
    int answers = 0;
    std::vector<int> verdicts(12, -1);
    for (int i = 0; i < 12; ++i) {
        const bool right = i % 2 == 0;
        CHECK(verifier.verify("user" + std::to_string(i), right ? "secret" : "guess", kStored,
                              kStoredText, [&, i](bool ok) {
                                  CHECK(verdicts[i] == -1);  // exactly once
                                  verdicts[i] = ok ? 1 : 0;
                                  ++answers;
                              }) == CredentialVerifier::Result::kQueued);
    }
    run_until(loop, answers, 12);
    REQUIRE(answers == 12);
    for (int i = 0; i < 12; ++i) CHECK(verdicts[i] == (i % 2 == 0 ? 1 : 0));
    CHECK(verifier.counters().hashes == 12);
    CHECK(verifier.queued() == 0);
}

TEST_CASE("password hashes per second are bounded for all peers together",
          "[credential_verifier]") {
    // Guesses from many addresses each pass the per-peer limit; the global
    // budget still refuses the hashes beyond max_hashes_per_s at once.
    EventLoop loop;
    VerifierSettings settings{100, 100, 3600};
    settings.max_hashes_per_s = 3;
    CredentialVerifier verifier(loop, settings);
    int answers = 0;
    std::vector<CredentialVerifier::Result> results;
    for (int i = 0; i < 10; ++i) {
        results.push_back(verifier.verify("user" + std::to_string(i), "guess", kStored, kStoredText,
                                          [&](bool) { ++answers; }));
    }
    const auto queued =
        std::count(results.begin(), results.end(), CredentialVerifier::Result::kQueued);
    CHECK(queued == 3);
    CHECK(verifier.counters().over_budget == 7);
    // A login joining a check in progress costs no hash, so no budget.
    CHECK(verifier.verify("user0", "guess", kStored, kStoredText, [&](bool) { ++answers; }) ==
          CredentialVerifier::Result::kQueued);
    run_until(loop, answers, 4);
    CHECK(answers == 4);
    CHECK(verifier.counters().hashes == 3);
    // The budget comes back with time (one hash every 333 ms).
    Timer wait(loop, [&] { loop.stop(); });
    wait.start_once(std::chrono::milliseconds(400));
    loop.run();
    CHECK(verifier.verify("user11", "guess", kStored, kStoredText, [&](bool) { ++answers; }) ==
          CredentialVerifier::Result::kQueued);
    run_until(loop, answers, 5);
    CHECK(answers == 5);
}
