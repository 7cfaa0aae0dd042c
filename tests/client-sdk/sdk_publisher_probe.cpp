// sdk-publisher-probe: a Publisher (linked against the shared libmdcast, like
// any application) for the SDK integration tests. It prints what happens to
// it as JSON lines and publishes deterministic values, so a test can check
// every field a consumer receives.
//
//   sdk-publisher-probe --distributors H:P[,H:P...] --service S --items A,B
//       [--interactive] [--rate UPDATES_PER_S] [--duration SECONDS]
//       [--updates-before-start N] [--flush-after N] [--flush-timeout-ms MS]
//       [--publish-to-all]
//
// --updates-before-start publishes N updates of every item right after its
// refresh, before start() (so before the distributor has registered it: the
// ordering rule). --flush-after calls flush() once N updates have been
// published in the run and prints {"event":"flushed","ok":...}.
// --publish-to-all publishes to every distributor at once (dual-homed).
//
// Item i (its position in --items) starts with a refresh: DSPLY_NAME (3) =
// its name, BID (22) = (10000 + 100 i) * 10^-2, ACVOL_1 (32) = 0. Its n-th
// update sets BID = (10000 + 100 i + n) * 10^-2 and ACVOL_1 = n, stamped.
// Broadcast: every item is published from the start. Interactive: an item is
// published once requested and until closed; a requested name not in --items
// is answered with a closed NOT_FOUND status.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/publisher.h"
#include "probe_output.h"

namespace {

using probe::json_string;
using probe::line;
using probe::monotonic_now;
using probe::split;

struct Args {
    std::string distributors;
    std::string service = "SDK";
    std::vector<std::string> items;
    bool interactive = false;
    bool publish_to_all = false;
    double rate = 100;
    double duration_s = 10;
    uint64_t updates_before_start = 0;
    uint64_t flush_after = 0;
    uint32_t flush_timeout_ms = 5000;
    mdcast::TlsOptions tls;
};

Args parse_args(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--distributors")
            a.distributors = value();
        else if (arg == "--service")
            a.service = value();
        else if (arg == "--items")
            a.items = split(value());
        else if (arg == "--interactive")
            a.interactive = true;
        else if (arg == "--publish-to-all")
            a.publish_to_all = true;
        else if (arg == "--rate")
            a.rate = std::stod(value());
        else if (arg == "--duration")
            a.duration_s = std::stod(value());
        else if (arg == "--updates-before-start")
            a.updates_before_start = std::stoull(value());
        else if (arg == "--flush-after")
            a.flush_after = std::stoull(value());
        else if (arg == "--flush-timeout-ms")
            a.flush_timeout_ms = static_cast<uint32_t>(std::stoul(value()));
        else if (probe::tls_arg(arg, value, a.tls))
            continue;
        else
            throw std::invalid_argument("unknown argument " + arg);
    }
    if (a.distributors.empty() || a.items.empty()) {
        throw std::invalid_argument("--distributors and --items are required");
    }
    return a;
}

// The items and which of them are being published, shared by the I/O thread
// (requests, closes) and the main thread (the update loop).
class Source final : public mdcast::PublisherHandler {
  public:
    Source(const Args& args, mdcast::Publisher*& publisher)
        : args_(args), publisher_(publisher), counts_(args.items.size(), 0) {}

    void on_connection(const mdcast::ConnectionEvent& c) override {
        line("{\"event\":\"connection\",\"state\":\"" +
             std::string(mdcast::connection_state_name(c.state)) + "\",\"server\":\"" +
             c.server.to_string() + "\"}");
    }
    void on_service(const std::string& service, bool accepted, const std::string&) override {
        line("{\"event\":\"service\",\"service\":\"" + service +
             "\",\"accepted\":" + (accepted ? "true" : "false") + "}");
    }
    void on_item_request(mdcast::PublishedItem item, const std::string&,
                         const std::string& name) override {
        line("{\"event\":\"request\",\"item\":\"" + name + "\"}");
        const int index = index_of(name);
        if (index < 0) {
            publisher_->status(
                item,
                mdcast::ItemState{mdcast::StreamState::kClosed, mdcast::DataState::kSuspect,
                                  mdcast::StatusCode::kNotFound, "no such item at this source"});
            return;
        }
        std::lock_guard lock(mutex_);
        handles_[static_cast<size_t>(index)] = item;
        publish_refresh(static_cast<size_t>(index));
        active_.insert(static_cast<size_t>(index));
    }
    void on_item_closed(mdcast::PublishedItem, const std::string&,
                        const std::string& name) override {
        line("{\"event\":\"closed\",\"item\":\"" + name + "\"}");
        std::lock_guard lock(mutex_);
        if (const int index = index_of(name); index >= 0) active_.erase(static_cast<size_t>(index));
    }
    void on_item_rejected(mdcast::PublishedItem item, const mdcast::ItemState& state) override {
        line("{\"event\":\"rejected\",\"h\":" + std::to_string(item.id) + ",\"text\":\"" +
             state.text + "\"}");
    }

    // Broadcast: every item, published from the start.
    void add_all() {
        std::lock_guard lock(mutex_);
        handles_.resize(args_.items.size());
        for (size_t i = 0; i < args_.items.size(); ++i) {
            handles_[i] = publisher_->add_item(args_.service, args_.items[i]);
            publish_refresh(i);
            active_.insert(i);
        }
    }
    void prepare_interactive() {
        std::lock_guard lock(mutex_);
        handles_.resize(args_.items.size());
    }

