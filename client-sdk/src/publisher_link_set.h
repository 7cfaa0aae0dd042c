// What the links of a dual-homed Publisher (PublisherOptions::publish_to_all)
// have in common, on the I/O thread: which links are up, which interactive
// items each distributor wants, and how far each acknowledged a flush.
//
// Two rules live here. An item is closed for the application only when no
// link wants it any more (a request from any link is passed on, so the
// application publishes the item while one distributor still asks for it).
// A flush is acknowledged once every link that is up has acknowledged it (a
// link that is down holds nobody back; with none up it waits for the first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace mdcast::sdk {

class PublisherLinkSet {
  public:
    explicit PublisherLinkSet(size_t links);

    // Each returns the flush token that every up link has now acknowledged,
    // when that advanced; 0 otherwise.
    uint64_t on_link_up(size_t link);
    // The link's wanted items are forgotten: its distributor asks again.
    uint64_t on_link_down(size_t link);
    uint64_t on_flush_ack(size_t link, uint64_t token);

    void on_item_request(size_t link, uint64_t item);
    // True when no link wants the item any more: tell the application.
    bool on_item_closed(size_t link, uint64_t item);

    size_t links_up() const;
    size_t size() const { return up_.size(); }

  private:
    uint64_t advance();

    std::vector<bool> up_;
    std::vector<uint64_t> acked_;  // the highest flush token each link acknowledged
    std::vector<std::unordered_set<uint64_t>> wanted_;
    uint64_t acked_by_all_ = 0;
};

}  // namespace mdcast::sdk
