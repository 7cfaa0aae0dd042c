// mdcast::IoContext: one I/O thread shared by the Consumers and Publishers
// given it (io_context.h); the SharedLoop behind it is in shared_loop.cpp.
#include "mdcast/io_context.h"

#include <utility>

#include "shared_loop.h"

namespace mdcast {

struct __attribute__((visibility("hidden"))) IoContext::Impl {
    sdk::SharedLoop shared;
};

namespace sdk {

SharedLoop& IoContextAccess::shared(IoContext& context) {
    return context.impl_->shared;
}

}  // namespace sdk

IoContext::IoContext() : impl_(std::make_unique<Impl>()) {}

IoContext::~IoContext() = default;

size_t IoContext::consumers() const {
    return std::as_const(impl_->shared).consumers();
}

size_t IoContext::publishers() const {
    return std::as_const(impl_->shared).publishers();
}

bool IoContext::on_io_thread() const {
    return impl_->shared.on_io_thread();
}

}  // namespace mdcast
