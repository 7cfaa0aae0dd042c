// The SDK's loggers and the application's log handler (mdcast/log.h).
#pragma once

#include <memory>
#include <string>

#include "common/logging.h"

namespace mdcast::sdk {

// The logger of one SDK component ("sdk.consumer", "sdk.publisher") at
// `level_option` (ConnectionOptions::log_level) or, when that is empty, at the
// process-wide SDK level (set_log_level(), default warn).
std::shared_ptr<spdlog::logger> logger(const std::string& component,
                                       const std::string& level_option);

}  // namespace mdcast::sdk
