#include "tools/capture/backbone_tally.h"

#include <fmt/format.h>

#include "proto/backbone_packet.h"
#include "proto/source_ids.h"
#include "proto/update_codec.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"

namespace mdcast::tools {
namespace {

const proto::FrameTypeSet kHeartbeatTypes{proto::FrameType::kHeartbeat};

// A capture file is hostile input. No distributor sends 2^32 packets in one
// epoch between two that a listener sees, so a jump further than that is a
// forged or corrupt sequence: counted as malformed, never as billions of
// missing packets (and never let the counts wrap around 2^64).
constexpr uint64_t kMaxPlausibleJump = uint64_t{1} << 32;

bool implausible(uint64_t sequence, uint64_t edge) {
    return sequence == UINT64_MAX || (sequence > edge && sequence - edge > kMaxPlausibleJump);
}

// The item id of a data message; 0 when it has none or does not parse.
uint64_t item_of(const proto::Frame& frame) {
    switch (frame.type) {
        case proto::FrameType::kUpdate: {
            proto::UpdateView update;
            return proto::decode_update_header(frame.body, update) ? update.item_id : 0;
        }
        case proto::FrameType::kRefresh: {
            wire::v1::Refresh refresh;
            return refresh.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))
                       ? refresh.item_id()
                       : 0;
        }
        case proto::FrameType::kItemStatus: {
            wire::v1::ItemStatus status;
            return status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))
                       ? status.item_id()
                       : 0;
        }
        default:
            return 0;
    }
}

}  // namespace

void BackboneTally::add(std::span<const uint8_t> datagram) {
    ++counts_.packets;
    counts_.bytes += datagram.size();
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone) {
        ++counts_.malformed;
        return;
    }
    if (header.flags & proto::kPacketFlagSigned) ++counts_.signed_packets;
    if (header.type == proto::PacketType::kHeartbeat) {
        ++counts_.heartbeats;
        proto::PacketMessageIterator messages(datagram, header, kHeartbeatTypes);
        proto::Frame frame;
        wire::v1::Heartbeat heartbeat;
        if (messages.next(frame) != proto::PacketMessageIterator::Result::kFrame ||
            !heartbeat.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
            ++counts_.malformed;
            return;
        }
        SourceTally& source = sources_[header.epoch];
        note_heartbeat(source, heartbeat.next_sequence());
        return;
    }
    if (header.type != proto::PacketType::kData) return;  // control traffic is unicast
    ++counts_.data_packets;
    if (header.flags & proto::kPacketFlagRetransmit) ++counts_.repairs;
    SourceTally& source = sources_[header.epoch];
    if (note_sequence(source, header.sequence)) {
        count_messages(datagram, header);
    }
}

void BackboneTally::count_messages(std::span<const uint8_t> datagram,
                                   const proto::PacketHeader& header) {
    proto::PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    for (uint16_t i = 0; i < header.message_count; ++i) {
        if (messages.next(frame) != proto::PacketMessageIterator::Result::kFrame) {
            ++counts_.malformed;
            return;
        }
        ++counts_.messages;
        switch (frame.type) {
            case proto::FrameType::kRefresh:
                ++counts_.refreshes;
                break;
            case proto::FrameType::kUpdate:
                ++counts_.updates;
                break;
            case proto::FrameType::kItemStatus:
                ++counts_.statuses;
                break;
            case proto::FrameType::kDirectory:
                ++counts_.directories;
                break;
            default:
                break;
        }
        if (const uint64_t item = item_of(frame); item != 0) items_.insert(item);
    }
}

bool BackboneTally::note_sequence(SourceTally& source, uint64_t sequence) {
    const bool first = source.data_packets == 0 && source.next_sequence == 0;
    if (implausible(sequence, first ? sequence : source.next_sequence)) {
        ++counts_.malformed;
        return false;
    }
    if (first) {
        source.first_sequence = sequence;
        source.next_sequence = sequence;
    }
    if (sequence >= source.next_sequence) {
        if (sequence > source.next_sequence) {
            ++source.gaps;
            source.missing += sequence - source.next_sequence;
            source.holes[source.next_sequence] = sequence;
        }
        source.next_sequence = sequence + 1;
        ++source.data_packets;
        return true;
    }
    // Behind the edge: new only when it fills a hole.
    auto hole = source.holes.upper_bound(sequence);
    if (hole == source.holes.begin() || (--hole, sequence >= hole->second)) {
        ++source.duplicates;
        return false;
    }
    const uint64_t from = hole->first;
    const uint64_t to = hole->second;
    source.holes.erase(hole);
    if (from < sequence) source.holes[from] = sequence;
    if (sequence + 1 < to) source.holes[sequence + 1] = to;
    ++source.filled;
    ++source.data_packets;
    return true;
}

// A heartbeat names the next sequence to be sent: packets below it that were
// never seen are a gap at the tail.
void BackboneTally::note_heartbeat(SourceTally& source, uint64_t next_sequence) {
    const bool first = source.data_packets == 0 && source.next_sequence == 0;
    if (implausible(next_sequence, first ? next_sequence : source.next_sequence)) {
        ++counts_.malformed;
        return;
    }
    if (first) {
        source.first_sequence = next_sequence;
        source.next_sequence = next_sequence;
        return;
    }
    if (next_sequence > source.next_sequence) {
        ++source.gaps;
        source.missing += next_sequence - source.next_sequence;
        source.holes[source.next_sequence] = next_sequence;
        source.next_sequence = next_sequence;
    }
}

std::vector<SourceTally> BackboneTally::sources() const {
    std::vector<SourceTally> out;
    for (const auto& [epoch, tally] : sources_) {
        out.push_back(tally);
        out.back().epoch = epoch;
        out.back().source = proto::epoch_source(epoch);
    }
    return out;
}

uint64_t BackboneTally::gaps() const {
    uint64_t total = 0;
    for (const auto& entry : sources_) total += entry.second.gaps;
    return total;
}

uint64_t BackboneTally::missing() const {
    uint64_t total = 0;
    for (const auto& entry : sources_) total += entry.second.missing;
    return total;
}

uint64_t BackboneTally::unfilled() const {
    uint64_t total = 0;
    for (const auto& entry : sources_) total += entry.second.missing - entry.second.filled;
    return total;
}

std::string BackboneTally::json_fields() const {
    const BackboneTallyCounts& c = counts_;
    std::string out = fmt::format(
        "\"packets\":{},\"bytes\":{},\"data_packets\":{},\"heartbeats\":{},\"repairs\":{},"
        "\"signed\":{},\"malformed\":{},\"messages\":{},\"refreshes\":{},\"updates\":{},"
        "\"statuses\":{},\"items\":{},\"gaps\":{},\"missing\":{},\"unfilled\":{},\"sources\":[",
        c.packets, c.bytes, c.data_packets, c.heartbeats, c.repairs, c.signed_packets, c.malformed,
        c.messages, c.refreshes, c.updates, c.statuses, items_.size(), gaps(), missing(),
        unfilled());
    bool first = true;
    for (const SourceTally& s : sources()) {
        out += fmt::format(
            "{}{{\"source\":{},\"epoch\":{},\"first_sequence\":{},\"next_sequence\":{},"
            "\"data_packets\":{},\"duplicates\":{},\"gaps\":{},\"missing\":{},\"filled\":{}}}",
            first ? "" : ",", s.source, s.epoch, s.first_sequence, s.next_sequence, s.data_packets,
            s.duplicates, s.gaps, s.missing, s.filled);
        first = false;
    }
    return out + "]";
}

}  // namespace mdcast::tools
