// Which connection locks the QPs completing into one CQ hold.  Every completion is pushed
// either with the wire lock exclusive or, on the data path, with the wire lock shared and the
// connection lock of the QP it completes (SoftQp::connection_mu()).  When every QP bound to
// the CQ holds the same connection lock (one connection, the common case: a QP's own CQs, or
// both ends of an in-process connection sharing them) that lock already serializes the CQ's
// producers, and post_result takes no second one (docs/performance.md, "One thread").
// Changed only with the wire lock exclusive (QP creation, close, connection establishment);
// read on the data path under the wire lock shared.
#pragma once

#include <map>
#include <mutex>

namespace ndk::soft {

class CqProducers {
public:
    // A QP that completes into the CQ, holding `lock` on the data path.  Once per binding: a
    // QP whose initiator and receive CQ are one CQ is added twice.
    void add(const std::mutex *lock)
    {
        ++locks_[lock];
        one_lock_ = locks_.size() <= 1;
    }
    void remove(const std::mutex *lock)
    {
        if (auto at = locks_.find(lock); at != locks_.end() && --at->second == 0)
            locks_.erase(at);
        one_lock_ = locks_.size() <= 1;
    }

    // True when the producers on the data path all hold one lock.
    bool serialized_by_connection() const { return one_lock_; }

private:
    std::map<const std::mutex *, unsigned> locks_; // lock -> bindings holding it
    bool one_lock_ = true;
};

} // namespace ndk::soft
