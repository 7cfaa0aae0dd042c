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

    // Non-blocking sends. Return false when the datagram was not sent (errno set).
    bool send(std::span<const uint8_t> datagram);
    bool send_to(std::span<const uint8_t> datagram, const sockaddr_in& to);

  private:
    int fd_ = -1;
};

// Receives up to `capacity` datagrams per call with one recvmmsg.
class DatagramBatch {
  public:
    DatagramBatch(size_t capacity, size_t max_datagram_bytes);

    // Returns the number received (0 when none is waiting, or on error with errno set).
    size_t receive(int fd);
    std::span<const uint8_t> datagram(size_t i) const;
    const sockaddr_in& source(size_t i) const { return sources_[i]; }
    // True when the datagram was cut to the buffer size (sender misconfigured).
    bool truncated(size_t i) const;
    // Datagrams the kernel dropped on the socket of the last receive() since it
    // opened (SO_RXQ_OVFL); 0 when that receive carried no report. One batch may
    // serve several sockets: a count never carries over from one to another.
    uint64_t kernel_drops() const { return kernel_drops_; }
    // The kernel's receive time (ns since the Unix epoch) of datagram i; 0 unless
    // its socket has enable_receive_timestamps().
    int64_t receive_time_ns(size_t i) const { return receive_times_[i]; }

  private:
    void read_control(size_t i);

    size_t max_bytes_;
    std::vector<uint8_t> storage_;
    std::vector<struct mmsghdr> headers_;
    std::vector<struct iovec> vectors_;
    std::vector<sockaddr_in> sources_;
    std::vector<uint8_t> control_;  // cmsg space per datagram
    std::vector<int64_t> receive_times_;
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
