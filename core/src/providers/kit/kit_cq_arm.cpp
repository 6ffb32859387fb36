#include "kit_cq_arm.hpp"

namespace ndk::kit {

bool CqArm::arm(ULONG type)
{
    if (type > NDK_CQ_NOTIFY_SOLICITED)
        return false;
    ULONG merged = type;
    if (armed_ != 0) {
        ULONG current = armed_ - 1;
        if (current == NDK_CQ_NOTIFY_ANY || type == NDK_CQ_NOTIFY_ANY)
            merged = NDK_CQ_NOTIFY_ANY;
        else if (current == NDK_CQ_NOTIFY_SOLICITED || type == NDK_CQ_NOTIFY_SOLICITED)
            merged = NDK_CQ_NOTIFY_SOLICITED;
        else
            merged = NDK_CQ_NOTIFY_ERRORS;
    }
    armed_ = merged + 1;
    return true;
}

} // namespace ndk::kit
