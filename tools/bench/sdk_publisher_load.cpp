// mdcast-bench-publisher: the benchmark's source built the way users build
// theirs, on the SDK's public Publisher API (libmdcast), so mdcast-bench can
// measure what a publishing application pays per update (`mdcast-bench
// --source sdk`).
//
// Same items, values, pacing, stamps and update size as mdcast-source
// (sample_items.h, UpdateSchedule, StampSelector, UpdateEncoder::layout), but
// each update is a FieldList handed to Publisher::update(). It speaks
// mdcast-source's command-line subset that the bench uses, logs "items
// registered" once every image is out, and prints the same source_summary line.
// With --accept-posts it accepts every post and publishes the posted fields as
// an update of the item (the post round trip of `mdcast-bench --scenario post`
// and the posting integration tests); --reject-posts TEXT rejects each with TEXT.
// With --book-levels MIN:MAX every item is a MarketByPrice book (BenchBook):
// images through refresh_book, updates of 1-3 level actions through
// update_book (`mdcast-bench books`).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_book.h"
#include "common/clock.h"
#include "common/config/command_line.h"
#include "mdcast/publisher.h"
#include "sample_field_list.h"
#include "sched_slice_option.h"
#include "tools/sample_items.h"
#include "tools/threaded_tool.h"
#include "update_schedule.h"

namespace {

using namespace mdcast;

constexpr uint32_t kDisplayName = 3;  // DSPLY_NAME

std::atomic<bool>& g_stop = tools::stop_requested;  // set by SIGINT/SIGTERM

struct Options {
    std::string distributor = "127.0.0.1:14001";
    std::string service = "MDCAST";
    std::string prefix = "ITEM";
    int64_t items = 1000;
    double rate = 1000;
    double duration_s = 10;
    int64_t tick_us = 1000;
    int64_t max_batch = 10000;
    int64_t update_bytes = 0;
    double latency_rate = -1;
    std::string user = "mdcast-bench";
    bool unbatched = false;
    bool publish_to_all = false;  // every distributor of --distributor at once (dual-homed)
    bool wait_when_full = false;
    bool io_thread_writes = false;
    int64_t sched_slice_us = 0;  // 0: the kernel's default
    bool accept_posts = false;
    std::string reject_posts;  // not empty: every post rejected with this text
    std::string book_levels;   // "MIN:MAX": MarketByPrice books; empty: field lists
    uint32_t min_levels = 0;   // from book_levels; 0: field lists
    uint32_t max_levels = 0;
};

// --book-levels MIN:MAX into o.min_levels/max_levels; false when malformed.
bool parse_book_levels(Options& o) {
    if (o.book_levels.empty()) return true;
    unsigned min = 0;
    unsigned max = 0;
    char end = 0;
    if (std::sscanf(o.book_levels.c_str(), "%u:%u%c", &min, &max, &end) != 2 || min < 1 ||
        max < min || max > 10000) {
        std::cerr << "mdcast-bench-publisher: error: --book-levels is MIN:MAX, 1 <= MIN <= MAX "
                     "<= 10000\n";
        return false;
    }
    o.min_levels = min;
    o.max_levels = max;
    return true;
}

// A posted value, as the publisher publishes it again.
void add_value(FieldList& fields, const FieldValue& f) {
    switch (f.kind) {
        case FieldKind::kInt:
            fields.add_int(f.id, f.integer);
            return;
        case FieldKind::kDecimal:
            fields.add_decimal(f.id, f.integer, f.exponent);
            return;
        case FieldKind::kDouble:
            fields.add_double(f.id, f.real);
            return;
        case FieldKind::kString:
            fields.add_string(f.id, f.text);
            return;
        case FieldKind::kTime:
            fields.add_time(f.id, f.integer);
            return;
        case FieldKind::kBlank:
            fields.add_blank(f.id);
            return;
    }
}

// TEXT with its first "{user}" replaced by `user`.
std::string with_user(std::string text, const std::string& user) {
    if (const auto at = text.find("{user}"); at != std::string::npos) text.replace(at, 6, user);
    return text;
}

// Logs what the distributor says; the load loop runs on the main thread.
class Handler final : public PublisherHandler {
  public:
    void on_service(const std::string& service, bool accepted, const std::string& text) override {
        if (!accepted) {
            std::fprintf(stderr, "service %s refused: %s\n", service.c_str(), text.c_str());
            refused = true;
        }
    }
    void on_item_rejected(PublishedItem item, const ItemState& state) override {
        std::fprintf(stderr, "item %llu rejected: %s\n", static_cast<unsigned long long>(item.id),
                     state.text.c_str());
        rejected.fetch_add(1);
    }
    // --accept-posts: accepted, and shown to every subscriber as an update of
    // the item (when it is one of ours); --reject-posts: rejected with its text.
    PostAnswer on_post(const PostRequest& request) override {
        if (!reject_posts.empty()) return PostAnswer::reject(with_user(reject_posts, request.user));
        if (!accept_posts) return PublisherHandler::on_post(request);
        if (request.item && publisher) {
            FieldList fields;
            for (const FieldValue& f : request.fields) add_value(fields, f);
            publisher->update(request.item, fields);
        }
        return PostAnswer::accept();
    }
    std::atomic<bool> refused{false};
    std::atomic<uint64_t> rejected{0};
    bool accept_posts = false;
    std::string reject_posts;
    Publisher* publisher = nullptr;  // set once it exists, before start()
};

// One clock_nanosleep to an absolute CLOCK_MONOTONIC deadline (monotonic_ns()'s
// clock): no clock reads around it as std::this_thread::sleep_until makes. A
// signal ends it early; the loop then sees g_stop.
void sleep_until_ns(int64_t deadline_ns) {
    timespec at{};
    at.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
    at.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);
}

