// The server's stateful backbone receiver (server/backbone/backbone_receiver, with its
// per-distributor LossRecovery) fed a sequence of hostile datagrams at
// fuzzer-chosen times. Each input is a list of records: an op byte (bit 0: give
// the datagram a well-formed header prefix, magic/version/payload length, so the
// fuzzer spends its time on epochs, sequences and messages; bit 1: the datagram
// comes to the control socket, from 127.0.0.1:9, the control address the seeds'
// heartbeats announce; bits 2-7: how far the clock moves, in 200 us steps) and a
// length-prefixed datagram. A fresh receiver
// per input, on a private group and port; control packets it would send (NAKs,
// probes) are dropped by its loss injector, so nothing leaves the process.
#include <arpa/inet.h>
#include <event2/event.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "fuzz_input.h"
#include "proto/update_codec.h"
#include "server/backbone/backbone_receiver.h"

using namespace mdcast;

namespace {

class Handler final : public server::Upstream::Handler {
  public:
    void on_upstream_message(uint16_t, const proto::Frame& frame) override {
        if (!proto::kBackboneDataTypes.contains(static_cast<uint16_t>(frame.type))) std::abort();
        if (frame.type == proto::FrameType::kUpdate) (void)proto::decode_update(frame.body, view_);
    }
    void on_source_loss(uint16_t, const std::string& what) override {
        if (what.empty()) std::abort();
    }
    void on_source_reset(uint16_t, uint64_t previous, uint64_t epoch) override {
        if (previous == epoch) std::abort();
    }
    void on_source_ready(uint16_t) override {}
    void on_source_silent(uint16_t, bool) override {}
    void on_source_answer(uint16_t, const proto::Frame& frame) override {
        if (frame.type != proto::FrameType::kItemStatus) std::abort();
    }
    void on_source_post_ack(uint16_t, const wire::v1::PostAck& ack) override {
        if (ack.text().size() > 1 << 16) std::abort();  // within the datagram it came in
    }

  private:
    proto::UpdateView view_;
};

server::BackboneReceiver::Settings settings() {
    server::BackboneReceiver::Settings s;
    s.groups.push_back({"239.255.91.17", 0, "127.0.0.1", 0, true});
    s.max_sources = 4;
    s.recovery.max_buffered_bytes = 1 << 20;
    s.recovery.max_gap_packets = 1000;
    s.control_send_loss.rate = 1.0;  // never send: the control address is the fuzzer's
    return s;
}

// Magic, version and payload length as a sender writes them; the rest is the fuzzer's.
void fix_header(std::vector<uint8_t>& datagram) {
    if (datagram.size() < proto::kPacketHeaderBytes) return;
    const uint32_t magic = htonl(proto::kPacketMagic);
    const uint32_t payload =
        htonl(static_cast<uint32_t>(datagram.size() - proto::kPacketHeaderBytes));
    std::memcpy(datagram.data(), &magic, 4);
    datagram[4] = proto::kPacketVersion;
    std::memcpy(datagram.data() + 28, &payload, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool quiet = [] {
        log::set_level("off", 0);
        return true;
    }();
    (void)quiet;
    EventLoop loop;
    Handler handler;
    server::BackboneReceiver receiver(loop, settings(), handler);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    from.sin_port = htons(9);
    int64_t now = monotonic_ns();
    fuzz::FuzzInput input(data, size);
    std::vector<uint8_t> datagram;
    while (!input.empty()) {
        const uint8_t op = input.byte();
        const auto record = input.record();
        datagram.assign(record.begin(), record.end());
        if (op & 1) fix_header(datagram);
        now += int64_t{op >> 2} * 200'000;
        if (op & 2) {
            receiver.handle_control_reply(datagram, from, now);
        } else {
            receiver.handle_datagram(datagram, from, false, now);
        }
        receiver.schedule_naks();
        event_base_loop(loop.base(), EVLOOP_NONBLOCK);
    }
    return 0;
}
