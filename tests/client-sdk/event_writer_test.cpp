// Tests for client-sdk/src/event_writer.h: what the application sees of a
// refresh, an update and a status; names through the dictionary; and that
// decoding an update into a reused event allocates nothing once warm.
#include "event_writer.h"

#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>

#include "mdcast/dictionary.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Counts every allocation of this test program. The nothrow form is replaced
// too (Catch uses it), so no block is freed by a different allocator than the
// one that made it (AddressSanitizer checks the pairs).
void* operator new(size_t size) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, size_t) noexcept {
    std::free(p);
}

namespace {

using mdcast::Event;
using mdcast::EventType;
using mdcast::FieldKind;
using mdcast::ItemHandle;
using mdcast::detail::EventWriter;
namespace wire = mdcast::wire::v1;

const std::string kService = "MDCAST";
const std::string kItem = "VOD.L";

wire::FieldList sample_fields() {
    wire::FieldList fields;
    auto* bid = fields.add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(10125);
    bid->mutable_decimal_value()->set_exponent(-2);
    auto* name = fields.add_fields();
    name->set_id(3);
    name->set_string_value("VODAFONE GROUP");
    auto* size = fields.add_fields();
    size->set_id(30);
    size->set_int_value(-7);
    auto* mid = fields.add_fields();
    mid->set_id(3404);
    mid->set_double_value(101.5);
    auto* when = fields.add_fields();
    when->set_id(16);
    when->set_time_ns(1'700'000'000'000'000'000);
    auto* blank = fields.add_fields();
    blank->set_id(6);
    blank->mutable_blank();
    return fields;
}

std::shared_ptr<const mdcast::Dictionary> dictionary() {
    return mdcast::Dictionary::parse(
        "22 BID DECIMAL\n3 DSPLY_NAME STRING\n30 BIDSIZE INT\n3404 MID_PRICE DOUBLE\n"
        "16 TRADE_DATE TIME\n6 TRDPRC_1 DECIMAL\n32 ACVOL_1 INT\n");
}

std::string update_bytes(uint64_t seq, const std::string& text) {
    wire::Update update;
    update.set_item_id(77);
    update.set_item_seq(seq);
    update.set_publish_time_ns(1'700'000'000'123'456'789ull);
    auto* bid = update.mutable_fields()->add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(10125 + static_cast<int64_t>(seq));
    bid->mutable_decimal_value()->set_exponent(-2);
    auto* name = update.mutable_fields()->add_fields();
    name->set_id(3);
    name->set_string_value(text);
    return update.SerializeAsString();
}

std::span<const uint8_t> as_bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("a refresh shows the image, its state and every kind of value", "[event_writer]") {
    const auto dict = dictionary();
    wire::Status status;
    status.set_stream_state(wire::STREAM_OPEN);
    status.set_data_state(wire::DATA_SUSPECT);
    status.set_code(wire::STATUS_RECOVERING);
    status.set_text("catching up");
    mdcast::proto::FieldImage image;
    image.assign(sample_fields());
    Event event;
    EventWriter::refresh(event, {ItemHandle{5}, kService, kItem, dict.get()}, image, 41,
                         mdcast::detail::to_item_state(status), false, 99);
    CHECK(event.type() == EventType::kRefresh);
    CHECK(event.handle() == ItemHandle{5});
    CHECK(event.service() == "MDCAST");
    CHECK(event.item() == "VOD.L");
    CHECK(event.sequence() == 41);
    CHECK(event.receive_time_ns() == 99);
    CHECK_FALSE(event.snapshot());
    CHECK(event.state().data == mdcast::DataState::kSuspect);
    CHECK(event.state().code == mdcast::StatusCode::kRecovering);
    CHECK(event.state().text == "catching up");
    REQUIRE(event.fields().size() == 6);
    const auto* bid = event.field("BID");
    REQUIRE(bid != nullptr);
    CHECK(bid->kind == FieldKind::kDecimal);
    CHECK(bid->integer == 10125);
    CHECK(bid->exponent == -2);
    CHECK(bid->to_string() == "101.25");
    CHECK(bid->to_double() == Approx(101.25));
    CHECK(event.field(3)->text == "VODAFONE GROUP");
    CHECK(event.field("BIDSIZE")->integer == -7);
    CHECK(event.field("MID_PRICE")->real == 101.5);
    CHECK(event.field("TRADE_DATE")->kind == FieldKind::kTime);
    CHECK(event.field("TRADE_DATE")->to_string().rfind("2023-11-14T22:13:20", 0) == 0);
    CHECK(event.field("TRDPRC_1")->kind == FieldKind::kBlank);
    CHECK(std::isnan(event.field("TRDPRC_1")->to_double()));
    CHECK(event.field("ACVOL_1") == nullptr);  // known name, not in this event
    CHECK(event.field("NO_SUCH_NAME") == nullptr);
}

TEST_CASE("typed values by field name: number() and text()", "[event_writer]") {
    const auto dict = dictionary();
    mdcast::proto::FieldImage image;
    image.assign(sample_fields());
    Event event;
    EventWriter::refresh(event, {ItemHandle{5}, kService, kItem, dict.get()}, image, 1, {}, false,
                         0);
    CHECK(event.number("BID") == Approx(101.25));
    CHECK(event.text("BID") == "101.25");
    CHECK(event.number("BIDSIZE") == -7);
    CHECK(event.text("DSPLY_NAME") == "VODAFONE GROUP");
    CHECK_FALSE(event.number("DSPLY_NAME"));  // a string is not a number
    CHECK_FALSE(event.number("TRDPRC_1"));    // blank
    CHECK(event.text("TRDPRC_1") == "");
    CHECK_FALSE(event.number("ACVOL_1"));  // in the dictionary, not in this event
    CHECK_FALSE(event.text("ACVOL_1"));
    CHECK_FALSE(event.text("NO_SUCH_NAME"));
}

TEST_CASE("names need a dictionary", "[event_writer]") {
    mdcast::proto::FieldImage image;
    image.assign(sample_fields());
    Event event;
    EventWriter::refresh(event, {ItemHandle{1}, kService, kItem, nullptr}, image, 0, {}, true, 0);
    CHECK(event.snapshot());
    CHECK(event.field(22) != nullptr);
    CHECK(event.field("BID") == nullptr);
}

TEST_CASE("an update shows its sequence, stamp and changed fields", "[event_writer]") {
    const std::string bytes = update_bytes(42, "NEW NAME");
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update(as_bytes(bytes), view));
    Event event;
    EventWriter::update(event, {ItemHandle{5}, kService, kItem, nullptr}, view, 7);
    CHECK(event.type() == EventType::kUpdate);
    CHECK(event.sequence() == 42);
    CHECK(event.publish_time_ns() == 1'700'000'000'123'456'789ull);
    CHECK(event.state().ok());
    REQUIRE(event.fields().size() == 2);
    CHECK(event.field(22)->integer == 10167);
    CHECK(event.field(3)->text == "NEW NAME");
}

