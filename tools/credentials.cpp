#include "tools/credentials.h"

#include <cstdlib>
#include <fstream>

namespace mdcast::tools {

bool load_password(const std::string& file, std::string& password, std::string& error) {
    if (file.empty()) {
        const char* value = std::getenv(kPasswordEnv);
        password = value ? value : "";
        return true;
    }
    std::ifstream in(file);
    if (!in) {
        error = "cannot read the password file " + file;
        return false;
    }
    std::getline(in, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    return true;
}

}  // namespace mdcast::tools
