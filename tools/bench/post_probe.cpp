// mdcast-bench-poster: posts (contributions to a service's publisher) through
// the SDK's public Consumer API, the way an application posts, and what their
// answers took. On-stream (--on-stream: subscribes to the item first and posts
// on its stream once the refresh came) or off-stream (by service and name).
// Each post carries BID = the post's number as a decimal. Posts are paced at
// --rate; each waits for its answer before the next goes (one outstanding), so
// the round trip measured is the route's, not a queue's: from post() to the
// answer's callback on the SDK's I/O thread (Consumer::post with a callback).
//
// Prints one JSON line on stdout: posts, accepted, rejected, the answers'
// codes and first distinct texts, and the round trip (post() to its answer)
// in microseconds: p50, p90, p99, max. Used by `mdcast-bench --scenario post`
// and the posting integration tests.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/config/command_line.h"
#include "mdcast/consumer.h"
#include "tools/credentials.h"
#include "tools/threaded_tool.h"

namespace {

using namespace mdcast;

constexpr uint32_t kBid = 22;

struct Options {
    std::string server = "127.0.0.1:14002";
    std::string user = "mdcast-bench";
    std::string password_file;
    std::string service = "MDCAST";
    std::string item = "ITEM000000";
    bool on_stream = false;
    int64_t count = 1;
    double rate = 10;
    double timeout_s = 10;
};

// Waits for the item's refresh (on-stream posts need the item open).
class Handler final : public ConsumerHandler {
  public:
    void on_refresh(const Event&) override { refreshed_ = true; }
    void on_status(const Event& event) override {
        if (event.state().stream == StreamState::kClosed) closed_ = true;
    }
    bool refreshed() const { return refreshed_; }
    bool closed() const { return closed_; }

  private:
    std::atomic<bool> refreshed_{false};
    std::atomic<bool> closed_{false};
};

int64_t percentile(std::vector<int64_t> sorted, double p) {
    if (sorted.empty()) return 0;
    const auto at = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(at, sorted.size() - 1)];
}

std::string json_text(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out += c;
    }
    return out + "\"";
}

struct Tally {
    uint64_t accepted = 0, rejected = 0;
    std::map<std::string, uint64_t> codes;
    std::vector<std::string> texts;  // the first few distinct ones
    std::vector<int64_t> rtt_us;

    void add(const PostResult& result, int64_t rtt_ns) {
        ++(result.accepted ? accepted : rejected);
        ++codes[std::string(status_code_name(result.code))];
        if (!result.text.empty() && texts.size() < 5 &&
            std::find(texts.begin(), texts.end(), result.text) == texts.end())
            texts.push_back(result.text);
        rtt_us.push_back(rtt_ns / 1000);
    }
    void print() {
        std::sort(rtt_us.begin(), rtt_us.end());
        std::string codes_json, texts_json;
        for (const auto& [code, n] : codes)
            codes_json +=
                (codes_json.empty() ? "" : ",") + json_text(code) + ":" + std::to_string(n);
        for (const auto& text : texts)
            texts_json += (texts_json.empty() ? "" : ",") + json_text(text);
        std::printf(
            "{\"posts\":%zu,\"accepted\":%llu,\"rejected\":%llu,\"codes\":{%s},\"texts\":[%s],"
            "\"rtt_us\":{\"p50\":%lld,\"p90\":%lld,\"p99\":%lld,\"max\":%lld}}\n",
            rtt_us.size(), static_cast<unsigned long long>(accepted),
            static_cast<unsigned long long>(rejected), codes_json.c_str(), texts_json.c_str(),
            static_cast<long long>(percentile(rtt_us, 0.5)),
            static_cast<long long>(percentile(rtt_us, 0.9)),
            static_cast<long long>(percentile(rtt_us, 0.99)),
            static_cast<long long>(rtt_us.empty() ? 0 : rtt_us.back()));
        std::fflush(stdout);
    }
};

struct Answer {
    PostResult result;
    int64_t rtt_ns;
};

