// Backbone capture files: pcap through libpcap, nanosecond timestamps, each
// datagram stored as an Ethernet/IPv4/UDP frame so that Wireshark, tshark and
// tcpdump decode the addresses and ports (and tools/wireshark/mdcast.lua the
// payload). Written by mdcast-capture, read by mdcast-replay.
//
// The frames are built here, not captured from a link: the Ethernet source is
// a fixed locally administered address, the destination the group's multicast
// MAC; the IPv4 header carries the datagram's source and group addresses and a
// valid checksum; the UDP checksum is 0 (optional over IPv4).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

struct pcap;
struct pcap_dumper;

namespace mdcast::tools {

constexpr size_t kEthernetHeaderBytes = 14;
constexpr size_t kIpv4HeaderBytes = 20;
constexpr size_t kUdpHeaderBytes = 8;
constexpr size_t kFrameOverheadBytes = kEthernetHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes;

// One UDP datagram as stored in a capture.
struct CapturedDatagram {
    int64_t time_ns = 0;  // receive time, ns since the Unix epoch
    sockaddr_in source{};
    sockaddr_in destination{};
    std::span<const uint8_t> payload;
};

// Appends the Ethernet/IPv4/UDP frame of `datagram` to `out` (cleared first).
// False when the payload is larger than one IPv4 datagram can carry.
bool build_udp_frame(const CapturedDatagram& datagram, uint16_t ip_id, std::vector<uint8_t>& out);

// Finds the UDP datagram in a captured frame of link type `linktype`
// (DLT_EN10MB, or DLT_RAW for bare IPv4). False for anything else: another link
// type or protocol, IPv4 options or fragments, lengths that do not add up.
// `out.payload` points into `frame`; `out.time_ns` is left alone.
bool parse_udp_frame(int linktype, std::span<const uint8_t> frame, CapturedDatagram& out);

// Writes a capture split into files of at most `max_file_bytes` (0: one file),
// keeping at most `max_files` of them (0: all; the oldest is deleted). The
// first file is `path`, the next ones insert .1, .2 ... before the extension
// (cap.pcap, cap.1.pcap, cap.2.pcap). Throws std::runtime_error naming the file
// when one cannot be opened; a failed write (disk full) is reported by failed().
class CaptureWriter {
  public:
    CaptureWriter(std::string path, uint64_t max_file_bytes, uint32_t max_files);
    ~CaptureWriter();
    CaptureWriter(const CaptureWriter&) = delete;
    CaptureWriter& operator=(const CaptureWriter&) = delete;

    void write(const CapturedDatagram& datagram);
    void close();  // flushes and closes the current file; idempotent

    uint64_t frames() const { return frames_; }
    uint64_t bytes() const { return total_bytes_; }  // file bytes, headers included
    uint64_t oversized() const { return oversized_; }
    // The file that could not be written, empty while all is well.
    const std::string& failed() const { return failed_; }
    // Every file written, oldest first, with those deleted by max_files left out.
    const std::vector<std::string>& files() const { return files_; }

  private:
    void open_next();
    std::string file_name(uint32_t index) const;

    std::string path_;
    uint64_t max_file_bytes_;
    uint32_t max_files_;
    uint32_t next_index_ = 0;
    pcap* handle_ = nullptr;
    pcap_dumper* dumper_ = nullptr;
    uint64_t file_bytes_ = 0;
    uint64_t total_bytes_ = 0;
    uint64_t frames_ = 0;
    uint64_t oversized_ = 0;
    uint16_t ip_id_ = 0;
    std::vector<uint8_t> frame_;
    std::vector<std::string> files_;
    std::string failed_;
};

// Reads the UDP datagrams of one capture file in file order, with nanosecond
// timestamps whatever the file's precision. Throws std::runtime_error when the
// file cannot be opened or is not a pcap file libpcap reads.
class CaptureReader {
  public:
    explicit CaptureReader(const std::string& path);
    ~CaptureReader();
    CaptureReader(const CaptureReader&) = delete;
    CaptureReader& operator=(const CaptureReader&) = delete;

    // The next UDP datagram; false at the end of the file. Frames that are not
    // UDP over IPv4 (or are cut short by the snapshot length) are counted in
    // skipped() and passed over. `out.payload` is valid until the next call.
    // Throws std::runtime_error on a read error (a truncated file).
    bool next(CapturedDatagram& out);
    uint64_t skipped() const { return skipped_; }

  private:
    std::string path_;
    pcap* handle_ = nullptr;
    int linktype_ = 0;
    uint64_t skipped_ = 0;
};

}  // namespace mdcast::tools
