#include "tools/replay/capture_timeline.h"

#include <algorithm>

#include "proto/backbone_packet.h"
#include "tools/capture/capture_file.h"

namespace mdcast::tools {

CaptureTimeline CaptureTimeline::load(const std::vector<std::string>& files, int64_t max_gap_ns) {
    CaptureTimeline timeline;
    for (const std::string& file : files) {
        CaptureReader reader(file);
        CapturedDatagram datagram;
        while (reader.next(datagram)) timeline.add(datagram.time_ns, datagram.payload);
        timeline.counts_.not_udp += reader.skipped();
    }
    timeline.finish(max_gap_ns);
    return timeline;
}

void CaptureTimeline::add(int64_t time_ns, std::span<const uint8_t> datagram) {
    ++counts_.datagrams;
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone) {
        ++counts_.malformed;
        return;
    }
    if (header.type != proto::PacketType::kData) {
        ++counts_.other;
        return;
    }
    stored_.push_back({header.epoch, header.sequence, time_ns, arena_.size(), datagram.size()});
    arena_.insert(arena_.end(), datagram.begin(), datagram.end());
}

// Times are in order here. Differences are taken in unsigned arithmetic: two
// hostile times may be further apart than int64_t holds.
void CaptureTimeline::cut_gaps(std::vector<Stored>& ordered, int64_t max_gap_ns) {
    if (ordered.empty()) return;
    const auto max_gap = static_cast<uint64_t>(std::max<int64_t>(max_gap_ns, 1));
    auto original_before = static_cast<uint64_t>(ordered[0].time_ns);
    for (size_t i = 1; i < ordered.size(); ++i) {
        const auto original = static_cast<uint64_t>(ordered[i].time_ns);
        const uint64_t gap = original - original_before;
        original_before = original;
        if (gap > max_gap) ++counts_.gaps_cut;
        ordered[i].time_ns = static_cast<int64_t>(static_cast<uint64_t>(ordered[i - 1].time_ns) +
                                                  std::min(gap, max_gap));
    }
}

void CaptureTimeline::finish(int64_t max_gap_ns) {
    // Per source in sequence order, the first copy of each sequence first.
    std::stable_sort(stored_.begin(), stored_.end(), [](const Stored& a, const Stored& b) {
        return a.epoch != b.epoch ? a.epoch < b.epoch : a.sequence < b.sequence;
    });
    std::vector<Stored> unique;
    unique.reserve(stored_.size());
    for (const Stored& s : stored_) {
        if (!unique.empty() && unique.back().epoch == s.epoch) {
            if (unique.back().sequence == s.sequence) {
                ++counts_.duplicates;
                continue;
            }
            counts_.missing += s.sequence - unique.back().sequence - 1;
        }
        unique.push_back(s);
    }
    // A packet goes no later than its successor in the same source.
    for (size_t i = unique.size(); i-- > 1;) {
        if (unique[i - 1].epoch == unique[i].epoch) {
            unique[i - 1].time_ns = std::min(unique[i - 1].time_ns, unique[i].time_ns);
        }
    }
    std::stable_sort(unique.begin(), unique.end(),
                     [](const Stored& a, const Stored& b) { return a.time_ns < b.time_ns; });
    cut_gaps(unique, max_gap_ns);
    packets_.clear();
    packets_.reserve(unique.size());
    for (const Stored& s : unique) {
        packets_.push_back({s.time_ns, s.epoch, {arena_.data() + s.offset, s.size}});
    }
    counts_.data_packets = packets_.size();
    stored_.clear();
    stored_.shrink_to_fit();
}

}  // namespace mdcast::tools