TEST_CASE("string values belong to the event, not to the bytes it came from", "[event_writer]") {
    std::string bytes = update_bytes(1, "FIRST VALUE, LONGER THAN SSO");
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update(as_bytes(bytes), view));
    Event event;
    EventWriter::update(event, {ItemHandle{5}, kService, kItem, nullptr}, view, 0);
    std::fill(bytes.begin(), bytes.end(), 'X');
    CHECK(event.field(3)->text == "FIRST VALUE, LONGER THAN SSO");
}

TEST_CASE("an event reused for updates allocates nothing once warm", "[event_writer]") {
    std::vector<std::string> frames;
    for (uint64_t seq = 1; seq <= 1000; ++seq) {
        frames.push_back(update_bytes(seq, "NAME " + std::to_string(seq % 10)));
    }
    mdcast::proto::UpdateView view;
    Event event;
    // As the consumer does it: the header only, then the application reads two
    // fields by id and iterates once. Copying (queued) and borrowing events alike.
    for (bool borrow : {false, true}) {
        const EventWriter::ItemRef at{ItemHandle{5}, kService, kItem, nullptr, borrow};
        const auto receive = [&](const std::string& frame) {
            REQUIRE(mdcast::proto::decode_update_header(as_bytes(frame), view));
            EventWriter::update(event, at, view, 0);
            return event.sequence() + static_cast<uint64_t>(event.field(22)->integer) +
                   event.field(3)->text.size() + event.fields().size();
        };
        for (int warm = 0; warm < 3; ++warm) receive(frames[static_cast<size_t>(warm)]);
        const uint64_t before = g_allocations.load();
        uint64_t checksum = 0;
        for (const auto& frame : frames) checksum += receive(frame);
        const uint64_t allocations = g_allocations.load() - before;
        CHECK(checksum > 500500);
        CHECK(allocations == 0);
    }
}

