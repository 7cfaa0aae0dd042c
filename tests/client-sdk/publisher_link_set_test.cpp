// What the links of a dual-homed publisher share: an interactive item is
// closed for the application only when no distributor wants it, and a flush
// is acknowledged once every link that is up has acknowledged it.
#include "publisher_link_set.h"

#include <catch2/catch.hpp>

using mdcast::sdk::PublisherLinkSet;

TEST_CASE("an item is closed for the application only when no link wants it", "[publisher]") {
    PublisherLinkSet links(2);
    links.on_item_request(0, 7);
    links.on_item_request(1, 7);
    CHECK_FALSE(links.on_item_closed(0, 7));  // distributor 2 still wants it
    CHECK(links.on_item_closed(1, 7));
    CHECK_FALSE(links.on_item_closed(1, 7));  // closed twice: told once
    links.on_item_request(0, 8);
    links.on_item_request(1, 8);
    links.on_link_down(1);  // its distributor asks again after the reconnect
    CHECK(links.on_item_closed(0, 8));
}

TEST_CASE("a flush is acknowledged once every link that is up has acknowledged it", "[publisher]") {
    PublisherLinkSet links(2);
    CHECK(links.on_flush_ack(0, 3) == 0);  // nobody is up: nothing to say yet
    CHECK(links.on_link_up(0) == 3);
    CHECK(links.links_up() == 1);
    CHECK(links.on_link_up(1) == 0);  // a new link has acknowledged nothing
    CHECK(links.on_flush_ack(0, 5) == 0);
    CHECK(links.on_flush_ack(1, 4) == 4);
    CHECK(links.on_link_down(1) == 5);  // a link that is down holds nobody back
    CHECK(links.on_link_down(0) == 0);
    CHECK(links.links_up() == 0);
    CHECK(links.on_link_up(1) == 0);  // tokens only grow: 4 was said already
    CHECK(links.on_flush_ack(1, 6) == 6);
}
