// Building the Status a client is told, in one line at the call site.
#pragma once

#include <string>

#include "wire/common.pb.h"

namespace mdcast::server {

inline ::mdcast::wire::v1::Status make_status(::mdcast::wire::v1::StreamState stream,
                                              ::mdcast::wire::v1::DataState data,
                                              ::mdcast::wire::v1::StatusCode code,
                                              const std::string& text) {
    ::mdcast::wire::v1::Status status;
    status.set_stream_state(stream);
    status.set_data_state(data);
    status.set_code(code);
    status.set_text(text);
    return status;
}

}  // namespace mdcast::server
