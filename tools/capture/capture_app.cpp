#include "tools/capture/capture_app.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "proto/limits.h"

namespace mdcast::tools {
namespace {

constexpr size_t kBatchDatagrams = 64;

}  // namespace

CaptureApp::CaptureApp(EventLoop& loop, CaptureOptions options)
    : loop_(loop),
      options_(std::move(options)),
      batch_(kBatchDatagrams, proto::kMaxDatagramBytes),
      deadline_(loop, [this] { stop("duration reached"); }),
      log_(log::get("capture")) {}

CaptureApp::~CaptureApp() {
    for (auto& group : groups_) {
        if (group->read_event != nullptr) event_free(group->read_event);
    }
}

// Joins every group and opens the first file; error says what failed.
bool CaptureApp::start(std::string& error) {
    try {
        writer_ = std::make_unique<CaptureWriter>(options_.path, options_.max_file_bytes,
                                                  options_.max_files);
        for (const MulticastEndpoint& endpoint : options_.groups) {
            auto group = std::make_unique<Group>();
            group->app = this;
            group->socket = UdpSocket::multicast_receiver(endpoint, options_.receive_buffer_bytes);
            group->socket.enable_receive_timestamps();
            group->address = make_ipv4_address(endpoint.group, endpoint.port);
            group->read_event = event_new(loop_.base(), group->socket.fd(), EV_READ | EV_PERSIST,
                                          &CaptureApp::on_readable, group.get());
            event_add(group->read_event, nullptr);
            log_->info("capturing {}:{} on {}", endpoint.group, endpoint.port,
                       endpoint.interface_address);
            groups_.push_back(std::move(group));
        }
    } catch (const std::exception& e) {
        error = e.what();
        return false;
    }
    started_ns_ = monotonic_ns();
    if (options_.duration_s > 0) {
        deadline_.start_once(
            std::chrono::microseconds(static_cast<int64_t>(options_.duration_s * 1e6)));
    }
    log_->info("writing {}", options_.path);
    return true;
}

void CaptureApp::on_readable(int, short, void* group) {
    auto* g = static_cast<Group*>(group);
    g->app->read_group(*g);
}

// Drains the socket (bounded per callback so several groups share the loop).
void CaptureApp::read_group(Group& group) {
    for (int round = 0; round < 16 && !stopped_; ++round) {
        const size_t received = batch_.receive(group.socket.fd());
        if (received == 0) return;
        if (batch_.kernel_drops() > 0) group.kernel_drops = batch_.kernel_drops();
        for (size_t i = 0; i < received && !stopped_; ++i) {
            CapturedDatagram datagram;
            datagram.time_ns = batch_.receive_time_ns(i);
            if (datagram.time_ns == 0) datagram.time_ns = realtime_ns();
            datagram.source = batch_.source(i);
            datagram.destination = group.address;
            datagram.payload = batch_.datagram(i);
            writer_->write(datagram);
            tally_.add(datagram.payload);
            if (options_.max_packets > 0 && writer_->frames() >= options_.max_packets) {
                stop("packet limit reached");
            }
        }
        if (!writer_->failed().empty()) return stop("write failed");
    }
}

void CaptureApp::stop(const std::string& why) {
    if (stopped_) return;
    stopped_ = true;
    log_->info("stopping: {}", why);
    for (auto& group : groups_) event_del(group->read_event);
    deadline_.stop();
    if (writer_) writer_->close();
    if (writer_ && !writer_->failed().empty()) {
        log_->error("cannot write {}: {}", writer_->failed(), std::strerror(errno));
        exit_code_ = 1;
    }
    print_summary();
    loop_.stop();
}

// A JSON line on stdout (for scripts and tests) and a readable one in the log.
void CaptureApp::print_summary() {
    uint64_t kernel_drops = 0;
    for (const auto& group : groups_) kernel_drops += group->kernel_drops;
    const double elapsed_s = static_cast<double>(monotonic_ns() - started_ns_) / 1e9;
    std::string files;
    for (const std::string& file : writer_->files()) {
        files += (files.empty() ? "\"" : ",\"") + file + "\"";
    }
    std::printf(
        "{\"type\":\"capture_summary\",\"elapsed_s\":%.3f,%s,\"kernel_drops\":%llu,"
        "\"oversized\":%llu,\"file_bytes\":%llu,\"files\":[%s]}\n",
        elapsed_s, tally_.json_fields().c_str(), static_cast<unsigned long long>(kernel_drops),
        static_cast<unsigned long long>(writer_->oversized()),
        static_cast<unsigned long long>(writer_->bytes()), files.c_str());
    std::fflush(stdout);
    const BackboneTallyCounts& c = tally_.counts();
    log_->info(
        "captured {} packets ({} data, {} heartbeats, {} repairs) in {:.3f} s: {} updates, {} "
        "refreshes, {} statuses, {} items; {} gaps ({} packets missing, {} never filled); {} "
        "files",
        c.packets, c.data_packets, c.heartbeats, c.repairs, elapsed_s, c.updates, c.refreshes,
        c.statuses, tally_.items(), tally_.gaps(), tally_.missing(), tally_.unfilled(),
        writer_->files().size());
    for (const SourceTally& s : tally_.sources()) {
        log_->info(
            "source {} epoch {}: sequence {}..{}, {} packets, {} gaps, {} missing, {} "
            "filled later, {} duplicates",
            s.source, s.epoch, s.first_sequence, s.next_sequence, s.data_packets, s.gaps, s.missing,
            s.filled, s.duplicates);
    }
}

}  // namespace mdcast::tools
