// Tests for server/redundancy/switch_queue.h: a switch worked off in bounded
// slices moves every item exactly once, in order; an item updated between
// slices is never delivered twice or out of order; a second switch of the
// same service takes the waiting items to the newest target.
#include "server/redundancy/switch_queue.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

namespace {

using mdcast::server::GroupSwitch;
using mdcast::server::SwitchReason;
using SwitchQueue = mdcast::server::BasicSwitchQueue<uint64_t>;
using Outcome = SwitchQueue::Outcome;

// A step that moves every item it is given, as `moves` says.
template <class Moves>
SwitchQueue::Step counting(Moves moves) {
    return [moves](const GroupSwitch& c, uint64_t id, SwitchQueue::Job& job) {
        job.count(moves(c, id));
    };
}

GroupSwitch change(uint16_t from, uint16_t to, std::string service = "MDCAST") {
    return {std::move(service), from, to, SwitchReason::kServiceDown};
}

std::vector<uint64_t> ids(uint64_t first, uint64_t count) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < count; ++i) out.push_back(first + i);
    return out;
}

}  // namespace

TEST_CASE("a switch in slices moves every item once, in order, a slice at a time") {
    SwitchQueue queue;
    queue.add(change(1, 2), ids(100, 2500), 0);
    CHECK(queue.size() == 2500);
    std::vector<uint64_t> moved;
    const auto step = counting([&](const GroupSwitch& c, uint64_t id) {
        CHECK(c.to == 2);
        moved.push_back(id);
        return Outcome::kMoved;
    });
    size_t slices = 0;
    std::vector<SwitchQueue::Job> finished;
    while (!queue.empty()) {
        const size_t before = moved.size();
        finished = queue.run(1000, step);
        CHECK(moved.size() - before <= 1000);
        ++slices;
        if (!queue.empty()) CHECK(finished.empty());
    }
    CHECK(slices == 3);
    CHECK(moved == ids(100, 2500));
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].moved == 2500);
    CHECK(finished[0].waiting == 0);
    CHECK(finished[0].slices == 3);
    CHECK(queue.empty());
}

TEST_CASE("what became of each item is counted per switch") {
    SwitchQueue queue;
    queue.add(change(1, 2), ids(1, 6), 0);
    const auto finished = queue.run(0, counting([](const GroupSwitch&, uint64_t id) {
                                        return id % 3 == 0   ? Outcome::kWaiting
                                               : id % 3 == 1 ? Outcome::kMoved
                                                             : Outcome::kSkipped;
                                    }));
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].moved == 2);
    CHECK(finished[0].waiting == 2);
}

TEST_CASE("a switch with no subscribed item finishes in the next slice") {
    SwitchQueue queue;
    queue.add(change(1, 2), {}, 0);
    CHECK(queue.empty());
    const auto finished = queue.run(10, counting([](const GroupSwitch&, uint64_t) {
                                        FAIL("no item to move");
                                        return Outcome::kMoved;
                                    }));
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].change.to == 2);
}

// The server's step skips an item already where the switch goes (as here).
TEST_CASE("an item queued again is met again, in order, and moved once") {
    SwitchQueue queue;
    queue.add(change(1, 2), {1, 2, 3}, 0);
    queue.add(change(1, 2), {3, 2, 4}, 0);
    std::vector<uint64_t> moved;
    const auto finished =
        queue.run(0, counting([&](const GroupSwitch&, uint64_t id) {
                      if (std::find(moved.begin(), moved.end(), id) != moved.end())
                          return Outcome::kSkipped;
                      moved.push_back(id);
                      return Outcome::kMoved;
                  }));
    CHECK(moved == std::vector<uint64_t>{1, 2, 3, 4});
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].moved == 4);
}

TEST_CASE("a second switch of the service takes the waiting items to the newest target") {
    SwitchQueue queue;
    queue.add(change(1, 2), {1, 2, 3, 4}, 0);
    std::map<uint64_t, uint16_t> target;
    const auto move = [&](const GroupSwitch& c, uint64_t id) {
        CHECK_FALSE(target.contains(id));
        target[id] = c.to;
        return Outcome::kMoved;
    };
    const auto step = counting(move);
    queue.run(2, step);                        // 1 and 2 moved to distributor 2
    queue.add(change(2, 3), {1, 2}, 0);        // 2 went too: its items (1 and 2 now) follow
    queue.add(change(5, 6, "OTHER"), {9}, 0);  // another service waits its turn
    const auto finished = queue.run(0, counting([&](const GroupSwitch& c, uint64_t id) {
                                        if (c.service == "OTHER") CHECK(id == 9);
                                        target.erase(id);
                                        return move(c, id);
                                    }));
    CHECK(target == std::map<uint64_t, uint16_t>{{1, 3}, {2, 3}, {3, 3}, {4, 3}, {9, 6}});
    REQUIRE(finished.size() == 2);
    CHECK(finished[0].change.service == "MDCAST");
    CHECK(finished[0].change.from == 2);
    CHECK(finished[1].change.service == "OTHER");
}

// Subscribers of an item get the new member's image when it moves, then its
// updates; updates that come between slices reach only the items moved.
TEST_CASE("an item updated mid-switch is delivered neither twice nor out of order") {
    constexpr uint64_t kItems = 50;
    SwitchQueue queue;
    queue.add(change(1, 2), ids(0, kItems), 0);
    std::map<uint64_t, uint64_t> source_seq;              // the new member's sequence per item
    std::map<uint64_t, std::vector<uint64_t>> delivered;  // what the subscriber got, per item
    std::map<uint64_t, bool> moved;
    const auto step = counting([&](const GroupSwitch&, uint64_t id) {
        moved[id] = true;
        delivered[id].push_back(source_seq[id]);  // the refresh: its image, at its sequence
        return Outcome::kMoved;
    });
    for (int round = 0; !queue.empty(); ++round) {
        queue.run(7, step);
        for (uint64_t id = 0; id < kItems; id += 1 + round % 3) {  // updates between slices
            ++source_seq[id];
            if (moved[id]) delivered[id].push_back(source_seq[id]);
        }
    }
    for (uint64_t id = 0; id < kItems; ++id) {
        REQUIRE_FALSE(delivered[id].empty());
        for (size_t i = 1; i < delivered[id].size(); ++i) {
            CHECK(delivered[id][i] == delivered[id][i - 1] + 1);  // no repeat, no gap
        }
        CHECK(delivered[id].back() == source_seq[id]);
    }
}
