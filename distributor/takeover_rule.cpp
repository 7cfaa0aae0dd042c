#include "distributor/takeover_rule.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <fstream>
#include <stdexcept>

namespace mdcast::distributor {

// The shared secret proves the holder is one of the operator's processes of
// that user; its application and host may differ (a standby elsewhere).
static bool holds_shared_secret(const TakeoverClaim& claim) {
    return !claim.shared_secret.empty() && claim.owner.user == claim.claimant.user &&
           same_secret(claim.shared_secret, claim.presented_token);
}

TakeoverVerdict judge_takeover(const TakeoverClaim& claim) {
    if (holds_shared_secret(claim)) return TakeoverVerdict::kAllowed;
    if (claim.owner != claim.claimant) return TakeoverVerdict::kOtherPublisher;
    if (claim.authenticated) return TakeoverVerdict::kAllowed;
    const bool proven =
        !claim.owner_token.empty() && same_secret(claim.owner_token, claim.presented_token);
    return proven ? TakeoverVerdict::kAllowed : TakeoverVerdict::kNoProof;
}

TakeoverVerdict judge_standby(const TakeoverClaim& claim) {
    if (claim.owner.user != claim.claimant.user) return TakeoverVerdict::kOtherPublisher;
    const bool proven = holds_shared_secret(claim) || claim.authenticated;
    return proven ? TakeoverVerdict::kAllowed : TakeoverVerdict::kNoProof;
}

std::string_view takeover_refusal_text(TakeoverVerdict verdict) {
    switch (verdict) {
        case TakeoverVerdict::kAllowed:
            return {};
        case TakeoverVerdict::kOtherPublisher:
            return "service is owned by another publisher";
        case TakeoverVerdict::kNoProof:
            return "service is owned by another connection; taking it over needs the owner's "
                   "takeover token, the operator's takeover secret or an authenticated login as "
                   "the same user";
        case TakeoverVerdict::kNotBroadcast:
            return "standby publishers are for broadcast services only";
    }
    return {};
}

std::string new_takeover_token() {
    std::string token(kTakeoverTokenBytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(token.data()),
                   static_cast<int>(token.size())) != 1) {
        throw std::runtime_error("no random bytes for a takeover token");
    }
    return token;
}

bool same_secret(std::string_view a, std::string_view b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string load_takeover_secret(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error(path + ": cannot read the takeover secret file");
    std::string secret;
    std::getline(file, secret);
    if (!secret.empty() && secret.back() == '\r') secret.pop_back();
    if (secret.size() < kMinSharedSecretChars) {
        throw std::runtime_error(path +
                                 ": the takeover secret (its first line) must have at least " +
                                 std::to_string(kMinSharedSecretChars) + " characters");
    }
    return secret;
}

}  // namespace mdcast::distributor
