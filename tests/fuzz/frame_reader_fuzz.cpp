// proto/frame_reader: a hostile TCP byte stream, cut into reads of fuzzer-chosen
// sizes. Every frame returned lies inside the buffer, has an accepted type and
// at most the maximum body; an error is final.
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "proto/frame_reader.h"

using namespace mdcast::proto;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    const size_t max_body = 1 + input.byte() * 64u;
    const size_t read_size = 1 + input.byte();
    FrameReader reader(max_body, kClientToServerTypes);
    bool failed = false;
    while (!input.empty()) {
        const auto chunk = input.take(read_size);
        const auto space = reader.prepare(chunk.size());
        if (space.size() < chunk.size()) std::abort();
        std::memcpy(space.data(), chunk.data(), chunk.size());
        reader.commit(chunk.size());
        for (;;) {
            Frame frame;
            const auto result = reader.next(frame);
            if (result == FrameReader::Result::kNeedMore) break;
            if (result == FrameReader::Result::kError) {
                failed = true;
                if (reader.error() == FrameError::kNone) std::abort();
                break;
            }
            if (failed || frame.body.size() > max_body ||
                frame.whole.size() != kFrameHeaderBytes + frame.body.size() ||
                frame.whole.data() + kFrameHeaderBytes != frame.body.data() ||
                !kClientToServerTypes.contains(static_cast<uint16_t>(frame.type)))
                std::abort();
        }
        if (failed) break;
    }
    Frame after;
    if (failed && reader.next(after) != FrameReader::Result::kError) std::abort();
    return 0;
}
