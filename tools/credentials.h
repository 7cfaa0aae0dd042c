// Where the tools take a login password from: never the command line (other
// users see it in ps), but a file (--password-file) or the MDCAST_PASSWORD
// environment variable.
#pragma once

#include <string>

namespace mdcast::tools {

inline constexpr const char* kPasswordEnv = "MDCAST_PASSWORD";

// The first line of `file` when it is set, else $MDCAST_PASSWORD, else empty.
// False with `error` when the file cannot be read.
bool load_password(const std::string& file, std::string& password, std::string& error);

}  // namespace mdcast::tools
