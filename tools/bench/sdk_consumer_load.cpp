// mdcast-bench-consumer: the benchmark's client built the way users build
// theirs, on the SDK's public Consumer API (libmdcast), so mdcast-bench can
// measure what an application pays per update (`mdcast-bench --client sdk`).
//
// One Consumer per connection, every one subscribed to the same items. By
// default they share one I/O thread (one mdcast::IoContext, handlers called
// there), as an application with many Consumers in one process would run
// them; --io-threads N spreads them over N contexts, and --io-threads 0 gives
// each its own thread (the SDK's default without a context). The handler reads
// --read-fields fields of each update (BID and ASK by default, by id, as an
// application would), checks per-item sequences and records the latency from
// the publish stamp; with --books (MarketByPrice books, `mdcast-bench books`)
// it reads each update's book actions instead (Event::book_entries(): every
// action's key and fields decoded, as an application applying them would). It speaks
// mdcast-client's command-line subset that the bench uses and prints the same JSON summary and CSV
// rows (ClientStats), so the bench reads both alike.
//
// The connections whose handlers run on one I/O thread share one ClientStats
// behind one lock (SpinLock: an atomic exchange, not a call into the C
// library, per update): the handler takes it uncontended; the main thread
// takes it only for the periodic sample, the start of steady state and the
// final merge. One per thread, not one per connection: a ClientStats holds two
// latency histograms of some 38 KB each, and 25 of them on a thread competed
// with the SDK's own data for the cache. The counts, histograms and sequence
// checks are the same: every update lands in the one ClientStats its
// connection's would have been merged into.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_client_options.h"
#include "client_stats.h"
#include "common/clock.h"
#include "common/config/command_line.h"
#include "item_table.h"
#include "mdcast/consumer.h"
#include "sched_slice_option.h"
#include "spin_lock.h"
#include "tools/process_usage.h"
#include "tools/sample_items.h"
#include "tools/threaded_tool.h"

namespace {

using namespace mdcast;

// BID, ASK, BIDSIZE, ASKSIZE, ACVOL_1: the fields of every sample update.
constexpr uint32_t kSampleFields[] = {22, 25, 30, 31, 32};

std::atomic<bool>& g_stop = tools::stop_requested;  // set by SIGINT/SIGTERM

struct Options : tools::BenchClientOptions {
    int64_t read_fields = 2;
    int64_t io_threads = 1;      // IoContexts shared by the connections; 0: a thread per Consumer
    int64_t sched_slice_us = 0;  // 0: the kernel's default
    int64_t busy_poll_us = 0;    // ConsumerOptions::busy_poll_us
    bool books = false;          // read book actions, not fields
    bool tls = false;
    std::string ca_file;
};

// The statistics of the connections handled on one thread.
class ThreadStats {
  public:
    explicit ThreadStats(int64_t start_ns) : stats_(start_ns) {}

    template <class Use>
    auto with_stats(Use&& use) {
        std::lock_guard lock(lock_);
        return use(stats_);
    }

  private:
    friend class Connection;
    tools::SpinLock lock_;
    tools::ClientStats stats_;
};

// One connection: a Consumer and what its handler counts (into `stats`, shared
// with the other connections of its I/O thread).
class Connection final : public ConsumerHandler {
  public:
    Connection(const Options& options, ThreadStats& stats)
        : read_fields_(static_cast<size_t>(options.read_fields)),
          books_(options.books),
          lock_(stats.lock_),
          stats_(stats.stats_) {}

    void on_refresh(const Event& e) override {
        std::lock_guard lock(lock_);
        stats_.on_image(monotonic_ns());
        const uint64_t id = e.handle().id;
        if (id >= items_.size()) items_.resize(id + 1);
        items_[id] = ItemSequence{e.sequence(), true};
    }

    // The hot path an application has: read a few fields, note the latency.
    // It ends where the SDK read the bytes from the socket (receive_time_ns,
    // one clock reading per read), not at this call: no clock call per update
    // (mdcast-client reads the clock per update, as it handles it).
    void on_update(const Event& e) override {
        read(e);
        std::lock_guard lock(lock_);
        tools::ClientTotals& totals = stats_.totals;
        ++totals.updates;
        if (e.publish_time_ns() != 0) {
            stats_.record_latency(static_cast<int64_t>(e.receive_time_ns() - e.publish_time_ns()));
        }
        if (e.conflated()) ++totals.conflated;
        const uint64_t id = e.handle().id;
        if (id >= items_.size() || !items_[id].known) {
            ++totals.unknown_items;
            return;
        }
        tools::count_sequence(totals, items_[id].last_seq, e.sequence(), e.conflated());
    }

