// Who may take a service from the connection that owns it.
//
// A publisher that reconnects while its earlier connection is still open at
// the distributor (a half-dead TCP connection not yet timed out) must get its
// services back at once, or its prices stop until the old connection's
// heartbeat runs out. But user, application and position are self-asserted
// (with authentication off, anyone may claim them), so equal names alone are
// never enough: the claimant must prove it is the same publisher, by the
// takeover token the distributor gave the owner when it took the service
// (unguessable, sent only to that connection), or by a password login as the
// same user when authentication is on. A standby or restarted process has no
// token: the operator may give it and the distributor a shared secret
// (publishers.takeover_secret_file), proof for the same user from any host.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mdcast::distributor {

struct PublisherIdentity {
    std::string_view user;
    std::string_view application;
    std::string_view position;
    bool operator==(const PublisherIdentity&) const = default;
};

enum class TakeoverVerdict {
    kAllowed,
    kOtherPublisher,  // user, application or position differ
    kNoProof,         // the same names, but neither the token nor an authenticated login
    kNotBroadcast,    // a standby of an interactive service
};

struct TakeoverClaim {
    PublisherIdentity owner;
    PublisherIdentity claimant;
    std::string_view owner_token;      // what the distributor gave the owner
    std::string_view presented_token;  // what the claimant sent (empty: none)
    bool authenticated = false;        // both logged in with a checked password
    std::string_view shared_secret;    // the operator's (publishers.takeover_secret_file)
};

TakeoverVerdict judge_takeover(const TakeoverClaim& claim);
// A standby of the owner's service (publisher_group.h): another process of
// the same user, proven by the operator's shared secret or an authenticated
// login (its application and position may differ; it takes nothing over now).
TakeoverVerdict judge_standby(const TakeoverClaim& claim);

// What a refused claimant is told.
std::string_view takeover_refusal_text(TakeoverVerdict verdict);

// A fresh takeover token: 16 bytes from the kernel's random source.
std::string new_takeover_token();

// Equal bytes, compared in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b);

// The operator's shared takeover secret: the first line of `path` (at least
// kMinSharedSecretChars characters). Throws std::runtime_error naming the file.
std::string load_takeover_secret(const std::string& path);

inline constexpr size_t kTakeoverTokenBytes = 16;
inline constexpr size_t kMinSharedSecretChars = 16;

}  // namespace mdcast::distributor
