// The application's side of the SDK's logging: a threshold and a handler that
// takes the lines instead of stderr. The SDK logs through spdlog (common/
// logging.h); the handler is an spdlog sink that every SDK logger writes to.
#include "sdk_log.h"

#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <mutex>
#include <ostream>

#include "mdcast/log.h"

namespace mdcast {

namespace {

constexpr std::string_view kLevelNames[] = {"trace", "debug", "info", "warn", "error", "off"};

std::atomic<LogLevel> sdk_level{LogLevel::kWarn};

LogLevel from_spdlog(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
            return LogLevel::kTrace;
        case spdlog::level::debug:
            return LogLevel::kDebug;
        case spdlog::level::info:
            return LogLevel::kInfo;
        case spdlog::level::warn:
            return LogLevel::kWarn;
        case spdlog::level::err:
        case spdlog::level::critical:
            return LogLevel::kError;
        default:
            return LogLevel::kOff;
    }
}

// Hands each line to the application. base_sink's mutex makes the calls one
// at a time, whichever I/O thread logs.
class HandlerSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    explicit HandlerSink(LogHandler handler) : handler_(std::move(handler)) {}

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        line_.assign(msg.logger_name.data(), msg.logger_name.size());
        line_ += ": ";
        line_.append(msg.payload.data(), msg.payload.size());
        try {
            handler_(from_spdlog(msg.level), line_);
        } catch (...) {  // the application's problem; never the I/O thread's
        }
    }
    void flush_() override {}

  private:
    LogHandler handler_;
    std::string line_;
};

}  // namespace

void set_log_handler(LogHandler handler) {
    log::redirect(handler ? std::make_shared<HandlerSink>(std::move(handler)) : nullptr);
}

void set_log_level(LogLevel level) {
    sdk_level.store(level);
    log::set_level(to_string(level), 0);
}

std::string to_string(LogLevel level) {
    const auto index = static_cast<size_t>(level);
    return std::string(index < std::size(kLevelNames) ? kLevelNames[index] : "unknown");
}

std::ostream& operator<<(std::ostream& out, LogLevel level) {
    return out << to_string(level);
}

namespace sdk {

std::shared_ptr<spdlog::logger> logger(const std::string& component,
                                       const std::string& level_option) {
    auto log = log::get(component);
    log->set_level(
        spdlog::level::from_str(level_option.empty() ? to_string(sdk_level.load()) : level_option));
    return log;
}

}  // namespace sdk
}  // namespace mdcast
