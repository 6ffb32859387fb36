// A sequentially consistent fence, the store-load barrier of a Dekker handshake (the shm
// doorbell's producer and sleeper, shm_doorbell.hpp; os::AsymmetricReaders' full form).
//
// GCC's ThreadSanitizer does not model fences and refuses std::atomic_thread_fence (-Wtsan, an
// error under the project's -Werror).  The fence is emitted all the same; what TSan checks
// does not depend on it at the callers: the words a fence orders there are atomics, and the
// plain data they guard is ordered by release stores and acquire loads of their own.
#pragma once

#include <atomic>

namespace ndk::soft::os {

inline void full_fence()
{
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#pragma GCC diagnostic pop
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

} // namespace ndk::soft::os
