// Every entry of the soft provider's dispatch tables is `entry<Owner, "NdkName", function>`:
// the function, behind the two test hooks that act on a call as a whole.
//  - `hold` (soft_hold.hpp) may catch the call before it does anything.
//  - `misbehave=complete_after_inline` / `request_complete_after_inline` (soft_misbehave.hpp)
//    call the create or request completion of a call that did not return STATUS_PENDING,
//    whichever path inside the function returned, before the call returns.
// Unused, they cost one relaxed atomic load (plus, for creates and requests, the misbehave
// setting's).
#pragma once

#include "soft_hold.hpp"
#include "soft_misbehave.hpp"
#include "soft_objects.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace ndk::soft {

// A function name as a template argument.
template <size_t N>
struct FunctionName {
    char text[N];
    constexpr FunctionName(const char (&name)[N]) { std::copy_n(name, N, text); }
    constexpr std::string_view view() const { return {text, N - 1}; }
};

namespace dispatch_detail {

// The adapter a dispatch function is called on, from its first argument: the object itself,
// or (close, QueryExtension) its header, the first member of every NDK object.
template <class Owner, class First>
SoftAdapter &adapter_of(First first)
{
    if constexpr (std::is_same_v<Owner, SoftAdapter>)
        return *SoftAdapter::from(reinterpret_cast<NDK_ADAPTER *>(first));
    else
        return static_cast<Owner *>(reinterpret_cast<typename Owner::NdkType *>(first))->adapter();
}

inline constexpr size_t kNone = ~size_t{0};

// Position of the last parameter of type T, or kNone.  The last: a CQ or SRQ notification
// callback has the type of a request completion, and comes before the completion.
template <class T, class... Args>
constexpr size_t last_index_of()
{
    constexpr bool same[] = {std::is_same_v<T, Args>..., false};
    size_t found = kNone;
    for (size_t i = 0; i < sizeof...(Args); ++i)
        if (same[i])
            found = i;
    return found;
}

template <class Owner, FunctionName Name, auto Fn>
struct Entry;

template <class Owner, FunctionName Name, class R, class... Args, R (*Fn)(Args...)>
struct Entry<Owner, Name, Fn> {
    static_assert(is_holdable_function(Name.view()), "not an NDK function of kit::kFunctions");

    // Creates end with (CreateCompletion, Context, NDK_XXX **); requests take
    // (RequestCompletion, Context) after any callback parameter.
    static constexpr size_t kCreate = last_index_of<NDK_FN_CREATE_COMPLETION, Args...>();
    static constexpr size_t kRequest = last_index_of<NDK_FN_REQUEST_COMPLETION, Args...>();

    static R call(Args... args)
    {
        CallHold::Ticket ticket = hold_point(args...);
        if constexpr (kCreate != kNone || kRequest != kNone) {
            // Read before the call: once it returns, the object may be gone (digest 3.1).
            Misbehave mode = adapter_of<Owner>(std::get<0>(std::tie(args...))).misbehave();
            R status = Fn(args...);
            if (status != STATUS_PENDING) [[likely]]
                complete_after_inline(mode, status, std::tie(args...));
            return status;
        } else {
            return Fn(args...);
        }
    }

    // Wait here if the hold knob is armed for this function; the ticket marks the call in
    // flight until it returns.
    static CallHold::Ticket hold_point(Args... args)
    {
        if (!CallHold::armed_anywhere()) [[likely]]
            return {};
        SoftAdapter &adapter = adapter_of<Owner>(std::get<0>(std::tie(args...)));
        return adapter.miniport().hold.enter(&adapter, Name.view());
    }

    static void complete_after_inline(Misbehave mode, NTSTATUS status,
                                      const std::tuple<Args &...> &args)
    {
        if constexpr (kCreate != kNone) {
            auto completion = std::get<kCreate>(args);
            if (mode != Misbehave::CompleteAfterInline || completion == nullptr)
                return;
            auto *out = std::get<kCreate + 2>(args); // NDK_XXX **, written by an inline success
            NDK_OBJECT_HEADER *object =
                status == STATUS_SUCCESS && out != nullptr && *out != nullptr ? &(*out)->Header
                                                                              : nullptr;
            completion(std::get<kCreate + 1>(args), status, object);
        } else {
            auto completion = std::get<kRequest>(args);
            if (mode != Misbehave::RequestCompleteAfterInline || completion == nullptr)
                return;
            completion(std::get<kRequest + 1>(args), status);
        }
    }
};

} // namespace dispatch_detail

template <class Owner, FunctionName Name, auto Fn>
inline constexpr auto entry = &dispatch_detail::Entry<Owner, Name, Fn>::call;

} // namespace ndk::soft
