// NdkGetCqResults / NdkGetCqResultsEx (digest 1.3, 2.3): what every provider's CQ hands out
// the same way, whatever holds its results.
#pragma once

#include "ndk/ndkpi.h"

#include <type_traits>

namespace ndk::kit {

// The call returns the count of results it removed: a NULL array or a count of 0 removes none
// and returns 0.
template <class Result>
bool results_wanted(const Result *results, ULONG count)
{
    return results != nullptr && count != 0;
}

// A result in the form the call asks for: NDK_RESULT_EX as kept, NDK_RESULT its first four
// fields (digest 2.3).
template <class Result>
Result result_as(const NDK_RESULT_EX &r)
{
    if constexpr (std::is_same_v<Result, NDK_RESULT_EX>)
        return r;
    else
        return NDK_RESULT{r.Status, r.BytesTransferred, r.QPContext, r.RequestContext};
}

} // namespace ndk::kit
