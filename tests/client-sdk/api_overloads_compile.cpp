// Compile test of the Consumer's request overloads (tests/client-sdk/tests.cmake):
// built with MDCAST_BAD unset, every call below must compile without a warning;
// with MDCAST_BAD=N, the compiler must refuse call N as a deleted function. It
// guards the mistake of issue 18: subscribe("S", {"A", "B"}) compiled as
// std::string("A", "B"), an iterator pair reading past "A".
#include <mdcast/consumer.h>

#include <string>
#include <vector>

void requests(mdcast::Consumer& consumer) {
    const std::string service = "MDCAST";
    const std::string item = "VOD.L";
    const std::vector<std::string> items{"VOD.L", "BARC.L"};
    [[maybe_unused]] mdcast::ItemHandle one = consumer.subscribe("MDCAST", "VOD.L");
    one = consumer.subscribe(service, item, {.field_names = {"BID", "ASK"}});
    one = consumer.snapshot("MDCAST", "VOD.L", mdcast::View{{22, 25}, {}});
    [[maybe_unused]] std::vector<mdcast::ItemHandle> many =
        consumer.subscribe_batch("MDCAST", {"VOD.L", "BARC.L"});
    many = consumer.subscribe_batch(service, items, {.field_names = {"BID"}});
    many = consumer.snapshot_batch("MDCAST", {"VOD.L", "BARC.L", "IBM.N"});
    many = consumer.snapshot_batch(service, {item});
#if MDCAST_BAD == 1
    consumer.subscribe("MDCAST", {"VOD.L", "BARC.L"});
#elif MDCAST_BAD == 2
    consumer.snapshot("MDCAST", {"VOD.L", "BARC.L"});
#elif MDCAST_BAD == 3
    consumer.subscribe("MDCAST", {"VOD.L"});
#endif
}
