// Which server to try next and how long to wait first: the failover order and
// the back-off of the consumer and the publisher.
//
// After a session that had logged in and lasted at least stable_session is
// lost, the next server in the list is tried at once (a server going away must
// not cost a back-off). Each failed attempt (connect or login) moves on to the
// next server and waits min_delay * 2^(failures - 1), capped at max_delay, with
// jitter: the delay is drawn uniformly from [d * (1 - jitter), d], so clients
// that lost the same server do not all come back in the same millisecond.
// A session lost sooner than stable_session after its login counts as a
// failed attempt: a peer that accepts the login and then closes at once (e.g.
// it refuses what is sent next) is retried with a growing back-off, not in a
// tight loop. Only a stable session forgets the failures. Pure logic: no
// clock, no sockets.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>

namespace mdcast::sdk {

struct ReconnectSettings {
    size_t server_count = 1;
    std::chrono::milliseconds min_delay{100};
    std::chrono::milliseconds max_delay{5000};
    double jitter = 0.5;  // 0..1
    std::chrono::milliseconds stable_session{1000};
};

class ReconnectPolicy {
  public:
    struct Attempt {
        size_t server = 0;
        std::chrono::milliseconds delay{0};
        uint32_t failures = 0;  // failed attempts in a row before this one
    };

    ReconnectPolicy(ReconnectSettings settings, uint64_t seed);

    // The very first attempt: the first server, at once.
    Attempt first();
    // A logged-in session was lost after `lasted`: the next server, at once when
    // it was stable, else after a back-off as for a failed attempt.
    Attempt after_loss(std::chrono::milliseconds lasted);
    // An attempt failed before logging in: the next server, after a back-off.
    Attempt after_failure();
    // The peer refused the login (credentials, rate limit): retrying soon cannot
    // help and costs the peer a password check, so the next server, after the
    // longest back-off (jittered), and failures count on.
    Attempt after_refusal();
    // The current attempt logged in; its failures are forgotten only if the
    // session proves stable (after_loss).
    void on_success() {}

    size_t current() const { return server_; }
    uint32_t failures() const { return failures_; }
    // The un-jittered back-off for `failures` failures in a row.
    std::chrono::milliseconds backoff(uint32_t failures) const;

  private:
    void advance() { server_ = (server_ + 1) % settings_.server_count; }
    Attempt jittered(std::chrono::milliseconds full);

    ReconnectSettings settings_;
    std::mt19937_64 random_;
    size_t server_ = 0;
    uint32_t failures_ = 0;
};

}  // namespace mdcast::sdk
