// sdk-consumer-probe: a Consumer (linked against the shared libmdcast, like any
// application) that prints every event it receives as one JSON line, for the
// SDK integration tests (tests/integration/test_sdk_*.py).
//
//   sdk-consumer-probe --servers H:P[,H:P...] --service S --items A,B [--snapshot]
//       [--view BID,ASK] [--dispatch] [--duration SECONDS] [--quiet-updates]
//       [--heartbeat-ms N] [--heartbeat-timeout-ms N] [--unsubscribe-after N]
//       [--directory] [--user U] [--conflate-ms N]
//
// --directory asks for the directory when the first image has arrived.
//
// Every line has "t" (CLOCK_MONOTONIC ns, comparable with Python's
// time.monotonic_ns()). At the end (duration over, SIGTERM or SIGINT) it
// prints a summary line with counters and the CPU time the process used.
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/consumer.h"
#include "probe_output.h"

namespace {

using probe::json_string;
using probe::line;
using probe::monotonic_now;
using probe::split;

struct Args {
    std::string servers;
    std::string service = "MDCAST";
    std::vector<std::string> items;
    std::vector<std::string> view;
    bool snapshot = false;
    bool dispatch = false;
    bool quiet_updates = false;
    bool directory = false;
    double duration_s = 10;
    uint32_t heartbeat_ms = 1000;
    uint32_t heartbeat_timeout_ms = 3000;
    uint64_t unsubscribe_after = 0;  // updates per item, then unsubscribe it
    uint32_t conflate_ms = 0;        // Consumer::subscribe's conflation interval
    std::string user = "sdk-probe";
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
        if (arg == "--servers")
            a.servers = value();
        else if (arg == "--service")
            a.service = value();
        else if (arg == "--items")
            a.items = split(value());
        else if (arg == "--view")
            a.view = split(value());
        else if (arg == "--snapshot")
            a.snapshot = true;
        else if (arg == "--dispatch")
            a.dispatch = true;
        else if (arg == "--quiet-updates")
            a.quiet_updates = true;
        else if (arg == "--directory")
            a.directory = true;
        else if (arg == "--duration")
            a.duration_s = std::stod(value());
        else if (arg == "--heartbeat-ms")
            a.heartbeat_ms = static_cast<uint32_t>(std::stoul(value()));
        else if (arg == "--heartbeat-timeout-ms")
            a.heartbeat_timeout_ms = static_cast<uint32_t>(std::stoul(value()));
        else if (arg == "--unsubscribe-after")
            a.unsubscribe_after = std::stoull(value());
        else if (arg == "--conflate-ms")
            a.conflate_ms = static_cast<uint32_t>(std::stoul(value()));
        else if (arg == "--user")
            a.user = value();
        else if (probe::tls_arg(arg, value, a.tls))
            continue;
        else
            throw std::invalid_argument("unknown argument " + arg);
    }
    if (a.servers.empty() || a.items.empty())
        throw std::invalid_argument("--servers and --items are required");
    return a;
}

class Printer final : public mdcast::ConsumerHandler {
  public:
    Printer(const Args& args, mdcast::Consumer*& consumer) : args_(args), consumer_(consumer) {}

    void on_refresh(const mdcast::Event& e) override {
        item_line("refresh", e, true);
        // Asked once data flows, so the server has heard the directory by then.
        if (args_.directory && !directory_asked_) consumer_->request_directory();
        directory_asked_ = true;
    }
    void on_update(const mdcast::Event& e) override {
        ++updates_;
        if (!args_.quiet_updates) item_line("update", e, true);
        if (args_.unsubscribe_after > 0 && ++per_item_[e.handle().id] == args_.unsubscribe_after) {
            consumer_->unsubscribe(e.handle());
            line("{\"event\":\"unsubscribed\",\"h\":" + std::to_string(e.handle().id) + "}");
        }
    }
    void on_status(const mdcast::Event& e) override { item_line("status", e, false); }
    void on_connection(const mdcast::Event& e) override {
        const auto& c = e.connection();
        line("{\"event\":\"connection\",\"state\":\"" +
             std::string(mdcast::connection_state_name(c.state)) + "\",\"server\":" +
             json_string(c.server.to_string()) + ",\"server_id\":" + json_string(c.server_id) +
             ",\"text\":" + json_string(c.text) + "}");
    }
    void on_directory(const mdcast::Event& e) override {
        std::string services;
        for (const auto& s : e.services()) {
            if (!services.empty()) services += ",";
            services += "{\"name\":" + json_string(s.name) +
                        ",\"up\":" + (s.up ? "true" : "false") + ",\"interactive\":" +
                        (s.mode == mdcast::ServiceMode::kInteractive ? "true" : "false") +
                        ",\"id\":" + std::to_string(s.id) +
                        ",\"group_members\":" + std::to_string(s.group_members) +
                        ",\"group_active\":" + (s.group_active ? "true" : "false") + "}";
        }
        line("{\"event\":\"directory\",\"services\":[" + services + "]}");
    }
    uint64_t updates() const { return updates_; }