// One post at a time: the round trip is stamped in the answer callback, on the
// SDK's I/O thread, so no thread wake-up for the answer is counted in it.
class Answers {
  public:
    std::optional<Answer> post(Consumer& consumer, const Options& o, ItemHandle handle,
                               const FieldList& fields) {
        {
            std::lock_guard lock(mutex_);
            answer_.reset();
        }
        const int64_t sent = monotonic_ns();
        auto on_answer = [this, sent](const PostResult& result) {
            const int64_t rtt = monotonic_ns() - sent;
            std::lock_guard lock(mutex_);
            answer_ = Answer{result, rtt};
            answered_.notify_one();
        };
        if (o.on_stream) {
            consumer.post(handle, fields, on_answer);
        } else {
            consumer.post(o.service, o.item, fields, on_answer);
        }
        std::unique_lock lock(mutex_);
        answered_.wait_for(lock, std::chrono::duration<double>(o.timeout_s),
                           [this] { return answer_.has_value(); });
        return answer_;
    }

  private:
    std::mutex mutex_;
    std::condition_variable answered_;
    std::optional<Answer> answer_;
};

bool wait_for(const std::function<bool()>& done, double seconds) {
    const int64_t deadline = monotonic_ns() + static_cast<int64_t>(seconds * 1e9);
    while (!done()) {
        if (tools::stop_requested || monotonic_ns() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

int run(const Options& o) {
    ConsumerOptions options;
    options.servers = parse_server_list(o.server);
    options.user = o.user;
    options.application_id = "mdcast-bench-poster";
    if (std::string error; !tools::load_password(o.password_file, options.password, error)) {
        std::fprintf(stderr, "mdcast-bench-poster: %s\n", error.c_str());
        return 2;
    }
    Handler handler;
    Answers answers;  // outlives the consumer: its stop() may still answer a post
    Consumer consumer(options, handler);
    ItemHandle handle;
    if (o.on_stream) handle = consumer.subscribe(o.service, o.item);
    consumer.start();
    if (!wait_for([&] { return consumer.stats().connections > 0; }, o.timeout_s) ||
        (o.on_stream &&
         !wait_for([&] { return handler.refreshed() || handler.closed(); }, o.timeout_s))) {
        std::fprintf(stderr, "mdcast-bench-poster: not connected (or no refresh) within %.1f s\n",
                     o.timeout_s);
        return 1;
    }
    Tally tally;
    const auto gap = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / o.rate));
    auto next = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < o.count && !tools::stop_requested; ++i) {
        std::this_thread::sleep_until(next);
        next += gap;
        FieldList fields;
        fields.add_decimal(kBid, 10000 + i, -2);
        const std::optional<Answer> answer = answers.post(consumer, o, handle, fields);
        if (!answer) {
            std::fprintf(stderr, "mdcast-bench-poster: no answer within %.1f s\n", o.timeout_s);
            return 1;
        }
        tally.add(answer->result, answer->rtt_ns);
    }
    tally.print();
    consumer.stop();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    cli::CommandLine command_line(
        "mdcast-bench-poster",
        "Posts to an item through the SDK's Consumer (on-stream or off-stream), one at a time at "
        "a paced rate, and prints a JSON line: answers, codes, texts and round trips in "
        "microseconds. Used by mdcast-bench --scenario post and the posting tests.");
    command_line.option("server", &o.server, "HOST:PORT[,HOST:PORT...]", "Server client port(s)")
        .option("user", &o.user, "NAME", "User name for the login")
        .option("password-file", &o.password_file, "FILE",
                "Login password: the first line of FILE (default: $MDCAST_PASSWORD)")
        .option("service", &o.service, "NAME", "Service to post to")
        .option("item", &o.item, "NAME", "Item to post to")
        .flag("on-stream", &o.on_stream,
              "Subscribe to the item and post on its stream (default: off-stream, by name)")
        .option("count", &o.count, "N", "Posts to send", 1, 100'000'000)
        .option("rate", &o.rate, "PER_SEC", "Posts per second (each waits for its answer)", 0.01,
                1e6)
        .option("timeout", &o.timeout_s, "SECONDS", "Longest wait for a connection or an answer",
                0.1, 3600);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    return tools::run_until_stopped("mdcast-bench-poster", [&] { return run(o); });
}
