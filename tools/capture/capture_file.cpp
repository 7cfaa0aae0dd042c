#include "tools/capture/capture_file.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "proto/limits.h"

namespace mdcast::tools {
namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint8_t kProtocolUdp = 17;
constexpr int kSnapshotBytes = 262144;
constexpr size_t kPcapFileHeaderBytes = 24;
constexpr size_t kPcapRecordHeaderBytes = 16;

void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

uint16_t ipv4_checksum(const uint8_t* header) {
    uint32_t sum = 0;
    for (size_t i = 0; i < kIpv4HeaderBytes; i += 2) sum += get16(header + i);
    while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

// The multicast MAC of an IPv4 group (01:00:5e + its low 23 bits), or a
// locally administered unicast address for anything else.
void destination_mac(const sockaddr_in& destination, uint8_t* out) {
    const uint32_t address = ntohl(destination.sin_addr.s_addr);
    if (IN_MULTICAST(address)) {
        const uint8_t mac[6] = {0x01,
                                0x00,
                                0x5e,
                                static_cast<uint8_t>((address >> 16) & 0x7F),
                                static_cast<uint8_t>(address >> 8),
                                static_cast<uint8_t>(address)};
        std::memcpy(out, mac, 6);
    } else {
        const uint8_t mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
        std::memcpy(out, mac, 6);
    }
}

// IPv4 without options carrying a whole (unfragmented) UDP datagram.
bool parse_ipv4_udp(std::span<const uint8_t> packet, CapturedDatagram& out) {
    if (packet.size() < kIpv4HeaderBytes + kUdpHeaderBytes) return false;
    const uint8_t* ip = packet.data();
    if (ip[0] != 0x45 || ip[9] != kProtocolUdp) return false;
    if ((get16(ip + 6) & 0x3FFF) != 0) return false;  // more fragments or an offset
    const uint16_t total = get16(ip + 2);
    if (total < kIpv4HeaderBytes + kUdpHeaderBytes || total > packet.size()) return false;
    const uint8_t* udp = ip + kIpv4HeaderBytes;
    const uint16_t udp_length = get16(udp + 4);
    if (udp_length < kUdpHeaderBytes || udp_length != total - kIpv4HeaderBytes) return false;
    out.source = sockaddr_in{};
    out.source.sin_family = AF_INET;
    std::memcpy(&out.source.sin_addr.s_addr, ip + 12, 4);
    out.source.sin_port = htons(get16(udp));
    out.destination = sockaddr_in{};
    out.destination.sin_family = AF_INET;
    std::memcpy(&out.destination.sin_addr.s_addr, ip + 16, 4);
    out.destination.sin_port = htons(get16(udp + 2));
    out.payload = packet.subspan(kIpv4HeaderBytes + kUdpHeaderBytes, udp_length - kUdpHeaderBytes);
    return true;
}

}  // namespace

bool build_udp_frame(const CapturedDatagram& datagram, uint16_t ip_id, std::vector<uint8_t>& out) {
    if (datagram.payload.size() > proto::kMaxDatagramBytes) return false;
    out.assign(kFrameOverheadBytes, 0);
    uint8_t* eth = out.data();
    destination_mac(datagram.destination, eth);
    const uint8_t source_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    std::memcpy(eth + 6, source_mac, 6);
    put16(eth + 12, kEtherTypeIpv4);
    uint8_t* ip = eth + kEthernetHeaderBytes;
    ip[0] = 0x45;
    put16(ip + 2,
          static_cast<uint16_t>(kIpv4HeaderBytes + kUdpHeaderBytes + datagram.payload.size()));
    put16(ip + 4, ip_id);
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 1;              // TTL
    ip[9] = kProtocolUdp;
    std::memcpy(ip + 12, &datagram.source.sin_addr.s_addr, 4);
    std::memcpy(ip + 16, &datagram.destination.sin_addr.s_addr, 4);
    put16(ip + 10, ipv4_checksum(ip));
    uint8_t* udp = ip + kIpv4HeaderBytes;
    put16(udp, ntohs(datagram.source.sin_port));
    put16(udp + 2, ntohs(datagram.destination.sin_port));
    put16(udp + 4, static_cast<uint16_t>(kUdpHeaderBytes + datagram.payload.size()));
    out.insert(out.end(), datagram.payload.begin(), datagram.payload.end());
    return true;
}

bool parse_udp_frame(int linktype, std::span<const uint8_t> frame, CapturedDatagram& out) {
    if (linktype == DLT_RAW) return parse_ipv4_udp(frame, out);
    if (linktype != DLT_EN10MB || frame.size() < kEthernetHeaderBytes) return false;
    if (get16(frame.data() + 12) != kEtherTypeIpv4) return false;
    return parse_ipv4_udp(frame.subspan(kEthernetHeaderBytes), out);
}

CaptureWriter::CaptureWriter(std::string path, uint64_t max_file_bytes, uint32_t max_files)
    : path_(std::move(path)), max_file_bytes_(max_file_bytes), max_files_(max_files) {
    handle_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapshotBytes,
                                                   PCAP_TSTAMP_PRECISION_NANO);
    if (handle_ == nullptr) throw std::runtime_error("pcap_open_dead failed");
    open_next();
}

