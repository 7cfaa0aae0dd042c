#include "common/auth/credential_verifier.h"

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/clock.h"

namespace mdcast::auth {

CredentialVerifier::CredentialVerifier(EventLoop& loop, VerifierSettings settings)
    : settings_(settings), result_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (result_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    if (RAND_bytes(hmac_key_.data(), static_cast<int>(hmac_key_.size())) != 1) {
        ::close(result_fd_);
        throw std::runtime_error("no random bytes for the credential cache key");
    }
    result_event_ = event_new(loop.base(), result_fd_, EV_READ | EV_PERSIST, &on_results, this);
    event_add(result_event_, nullptr);
    for (size_t i = 0; i < std::max<size_t>(1, settings.threads); ++i) {
        workers_.emplace_back([this] { work(); });
    }
}

CredentialVerifier::~CredentialVerifier() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (auto& job : jobs_) OPENSSL_cleanse(job.password.data(), job.password.size());
        jobs_.clear();
    }
    wake_worker_.notify_all();
    for (auto& worker : workers_) worker.join();
    event_free(result_event_);
    ::close(result_fd_);
    OPENSSL_cleanse(hmac_key_.data(), hmac_key_.size());
}

void CredentialVerifier::configure(const VerifierSettings& settings) {
    settings_ = settings;
    while (cache_.size() > settings_.cache_entries) {
        cache_.erase(lru_.back());
        lru_.pop_back();
    }
}

void CredentialVerifier::clear_cache() {
    cache_.clear();
    lru_.clear();
}

CredentialVerifier::Key CredentialVerifier::key_of(std::string_view user, std::string_view password,
                                                   const std::string& stored_text) const {
    std::string input;
    input.reserve(user.size() + password.size() + stored_text.size() + 2);
    input.append(user).append(1, '\0').append(password).append(1, '\0').append(stored_text);
    Key key{};
    size_t length = 0;
    if (!EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, hmac_key_.data(), hmac_key_.size(),
                   reinterpret_cast<const unsigned char*>(input.data()), input.size(), key.data(),
                   key.size(), &length)) {
        RAND_bytes(key.data(), static_cast<int>(key.size()));  // never matches anything
    }
    OPENSSL_cleanse(input.data(), input.size());
    return key;
}

bool CredentialVerifier::cache_hit(const Key& key, int64_t now_ns) {
    const auto it = cache_.find(key);
    if (it == cache_.end()) return false;
    if (it->second.expires_ns <= now_ns) {
        lru_.erase(it->second.lru);
        cache_.erase(it);
        return false;
    }
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return true;
}

void CredentialVerifier::remember(const Key& key, int64_t now_ns) {
    if (settings_.cache_entries == 0 || cache_.contains(key)) return;
    while (cache_.size() >= settings_.cache_entries) {
        cache_.erase(lru_.back());
        lru_.pop_back();
    }
    lru_.push_front(key);
    cache_.emplace(
        key, CacheEntry{now_ns + int64_t{settings_.cache_ttl_s} * 1'000'000'000, lru_.begin()});
}

CredentialVerifier::Result CredentialVerifier::verify(std::string_view user,
                                                      std::string_view password,
                                                      const PasswordHash& stored,
                                                      const std::string& stored_text, Done done) {
    const Key key = key_of(user, password, stored_text);
    if (cache_hit(key, monotonic_ns())) {
        ++counters_.cache_hits;
        done(true);
        return Result::kDone;
    }
    if (const auto it = in_flight_.find(key); it != in_flight_.end()) {
        ++counters_.joined;
        it->second.push_back(std::move(done));
        return Result::kQueued;
    }
    if (in_flight_.size() >= settings_.max_queued) {
        ++counters_.busy;
        return Result::kBusy;
    }
    in_flight_[key].push_back(std::move(done));
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(Job{key, std::string(password), stored});
    }
    wake_worker_.notify_one();
    return Result::kQueued;
}

// A worker thread: hashes one job at a time and wakes the loop with each result.
void CredentialVerifier::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_worker_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        Job job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        const int64_t start = monotonic_ns();
        bool ok = false;
        try {
            ok = verify_password(job.password, job.stored);
        } catch (const std::exception&) {
            ok = false;  // OpenSSL failure: treated as a mismatch
        }
        OPENSSL_cleanse(job.password.data(), job.password.size());
        const int64_t spent = monotonic_ns() - start;
        lock.lock();
        worker_hash_ns_ += static_cast<uint64_t>(spent);
        results_.emplace_back(job.key, ok);
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(result_fd_, &one, sizeof one);
    }
}

void CredentialVerifier::on_results(int fd, short, void* self) {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd, &count, sizeof count);
    static_cast<CredentialVerifier*>(self)->deliver_results();
}

void CredentialVerifier::deliver_results() {
    std::vector<std::pair<Key, bool>> results;
    {
        std::lock_guard lock(mutex_);
        results.swap(results_);
        counters_.hash_ns = worker_hash_ns_;
    }
    const int64_t now = monotonic_ns();
    for (const auto& [key, ok] : results) {
        ++counters_.hashes;
        auto waiting = in_flight_.extract(key);
        if (ok) remember(key, now);
        if (waiting.empty()) continue;
        for (auto& done : waiting.mapped()) done(ok);  // may call verify() again: the entry is out
    }
}

}  // namespace mdcast::auth
