// One side of mdcast-linkshim: an AF_PACKET raw socket on a network interface, in
// promiscuous mode, that reads every frame arriving on it and sends frames out of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mdcast::linkshim {

class PacketPort {
  public:
    // Binds to `interface` (which must exist and be up). Throws std::runtime_error
    // naming the interface and the failing call.
    explicit PacketPort(const std::string& interface);
    ~PacketPort();
    PacketPort(const PacketPort&) = delete;
    PacketPort& operator=(const PacketPort&) = delete;

    // The largest frame read whole (a 64 KiB GSO packet and its header).
    static constexpr size_t kReadCapacity = 65536 + 64;

    enum class Read { kFrame, kTooLarge, kNone };
    // Reads one frame received on the interface into `frame` (the frames sent out of
    // it, ours included, are skipped). kTooLarge: longer than kReadCapacity, discarded
    // (`frame` holds its first bytes); kNone: nothing to read.
    Read read(std::vector<uint8_t>& frame);
    // Sends a frame out of the interface; false (errno set) when the kernel refused it.
    bool send(const std::vector<uint8_t>& frame);

    // Frames the kernel dropped on this socket since the last call (its buffer full).
    uint64_t take_kernel_drops();

    int fd() const { return fd_; }
    const std::string& name() const { return name_; }

  private:
    std::string name_;
    std::vector<uint8_t> buffer_;
    int fd_ = -1;
};

}  // namespace mdcast::linkshim
