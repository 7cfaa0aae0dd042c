// Tests for tools/client/item_table.h: gap and duplicate detection per item.
#include "item_table.h"

#include <catch2/catch.hpp>

namespace {
using mdcast::tools::check_sequence;
using mdcast::tools::ItemState;
using mdcast::tools::ItemTable;
using mdcast::tools::SequenceOutcome;
}  // namespace

TEST_CASE("updates following the image in order are in order", "[item_table]") {
    ItemState item;
    item.last_seq = 10;
    uint64_t missing = 99;
    for (uint64_t seq = 11; seq <= 20; ++seq) {
        CHECK(check_sequence(item, seq, false, missing) == SequenceOutcome::kInOrder);
        CHECK(missing == 0);
    }
    CHECK(item.last_seq == 20);
}

TEST_CASE("a skip is a gap with the skipped count, and the base moves on", "[item_table]") {
    ItemState item;
    item.last_seq = 5;
    uint64_t missing = 0;
    CHECK(check_sequence(item, 9, false, missing) == SequenceOutcome::kGap);
    CHECK(missing == 3);  // 6, 7, 8
    CHECK(check_sequence(item, 10, false, missing) == SequenceOutcome::kInOrder);
    CHECK(missing == 0);
}

TEST_CASE("a repeated or older sequence is a duplicate and does not move the base",
          "[item_table]") {
    ItemState item;
    item.last_seq = 7;
    uint64_t missing = 0;
    CHECK(check_sequence(item, 7, false, missing) == SequenceOutcome::kDuplicate);
    CHECK(check_sequence(item, 3, false, missing) == SequenceOutcome::kDuplicate);
    CHECK(item.last_seq == 7);
    CHECK(check_sequence(item, 8, false, missing) == SequenceOutcome::kInOrder);
}

TEST_CASE("with a view, skips are expected but duplicates still count", "[item_table]") {
    ItemState item;
    uint64_t missing = 0;
    CHECK(check_sequence(item, 4, true, missing) == SequenceOutcome::kInOrder);
    CHECK(missing == 0);
    CHECK(check_sequence(item, 4, true, missing) == SequenceOutcome::kDuplicate);
}

TEST_CASE("the table keeps items apart and a new image resets the base", "[item_table]") {
    ItemTable table;
    table.on_image(1, "SVC", "A", 100);
    table.on_image(2, "SVC", "B", 5);
    REQUIRE(table.find(1) != nullptr);
    CHECK(table.find(1)->name == "A");
    CHECK(table.find(3) == nullptr);
    uint64_t missing = 0;
    CHECK(check_sequence(*table.find(2), 6, false, missing) == SequenceOutcome::kInOrder);
    CHECK(check_sequence(*table.find(1), 6, false, missing) == SequenceOutcome::kDuplicate);
    table.on_image(1, "SVC", "A", 3);  // re-image after a source reset
    CHECK(check_sequence(*table.find(1), 4, false, missing) == SequenceOutcome::kInOrder);
    table.erase(2);
    CHECK(table.find(2) == nullptr);
    CHECK(table.size() == 1);
}
