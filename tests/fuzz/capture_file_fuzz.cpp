// The parts of mdcast-capture / mdcast-replay that read capture files by
// themselves (libpcap reads the file format): the Ethernet/IPv4/UDP frame
// parser, then the datagrams it finds through the capture tally and the replay
// timeline. Input: records, each a link-type selector byte and a frame.
#include <pcap/pcap.h>

#include <cstdlib>

#include "fuzz_input.h"
#include "tools/capture/backbone_tally.h"
#include "tools/capture/capture_file.h"
#include "tools/replay/capture_timeline.h"

using namespace mdcast::tools;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    BackboneTally tally;
    CaptureTimeline timeline;
    int64_t time_ns = 0;
    while (!input.empty()) {
        const int linktype = (input.byte() & 1) ? DLT_RAW : DLT_EN10MB;
        const std::span<const uint8_t> frame = input.record();
        CapturedDatagram datagram;
        if (!parse_udp_frame(linktype, frame, datagram)) continue;
        if (datagram.payload.data() < frame.data() ||
            datagram.payload.data() + datagram.payload.size() > frame.data() + frame.size()) {
            std::abort();
        }
        tally.add(datagram.payload);
        timeline.add(time_ns += 1000, datagram.payload);
    }
    timeline.finish(10 * 1000 * 1000 * 1000LL);  // mdcast-replay's default --max-gap
    if (tally.unfilled() > tally.missing()) std::abort();
    (void)tally.json_fields();
    return 0;
}
