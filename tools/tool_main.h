// The run sequence both load tools share: logging, signals, start, loop.
#pragma once

#include <csignal>
#include <functional>
#include <memory>
#include <string>

#include "common/logging.h"
#include "common/net/event_loop.h"

namespace mdcast::tools {

// `make_app` builds the tool on the loop; the app needs start(error), stop(why)
// and exit_code(). Returns the process exit code.
template <class App>
int run_tool(const std::string& name, const std::string& log_level, int verbosity,
             const std::function<std::unique_ptr<App>(EventLoop&)>& make_app) {
    log::init(name, log_level, verbosity);
    std::signal(SIGPIPE, SIG_IGN);
    EventLoop loop;
    std::unique_ptr<App> app = make_app(loop);
    std::string error;
    if (!app->start(error)) {
        log::get("main")->error("{}", error);
        return 1;
    }
    loop.on_signal(SIGINT, [&] { app->stop("SIGINT"); });
    loop.on_signal(SIGTERM, [&] { app->stop("SIGTERM"); });
    loop.run();
    return app->exit_code();
}

}  // namespace mdcast::tools