  private:
    void item_line(const char* kind, const mdcast::Event& e, bool with_fields) {
        const auto& s = e.state();
        std::string text =
            "{\"event\":\"" + std::string(kind) + "\",\"h\":" + std::to_string(e.handle().id) +
            ",\"service\":" + json_string(e.service()) + ",\"item\":" + json_string(e.item()) +
            ",\"seq\":" + std::to_string(e.sequence()) +
            ",\"stamp\":" + std::to_string(e.publish_time_ns()) +
            ",\"snapshot\":" + (e.snapshot() ? "true" : "false") +
            ",\"conflated\":" + (e.conflated() ? "true" : "false") +
            ",\"trade\":" + (e.trade() ? "true" : "false") +
            ",\"stands_for\":" + std::to_string(e.stands_for()) +
            ",\"first_stamp\":" + std::to_string(e.first_publish_time_ns()) + ",\"stream\":\"" +
            (s.stream == mdcast::StreamState::kOpen ? "open" : "closed") + "\",\"data\":\"" +
            (s.data == mdcast::DataState::kOk ? "ok" : "suspect") + "\",\"code\":\"" +
            std::string(mdcast::status_code_name(s.code)) + "\",\"text\":" + json_string(s.text);
        if (with_fields) {
            text += ",\"fields\":{";
            bool first = true;
            for (const auto& f : e.fields()) {
                if (!first) text += ",";
                first = false;
                text += "\"" + std::to_string(f.id) + "\":" + json_string(f.to_string());
            }
            text += "}";
        }
        line(text + "}");
    }

    const Args& args_;
    mdcast::Consumer*& consumer_;
    uint64_t updates_ = 0;
    bool directory_asked_ = false;
    std::map<uint64_t, uint64_t> per_item_;
};

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = probe::parse_or_exit<Args>("sdk-consumer-probe", argc, argv, parse_args);
    probe::stop_on_signals();

    mdcast::ConsumerOptions options;
    options.servers = mdcast::parse_server_list(args.servers);
    options.user = args.user;
    options.tls = args.tls;
    options.application_id = "sdk-consumer-probe";
    options.heartbeat_interval_ms = args.heartbeat_ms;
    options.heartbeat_timeout_ms = args.heartbeat_timeout_ms;
    options.delivery = args.dispatch ? mdcast::ConsumerOptions::Delivery::kDispatch
                                     : mdcast::ConsumerOptions::Delivery::kIoThread;
    options.dictionary = mdcast::Dictionary::load_installed();
    options.log_level = "info";
    mdcast::Consumer* consumer_ptr = nullptr;
    Printer printer(args, consumer_ptr);
    mdcast::Consumer consumer(options, printer);
    consumer_ptr = &consumer;
    mdcast::View view;
    view.field_names = args.view;
    if (args.snapshot) {
        consumer.snapshot_batch(args.service, args.items, view);
    } else {
        consumer.subscribe_batch(args.service, args.items, view, args.conflate_ms);
    }
    consumer.start();
    const int64_t deadline = monotonic_now() + static_cast<int64_t>(args.duration_s * 1e9);
    while (!probe::stop_requested() && monotonic_now() < deadline) {
        if (args.dispatch) {
            consumer.dispatch(std::chrono::milliseconds(50));
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    consumer.stop();
    const auto stats = consumer.stats();
    std::printf(
        "{\"event\":\"summary\",\"refreshes\":%llu,\"updates\":%llu,\"statuses\":%llu,"
        "\"duplicates_dropped\":%llu,\"catch_ups\":%llu,\"connections\":%llu,"
        "\"connection_losses\":%llu,\"cpu_s\":%.3f,\"t\":%lld}\n",
        static_cast<unsigned long long>(stats.refreshes),
        static_cast<unsigned long long>(stats.updates),
        static_cast<unsigned long long>(stats.statuses),
        static_cast<unsigned long long>(stats.duplicates_dropped),
        static_cast<unsigned long long>(stats.catch_ups),
        static_cast<unsigned long long>(stats.connections),
        static_cast<unsigned long long>(stats.connection_losses), cpu_seconds(),
        static_cast<long long>(monotonic_now()));
    return 0;
}