namespace {

// An update with every kind of field, a repeated id (the first one counts) and
// a value-less entry.
std::string every_kind_update() {
    wire::Update update;
    update.set_item_id(9);
    update.set_item_seq(3);
    *update.mutable_fields() = sample_fields();
    auto* again = update.mutable_fields()->add_fields();
    again->set_id(22);
    again->set_int_value(1);
    auto* empty_value = update.mutable_fields()->add_fields();
    empty_value->set_id(40);
    auto* utf8 = update.mutable_fields()->add_fields();
    utf8->set_id(1000);
    utf8->set_string_value("Z\xc3\xbcrich \xe2\x82\xac");
    auto* big = update.mutable_fields()->add_fields();
    big->set_id(70000);
    big->set_int_value(INT64_MIN);
    return update.SerializeAsString();
}

void check_same(const mdcast::FieldValue& a, const mdcast::FieldValue& b) {
    INFO("field " << a.id);
    CHECK(a.id == b.id);
    CHECK(a.kind == b.kind);
    CHECK(a.exponent == b.exponent);
    CHECK(a.integer == b.integer);
    CHECK(std::bit_cast<uint64_t>(a.real) == std::bit_cast<uint64_t>(b.real));
    CHECK(a.text == b.text);
    CHECK(a.to_string() == b.to_string());
}

}  // namespace

TEST_CASE("lazy decoding returns exactly what eager decoding did, for every field type",
          "[event_writer]") {
    const std::string bytes = every_kind_update();
    mdcast::proto::UpdateView eager_view, lazy_view;
    REQUIRE(mdcast::proto::decode_update(as_bytes(bytes), eager_view));
    REQUIRE(mdcast::proto::decode_update_header(as_bytes(bytes), lazy_view));
    REQUIRE(lazy_view.fields.empty());
    Event eager;
    EventWriter::update(eager, {ItemHandle{1}, kService, kItem, nullptr}, eager_view, 0);
    REQUIRE(eager.fields().size() == 10);
    constexpr uint32_t ids[] = {22, 3, 30, 3404, 16, 6, 40, 1000, 70000, 31, 0};
    for (bool borrow : {false, true}) {
        for (bool iterate_first : {false, true}) {
            INFO("borrow " << borrow << " iterate first " << iterate_first);
            Event lazy;
            EventWriter::update(lazy, {ItemHandle{1}, kService, kItem, nullptr, borrow}, lazy_view,
                                0);
            CHECK(lazy.sequence() == 3);
            if (iterate_first) REQUIRE(lazy.fields().size() == eager.fields().size());
            for (uint32_t id : ids) {
                const auto* want = eager.field(id);
                const auto* got = lazy.field(id);
                REQUIRE((want == nullptr) == (got == nullptr));
                if (want) check_same(*want, *got);
            }
            REQUIRE(lazy.fields().size() == eager.fields().size());
            for (size_t i = 0; i < eager.fields().size(); ++i) {
                check_same(eager.fields()[i], lazy.fields()[i]);
            }
        }
    }
    CHECK(eager.field(22)->kind == FieldKind::kDecimal);  // the first of the repeated id
    CHECK(eager.field(40)->kind == FieldKind::kBlank);    // no value member
}