class Load {
  public:
    Load(const Options& o, Publisher& publisher)
        : o_(o),
          publisher_(publisher),
          schedule_(o.rate, static_cast<uint64_t>(o.max_batch)),
          stamps_(o.latency_rate, 1),
          updates_(static_cast<size_t>(o.update_bytes)),
          books_(static_cast<uint64_t>(o.items), o.min_levels, o.max_levels) {}

    void add_items() {
        for (int64_t i = 0; i < o_.items; ++i) {
            const auto index = static_cast<uint64_t>(i);
            const std::string name = tools::item_name(o_.prefix, index);
            items_.push_back({publisher_.add_item(o_.service, name), 0});
            FieldList image;
            image.add_string(kDisplayName, name);
            if (o_.min_levels > 0) {
                books_.image(index, changes_);
                publisher_.refresh_book(items_.back().handle, Domain::kMarketByPrice, image,
                                        changes_);
                continue;
            }
            for (const auto& v : tools::update_values(index, 0)) tools::add_sample_value(image, v);
            publisher_.refresh(items_.back().handle, image);
        }
    }

    // The paced loop; false when the publisher refused an update (outbox full).
    // Ticks as mdcast-source's periodic timer does: the next one is due a tick
    // after this one began, so a late tick is not followed by back-to-back
    // ones (owed() already catches up the rate): one sleep and one write per
    // tick, never a write without a sleep before it.
    bool run(double duration_s) {
        started_ns_ = monotonic_ns();
        schedule_.start(started_ns_);
        stamps_.start(started_ns_);
        const int64_t end = started_ns_ + static_cast<int64_t>(duration_s * 1e9);
        for (int64_t now = started_ns_; !g_stop && now < end; now = monotonic_ns()) {
            const uint64_t owed = schedule_.owed(now);
            stamps_.begin_tick(now, owed);
            if (!publish_tick(owed)) return false;
            schedule_.sent(owed);
            sleep_until_ns(now + o_.tick_us * 1000);
        }
        return true;
    }

    tools::SourceSummary summary(uint64_t rejected) const {
        tools::SourceSummary s =
            tools::pacing_summary(items_.size(), started_ns_, monotonic_ns(), schedule_, stamps_);
        s.update_bytes = o_.update_bytes;
        s.undersized = updates_.encoder().undersized_target();
        s.rejected = rejected;
        return s;
    }

  private:
    // One tick's updates are one burst (Publisher::Batch): one wake-up of the
    // I/O thread and one write, as mdcast-source writes a tick.
    bool publish_tick(uint64_t owed) {
        std::optional<Publisher::Batch> batch;
        if (!o_.unbatched) batch.emplace(publisher_);
        for (uint64_t i = 0; i < owed; ++i) {
            if (!publish_one()) {
                schedule_.sent(i);  // the summary counts what the publisher took
                return false;
            }
        }
        return true;
    }

    struct Item {
        PublishedItem handle;
        uint64_t seq;
    };

