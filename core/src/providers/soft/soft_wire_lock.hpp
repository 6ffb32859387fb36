// The soft fabric's wire lock, a reader-writer lock with two modes (docs/architecture.md,
// "The soft provider's locks"):
//  - shared: the data path of a connection.  Posting a send, write, read or receive and the
//    transfers it runs take it shared, plus the connection's own mutex, the CQ's and the SRQ's:
//    two connections on two threads run side by side.
//  - exclusive: everything else (creates, closes, connection management, memory registration,
//    requests that change memory access, the engine's tasks).  It sees the whole fabric still,
//    which is what keeps the provider's rules checkable.
// Writers are preferred, so a control call is never starved by threads that keep posting;
// shared holders therefore never take it twice (glibc's writer-preferring rwlock would
// deadlock), which holds because the provider never calls out with it held.
#pragma once

#include <pthread.h>

namespace ndk::soft {

class WireLock { // SharedMutex: std::lock_guard / std::unique_lock / std::shared_lock
public:
    WireLock()
    {
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&lock_, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    ~WireLock() { pthread_rwlock_destroy(&lock_); }
    WireLock(const WireLock &) = delete;
    WireLock &operator=(const WireLock &) = delete;

    void lock() { pthread_rwlock_wrlock(&lock_); }
    bool try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
    void unlock() { pthread_rwlock_unlock(&lock_); }
    void lock_shared() { pthread_rwlock_rdlock(&lock_); }
    bool try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
    void unlock_shared() { pthread_rwlock_unlock(&lock_); }

private:
    pthread_rwlock_t lock_;
};

} // namespace ndk::soft
