// sdk-book-probe: a MarketByPrice book through the SDK (linked against the
// shared libmdcast, like any application), for tests/integration/test_books.py.
//
//   sdk-book-probe publish --distributors H:P --service S --item I --levels N
//       --updates N [--seed N] [--rate N] [--go-file F] [--half-go-file F]
//   sdk-book-probe consume --servers H:P --service S --item I --expect N
//       [--conflate-ms N] [--duration S] [--stall-at N --stall-ms M] [--view ID,ID...]
//
// publish: refreshes a book of --levels price levels, waits for --go-file,
// then publishes --updates book updates (1 to 4 random adds, size updates and
// deletes each; summary field 32 = the update's number), pausing at half way
// for --half-go-file; then prints the book it published and stays until SIGTERM.
// consume: subscribes (--servers may be a failover list), keeps an
// mdcast::Book and prints it once summary field 32 reaches --expect while the
// item is ok (and at the end), with the order checks of BookPrinter. A book
// line lists every entry as [price, size, orders] in price order: both sides
// print it alike. --stall-at makes it a slow reader: its handler sleeps
// --stall-ms once at update N (on the SDK's I/O thread, which stops reading).
// --view subscribes with a view of those field ids (a field out of it prints
// as -1); it must hold 32 for the checks.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/book.h"
#include "mdcast/consumer.h"
#include "mdcast/publisher.h"
#include "probe_output.h"

namespace {

using probe::json_string;
using probe::line;

constexpr uint32_t kSize = 3427, kOrders = 3430, kUpdateNumber = 32;

struct Args {
    std::string mode, endpoints, service = "BOOKS", item = "VOD.MBP";
    uint64_t levels = 1000, updates = 4000, seed = 1, expect = 0;
    double rate = 2000, duration_s = 60;
    uint32_t conflate_ms = 0;
    uint64_t stall_at = 0, stall_ms = 0;
    std::vector<uint32_t> view;
    std::string go_file, half_go_file;
};

// "3430,32" as field ids.
std::vector<uint32_t> field_ids(const std::string& list) {
    std::vector<uint32_t> ids;
    for (size_t at = 0; at < list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        ids.push_back(static_cast<uint32_t>(std::stoul(list.substr(at, comma - at))));
        at = comma + 1;
    }
    return ids;
}

Args parse_args(int argc, char** argv) {
    Args a;
    if (argc < 2) throw std::invalid_argument("publish or consume");
    a.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&] {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return std::string(argv[++i]);
        };
        if (arg == "--distributors" || arg == "--servers")
            a.endpoints = value();
        else if (arg == "--service")
            a.service = value();
        else if (arg == "--item")
            a.item = value();
        else if (arg == "--levels")
            a.levels = std::stoull(value());
        else if (arg == "--updates")
            a.updates = std::stoull(value());
        else if (arg == "--seed")
            a.seed = std::stoull(value());
        else if (arg == "--expect")
            a.expect = std::stoull(value());
        else if (arg == "--rate")
            a.rate = std::stod(value());
        else if (arg == "--duration")
            a.duration_s = std::stod(value());
        else if (arg == "--conflate-ms")
            a.conflate_ms = static_cast<uint32_t>(std::stoul(value()));
        else if (arg == "--stall-at")
            a.stall_at = std::stoull(value());
        else if (arg == "--stall-ms")
            a.stall_ms = std::stoull(value());
        else if (arg == "--view")
            a.view = field_ids(value());
        else if (arg == "--go-file")
            a.go_file = value();
        else if (arg == "--half-go-file")
            a.half_go_file = value();
        else
            throw std::invalid_argument("unknown argument " + arg);
    }
    if (a.endpoints.empty()) throw std::invalid_argument("--distributors or --servers is required");
    return a;
}

std::string book_line(const std::map<mdcast::BookKey, mdcast::FieldList>& entries, uint64_t n) {
    std::string out = "{\"event\":\"book\",\"n\":" + std::to_string(n) + ",\"entries\":[";
    for (const auto& [key, fields] : entries) {
        int64_t size = -1, orders = -1;
        for (const auto& v : fields.values()) {
            if (v.id == kSize) size = v.integer;
            if (v.id == kOrders) orders = v.integer;
        }
        if (out.back() != '[') out += ',';
        out += "[" + json_string(key.to_string()) + "," + std::to_string(size) + "," +
               std::to_string(orders) + "]";
    }
    return out + "]}";
}

