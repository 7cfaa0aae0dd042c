// mdcast-capture: a passive listener on the backbone. It joins the groups as a
// server does (UdpSocket::multicast_receiver, batched reads) but sends
// nothing — no NAKs, no image requests — and writes every datagram it
// receives, stamped with the kernel's receive time, to a rotating pcap
// capture (capture_file.h). It stops after --duration, --max-packets or on
// SIGINT/SIGTERM and prints what it saw (backbone_tally.h).
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/udp_socket.h"
#include "tools/capture/backbone_tally.h"
#include "tools/capture/capture_file.h"

namespace mdcast::tools {

struct CaptureOptions {
    std::vector<MulticastEndpoint> groups;
    std::string path;
    uint64_t max_file_bytes = 0;  // 0: one file
    uint32_t max_files = 0;       // 0: keep every file
    double duration_s = 0;        // 0: until a signal
    uint64_t max_packets = 0;     // 0: no limit
    int receive_buffer_bytes = 8 << 20;
};

class CaptureApp {
  public:
    CaptureApp(EventLoop& loop, CaptureOptions options);
    ~CaptureApp();

    bool start(std::string& error);
    void stop(const std::string& why);
    int exit_code() const { return exit_code_; }

  private:
    struct Group {
        CaptureApp* app;
        UdpSocket socket;
        sockaddr_in address{};
        event* read_event = nullptr;
        uint64_t kernel_drops = 0;  // SO_RXQ_OVFL: the socket's count since it opened
    };
    static void on_readable(int, short, void* group);
    void read_group(Group& group);
    void print_summary();

    EventLoop& loop_;
    CaptureOptions options_;
    std::vector<std::unique_ptr<Group>> groups_;
    std::unique_ptr<CaptureWriter> writer_;
    DatagramBatch batch_;
    BackboneTally tally_;
    Timer deadline_;
    int64_t started_ns_ = 0;
    bool stopped_ = false;
    int exit_code_ = 0;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::tools
