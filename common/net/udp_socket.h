// UDP sockets for the backbone: a multicast sender, a multicast receiver, a
// unicast control socket, and batched receive (recvmmsg).
//
// Local mode (the default everywhere) is interface 127.0.0.1, TTL 0, loopback
// on: datagrams are delivered to this host only and never leave it.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mdcast {

struct MulticastEndpoint {
    std::string group;  // IPv4 multicast group, e.g. 239.192.0.1
    uint16_t port = 0;
    std::string interface_address;  // local address of the interface to use
    int ttl = 0;                    // 0: this host only
    bool loopback = true;           // deliver to receivers on this host
};

class UdpSocket {
  public:
    UdpSocket() = default;
    explicit UdpSocket(int fd) : fd_(fd) {}
    ~UdpSocket();
    UdpSocket(UdpSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    UdpSocket& operator=(UdpSocket&& other) noexcept;
    UdpSocket(const UdpSocket&) = delete;
    UdpSocket& operator=(const UdpSocket&) = delete;

    // Each factory throws std::runtime_error naming the address and the failing call.
    // The sender is connected to the group, so send() needs no address.
    static UdpSocket multicast_sender(const MulticastEndpoint& endpoint, int send_buffer_bytes);
    // Also asks the kernel to report its receive-queue drop count (SO_RXQ_OVFL).
    static UdpSocket multicast_receiver(const MulticastEndpoint& endpoint,
                                        int receive_buffer_bytes);
    static UdpSocket unicast(const std::string& address, uint16_t port, int buffer_bytes);

    int fd() const { return fd_; }
    sockaddr_in local_address() const;

    // Each datagram received from now on carries the kernel's CLOCK_REALTIME
    // receive time (SO_TIMESTAMPNS), read by DatagramBatch::receive_time_ns.
    // Throws std::runtime_error when the kernel refuses.
    void enable_receive_timestamps();
    // Lets the kernel hand over a run of equal-size datagrams (a sender's
    // segmentation offload send, or datagrams the kernel coalesced) as one
    // message (UDP_GRO, Linux 5.0+) instead of cutting it into a buffer per
    // datagram. Read with a DatagramBatch made `coalesced`. False when the
    // kernel refuses; the socket then receives one datagram per message.
    bool enable_receive_coalescing();

    // Non-blocking sends. Return false when the datagram was not sent (errno set).
    bool send(std::span<const uint8_t> datagram);
    bool send_to(std::span<const uint8_t> datagram, const sockaddr_in& to);

  private:
    int fd_ = -1;
};

// Receives up to `capacity` messages per call with one recvmmsg and presents
// the datagrams in them one by one, index i = 0 .. receive()'s result - 1.
// With `coalesced` a message from a socket with enable_receive_coalescing() may
// hold a run of datagrams of one size (the last shorter): each message then has
// room for a whole UDP send (64 KiB), and the batch cuts it at the size the
// kernel reports. A run is what its sender sent together, so the work a receive()
// brings is still bounded: `capacity` runs.
class DatagramBatch {
  public:
    DatagramBatch(size_t capacity, size_t max_datagram_bytes, bool coalesced = false);

    // Returns the number of datagrams received (0 when none is waiting, or on
    // error with errno set).
    size_t receive(int fd);
    std::span<const uint8_t> datagram(size_t i) const {
        return {storage_.data() + pieces_[i].offset, pieces_[i].size};
    }
    const sockaddr_in& source(size_t i) const { return sources_[pieces_[i].message]; }
    // True when the datagram is larger than `max_datagram_bytes` or was cut to
    // the buffer size (sender misconfigured).
    bool truncated(size_t i) const { return pieces_[i].truncated; }
    // Datagrams of the last receive() that arrived several to a message.
    size_t coalesced() const { return coalesced_; }
    // Datagrams the kernel dropped on the socket of the last receive() since it
    // opened (SO_RXQ_OVFL); 0 when that receive carried no report. One batch may
    // serve several sockets: a count never carries over from one to another.
    uint64_t kernel_drops() const { return kernel_drops_; }
    // The kernel's receive time (ns since the Unix epoch) of datagram i; 0 unless
    // its socket has enable_receive_timestamps().
    int64_t receive_time_ns(size_t i) const { return receive_times_[pieces_[i].message]; }

  private:
    // One datagram: where it lies in storage_ and which message brought it.
    struct Piece {
        size_t offset;
        uint32_t size;
        uint32_t message;
        bool truncated;
    };
    size_t read_control(size_t i);  // returns the message's segment size (0: one datagram)
    void cut(size_t message, size_t segment);

    size_t max_bytes_;
    size_t message_bytes_;  // each message's buffer
    std::vector<uint8_t> storage_;
    std::vector<struct mmsghdr> headers_;
    std::vector<struct iovec> vectors_;
    std::vector<sockaddr_in> sources_;
    std::vector<uint8_t> control_;  // cmsg space per message
    std::vector<int64_t> receive_times_;
    std::vector<Piece> pieces_;
    size_t coalesced_ = 0;
    uint64_t kernel_drops_ = 0;
};

// `primary`, then one endpoint per "GROUP:PORT" in `extra_groups` on the same
// interface. Throws std::runtime_error naming `key` and the bad entry.
std::vector<MulticastEndpoint> multicast_endpoints(const MulticastEndpoint& primary,
                                                   const std::vector<std::string>& extra_groups,
                                                   const std::string& key);

sockaddr_in make_ipv4_address(const std::string& address, uint16_t port);
std::string format_ipv4(const sockaddr_in& address);

}  // namespace mdcast