void wait_for_file(const std::string& path) {
    while (!path.empty() && !std::filesystem::exists(path) && !probe::stop_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

mdcast::FieldList level(int64_t size, int64_t orders) {
    mdcast::FieldList fields;
    fields.add_int(kSize, size).add_int(kOrders, orders);
    return fields;
}

// The publisher's side: its own model of the book, changed at random.
class BookSource {
  public:
    explicit BookSource(const Args& args) : args_(args), random_(args.seed) {}

    void refresh(mdcast::Publisher& publisher, mdcast::PublishedItem item) {
        mdcast::BookChanges entries;
        for (uint64_t i = 0; i < args_.levels; ++i) {
            const auto key = mdcast::BookKey::price(static_cast<int64_t>(10000 + i), -2);
            book_[key] = level(pick(1, 1000), pick(1, 20));
            entries.add(key, book_[key]);
        }
        mdcast::FieldList summary;
        summary.add_int(kUpdateNumber, 0);
        publisher.refresh_book(item, mdcast::Domain::kMarketByPrice, summary, entries);
    }

    void update(mdcast::Publisher& publisher, mdcast::PublishedItem item, uint64_t n) {
        mdcast::BookChanges changes;
        for (int64_t k = pick(1, 4); k > 0; --k) change(changes);
        mdcast::FieldList summary;
        summary.add_int(kUpdateNumber, static_cast<int64_t>(n));
        while (!publisher.update_book(item, summary, changes)) {  // the outbox is full: wait
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    const std::map<mdcast::BookKey, mdcast::FieldList>& book() const { return book_; }

  private:
    int64_t pick(int64_t low, int64_t high) {
        return std::uniform_int_distribution<int64_t>(low, high)(random_);
    }

    void change(mdcast::BookChanges& changes) {
        const int64_t action = book_.empty() ? 0 : pick(0, 2);
        if (action == 0) {  // a level anywhere around the book, new or replaced
            const auto key =
                mdcast::BookKey::price(pick(9000, 11000 + static_cast<int64_t>(args_.levels)), -2);
            book_[key] = level(pick(1, 1000), pick(1, 20));
            changes.add(key, book_[key]);
            return;
        }
        auto it = std::next(book_.begin(), pick(0, static_cast<int64_t>(book_.size()) - 1));
        if (action == 1) {  // the size alone: merged into the level
            mdcast::FieldList size;
            size.add_int(kSize, pick(1, 1000));
            mdcast::merge_fields(it->second, size.values());
            changes.update(it->first, size);
        } else {
            changes.remove(it->first);
            book_.erase(it);
        }
    }

    const Args& args_;
    std::mt19937_64 random_;
    std::map<mdcast::BookKey, mdcast::FieldList> book_;
};

int publish(const Args& args) {
    mdcast::PublisherOptions options;
    options.distributors = mdcast::parse_server_list(args.endpoints);
    options.user = "sdk-book-probe";
    options.log_level = "info";
    mdcast::PublisherHandler handler;
    mdcast::Publisher publisher(options, handler);
    publisher.add_service(args.service, mdcast::ServiceMode::kBroadcast);
    const auto item = publisher.add_item(args.service, args.item);
    BookSource source(args);
    source.refresh(publisher, item);
    publisher.start();
    line("{\"event\":\"refreshed\",\"flushed\":" +
         std::string(publisher.flush(std::chrono::seconds(30)) ? "true" : "false") + "}");
    wait_for_file(args.go_file);
    const int64_t start = probe::monotonic_now();
    for (uint64_t n = 1; n <= args.updates && !probe::stop_requested(); ++n) {
        if (n == args.updates / 2 + 1 && !args.half_go_file.empty()) {
            publisher.flush(std::chrono::seconds(30));
            line("{\"event\":\"half\",\"n\":" + std::to_string(n - 1) + "}");
            wait_for_file(args.half_go_file);
        }
        source.update(publisher, item, n);
        const auto due = start + static_cast<int64_t>(static_cast<double>(n) / args.rate * 1e9);
        while (probe::monotonic_now() < due)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const bool flushed = publisher.flush(std::chrono::seconds(30));
    line(book_line(source.book(), args.updates));
    line("{\"event\":\"done\",\"flushed\":" + std::string(flushed ? "true" : "false") + "}");
    while (!probe::stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    publisher.stop();
    return 0;
}

// Keeps the book and checks its order: while the item is ok, every update is
// the one after the last (summary field 32 counts them), or it is a "jump"
// (an action lost, repeated or out of order, shown as current). A refresh sets
// the count; a suspect status suspends the check until the next refresh.
class BookPrinter final : public mdcast::ConsumerHandler {
  public:
    explicit BookPrinter(const Args& args) : args_(args) {}
    void on_refresh(const mdcast::Event& e) override {
        book_.apply(e);
        ok_ = e.state().data == mdcast::DataState::kOk;
        ++refreshes_;
        line("{\"event\":\"refresh\",\"entries\":" + std::to_string(book_.size()) +
             ",\"n\":" + std::to_string(number()) + ",\"ok\":" + (ok_ ? "true" : "false") +
             ",\"domain\":" + json_string(mdcast::domain_name(book_.domain())) + "}");
        print_if_done();
    }
    void on_update(const mdcast::Event& e) override {
        const uint64_t before = number();
        book_.apply(e);
        if (number() == args_.stall_at && !stalled_) {
            stalled_ = true;
            line("{\"event\":\"stall\",\"n\":" + std::to_string(number()) + "}");
            std::this_thread::sleep_for(std::chrono::milliseconds(args_.stall_ms));
        }
        if (ok_ && number() != before + 1) {
            ++jumps_;
            line("{\"event\":\"jump\",\"from\":" + std::to_string(before) +
                 ",\"to\":" + std::to_string(number()) + "}");
        }
        print_if_done();
    }
    void on_status(const mdcast::Event& e) override {
        if (e.state().data != mdcast::DataState::kOk) ok_ = false;
        line("{\"event\":\"status\",\"code\":" + json_string(mdcast::to_string(e.state().code)) +
             ",\"data\":" + json_string(ok_ ? "ok" : "suspect") + ",\"n\":" +
             std::to_string(number()) + ",\"text\":" + json_string(e.state().text) + "}");
    }
    void on_connection(const mdcast::Event& e) override {
        const auto& c = e.connection();
        line("{\"event\":\"connection\",\"state\":" +
             json_string(mdcast::connection_state_name(c.state)) +
             ",\"server\":" + json_string(c.server.to_string()) + "}");
    }
    // The book with what the checks saw: "ok" the item's state, "jumps" the
    // updates out of order while ok, "refreshes" the images taken.
    void print_book() {
        std::string text = book_line(book_.entries(), number());
        text.pop_back();
        line(text + ",\"ok\":" + (ok_ ? "true" : "false") + ",\"jumps\":" + std::to_string(jumps_) +
             ",\"refreshes\":" + std::to_string(refreshes_) + "}");
    }

  private:
    uint64_t number() const {
        for (const auto& v : book_.summary().values())
            if (v.id == kUpdateNumber) return static_cast<uint64_t>(v.integer);
        return 0;
    }
    void print_if_done() {
        if (!printed_ && ok_ && number() == args_.expect) {
            printed_ = true;
            print_book();
        }
    }
    const Args& args_;
    bool printed_ = false, stalled_ = false;
    bool ok_ = false;
    uint64_t jumps_ = 0, refreshes_ = 0;
    mdcast::Book book_;
};

int consume(const Args& args) {
    mdcast::ConsumerOptions options;
    options.servers = mdcast::parse_server_list(args.endpoints);
    options.application_id = "sdk-book-probe";
    options.log_level = "info";
    BookPrinter printer(args);
    mdcast::Consumer consumer(options, printer);
    mdcast::View view;
    view.field_ids = args.view;
    consumer.subscribe_batch(args.service, {args.item}, view, args.conflate_ms);
    consumer.start();
    const int64_t deadline = probe::monotonic_now() + static_cast<int64_t>(args.duration_s * 1e9);
    while (!probe::stop_requested() && probe::monotonic_now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    consumer.stop();
    printer.print_book();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = probe::parse_or_exit<Args>("sdk-book-probe", argc, argv, parse_args);
    probe::stop_on_signals();
    return args.mode == "publish" ? publish(args) : consume(args);
}
