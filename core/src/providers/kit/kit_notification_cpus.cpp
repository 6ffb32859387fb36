#include "kit_notification_cpus.hpp"

#include <pthread.h>

namespace ndk::kit {

OnNotificationCpus::OnNotificationCpus(const NotificationCpus &cpus)
{
    if (!cpus.any())
        return;
    if (pthread_getaffinity_np(pthread_self(), sizeof original_, &original_) != 0)
        return;
    cpu_set_t wanted;
    CPU_ZERO(&wanted);
    for (int cpu = 0; cpu < 64 && cpu < CPU_SETSIZE; ++cpu)
        if ((cpus.mask() >> cpu & 1) != 0 && CPU_ISSET(cpu, &original_))
            CPU_SET(cpu, &wanted);
    if (CPU_COUNT(&wanted) == 0 || CPU_EQUAL(&wanted, &original_))
        return;
    moved_ = pthread_setaffinity_np(pthread_self(), sizeof wanted, &wanted) == 0;
}

OnNotificationCpus::~OnNotificationCpus()
{
    if (moved_)
        pthread_setaffinity_np(pthread_self(), sizeof original_, &original_);
}

} // namespace ndk::kit
