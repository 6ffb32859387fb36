#include "fork_generation.hpp"

#include <pthread.h>

#include <atomic>

namespace ndk {
namespace {

std::atomic<unsigned> generation{0};

// Runs in the child only, before fork() returns there: the child's single thread.
void forked_child() { generation.fetch_add(1, std::memory_order_relaxed); }

} // namespace

unsigned fork_generation()
{
    // Registered by the first open, before any adapter exists that a fork could copy.
    static const bool registered = pthread_atfork(nullptr, nullptr, forked_child) == 0;
    (void)registered;
    return generation.load(std::memory_order_relaxed);
}

} // namespace ndk
