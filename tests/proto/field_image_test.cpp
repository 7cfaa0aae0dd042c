#include "proto/field_image.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

FieldEntry int_entry(uint32_t id, int64_t v) {
    return FieldEntry{id, FieldKind::kInt, 0, v, 0, {}};
}

std::vector<uint32_t> ids(const FieldImage& image) {
    std::vector<uint32_t> out;
    for (const auto& slot : image.slots()) out.push_back(slot.id);
    return out;
}

}  // namespace

TEST_CASE("an update replaces fields in place and appends new ones", "[field_image]") {
    wire::FieldList refresh;
    for (uint32_t id : {22u, 25u, 30u}) {
        auto* f = refresh.add_fields();
        f->set_id(id);
        f->set_int_value(id);
    }
    FieldImage image;
    image.assign(refresh);
    const std::vector<FieldEntry> update{int_entry(32, 1000), int_entry(25, 7)};
    image.apply(update);
    CHECK(ids(image) == std::vector<uint32_t>{22, 25, 30, 32});
    CHECK(image.find(25)->integer == 7);
    CHECK(image.find(32)->integer == 1000);
    CHECK(image.find(99) == nullptr);
}

TEST_CASE("a field may change kind, and the last of a repeated id wins", "[field_image]") {
    FieldImage image;
    const std::string text = "hello";
    const std::vector<FieldEntry> update{int_entry(3, 1),
                                         FieldEntry{3, FieldKind::kString, 0, 0, 0, text}};
    image.apply(update);
    REQUIRE(image.size() == 1);
    CHECK(image.find(3)->kind == FieldKind::kString);
    CHECK(image.find(3)->text == "hello");
}

TEST_CASE("to_field_list round-trips every kind and honours a view", "[field_image]") {
    wire::FieldList refresh;
    auto* d = refresh.add_fields();
    d->set_id(22);
    d->mutable_decimal_value()->set_mantissa(10125);
    d->mutable_decimal_value()->set_exponent(-2);
    auto* s = refresh.add_fields();
    s->set_id(3);
    s->set_string_value("VOD.L");
    auto* t = refresh.add_fields();
    t->set_id(5);
    t->set_time_ns(99);
    auto* r = refresh.add_fields();
    r->set_id(3404);
    r->set_double_value(1.5);
    auto* b = refresh.add_fields();
    b->set_id(6);
    b->mutable_blank();
    FieldImage image;
    image.assign(refresh);
    wire::FieldList all;
    image.to_field_list(all);
    CHECK(all.SerializeAsString() == refresh.SerializeAsString());
    const std::vector<uint32_t> view{3, 5};
    wire::FieldList some;
    image.to_field_list(some, &view);
    REQUIRE(some.fields_size() == 2);
    CHECK(some.fields(0).string_value() == "VOD.L");
    CHECK(some.fields(1).time_ns() == 99);
}

TEST_CASE("a merge gives the same image whatever the order of the update's fields",
          "[field_image]") {
    // Reference: each field replaces the value of its id, or is appended.
    std::mt19937 random(13);
    for (int round = 0; round < 200; ++round) {
        FieldImage image;
        std::vector<std::pair<uint32_t, int64_t>> model;
        for (int update = 0; update < 20; ++update) {
            std::vector<FieldEntry> fields;
            const int count = static_cast<int>(random() % 8) + 1;
            uint32_t id = random() % 4 + 1;
            for (int i = 0; i < count; ++i) {
                // Mostly ascending like a publisher's template, sometimes out of order or repeated.
                id = random() % 5 == 0 ? static_cast<uint32_t>(random() % 12 + 1) : id + 1;
                fields.push_back(int_entry(id, static_cast<int64_t>(random())));
            }
            image.apply(fields);
            for (const FieldEntry& f : fields) {
                auto it = std::find_if(model.begin(), model.end(),
                                       [&](const auto& m) { return m.first == f.id; });
                if (it == model.end()) {
                    model.emplace_back(f.id, f.integer);
                } else {
                    it->second = f.integer;
                }
            }
            REQUIRE(image.size() == model.size());
            for (size_t i = 0; i < model.size(); ++i) {
                CHECK(image.slots()[i].id == model[i].first);
                CHECK(image.slots()[i].integer == model[i].second);
            }
        }
    }
}

TEST_CASE("a string field takes each new value whatever its length", "[field_image]") {
    FieldImage image;
    const std::vector<std::string> values{"AAAA",
                                          "BBBB",
                                          "CC",
                                          "",
                                          "",
                                          "DDDDDDDDDDDDDDDDDDDDDDDDDDDD",
                                          "EEEEEEEEEEEEEEEEEEEEEEEEEEEE",
                                          "F"};
    for (const std::string& value : values) {
        const std::vector<FieldEntry> update{int_entry(1, 5),
                                             FieldEntry{2, FieldKind::kString, 0, 0, 0, value}};
        image.apply(update);
        REQUIRE(image.size() == 2);
        CHECK(image.find(2)->kind == FieldKind::kString);
        CHECK(image.find(2)->text == value);
    }
    // Another kind in between, then a string of the old length again.
    image.apply(std::vector<FieldEntry>{int_entry(2, 9)});
    CHECK(image.find(2)->kind == FieldKind::kInt);
    CHECK(image.find(2)->integer == 9);
    image.apply(std::vector<FieldEntry>{FieldEntry{2, FieldKind::kString, 0, 0, 0, "G"}});
    CHECK(image.find(2)->text == "G");
}