    // One update of the next item, sized like mdcast-source's (the distributor
    // numbers items from 1 in registration order, which layout() assumes).
    bool publish_one() {
        Item& item = items_[next_];
        const uint64_t seq = item.seq + 1;
        const uint64_t stamp = stamps_.next() ? realtime_now_ns() : 0;
        build_update(seq, stamp);
        while (!send_update(item.handle, stamp)) {
            if (!o_.wait_when_full || g_stop) return false;
            // Back-pressure: the rate measured is then what the distributor takes.
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        item.seq = seq;
        next_ = (next_ + 1) % items_.size();
        return true;
    }

    // Built once and sent until taken: a refused update (outbox full) is
    // offered again as it was, and a book's window moves once per update.
    void build_update(uint64_t seq, uint64_t stamp) {
        if (o_.min_levels == 0) {
            updates_.build(fields_, next_ + 1, next_, seq, stamp);
        } else {
            books_.update(next_, seq, changes_);
        }
    }

    bool send_update(PublishedItem handle, uint64_t stamp) {
        if (o_.min_levels == 0) return publisher_.update(handle, fields_, stamp);
        return publisher_.update_book(handle, summary_, changes_, stamp);
    }

    const Options& o_;
    Publisher& publisher_;
    tools::UpdateSchedule schedule_;
    tools::StampSelector stamps_;
    tools::SampleUpdateBuilder updates_;
    std::vector<Item> items_;
    size_t next_ = 0;
    FieldList fields_;
    tools::BenchBook books_;
    BookChanges changes_;
    FieldList summary_;  // a book update's summary: none
    int64_t started_ns_ = 0;
};

// Every image has gone out once the distributor registered the items (with
// --publish-to-all, `images` counts them once per distributor).
bool wait_registered(const Publisher& publisher, const Handler& handler, uint64_t images) {
    const int64_t deadline = monotonic_ns() + 20'000'000'000;
    while (publisher.stats().refreshes_sent < images) {
        if (g_stop || handler.refused || monotonic_ns() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

int run(const Options& o) {
    PublisherOptions options;
    options.distributors = parse_server_list(o.distributor);
    options.publish_to_all = o.publish_to_all;
    options.user = o.user;
    options.application_id = "mdcast-bench-publisher";
    options.write_from_caller = !o.io_thread_writes;
    Handler handler;
    handler.accept_posts = o.accept_posts;
    handler.reject_posts = o.reject_posts;
    Publisher publisher(options, handler);
    handler.publisher = &publisher;
    publisher.add_service(o.service, ServiceMode::kBroadcast);
    Load load(o, publisher);
    load.add_items();
    publisher.start();
    const uint64_t links = o.publish_to_all ? options.distributors.size() : 1;
    if (!wait_registered(publisher, handler, static_cast<uint64_t>(o.items) * links)) {
        std::fprintf(stderr, "items not registered\n");
        publisher.stop();
        return 1;
    }
    std::fprintf(stderr, "%lld items registered in service %s; publishing %.0f updates/s\n",
                 static_cast<long long>(o.items), o.service.c_str(), o.rate);
    const bool ok = load.run(o.duration_s);
    if (!ok) std::fprintf(stderr, "the publisher's outbox is full; stopping\n");
    tools::print_source_summary(load.summary(handler.rejected.load()));
    publisher.stop();
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    cli::CommandLine command_line(
        "mdcast-bench-publisher",
        "Publishes N items to mdcast-distributor through the SDK's Publisher (libmdcast) at a "
        "paced rate, with mdcast-source's values, stamps and update sizes. Prints mdcast-source's "
        "JSON summary on stdout at the end. Used by mdcast-bench --source sdk.");
    command_line
        .option("distributor", &o.distributor, "HOST:PORT[,HOST:PORT...]",
                "Distributor publisher port (a failover list, or with --publish-to-all every one "
                "at once)")
        .flag("publish-to-all", &o.publish_to_all,
              "Dual-homed: publish to every distributor of --distributor at once "
              "(PublisherOptions::publish_to_all)")
        .option("service", &o.service, "NAME", "Service to announce")
        .option("item-prefix", &o.prefix, "TEXT", "Item names are PREFIX000000, ...")
        .option("items", &o.items, "N", "Number of items", 1, 10'000'000)
        .option("update-bytes", &o.update_bytes, "BYTES",
                "Pad each update's body to this size (0: natural size)", 0, 60000)
        .option("rate", &o.rate, "PER_SEC", "Updates per second over all items", 0, 1e8)
        .option("duration", &o.duration_s, "SECONDS", "Run time", 0, 1e7)
        .option("tick-us", &o.tick_us, "MICROS", "Pacing tick", 10, 1'000'000)
        .option("max-batch", &o.max_batch, "N", "Most updates sent in one tick", 1, 10'000'000)
        .option("latency-rate", &o.latency_rate, "PER_SEC",
                "Stamp only this many updates per second, at random (default: all)", 0, 1e9)
        .option("user", &o.user, "NAME", "User name for the login")
        .flag("unbatched", &o.unbatched,
              "Publish each tick without a Publisher::Batch (each update may wake the I/O "
              "thread)")
        .flag("wait-when-full", &o.wait_when_full,
              "When the outbox is full, wait and retry instead of stopping (with a rate above "
              "what the distributor takes: the most plain update() calls it takes per second)")
        .flag("io-thread-writes", &o.io_thread_writes,
              "PublisherOptions::write_from_caller off: the I/O thread writes every burst, the "
              "publishing thread only wakes it (for before/after measurements)")
        .flag("accept-posts", &o.accept_posts,
              "Accept every post and publish its fields as an update of the item (default: "
              "reject posts, the SDK's default)")
        .option("reject-posts", &o.reject_posts, "TEXT",
                "Reject every post with TEXT ({user} in it: who posted, as the publisher is told)")
        .option("book-levels", &o.book_levels, "MIN:MAX",
                "Publish MarketByPrice books of MIN..MAX levels (spread over the items), each "
                "update changing 1-3 levels (default: field lists)");
    tools::add_sched_slice_option(command_line, o.sched_slice_us);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (!parse_book_levels(o)) return 2;
    if (!tools::apply_sched_slice_option("mdcast-bench-publisher", o.sched_slice_us)) return 2;
    return tools::run_until_stopped("mdcast-bench-publisher", [&] { return run(o); });
}
