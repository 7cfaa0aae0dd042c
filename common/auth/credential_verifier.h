// Checks passwords against their slow hashes without blocking the event loop.
//
// Design (docs/access-control.md, "Cost"): a PBKDF2 check takes tens of
// milliseconds, and the loop thread also carries market data for every client,
// so the hash never runs on it.
//   - Worker threads (`threads`, one by default) compute the hashes from one
//     queue; results are posted back to the loop through an eventfd, and the
//     callbacks run on the loop thread. More threads shorten a login storm of
//     distinct users (after a failover) on a host with cores to spare.
//   - Logins with the same user and password that arrive while one is being
//     checked wait for that one check (a thousand clients of one account after
//     a failover cost one hash, not a thousand).
//   - Credentials that checked out are remembered (bounded LRU, with a time to
//     live) under an HMAC-SHA256 of user, password and stored hash with a key
//     drawn at start-up, so a re-login costs one HMAC (about a microsecond). A
//     changed password changes the stored hash and misses the cache. Failures
//     are never cached: they are limited per peer (PeerLimiter) instead.
//   - At most `max_queued` distinct checks wait for the worker; beyond that a
//     login is refused as busy rather than queued without bound.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/auth/password_hash.h"
#include "common/net/event_loop.h"

struct event;

namespace mdcast::auth {

struct VerifierSettings {
    size_t max_queued = 1000;      // distinct checks waiting for the workers
    size_t cache_entries = 10000;  // 0: no cache
    uint32_t cache_ttl_s = 3600;
    size_t threads = 1;  // hashing threads; fixed when the verifier is made
};

struct VerifierCounters {
    uint64_t hashes = 0;      // PBKDF2 computations done
    uint64_t cache_hits = 0;  // logins answered from the cache
    uint64_t joined = 0;      // logins that waited for an identical check
    uint64_t busy = 0;        // refused: max_queued checks waiting
    uint64_t hash_ns = 0;     // worker time spent hashing
};

class CredentialVerifier {
  public:
    using Done = std::function<void(bool ok)>;
    enum class Result { kDone, kQueued, kBusy };

    CredentialVerifier(EventLoop& loop, VerifierSettings settings);
    // Stops and joins the worker; callbacks still waiting never run.
    ~CredentialVerifier();
    CredentialVerifier(const CredentialVerifier&) = delete;
    CredentialVerifier& operator=(const CredentialVerifier&) = delete;

    // Loop thread. kDone: a cache hit, done(true) has already run. kQueued:
    // done runs later on the loop thread, exactly once. kBusy: done never runs.
    // `stored_text` is the hash as written in the users file.
    Result verify(std::string_view user, std::string_view password, const PasswordHash& stored,
                  const std::string& stored_text, Done done);

    void configure(const VerifierSettings& settings);
    void clear_cache();
    size_t queued() const { return in_flight_.size(); }
    size_t cached() const { return cache_.size(); }
    const VerifierCounters& counters() const { return counters_; }

  private:
    using Key = std::array<uint8_t, 32>;
    struct Job {
        Key key;
        std::string password;
        PasswordHash stored;
    };
    struct CacheEntry {
        int64_t expires_ns;
        std::list<Key>::iterator lru;
    };
    Key key_of(std::string_view user, std::string_view password,
               const std::string& stored_text) const;
    bool cache_hit(const Key& key, int64_t now_ns);
    void remember(const Key& key, int64_t now_ns);
    void work();
    static void on_results(int fd, short, void* self);
    void deliver_results();

    VerifierSettings settings_;
    std::array<uint8_t, 32> hmac_key_{};
    VerifierCounters counters_;
    std::map<Key, std::vector<Done>> in_flight_;  // loop thread only
    std::map<Key, CacheEntry> cache_;
    std::list<Key> lru_;  // most recently used first

    // Shared with the worker, under mutex_.
    std::mutex mutex_;
    std::condition_variable wake_worker_;
    std::deque<Job> jobs_;
    std::vector<std::pair<Key, bool>> results_;
    uint64_t worker_hash_ns_ = 0;
    bool stopping_ = false;

    int result_fd_;
    event* result_event_;
    std::vector<std::thread> workers_;
};

}  // namespace mdcast::auth
