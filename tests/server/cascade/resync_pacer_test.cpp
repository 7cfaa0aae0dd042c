// Tests for server/cascade/resync_pacer.h: after a reconnect an edge asks its
// parent again for every item, at most max_outstanding unanswered at once, the
// image it holds riding along; a parent silent on some names does not stall it.
#include "server/cascade/resync_pacer.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::server::ResyncPacer;

std::vector<ResyncPacer::Entry> entries(int count) {
    std::vector<ResyncPacer::Entry> out;
    for (int i = 0; i < count; ++i) {
        out.push_back({"MDCAST", "I" + std::to_string(i), static_cast<uint64_t>(100 + i),
                       static_cast<uint64_t>(i)});
    }
    return out;
}

TEST_CASE("at most max_outstanding names are asked and not yet answered") {
    ResyncPacer pacer(3);
    pacer.start(entries(5));
    const auto first = pacer.take();
    REQUIRE(first.size() == 3);
    CHECK(first[0].name == "I0");
    CHECK(first[0].item_id == 100);
    CHECK(first[2].item_seq == 2);
    CHECK(pacer.take().empty());  // the window is full
    CHECK(pacer.outstanding() == 3);
    CHECK(pacer.waiting() == 2);
    CHECK(pacer.answered("MDCAST", "I1"));
    CHECK(pacer.take().empty());  // refilled once half the window is answered
    CHECK(pacer.answered("MDCAST", "I0"));
    const auto second = pacer.take();
    REQUIRE(second.size() == 2);
    CHECK(second[0].name == "I3");
    CHECK(second[1].name == "I4");
    CHECK(pacer.active());
}

TEST_CASE("only names this resync asked for count as answers, each once") {
    ResyncPacer pacer(2);
    pacer.start(entries(3));
    pacer.take();
    CHECK_FALSE(pacer.answered("MDCAST", "I2"));  // not asked yet
    CHECK_FALSE(pacer.answered("OTHER", "I0"));
    CHECK(pacer.answered("MDCAST", "I0"));
    CHECK_FALSE(pacer.answered("MDCAST", "I0"));
    CHECK(pacer.answered("MDCAST", "I1"));
    pacer.take();
    CHECK(pacer.answered("MDCAST", "I2"));
    CHECK_FALSE(pacer.active());
}

TEST_CASE("a stall opens the window again, late answers still count") {
    ResyncPacer pacer(2);
    pacer.start(entries(4));
    pacer.take();
    CHECK_FALSE(pacer.progressed());
    pacer.on_stall();
    const auto next = pacer.take();
    REQUIRE(next.size() == 2);
    CHECK(next[0].name == "I2");
    CHECK(pacer.answered("MDCAST", "I0"));  // overdue, answered at last
    CHECK(pacer.progressed());
    CHECK_FALSE(pacer.progressed());  // reported once
    CHECK(pacer.outstanding() == 3);
}

TEST_CASE("a lost link or a new resync drops what was under way") {
    ResyncPacer pacer(2);
    pacer.start(entries(4));
    pacer.take();
    pacer.stop();
    CHECK_FALSE(pacer.active());
    CHECK_FALSE(pacer.answered("MDCAST", "I0"));
    pacer.start(entries(1));
    CHECK(pacer.waiting() == 1);
    CHECK(pacer.take().size() == 1);
}

}  // namespace
