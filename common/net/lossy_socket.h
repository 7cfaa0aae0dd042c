// A UdpSocket with test loss (testing.loss.*) applied at its edge, so the code
// that reads and writes it never sees the injection: what is dropped on
// receive never reaches the reader, a duplicate is handed over twice, a
// reordered datagram after the one behind it; what is dropped on send is lost
// on the way and counts as sent. With inactive settings it is the socket
// itself at the cost of one branch a datagram.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "common/net/loss_injector.h"
#include "common/net/udp_socket.h"

namespace mdcast {

class LossySocket {
  public:
    LossySocket(UdpSocket socket, const LossSettings& receive_loss, const LossSettings& send_loss)
        : socket_(std::move(socket)), receive_loss_(receive_loss), send_loss_(send_loss) {}

    int fd() const { return socket_.fd(); }
    UdpSocket& socket() { return socket_; }

    // Reads one batch from the socket and calls deliver(i) for each datagram i
    // of `batch` as receive-side loss lets it through. Returns the datagrams read.
    template <class Deliver>
    size_t receive(DatagramBatch& batch, Deliver&& deliver) {
        const size_t n = batch.receive(socket_.fd());
        if (!receive_loss_.active()) {
            for (size_t i = 0; i < n; ++i) deliver(i);
            return n;
        }
        for (size_t i = 0; i < n; ++i) {
            if (i + 1 < n && receive_loss_.reorder()) {  // the next datagram overtakes this one
                pass(i + 1, deliver);
                pass(i++, deliver);
                continue;
            }
            pass(i, deliver);
            if (receive_loss_.duplicate()) pass(i, deliver);
        }
        return n;
    }

    // Non-blocking send; false when the kernel refused (errno set). A datagram
    // the send-side loss drops is reported sent.
    bool send_to(std::span<const uint8_t> datagram, const sockaddr_in& to) {
        return send_loss_.drop() || socket_.send_to(datagram, to);
    }

    bool receive_loss_active() const { return receive_loss_.active(); }
    bool send_loss_active() const { return send_loss_.active(); }
    // Datagrams dropped by the injection, both directions.
    uint64_t injected_drops() const { return receive_loss_.dropped() + send_loss_.dropped(); }

  private:
    template <class Deliver>
    void pass(size_t i, Deliver& deliver) {
        if (!receive_loss_.drop()) deliver(i);
    }

    UdpSocket socket_;
    LossInjector receive_loss_;
    LossInjector send_loss_;
};

}  // namespace mdcast
