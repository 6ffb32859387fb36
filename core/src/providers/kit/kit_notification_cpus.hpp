// Where a CQ's notification callbacks run: NdkCreateCq's Affinity (docs/semantics.md
// CQ-AFFINITY).  The page (DDI:nc-ndkpi-ndk_fn_create_cq) makes it a preference: "providers
// should honor the processor preference if the underlying hardware allows, but consumers can't
// assume that NdkCqNotificationCallback callbacks will only occur on preferred processors".
//
// A provider that delivers its callbacks on a thread of its own honors it by moving that
// thread onto the mask for the length of the callback (pthread_setaffinity_np migrates the
// calling thread before it returns) and back afterwards: the callbacks keep their one thread
// and their order, and a CQ created without an affinity costs nothing.
#pragma once

#include "ndk/ndkpi.h"

#include <sched.h>

namespace ndk::kit {

// The processors a CQ asked for, kept from NdkCreateCq (group 0 only: kit::affinity_valid).
class NotificationCpus {
public:
    NotificationCpus() = default; // no preference
    explicit NotificationCpus(const GROUP_AFFINITY *affinity)
        : mask_(affinity != nullptr ? affinity->Mask : 0)
    {
    }
    bool any() const { return mask_ != 0; }
    uint64_t mask() const { return mask_; }

private:
    uint64_t mask_ = 0;
};

// For its lifetime the calling thread runs only on the processors of `cpus` that this process
// may use (sched_getaffinity); its own set comes back at the end.  No preference, or none of
// the processors allowed (a cgroup's cpuset), leaves the thread where it is: the preference is
// not honored then, which the page allows.
class OnNotificationCpus {
public:
    explicit OnNotificationCpus(const NotificationCpus &cpus);
    ~OnNotificationCpus();
    OnNotificationCpus(const OnNotificationCpus &) = delete;
    OnNotificationCpus &operator=(const OnNotificationCpus &) = delete;

private:
    cpu_set_t original_{};
    bool moved_ = false;
};

} // namespace ndk::kit
