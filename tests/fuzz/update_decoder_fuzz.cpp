// Differential: proto/update_codec's hand-written decoder against libprotobuf on
// the same bytes. Any disagreement (one accepts what the other refuses, or the
// values or the re-encoding differ) aborts with what differs.
#include <google/protobuf/stubs/common.h>

#include <cstdio>
#include <cstdlib>

#include "../proto/update_differential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static google::protobuf::LogSilencer quiet;  // invalid UTF-8 is logged by protobuf
    static mdcast::proto::UpdateView view;       // reused, as the server reuses it
    std::string why = mdcast::proto::testing::update_disagreement({data, size}, view);
    if (!why.empty()) {
        std::fprintf(stderr, "update decoder disagrees with protobuf: %s\n", why.c_str());
        std::abort();
    }
    // What protobuf and decode_update accept, the SDK's lazy reading reads alike.
    const bool accepted = mdcast::proto::decode_update({data, size}, view);
    why = accepted ? mdcast::proto::testing::lazy_read_disagreement({data, size}, view) : "";
    if (!why.empty()) {
        std::fprintf(stderr, "lazy field reading disagrees with decode_update: %s\n", why.c_str());
        std::abort();
    }
    return 0;
}