    // Book actions read, once the Consumer has stopped (its handler's thread
    // is the only writer).
    uint64_t book_actions() const { return book_actions_; }

    void on_status(const Event&) override {
        std::lock_guard lock(lock_);
        ++stats_.totals.statuses;
    }

    // A lost connection is what mdcast-client counts as closed by the server.
    void on_connection(const Event& e) override {
        if (e.connection().state != ConnectionState::kDown) return;
        std::lock_guard lock(lock_);
        ++stats_.totals.closed;
        std::fprintf(stderr, "connection to %s down: %s\n",
                     e.connection().server.to_string().c_str(), e.connection().text.c_str());
    }

  private:
    void read(const Event& e) {
        if (books_) {
            for (const BookEntry& entry : e.book_entries()) {
                sink_ += entry.key.mantissa() + static_cast<int64_t>(entry.fields.size());
                ++book_actions_;
            }
            return;
        }
        for (size_t i = 0; i < read_fields_ && i < std::size(kSampleFields); ++i) {
            if (const FieldValue* f = e.field(kSampleFields[i])) sink_ += f->integer;
        }
    }

    size_t read_fields_;
    bool books_;
    tools::SpinLock& lock_;
    tools::ClientStats& stats_;
    // An item's sequence check: its last sequence, known from its image on.
    // 16 bytes, not a tools::ItemState with its names (80 bytes with the
    // optional): with 1,000 items on each of 25 connections, the array each
    // update touches stays small enough to be mostly in cache.
    struct ItemSequence {
        uint64_t last_seq = 0;
        bool known = false;  // an image arrived
    };
    // By handle: a Consumer numbers its handles 1, 2, ... (no hash lookup per
    // update).
    std::vector<ItemSequence> items_;
    int64_t sink_ = 0;  // keeps the field reads from being optimised away
    uint64_t book_actions_ = 0;
};

// One stats interval over every connection: one CSV row.
void write_interval(std::vector<std::unique_ptr<ThreadStats>>& groups, tools::CpuMeter& cpu,
                    std::FILE* csv) {
    const int64_t now = monotonic_ns();
    tools::StatsSample total;
    tools::ClientTotals totals;
    for (auto& c : groups) {
        c->with_stats([&](tools::ClientStats& s) {
            const tools::StatsSample sample = s.take_sample(now, 0, 0);
            total.elapsed_s = sample.elapsed_s;
            total.updates_per_s += sample.updates_per_s;
            total.latency.merge(sample.latency);
            totals += s.totals;
            return 0;
        });
    }
    const tools::ProcessUsage usage = tools::process_usage();
    total.cpu_percent = cpu.sample(now);
    total.rss_mb = usage.rss_mb;
    if (csv) {
        std::fputs(tools::stats_csv_row(total, totals).c_str(), csv);
        std::fflush(csv);
    }
}

int run(const Options& o) {
    std::FILE* csv = nullptr;
    if (!o.csv_path.empty()) {
        csv = std::fopen(o.csv_path.c_str(), "w");
        if (!csv) {
            std::cerr << "mdcast-bench-consumer: error: cannot write --csv " << o.csv_path << "\n";
            return 2;
        }
        std::fputs(tools::stats_csv_header().c_str(), csv);
    }
    const int64_t start = monotonic_ns();
    const auto names = tools::bench_item_names(o);
    std::vector<std::unique_ptr<Connection>> handlers;
    std::vector<std::unique_ptr<Consumer>> consumers;
    const auto servers = parse_server_list(o.servers);
    std::vector<std::shared_ptr<IoContext>> contexts;
    for (int64_t i = 0; i < o.io_threads; ++i) contexts.push_back(std::make_shared<IoContext>());
    // One ThreadStats per I/O thread: connection i is on context i mod N, or on
    // its own thread without contexts.
    std::vector<std::unique_ptr<ThreadStats>> groups;
    const int64_t threads = contexts.empty() ? o.connections : o.io_threads;
    for (int64_t i = 0; i < threads; ++i) groups.push_back(std::make_unique<ThreadStats>(start));
    for (int64_t i = 0; i < o.connections; ++i) {
        ConsumerOptions options;
        options.servers = {servers[static_cast<size_t>(i) % servers.size()]};
        if (!contexts.empty())
            options.io_context = contexts[static_cast<size_t>(i) % contexts.size()];
        options.user = o.user;
        options.application_id = "mdcast-bench-consumer";
        options.busy_poll_us = static_cast<uint32_t>(o.busy_poll_us);
        options.tls.enabled = o.tls;
        options.tls.ca_file = o.ca_file;
        handlers.push_back(
            std::make_unique<Connection>(o, *groups[static_cast<size_t>(i % threads)]));
        consumers.push_back(std::make_unique<Consumer>(options, *handlers.back()));
        consumers.back()->subscribe_batch(o.service, names);
    }
    for (auto& c : consumers) c->start();
    tools::CpuMeter cpu(start);
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    const auto seconds = [](double s) {
        return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    };
    const auto end = begin + seconds(o.duration_s);
    const auto warmup_end = begin + seconds(o.warmup_s);
    auto next_sample = begin + seconds(o.stats_interval_s);
    bool steady = false;
    // Sleeps until the next thing to do (the end of the warm-up, a stats
    // sample, the end), at most kStopCheck, so that a signal is seen soon: each
    // wake-up of this thread takes about 10 µs of the I/O thread's core on a VM.
    constexpr auto kStopCheck = std::chrono::milliseconds(50);
    while (!g_stop && Clock::now() < end) {
        auto wake = std::min(end, Clock::now() + kStopCheck);
        if (!steady) wake = std::min(wake, warmup_end);
        if (o.stats_interval_s > 0) wake = std::min(wake, next_sample);
        std::this_thread::sleep_until(wake);
        if (!steady && Clock::now() >= warmup_end) {
            steady = true;
            const int64_t now = monotonic_ns();
            for (auto& g : groups)
                g->with_stats([&](tools::ClientStats& s) {
                    s.begin_steady(now);
                    return 0;
                });
        }
        if (o.stats_interval_s > 0 && Clock::now() >= next_sample) {
            write_interval(groups, cpu, csv);
            next_sample += seconds(o.stats_interval_s);
        }
    }
    if (csv && o.stats_interval_s > 0) write_interval(groups, cpu, csv);
    const int64_t now = monotonic_ns();
    tools::ClientStats summary(start);
    for (auto& h : groups) {
        h->with_stats([&](tools::ClientStats& s) {
            summary.merge(s);
            return 0;
        });
    }
    const std::string text =
        summary.summary_json(now, o.connections, o.warmup_s, tools::process_usage());
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    for (auto& c : consumers) c->stop();
    if (o.books) {
        uint64_t actions = 0;
        for (const auto& h : handlers) actions += h->book_actions();
        std::fprintf(stderr, "book actions read: %llu\n", static_cast<unsigned long long>(actions));
    }
    if (csv) std::fclose(csv);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    cli::CommandLine command_line(
        "mdcast-bench-consumer",
        "Subscribes every item over N SDK Consumers (libmdcast), reads --read-fields fields of "
        "each update, checks per-item sequences and measures latency from the publish stamp. "
        "Prints mdcast-client's JSON summary on stderr at the end. Used by mdcast-bench "
        "--client sdk.");
    tools::add_bench_client_options(command_line, o, "Servers")
        .option("read-fields", &o.read_fields, "N",
                "Fields the handler reads from each update (BID, ASK, BIDSIZE, ...)", 0, 5)
        .option("io-threads", &o.io_threads, "N",
                "I/O threads (mdcast::IoContext) shared by the connections, connection i on "
                "thread i mod N; 0: each Consumer its own thread (the SDK's default)",
                0, 1000)
        .option("busy-poll-us", &o.busy_poll_us, "MICROS",
                "ConsumerOptions::busy_poll_us: after each frame the I/O thread polls this long "
                "without sleeping (0: off)",
                0, 1'000'000)
        .flag("books", &o.books,
              "Read each update's book actions (Event::book_entries()) instead of fields")
        .flag("tls", &o.tls, "Connect over TLS")
        .option("ca-file", &o.ca_file, "FILE", "PEM CA the server certificate must chain to");
    tools::add_sched_slice_option(command_line, o.sched_slice_us);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (o.output != "none") {
        std::cerr << "mdcast-bench-consumer: error: --output must be none\n";
        return 2;
    }
    if (!tools::apply_sched_slice_option("mdcast-bench-consumer", o.sched_slice_us)) return 2;
    return tools::run_until_stopped("mdcast-bench-consumer", [&] { return run(o); });
}