TEST_CASE("fields looked up one by one stay valid for the whole handler call", "[event_writer]") {
    wire::Update update;
    update.set_item_id(1);
    update.set_item_seq(1);
    for (uint32_t id = 1; id <= 20; ++id) {
        auto* f = update.mutable_fields()->add_fields();
        f->set_id(id);
        f->set_string_value("value " + std::to_string(id) + " longer than the small buffer");
    }
    const std::string bytes = update.SerializeAsString();
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update_header(as_bytes(bytes), view));
    Event event;
    EventWriter::update(event, {ItemHandle{1}, kService, kItem, nullptr}, view, 0);
    std::vector<const mdcast::FieldValue*> seen;
    for (uint32_t id = 20; id >= 1; --id) seen.push_back(event.field(id));  // past the slots
    // Asked again, a field gives the same value as the first time: the lazy
    // lookups' (the first eight) and the decoded ones' alike.
    for (uint32_t id = 20; id >= 1; --id) {
        REQUIRE(event.field(id) != nullptr);
        CHECK(event.field(id)->text == seen[20 - id]->text);
    }
    CHECK(event.fields().size() == 20);
    for (uint32_t id = 20; id >= 1; --id) {
        const auto* f = seen[20 - id];
        REQUIRE(f != nullptr);
        CHECK(f->id == id);
        CHECK(f->text == "value " + std::to_string(id) + " longer than the small buffer");
    }
}

TEST_CASE("a malformed field list ends the fields early, never reads past them", "[event_writer]") {
    std::string bytes = update_bytes(5, "TRUNCATED NAME");
    mdcast::proto::UpdateView view;
    REQUIRE(mdcast::proto::decode_update_header(as_bytes(bytes), view));
    // Cut the last entry short inside the field list: the header still parses.
    const auto list = view.field_bytes;
    std::string cut(reinterpret_cast<const char*>(list.data()), list.size() - 3);
    view.field_bytes = as_bytes(cut);
    Event event;
    EventWriter::update(event, {ItemHandle{1}, kService, kItem, nullptr}, view, 0);
    CHECK(event.field(22) != nullptr);
    CHECK(event.field(3) == nullptr);
    CHECK(event.fields().size() == 1);
}

TEST_CASE("SDK status codes never go on the wire", "[event_writer]") {
    wire::Status out;
    mdcast::detail::to_wire_status(
        mdcast::ItemState{mdcast::StreamState::kClosed, mdcast::DataState::kSuspect,
                          mdcast::StatusCode::kConnectionLost, "x"},
        out);
    CHECK(out.code() == wire::STATUS_NONE);
    CHECK(out.stream_state() == wire::STREAM_CLOSED);
    mdcast::detail::to_wire_status(
        mdcast::ItemState{mdcast::StreamState::kOpen, mdcast::DataState::kOk,
                          mdcast::StatusCode::kNotFound, ""},
        out);
    CHECK(out.code() == wire::STATUS_NOT_FOUND);
    CHECK(mdcast::detail::to_item_state(out).code == mdcast::StatusCode::kNotFound);
}

TEST_CASE("a directory lists every service", "[event_writer]") {
    wire::Directory directory;
    auto* a = directory.add_services();
    a->set_service_id(1);
    a->set_name("MDCAST");
    a->set_state(wire::SERVICE_UP);
    a->set_mode(wire::SERVICE_BROADCAST);
    a->set_item_count(10);
    auto* b = directory.add_services();
    b->set_service_id(2);
    b->set_name("ON_DEMAND");
    b->set_state(wire::SERVICE_DOWN);
    b->set_mode(wire::SERVICE_INTERACTIVE);
    Event event;
    EventWriter::directory(event, directory);
    REQUIRE(event.services().size() == 2);
    CHECK(event.services()[0].up);
    CHECK(event.services()[0].item_count == 10);
    CHECK(event.services()[1].name == "ON_DEMAND");
    CHECK_FALSE(event.services()[1].up);
    CHECK(event.services()[1].mode == mdcast::ServiceMode::kInteractive);
}

