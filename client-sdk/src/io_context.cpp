// mdcast::IoContext: one I/O thread shared by the Consumers given it
// (io_context.h), and the SharedLoop behind it.
#include "mdcast/io_context.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "shared_loop.h"

namespace mdcast {

struct __attribute__((visibility("hidden"))) IoContext::Impl {
    sdk::SharedLoop shared;
};

namespace sdk {

SharedLoop::SharedLoop() {
    thread_.start([this] {
        EventLoop loop(EventLoop::Timers::kCoarse);  // the consumers' timers are all in ms
        loop_ = &loop;
        thread_.run(loop);
        loop_ = nullptr;
    });
}

SharedLoop::~SharedLoop() {
    if (thread_.on_io_thread()) {
        // Joining would wait forever and not joining leaves a thread running
        // code that is being freed: neither is acceptable, so say so and stop.
        std::fputs(
            "mdcast: fatal: the last reference to an IoContext was released on its own I/O "
            "thread (inside a handler); release it on another thread\n",
            stderr);
        std::abort();
    }
    thread_.shutdown([this] { thread_.stop_loop(); });
}

SharedLoop& IoContextAccess::shared(IoContext& context) {
    return context.impl_->shared;
}

}  // namespace sdk

IoContext::IoContext() : impl_(std::make_unique<Impl>()) {}

IoContext::~IoContext() = default;

size_t IoContext::consumers() const {
    return std::as_const(impl_->shared).consumers();
}

bool IoContext::on_io_thread() const {
    return impl_->shared.on_io_thread();
}

}  // namespace mdcast
