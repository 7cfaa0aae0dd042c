// mdcast-passwd: makes a users-file password hash (docs/access-control.md).
// The password is read from the terminal (twice, not echoed) or from the first
// line of stdin, never from the command line.
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>

#include "common/auth/password_hash.h"
#include "common/config/command_line.h"

namespace {

std::string read_line_quietly(const char* prompt, bool tty) {
    termios saved{};
    if (tty) {
        std::cerr << prompt << std::flush;
        tcgetattr(STDIN_FILENO, &saved);
        termios quiet = saved;
        quiet.c_lflag &= static_cast<tcflag_t>(~ECHO);
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::string line;
    std::getline(std::cin, line);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        std::cerr << "\n";
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mdcast;
    int64_t iterations = auth::kDefaultIterations;
    std::string user, check;
    cli::CommandLine command_line(
        "mdcast-passwd",
        "Reads a password (from the terminal, not echoed, or the first line of stdin) and prints "
        "its salted PBKDF2-HMAC-SHA256 hash for the users file's password: key. With --user, "
        "prints a users-file entry. With --check HASH, says whether the password matches HASH.");
    command_line
        .option("iterations", &iterations, "N", "PBKDF2 iterations: the cost of every login check",
                auth::kMinIterations, auth::kMaxIterations)
        .option("user", &user, "NAME", "Print a users-file entry for NAME")
        .option("check", &check, "HASH",
                "Check the password against HASH (exit 0: matches, 1: not)");
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    const bool tty = isatty(STDIN_FILENO);
    const std::string password = read_line_quietly("Password: ", tty);
    if (password.empty()) {
        std::cerr << "mdcast-passwd: error: empty password\n";
        return 2;
    }
    if (!check.empty()) {
        std::string error;
        const auto stored = auth::PasswordHash::parse(check, error);
        if (!stored) {
            std::cerr << "mdcast-passwd: error: " << error << "\n";
            return 2;
        }
        const bool ok = auth::verify_password(password, *stored);
        std::cout << (ok ? "matches" : "does not match") << "\n";
        return ok ? 0 : 1;
    }
    if (tty && read_line_quietly("Again: ", tty) != password) {
        std::cerr << "mdcast-passwd: error: the passwords differ\n";
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string hash =
        auth::hash_password(password, static_cast<uint32_t>(iterations)).to_string();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (user.empty()) {
        std::cout << hash << "\n";
    } else {
        std::cout << "  " << user << ":\n    password: \"" << hash << "\"\n    groups: []\n";
    }
    std::cerr << "mdcast-passwd: " << iterations << " iterations took " << ms.count()
              << " ms here: each login check with this hash costs about that on the server's "
                 "hashing thread\n";
    return 0;
}
