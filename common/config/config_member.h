// How a schema row reaches its value inside the config struct: a member pointer
// (&ServerConfig::clients_port), or a chain of them into a component's settings struct
// held in the config, so that the row binds straight into what the component reads and
// no function copies the keys over one by one:
//   s.integer("auth.cache_ttl_s", config::nested(&C::auth, &auth::AuthSettings::verifier,
//                                                &auth::VerifierSettings::cache_ttl_s), ...);
#pragma once

namespace mdcast::config {

// outer reaches a struct (a member pointer or another Nested), inner a member of it.
template <class Outer, class Inner>
struct Nested {
    Outer outer;
    Inner inner;
};

template <class Outer, class Inner>
constexpr Nested<Outer, Inner> nested(Outer outer, Inner inner) {
    return {outer, inner};
}

template <class Outer, class Inner, class... Rest>
constexpr auto nested(Outer outer, Inner inner, Rest... rest) {
    return nested(Nested<Outer, Inner>{outer, inner}, rest...);
}

namespace detail {

// The type of the value a member pointer or a Nested chain reaches.
template <class Access>
struct FieldOf;
template <class M, class C>
struct FieldOf<M C::*> {
    using type = M;
};
template <class Outer, class Inner>
struct FieldOf<Nested<Outer, Inner>> {
    using type = typename FieldOf<Inner>::type;
};
template <class Access>
using field_t = typename FieldOf<Access>::type;

// The value `access` reaches in `target` (const when `target` is).
template <class T, class M, class C>
auto& field(T& target, M C::*member) {
    return target.*member;
}
template <class T, class Outer, class Inner>
auto& field(T& target, const Nested<Outer, Inner>& access) {
    return field(field(target, access.outer), access.inner);
}

}  // namespace detail

}  // namespace mdcast::config
