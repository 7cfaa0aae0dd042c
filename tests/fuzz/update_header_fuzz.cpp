// Differential: the test client's three-field Update decode (tools/client/update_header)
// against libprotobuf. It reads the field list's framing only, so it may take bytes
// protobuf refuses inside the list; but whatever protobuf accepts it must accept,
// with the same item id, sequence, stamp and conflated flag.
#include <google/protobuf/stubs/common.h>

#include <cstdio>
#include <cstdlib>

#include "update_header.h"
#include "wire/common.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static google::protobuf::LogSilencer quiet;
    mdcast::wire::v1::Update theirs;
    mdcast::tools::UpdateHeader ours;
    const bool ours_ok = mdcast::tools::decode_update_header({data, size}, ours);
    if (!theirs.ParseFromArray(data, static_cast<int>(size))) return 0;
    if (!ours_ok || ours.item_id != theirs.item_id() || ours.item_seq != theirs.item_seq() ||
        ours.publish_time_ns != theirs.publish_time_ns() || ours.conflated != theirs.conflated()) {
        std::fprintf(stderr, "update header disagrees with protobuf (accepted: %d)\n", ours_ok);
        std::abort();
    }
    return 0;
}
