// Sending a loop pass's datagrams in as few system calls as the kernel allows
// (the distributor's backbone). Two ways:
// - sendmmsg: up to 64 datagrams a call, each its own message;
// - UDP segmentation offload (UDP_SEGMENT, Linux 4.18+): a run of datagrams is
//   handed over as one buffer that the kernel, or the NIC, cuts into
//   equal-size datagrams. One call, one route lookup and one buffer instead of
//   one per datagram, and no preemption point between them (sendmmsg yields to
//   a receiver it woke, after every datagram). Equal size needs padding: each
//   datagram of a run but its last is padded with zeros to the run's largest,
//   which only datagrams whose packets allow it (kPacketFlagPadded) may be.
// A kernel, route or socket that refuses the offload turns it off for this
// sender: that run and every later one go by sendmmsg.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <vector>

namespace mdcast {

class DatagramBatchSender {
  public:
    // `fd`: a connected datagram socket, not owned. `segment`: the datagrams
    // may be padded (see above), so use the offload while the kernel takes it.
    DatagramBatchSender(int fd, bool segment) : fd_(fd), segmenting_(segment) {}

    // Sends `datagrams` in order without blocking. Sets sent[i] to 1 for each
    // datagram the kernel took; one it refuses (buffer full, too large: errno
    // kept) is skipped, or with the offload the whole run it was in, and the
    // rest still go. `sent` has one entry per datagram.
    void send(std::span<const std::span<const uint8_t>> datagrams, std::span<uint8_t> sent);

    bool segmenting() const { return segmenting_; }
    // Why the offload was turned off (an errno), 0 while on or never asked for.
    int offload_refusal() const { return offload_refusal_; }
    uint64_t segmented_datagrams() const { return segmented_datagrams_; }
    uint64_t padding_bytes() const { return padding_bytes_; }  // zeros those carried

  private:
    size_t run_length(std::span<const std::span<const uint8_t>> datagrams, size_t& segment) const;
    bool send_segmented(std::span<const std::span<const uint8_t>> run, size_t segment);
    void send_each(std::span<const std::span<const uint8_t>> datagrams, std::span<uint8_t> sent);

    int fd_;
    bool segmenting_;
    int offload_refusal_ = 0;
    uint64_t segmented_datagrams_ = 0;
    uint64_t padding_bytes_ = 0;
    std::vector<iovec> vectors_;  // a run's datagrams and paddings, reused
};

}  // namespace mdcast
