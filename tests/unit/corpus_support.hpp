// A fuzzer's seed corpus written by the code it fuzzes (test_iwarp_corpus.cpp,
// test_tcp_receive_corpus.cpp): each seed checked against its file in the source tree, or,
// with the environment variable `write_variable` set, (re)written there instead.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace ndktest {

inline void check_or_write_corpus(const std::filesystem::path &dir, const char *write_variable,
                                  const std::map<std::string, std::vector<std::byte>> &seeds)
{
    const bool write = std::getenv(write_variable) != nullptr;
    if (write)
        std::filesystem::create_directories(dir);
    for (const auto &[name, bytes] : seeds) {
        const auto path = dir / name;
        if (write) {
            std::ofstream(path, std::ios::binary)
                .write(reinterpret_cast<const char *>(bytes.data()),
                       static_cast<std::streamsize>(bytes.size()));
            continue;
        }
        std::ifstream in(path, std::ios::binary);
        ASSERT_TRUE(in) << path << " missing: regenerate with " << write_variable << "=1";
        const std::vector<char> file((std::istreambuf_iterator<char>(in)), {});
        const auto stored = std::as_bytes(std::span(file));
        EXPECT_TRUE(std::equal(stored.begin(), stored.end(), bytes.begin(), bytes.end()))
            << path << " differs from what the codec writes: regenerate it";
    }
}

} // namespace ndktest