    // One update of the next active item; false when none is active.
    bool publish_next() {
        std::lock_guard lock(mutex_);
        if (active_.empty()) return false;
        auto it = active_.lower_bound(next_);
        if (it == active_.end()) it = active_.begin();
        const size_t i = *it;
        next_ = i + 1;
        const uint64_t n = counts_[i] + 1;
        fields_.clear();
        fields_.add_decimal(22, 10000 + 100 * static_cast<int64_t>(i) + static_cast<int64_t>(n),
                            -2);
        fields_.add_int(32, static_cast<int64_t>(n));
        if (publisher_->update(handles_[i], fields_)) counts_[i] = n;
        return true;
    }

  private:
    int index_of(const std::string& name) const {
        for (size_t i = 0; i < args_.items.size(); ++i) {
            if (args_.items[i] == name) return static_cast<int>(i);
        }
        return -1;
    }
    // The image as of the item's latest update (mutex_ held).
    void publish_refresh(size_t i) {
        mdcast::FieldList image;
        image.add_string(3, args_.items[i]);
        image.add_decimal(
            22, 10000 + 100 * static_cast<int64_t>(i) + static_cast<int64_t>(counts_[i]), -2);
        image.add_int(32, static_cast<int64_t>(counts_[i]));
        publisher_->refresh(handles_[i], image);
    }

    const Args& args_;
    mdcast::Publisher*& publisher_;
    std::mutex mutex_;
    std::vector<mdcast::PublishedItem> handles_;
    std::vector<uint64_t> counts_;
    std::set<size_t> active_;
    size_t next_ = 0;
    mdcast::FieldList fields_;
};

}  // namespace

int main(int argc, char** argv) {
    const Args args = probe::parse_or_exit<Args>("sdk-publisher-probe", argc, argv, parse_args);
    probe::stop_on_signals();

    mdcast::PublisherOptions options;
    options.distributors = mdcast::parse_server_list(args.distributors);
    options.publish_to_all = args.publish_to_all;
    options.user = "sdk-publisher-probe";
    options.tls = args.tls;
    options.reconnect_delay_min_ms = 50;
    options.reconnect_delay_max_ms = 500;
    options.log_level = "info";
    mdcast::Publisher* publisher_ptr = nullptr;
    Source source(args, publisher_ptr);
    mdcast::Publisher publisher(options, source);
    publisher_ptr = &publisher;
    publisher.add_service(args.service, args.interactive ? mdcast::ServiceMode::kInteractive
                                                         : mdcast::ServiceMode::kBroadcast);
    if (args.interactive) {
        source.prepare_interactive();
    } else {
        source.add_all();
        for (uint64_t n = 0; n < args.updates_before_start * args.items.size(); ++n) {
            source.publish_next();
        }
    }
    publisher.start();
    bool flushed = false;

    const int64_t start = monotonic_now();
    const int64_t deadline = start + static_cast<int64_t>(args.duration_s * 1e9);
    uint64_t sent = 0;
    while (!probe::stop_requested() && monotonic_now() < deadline) {
        const auto owed =
            static_cast<uint64_t>(static_cast<double>(monotonic_now() - start) / 1e9 * args.rate);
        while (sent < owed && source.publish_next()) ++sent;
        if (sent < owed) sent = owed;  // nothing active: do not catch up later
        if (args.flush_after > 0 && !flushed && sent >= args.flush_after) {
            flushed = true;
            const int64_t asked = monotonic_now();
            const bool ok = publisher.flush(std::chrono::milliseconds(args.flush_timeout_ms));
            const auto s = publisher.stats();
            line("{\"event\":\"flushed\",\"ok\":" + std::string(ok ? "true" : "false") +
                 ",\"published\":" + std::to_string(sent) +
                 ",\"updates_sent\":" + std::to_string(s.updates_sent) +
                 ",\"ms\":" + std::to_string((monotonic_now() - asked) / 1'000'000) + "}");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    publisher.stop();
    const auto s = publisher.stats();
    std::printf(
        "{\"event\":\"summary\",\"refreshes_sent\":%llu,\"updates_sent\":%llu,"
        "\"statuses_sent\":%llu,\"updates_held\":%llu,\"item_requests\":%llu,"
        "\"item_closes\":%llu,\"rejections\":%llu,\"connections\":%llu,"
        "\"connection_losses\":%llu,\"outbox_full\":%llu,\"links_dropped\":%llu}\n",
        static_cast<unsigned long long>(s.refreshes_sent),
        static_cast<unsigned long long>(s.updates_sent),
        static_cast<unsigned long long>(s.statuses_sent),
        static_cast<unsigned long long>(s.updates_held),
        static_cast<unsigned long long>(s.item_requests),
        static_cast<unsigned long long>(s.item_closes),
        static_cast<unsigned long long>(s.rejections),
        static_cast<unsigned long long>(s.connections),
        static_cast<unsigned long long>(s.connection_losses),
        static_cast<unsigned long long>(s.outbox_full),
        static_cast<unsigned long long>(s.links_dropped));
    return 0;
}