CaptureWriter::~CaptureWriter() {
    close();
    if (handle_ != nullptr) pcap_close(handle_);
}

std::string CaptureWriter::file_name(uint32_t index) const {
    if (index == 0) return path_;
    const size_t slash = path_.rfind('/');
    const size_t dot = path_.rfind('.');
    const bool has_extension =
        dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
    const std::string suffix = "." + std::to_string(index);
    if (!has_extension) return path_ + suffix;
    return path_.substr(0, dot) + suffix + path_.substr(dot);
}

void CaptureWriter::open_next() {
    close();
    const std::string name = file_name(next_index_++);
    dumper_ = pcap_dump_open(handle_, name.c_str());
    if (dumper_ == nullptr) {
        throw std::runtime_error("cannot write " + name + ": " + pcap_geterr(handle_));
    }
    files_.push_back(name);
    file_bytes_ = kPcapFileHeaderBytes;
    total_bytes_ += kPcapFileHeaderBytes;
    if (max_files_ > 0 && files_.size() > max_files_) {
        std::remove(files_.front().c_str());
        files_.erase(files_.begin());
    }
}

void CaptureWriter::write(const CapturedDatagram& datagram) {
    if (!build_udp_frame(datagram, ip_id_++, frame_)) {
        ++oversized_;
        return;
    }
    const uint64_t record = kPcapRecordHeaderBytes + frame_.size();
    if (max_file_bytes_ > 0 && file_bytes_ > kPcapFileHeaderBytes &&
        file_bytes_ + record > max_file_bytes_) {
        open_next();
    }
    pcap_pkthdr header{};
    header.ts.tv_sec = datagram.time_ns / 1'000'000'000;
    header.ts.tv_usec = datagram.time_ns % 1'000'000'000;  // nanoseconds in a NANO capture
    header.caplen = static_cast<bpf_u_int32>(frame_.size());
    header.len = header.caplen;
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &header, frame_.data());
    if (std::ferror(pcap_dump_file(dumper_))) failed_ = files_.back();
    file_bytes_ += record;
    total_bytes_ += record;
    ++frames_;
}

void CaptureWriter::close() {
    if (dumper_ == nullptr) return;
    if (pcap_dump_flush(dumper_) != 0) failed_ = files_.back();
    pcap_dump_close(dumper_);
    dumper_ = nullptr;
}

CaptureReader::CaptureReader(const std::string& path) : path_(path) {
    char error[PCAP_ERRBUF_SIZE] = {};
    handle_ =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, error);
    if (handle_ == nullptr) throw std::runtime_error("cannot read " + path + ": " + error);
    linktype_ = pcap_datalink(handle_);
}

CaptureReader::~CaptureReader() {
    if (handle_ != nullptr) pcap_close(handle_);
}

bool CaptureReader::next(CapturedDatagram& out) {
    for (;;) {
        pcap_pkthdr* header = nullptr;
        const u_char* data = nullptr;
        const int result = pcap_next_ex(handle_, &header, &data);
        if (result == PCAP_ERROR_BREAK) return false;
        if (result != 1) {
            throw std::runtime_error("reading " + path_ + ": " + pcap_geterr(handle_));
        }
        if (header->caplen < header->len ||
            !parse_udp_frame(linktype_, {data, header->caplen}, out)) {
            ++skipped_;
            continue;
        }
        out.time_ns = static_cast<int64_t>(header->ts.tv_sec) * 1'000'000'000 + header->ts.tv_usec;
        return true;
    }
}

}  // namespace mdcast::tools
