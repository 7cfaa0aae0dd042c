// mdcast-replay: publishes a backbone capture (mdcast-capture's pcap files)
// through the SDK's Publisher API as a broadcast source, at the recorded
// speed, N times it, or as fast as the distributor takes it (--speed 0). The
// order within each item and the images are kept (replay_items.h,
// capture_timeline.h). At the end it prints mdcast-source's pacing report: a
// log line and the source_summary JSON line mdcast-bench reads.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/config/command_line.h"
#include "mdcast/publisher.h"
#include "proto/backbone_packet.h"
#include "proto/field_values.h"
#include "tools/credentials.h"
#include "tools/replay/capture_timeline.h"
#include "tools/replay/replay_items.h"
#include "tools/threaded_tool.h"
#include "update_schedule.h"
#include "wire/common.pb.h"

namespace {

using namespace mdcast;

std::atomic<bool>& g_stop = tools::stop_requested;  // set by SIGINT/SIGTERM

struct Options {
    std::vector<std::string> files;
    std::string distributor = "127.0.0.1:14001";
    std::string service;  // empty: the captured names
    double speed = 1;     // 0: as fast as possible
    int64_t tick_us = 1000;
    int64_t window = 20000;
    double max_gap_s = 10;  // a longer quiet stretch in the capture is cut to this
    bool images_first = false;
    double start_delay_s = 0;
    bool list = false;
    std::string user = "mdcast-replay";
    std::string password_file;
};

class Handler final : public PublisherHandler {
  public:
    void on_service(const std::string& service, bool accepted, const std::string& text) override {
        if (!accepted) {
            std::fprintf(stderr, "mdcast-replay: service %s refused: %s\n", service.c_str(),
                         text.c_str());
            refused = true;
        }
    }
    void on_item_rejected(PublishedItem, const ItemState&) override { rejected.fetch_add(1); }
    std::atomic<bool> refused{false};
    std::atomic<uint64_t> rejected{0};
};

// Paces the timeline: the packet received at capture time T goes out at
// start + (T - first) / speed. Updates that go out more than one tick after
// their time are counted as late (the report's "shortfall").
class Replay {
  public:
    Replay(const Options& o, const tools::CaptureTimeline& timeline, tools::ReplayItems& items,
           Publisher& publisher)
        : o_(o), timeline_(timeline), items_(items), publisher_(publisher) {}

    bool run() {
        started_ns_ = monotonic_ns();
        const int64_t tick_ns = o_.tick_us * 1000;
        for (const tools::TimelinePacket& packet : timeline_.packets()) {
            if (g_stop) return false;
            const int64_t due = due_ns(packet.time_ns);
            const int64_t now = monotonic_ns();
            if (due > now + tick_ns && !sleep_until_due(due)) return false;
            const uint64_t before = items_.counts().updates;
            if (!publish_packet(packet) || !within_window()) return false;
            if (o_.speed > 0 && monotonic_ns() > due + tick_ns) {
                late_ += items_.counts().updates - before;
            }
        }
        return true;
    }

    tools::SourceSummary summary(uint64_t rejected) const {
        tools::SourceSummary s;
        s.items = items_.items();
        s.elapsed_s = static_cast<double>(monotonic_ns() - started_ns_) / 1e9;
        s.sent = items_.counts().updates;
        const double span_s = static_cast<double>(timeline_.last_ns() - timeline_.first_ns()) / 1e9;
        s.target_per_s =
            o_.speed > 0 && span_s > 0 ? static_cast<double>(s.sent) / (span_s / o_.speed) : 0;
        s.shortfall = late_;
        s.stamped = items_.counts().stamped;
        s.rejected = rejected;
        return s;
    }

  private:
    // Sleeps in short slices so that a signal ends a long quiet stretch at once;
    // false when told to stop.
    static bool sleep_until_due(int64_t due) {
        for (int64_t now = monotonic_ns(); now < due; now = monotonic_ns()) {
            if (g_stop) return false;
            std::this_thread::sleep_for(
                std::chrono::nanoseconds(std::min<int64_t>(due - now, 50'000'000)));
        }
        return true;
    }

    // At most --window updates in flight: past that, wait for the distributor to
    // acknowledge them (Publisher::flush). Without it a flat-out replay can fill
    // the SDK's socket output (max_output_bytes) faster than a loaded
    // distributor reads, and the SDK drops the connection.
    bool within_window() {
        const uint64_t published = items_.counts().updates;
        if (published - acknowledged_ < static_cast<uint64_t>(o_.window)) return true;
        if (!publisher_.flush(std::chrono::seconds(30))) {
            std::fprintf(stderr, "mdcast-replay: the distributor acknowledged nothing in 30 s\n");
            return false;
        }
        acknowledged_ = published;
        return true;
    }

