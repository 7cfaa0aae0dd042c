#include "distributor/takeover_rule.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace mdcast::distributor {

TakeoverVerdict judge_takeover(const TakeoverClaim& claim) {
    if (claim.owner != claim.claimant) return TakeoverVerdict::kOtherPublisher;
    if (claim.authenticated) return TakeoverVerdict::kAllowed;
    const bool proven =
        !claim.owner_token.empty() && same_secret(claim.owner_token, claim.presented_token);
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
                   "takeover token or an authenticated login as the same user";
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

}  // namespace mdcast::distributor