// An update written over an event that held an update takes a shorter path
// than over any other event (it resets only what an update changes): whatever
// came before, the event reads exactly as one written fresh.
TEST_CASE("an update reads the same whatever the event held before", "[event_writer]") {
    const std::string lazy_bytes = update_bytes(8, "LAZY NAME");
    const std::string eager_bytes = update_bytes(9, "EAGER NAME, LONGER THAN SSO");
    const std::string first_bytes = update_bytes(7, "FIRST");  // the views point into these
    const std::string other_service = "OTHER", other_item = "BT.L";
    const auto dict = dictionary();
    mdcast::proto::UpdateView lazy, eager, first;
    REQUIRE(mdcast::proto::decode_update_header(as_bytes(lazy_bytes), lazy));
    REQUIRE(mdcast::proto::decode_update(as_bytes(eager_bytes), eager));
    REQUIRE(mdcast::proto::decode_update_header(as_bytes(first_bytes), first));
    const EventWriter::ItemRef at{ItemHandle{5}, kService, kItem, dict.get(), true};
    const EventWriter::ItemRef before_at{ItemHandle{6}, other_service, other_item, nullptr, true};
    mdcast::proto::FieldImage image;
    image.assign(sample_fields());
    mdcast::ItemState suspect;
    suspect.data = mdcast::DataState::kSuspect;
    suspect.text = "stale";
    // What came before: an update read every way, a refresh, a status, a queued (copied) update.
    constexpr int kBefores = 5;
    const auto before = [&](Event& e, int which) {
        switch (which) {
            case 0:
                EventWriter::update(e, before_at, first, 1);
                (void)e.field(22);
                (void)e.fields();
                return;
            case 1:
                EventWriter::update(e, before_at, eager, 1);
                (void)e.field(3);
                return;
            case 2:
                return EventWriter::refresh(e, before_at, image, 3, suspect, true, 1);
            case 3:
                return EventWriter::status(e, before_at, suspect, 1);
            default:
                return EventWriter::update(
                    e, {ItemHandle{6}, other_service, other_item, nullptr, false}, first, 1);
        }
    };
    for (const mdcast::proto::UpdateView* view : {&lazy, &eager}) {
        for (int b = 0; b < kBefores; ++b) {
            INFO("before #" << b << (view == &lazy ? ", lazy" : ", eager"));
            Event fresh, reused;
            EventWriter::update(fresh, at, *view, 11);
            before(reused, b);
            EventWriter::update(reused, at, *view, 11);
            CHECK(reused.type() == EventType::kUpdate);
            CHECK(reused.handle() == fresh.handle());
            CHECK(reused.service() == kService);
            CHECK(reused.item() == kItem);
            CHECK(reused.sequence() == fresh.sequence());
            CHECK(reused.publish_time_ns() == fresh.publish_time_ns());
            CHECK(reused.receive_time_ns() == 11);
            CHECK_FALSE(reused.snapshot());
            CHECK_FALSE(reused.conflated());
            CHECK(reused.state().ok());
            CHECK(reused.state().text.empty());
            CHECK(reused.number("BID") == fresh.number("BID"));
            REQUIRE(reused.field(3) != nullptr);
            CHECK(reused.field(3)->text == fresh.field(3)->text);
            CHECK(reused.field(30) == nullptr);
            REQUIRE(reused.fields().size() == fresh.fields().size());
            for (size_t i = 0; i < fresh.fields().size(); ++i)
                check_same(reused.fields()[i], fresh.fields()[i]);
        }
    }
}