    int64_t due_ns(int64_t captured_ns) const {
        if (o_.speed <= 0) return 0;
        return started_ns_ +
               static_cast<int64_t>(static_cast<double>(captured_ns - timeline_.first_ns()) /
                                    o_.speed);
    }

    bool publish_packet(const tools::TimelinePacket& packet) {
        return items_.publish_datagram(packet.epoch, packet.datagram);
    }

    const Options& o_;
    const tools::CaptureTimeline& timeline_;
    tools::ReplayItems& items_;
    Publisher& publisher_;
    uint64_t acknowledged_ = 0;  // updates the distributor has confirmed (flush)
    int64_t started_ns_ = 0;
    uint64_t late_ = 0;
};

void announce_services(const Options& o, const tools::CaptureTimeline& timeline,
                       Publisher& publisher) {
    std::set<std::string> services;
    if (!o.service.empty()) {
        services.insert(o.service);
    } else {
        for (const auto& packet : timeline.packets()) {
            tools::ReplayItems::services_of(packet.datagram, services);
        }
    }
    for (const std::string& service : services) {
        publisher.add_service(service, ServiceMode::kBroadcast);
    }
}

void report(const tools::CaptureTimeline& timeline, const tools::ReplayItems& items,
            const tools::SourceSummary& s) {
    const tools::TimelineCounts& t = timeline.counts();
    const tools::ReplayCounts& c = items.counts();
    std::fprintf(
        stderr,
        "mdcast-replay: sent %llu updates in %.3f s (%.0f/s, target %.0f/s); %llu late; "
        "%llu refreshes, %llu statuses, %zu items (books: %llu refreshes, %llu updates); "
        "skipped %llu updates without an "
        "image, %llu solicited refreshes, %llu infrastructure statuses; capture: %llu "
        "data packets, %llu duplicates, %llu missing, %llu gaps cut to --max-gap; %llu outbox "
        "waits; %llu rejected; %llu refused by the SDK; %llu malformed, %llu messages in parts "
        "refused\n",
        static_cast<unsigned long long>(s.sent), s.elapsed_s,
        s.elapsed_s > 0 ? static_cast<double>(s.sent) / s.elapsed_s : 0.0, s.target_per_s,
        static_cast<unsigned long long>(s.shortfall), static_cast<unsigned long long>(c.refreshes),
        static_cast<unsigned long long>(c.statuses), items.items(),
        static_cast<unsigned long long>(c.book_refreshes),
        static_cast<unsigned long long>(c.book_updates),
        static_cast<unsigned long long>(c.updates_without_image),
        static_cast<unsigned long long>(c.solicited_refreshes),
        static_cast<unsigned long long>(c.infrastructure_statuses),
        static_cast<unsigned long long>(t.data_packets),
        static_cast<unsigned long long>(t.duplicates), static_cast<unsigned long long>(t.missing),
        static_cast<unsigned long long>(t.gaps_cut),
        static_cast<unsigned long long>(c.outbox_waits),
        static_cast<unsigned long long>(s.rejected), static_cast<unsigned long long>(c.refused),
        static_cast<unsigned long long>(c.malformed),
        static_cast<unsigned long long>(c.parts_refused));
}

// Every item's first image before any update, acknowledged by the distributor;
// then --start-delay for consumers to subscribe (what mdcast-bench does).
bool publish_images_first(const Options& o, const tools::CaptureTimeline& timeline,
                          tools::ReplayItems& items, Publisher& publisher) {
    for (const auto& packet : timeline.packets()) {
        if (!items.publish_images(packet.epoch, packet.datagram)) return false;
    }
    if (!publisher.flush(std::chrono::seconds(30))) {
        std::fprintf(stderr, "mdcast-replay: the distributor did not take the images\n");
        return false;
    }
    std::fprintf(stderr, "mdcast-replay: %zu items registered, their images published\n",
                 items.items());
    const int64_t end = monotonic_ns() + static_cast<int64_t>(o.start_delay_s * 1e9);
    while (!g_stop && monotonic_ns() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return !g_stop;
}

// --list: what the capture holds, as one JSON line (for mdcast-bench --replay).
int list_contents(const tools::CaptureTimeline& timeline) {
    std::set<std::string> services;
    std::vector<std::string> names;
    std::set<std::pair<uint64_t, uint64_t>> seen;
    uint64_t updates = 0;
    for (const auto& packet : timeline.packets()) {
        proto::PacketHeader header;
        proto::decode_packet_header(packet.datagram, header);
        proto::PacketMessageIterator messages(packet.datagram, header, proto::kBackboneDataTypes);
        proto::Frame frame;
        wire::v1::Refresh refresh;
        while (messages.next(frame) == proto::PacketMessageIterator::Result::kFrame) {
            if (frame.type == proto::FrameType::kUpdate) ++updates;
            if (frame.type != proto::FrameType::kRefresh ||
                !refresh.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
                !seen.insert({packet.epoch, refresh.item_id()}).second) {
                continue;
            }
            services.insert(refresh.service_name());
            names.push_back(refresh.item_name());
        }
    }
    std::string out = fmt::format(
        "{{\"type\":\"capture_contents\",\"data_packets\":{},\"updates\":{},\"span_s\":{:.6f},"
        "\"services\":[",
        timeline.counts().data_packets, updates,
        static_cast<double>(timeline.last_ns() - timeline.first_ns()) / 1e9);
    std::string separator;
    for (const std::string& service : services)
        out += std::exchange(separator, ",") + "\"" + proto::json_escape(service) + "\"";
    out += "],\"items\":[";
    separator.clear();
    for (const std::string& name : names)
        out += std::exchange(separator, ",") + "\"" + proto::json_escape(name) + "\"";
    std::printf("%s]}\n", out.c_str());
    return 0;
}

int run(const Options& o) {
    const tools::CaptureTimeline timeline =
        tools::CaptureTimeline::load(o.files, static_cast<int64_t>(o.max_gap_s * 1e9));
    if (o.list) return list_contents(timeline);
    std::fprintf(stderr, "mdcast-replay: %llu data packets over %.3f s in the capture\n",
                 static_cast<unsigned long long>(timeline.counts().data_packets),
                 static_cast<double>(timeline.last_ns() - timeline.first_ns()) / 1e9);
    PublisherOptions options;
    options.distributors = parse_server_list(o.distributor);
    options.user = o.user;
    options.application_id = "mdcast-replay";
    std::string error;
    if (!tools::load_password(o.password_file, options.password, error)) {
        throw std::runtime_error(error);
    }
    Handler handler;
    Publisher publisher(options, handler);
    announce_services(o, timeline, publisher);
    publisher.start();
    tools::ReplayItems items(publisher, o.service, g_stop);
    if (o.images_first && !publish_images_first(o, timeline, items, publisher)) {
        publisher.stop();
        return 1;
    }
    Replay replay(o, timeline, items, publisher);
    const bool completed = replay.run();
    const bool flushed = publisher.flush(std::chrono::seconds(30));
    const tools::SourceSummary summary = replay.summary(handler.rejected.load());
    report(timeline, items, summary);
    tools::print_source_summary(summary);
    publisher.stop();
    if (!flushed) std::fprintf(stderr, "mdcast-replay: the distributor did not take everything\n");
    return completed && flushed && !handler.refused ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    // Leading arguments that are not options are the capture files.
    int first_option = 1;
    while (first_option < argc && argv[first_option][0] != '-')
        o.files.push_back(argv[first_option++]);
    std::vector<char*> rest{argv[0]};
    rest.insert(rest.end(), argv + first_option, argv + argc);
    cli::CommandLine command_line(
        "mdcast-replay FILE...",
        "Publishes a backbone capture (mdcast-capture's files, a rotated set in order) to "
        "mdcast-distributor through the SDK's Publisher as a broadcast source: each item's image, "
        "then its updates in their order, at the recorded speed times --speed (0: as fast as the "
        "distributor takes them). Prints mdcast-source's JSON summary on stdout at the end.");
    command_line.option("distributor", &o.distributor, "HOST:PORT", "Distributor publisher port")
        .option("service", &o.service, "NAME",
                "Publish every item in this service (default: the "
                "captured service names)")
        .option("speed", &o.speed, "FACTOR", "1: recorded speed, N: N times it, 0: flat out", 0,
                1e6)
        .option("window", &o.window, "N",
                "At most N updates not yet acknowledged by the distributor (flow control)", 1,
                10'000'000)
        .option("max-gap", &o.max_gap_s, "SECONDS",
                "A quiet stretch in the capture longer than this is cut to it (a clock that "
                "jumped, a broken or hostile file)",
                0.001, 86400)
        .option("tick-us", &o.tick_us, "MICROS", "Pacing tick: later than this counts as late", 10,
                1'000'000)
        .flag("images-first", &o.images_first,
              "Publish every item's first image before anything else, then wait --start-delay")
        .option("start-delay", &o.start_delay_s, "SECONDS",
                "With --images-first: wait this long after the images (consumers subscribe)", 0,
                3600)
        .flag("list", &o.list,
              "Print what the capture holds (JSON: services, items, updates) "
              "and exit")
        .option("user", &o.user, "NAME", "User name for the login")
        .option("password-file", &o.password_file, "FILE",
                "Login password: the first line of FILE (default: $MDCAST_PASSWORD)");
    const auto outcome =
        command_line.parse(static_cast<int>(rest.size()), rest.data(), std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (o.files.empty()) {
        std::cerr << "mdcast-replay: error: no capture file given\n";
        return 2;
    }
    return tools::run_until_stopped("mdcast-replay", [&] { return run(o); });
}
