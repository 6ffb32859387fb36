// One forwarding entry for every NDK dispatch function, generated from its type: the layer's
// dispatch tables are `Forward<"NdkSend", &NDK_QP_DISPATCH::NdkSend>::call` and so on.  An entry
//   1. finds the face it was called on (a call on anything else is STATUS_INVALID_HANDLE),
//   2. lets the knobs act: `hold` blocks it, `fail` answers it without the provider,
//   3. hands the provider its own objects for the faces among the arguments (an object
//      argument that is not one of the adapter's faces is STATUS_INVALID_PARAMETER), and a
//      relay of the layer's for every callback (its context a record of the consumer's
//      callback),
//   4. wraps an object the call created inline in a face, and
//   5. makes an inline completion pend when the completion mode says so,
// and acts the `misbehave` names that change what crosses the edge (docs/knobs.md).
// The argument roles follow from the NDK types alone: NDK_XXX* is an object, NDK_XXX** an
// object created, a callback is followed by its context (ndkpi.h).
#pragma once

#include "layers/fault/fault_layer.hpp"
#include "providers/kit/kit_functions.hpp"

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ndk::fault {

// A dispatch function's name as a template argument.
template <size_t N>
struct FunctionName {
    char text[N];
    constexpr FunctionName(const char (&name)[N])
    {
        for (size_t i = 0; i < N; ++i)
            text[i] = name[i];
    }
    constexpr std::string_view view() const { return {text, N - 1}; }
};

// What kit::kFunctions says of a name, as values (a constant expression under UBSan too).
constexpr kit::Returns returns_of(std::string_view name)
{
    for (const kit::NdkFunction &f : kit::kFunctions)
        if (f.name == name)
            return f.returns;
    return kit::Returns::Nothing;
}

// ---- argument roles ------------------------------------------------------------------------

template <class T> struct ObjectTypeOf { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeUndefined; };
template <> struct ObjectTypeOf<NDK_ADAPTER> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeAdapter; };
template <> struct ObjectTypeOf<NDK_QP> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeQp; };
template <> struct ObjectTypeOf<NDK_CQ> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeCq; };
template <> struct ObjectTypeOf<NDK_MR> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeMr; };
template <> struct ObjectTypeOf<NDK_MW> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeMw; };
template <> struct ObjectTypeOf<NDK_PD> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypePd; };
template <> struct ObjectTypeOf<NDK_SHARED_ENDPOINT> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeSharedEndpoint; };
template <> struct ObjectTypeOf<NDK_CONNECTOR> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeConnector; };
template <> struct ObjectTypeOf<NDK_LISTENER> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeListener; };
template <> struct ObjectTypeOf<NDK_SRQ> { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeSrq; };

// An object argument (NDK_XXX*, or the NDK_OBJECT_HEADER* of a close or an Invalidate).
template <class T>
constexpr bool is_object_pointer =
    std::is_pointer_v<T> &&
    (ObjectTypeOf<std::remove_cv_t<std::remove_pointer_t<T>>>::value != NdkObjectTypeUndefined ||
     std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, NDK_OBJECT_HEADER>);

// The out-parameter of a create (NDK_XXX **).
template <class T> struct CreatedBy { static constexpr NDK_OBJECT_TYPE value = NdkObjectTypeUndefined; };
template <class O> struct CreatedBy<O **> { static constexpr NDK_OBJECT_TYPE value = ObjectTypeOf<O>::value; };

// The five callback shapes of ndkpi.h; several callback types share one shape, and a relay per
// shape serves them all.
using VoidCallback = void (*)(PVOID);                                   // close, disconnect
using StatusCallback = void (*)(PVOID, NTSTATUS);                       // request, CQ, SRQ
using CreateCallback = void (*)(PVOID, NTSTATUS, NDK_OBJECT_HEADER *);  // create
using ConnectCallback = void (*)(PVOID, NDK_CONNECTOR *);               // listener
using ReasonCallback = void (*)(PVOID, ULONG);                          // disconnect ex
template <class T>
constexpr bool is_callback =
    std::is_same_v<T, VoidCallback> || std::is_same_v<T, StatusCallback> ||
    std::is_same_v<T, CreateCallback> || std::is_same_v<T, ConnectCallback> ||
    std::is_same_v<T, ReasonCallback>;

inline CallbackRecord &record_of(PVOID context) { return *static_cast<CallbackRecord *>(context); }

// Deliver a consumer callback now, or behind what the adapter has queued when it is a
// completion (Deferrer).  Everything is taken from the record before the relay retires it (a
// close's completion retires its object's records, a failed create's its own): `Consumer`
// holds copies, and `completion` and `adapter` are the record's.
struct Delivery {
    bool completion;
    FaultAdapter *adapter;
    explicit Delivery(const CallbackRecord &r) : completion(r.completion), adapter(r.adapter) {}
};
template <class Deliver>
void deliver(Delivery how, Deliver deliver)
{
    if (how.completion) {
        Deferrer::Job job = deliver;
        if (how.adapter->miniport.deferrer.post_if_behind(how.adapter, job))
            return;
    }
    deliver();
}

inline void relay_void(PVOID context)
{
    const CallbackRecord &r = record_of(context);
    auto callback = r.consumer<VoidCallback>();
    PVOID consumer_context = r.context;
    const Delivery how(r);
    if (r.retires != nullptr) // a close's completion: the object is gone, and its records
        r.adapter->retire(r.retires, r.retires_generation);
    deliver(how, [callback, consumer_context] { callback(consumer_context); });
}
inline void relay_status(PVOID context, NTSTATUS status)
{
    const CallbackRecord &r = record_of(context);
    auto callback = r.consumer<StatusCallback>();
    PVOID consumer_context = r.context;
    if (r.cq_notification &&
        r.adapter->miniport.injection.misbehave() == Misbehave::NotifyTwice) {
        // Broken on purpose: a second notification for one arm, after the first returned (3.2).
        callback(consumer_context, status);
    }
    deliver(Delivery(r),
            [callback, consumer_context, status] { callback(consumer_context, status); });
}
inline void relay_reason(PVOID context, ULONG reason)
{
    const CallbackRecord &r = record_of(context);
    r.consumer<ReasonCallback>()(r.context, reason);
}
// A create that pended completes: its object gets a face, which takes the call's records
// (retired at once when nothing was made).
inline void relay_create(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
{
    auto &r = record_of(context);
    auto callback = r.consumer<CreateCallback>();
    PVOID consumer_context = r.context;
    const Delivery how(r);
    Face *face = r.adapter->wrap(object, r.created);
    r.adapter->adopt(face, &r, r.sibling);
    NDK_OBJECT_HEADER *header = face ? &face->Header : nullptr;
    deliver(how, [callback, consumer_context, status, header] {
        callback(consumer_context, status, header);
    });
}
inline void relay_connect(PVOID context, NDK_CONNECTOR *connector)
{
    const CallbackRecord &r = record_of(context);
    Face *face = r.adapter->wrap(&connector->Header, NdkObjectTypeConnector);
    r.consumer<ConnectCallback>()(r.context, reinterpret_cast<NDK_CONNECTOR *>(face));
}

template <class T>
constexpr T relay_for()
{
    if constexpr (std::is_same_v<T, VoidCallback>)
        return relay_void;
    else if constexpr (std::is_same_v<T, StatusCallback>)
        return relay_status;
    else if constexpr (std::is_same_v<T, CreateCallback>)
        return relay_create;
    else if constexpr (std::is_same_v<T, ConnectCallback>)
        return relay_connect;
    else
        return relay_reason;
}

// The provider's object for an argument: the object called, or an object argument that
// Forward::foreign_argument() found to be one of the adapter's faces.
template <class T>
T to_inner(T value)
{
    if constexpr (is_object_pointer<T>) {
        if (value == nullptr)
            return value;
        return reinterpret_cast<T>(reinterpret_cast<Face *>(value)->inner);
    } else {
        return value;
    }
}

template <class T>
struct Signature;
template <class D, class R, class... A>
struct Signature<R (*D::*)(A...)> {
    using Dispatch = D;
    using Function = R(A...);
};

// The consumer's completion of a call (the last callback among its arguments, followed by its
// context): what a pending mode or an async failure calls.
struct Completion {
    void (*function)() = nullptr;
    PVOID context = nullptr;
};

template <FunctionName Name, auto Member,
          class Function = typename Signature<decltype(Member)>::Function>
struct Forward;

template <FunctionName Name, auto Member, class R, class Self, class... A>
struct Forward<Name, Member, R(Self, A...)> {
    using Dispatch = typename Signature<decltype(Member)>::Dispatch;
    using Args = std::tuple<Self, A...>;
    static constexpr size_t kCount = sizeof...(A) + 1;
    static constexpr kit::Returns kReturns = returns_of(Name.view());
    static constexpr NDK_OBJECT_TYPE kCreated = [] {
        NDK_OBJECT_TYPE type = NdkObjectTypeUndefined;
        ((type = CreatedBy<A>::value != NdkObjectTypeUndefined ? CreatedBy<A>::value : type), ...);
        return type;
    }();
    // Which completion mode applies (create_mode, request_mode, close_mode).
    static constexpr Injection::Kind kKind =
        kReturns == kit::Returns::Close       ? Injection::Kind::Close
        : kCreated != NdkObjectTypeUndefined ? Injection::Kind::Create
                                             : Injection::Kind::Request;
    // Index of a post's Flags, kCount for other functions (complete_silent clears
    // SILENT_SUCCESS there).
    static constexpr size_t kFlags =
        Name.view() == std::string_view("NdkSendAndInvalidate") ? kCount - 2
        : Name.view() == std::string_view("NdkSend") || Name.view() == std::string_view("NdkWrite") ||
                Name.view() == std::string_view("NdkRead") || Name.view() == std::string_view("NdkBind") ||
                Name.view() == std::string_view("NdkFastRegister") ||
                Name.view() == std::string_view("NdkInvalidate")
            ? kCount - 1
            : kCount;
    // Whether an argument after the object called is an object (a CQ of NdkCreateQp, the MR of
    // NdkBind, the QP of NdkConnect, ...).
    static constexpr bool kTakesObjects = (is_object_pointer<A> || ...);
    static constexpr bool kGetResults = Name.view() == std::string_view("NdkGetCqResults") ||
                                        Name.view() == std::string_view("NdkGetCqResultsEx");
    static constexpr bool kGetResultsEx = Name.view() == std::string_view("NdkGetCqResultsEx");
    // A call whose arguments after the object are plain values (Send, Receive, Read, Write,
    // the CQ polls, ArmCq): with no knob of the layer set, the provider's object is all it
    // needs.
    static constexpr bool kPlainArguments = !kTakesObjects && !(is_callback<A> || ...) &&
                                            kCreated == NdkObjectTypeUndefined &&
                                            kReturns != kit::Returns::Close;
    // Index of the consumer's completion callback, kCount when the call has none.
    // How many callbacks the function takes (records_made holds two).
    static constexpr size_t kCallbacks = ((is_callback<A> ? 1 : 0) + ... + 0);
    static_assert(kCallbacks <= 2);
    static constexpr size_t kCompletion = [] {
        size_t at = kCount, i = 0;
        ((at = is_callback<A> ? i + 1 : at, ++i), ...);
        return kReturns == kit::Returns::MayPend || kReturns == kit::Returns::Close ? at : kCount;
    }();

    static R call(Self self, A... args)
    {
        // The data path with no knob set (the posts, the CQ polls): decided and handed to the
        // provider here, so that it costs a few loads and a tail call, without the frame the
        // acting path needs (a spinning consumer's empty poll crosses it every turn).
        if constexpr (kPlainArguments) {
            Face *face = face_of(self);
            if (face != nullptr && !face->adapter->miniport.injection.active() &&
                !holds_results(*face))
                return pass_through(*face, args...);
        }
        return act(self, args...);
    }

private:
    [[gnu::noinline]] static R act(Self self, A... args)
    {
        Face *face = face_of(self);
        if (face == nullptr)
            return refuse();
        FaultAdapter &adapter = *face->adapter;
        Injection &injection = adapter.miniport.injection;
        if constexpr (kPlainArguments)
            if (!injection.active() && !holds_results(*face))
                return pass_through(*face, args...); // a knob cleared since call() looked
        Args in{self, args...};
        if constexpr (kTakesObjects) {
            static_assert(std::is_same_v<R, NTSTATUS>);
            if (foreign_argument(adapter, in, std::make_index_sequence<kCount - 1>{}))
                return STATUS_INVALID_PARAMETER; // docs/semantics.md, OBJECT-OWN
        }
        bool caught = false;
        if (injection.active()) {
            caught = injection.enter(&adapter, Name.view());
            if constexpr (std::is_same_v<R, NTSTATUS>) {
                if (auto failure = injection.take_failure(Name.view())) {
                    if (caught)
                        injection.returned(&adapter);
                    if (!failure->async || kCompletion == kCount) {
                        if constexpr (kCompletion != kCount)
                            complete_after_inline(adapter, in, failure->status);
                        return failure->status;
                    }
                    defer(adapter, completion_of(in), failure->status, nullptr);
                    return STATUS_PENDING;
                }
            }
        }
        if constexpr (std::is_same_v<R, NTSTATUS>) {
            if (injection.active()) {
                if (NTSTATUS broken = misbehave_instead(injection.misbehave());
                    broken != STATUS_SUCCESS) {
                    if (caught)
                        injection.returned(&adapter);
                    return broken;
                }
            }
        }
        if constexpr (kFlags != kCount) {
            static_assert(std::is_same_v<std::tuple_element_t<kFlags, Args>, ULONG>);
            if (injection.active() && injection.misbehave() == Misbehave::CompleteSilent)
                std::get<kFlags>(in) &= ~ULONG{NDK_OP_FLAG_SILENT_SUCCESS}; // broken on purpose
        }
        const auto *dispatch = static_cast<const Dispatch *>(face->inner->Dispatch);
        auto function = dispatch != nullptr ? dispatch->*Member : nullptr;
        if (function == nullptr) {
            if (caught)
                injection.returned(&adapter);
            return refuse();
        }
        if constexpr (std::is_void_v<R>) {
            std::apply(function, inner_args(adapter, in, std::make_index_sequence<kCount>{}));
            if (caught)
                injection.returned(&adapter);
        } else {
            void *saved = nullptr; // the consumer's out-parameter, as it set it
            if constexpr (kCreated != NdkObjectTypeUndefined)
                if (std::get<kCount - 1>(in) != nullptr)
                    saved = out_param(in);
            auto out = inner_args(adapter, in, std::make_index_sequence<kCount>{});
            // A call the mode makes pend (decided before the provider sees it) holds its place
            // in the deferred queue from then on (Deferrer): what the provider completes during
            // the call queues behind it.  A call the mode leaves alone reserves nothing, so the
            // provider's callbacks during it are delivered as they come.
            uint64_t slot = 0;
            if constexpr (kCompletion != kCount)
                if (injection.active() && completion_of(in).function != nullptr &&
                    injection.should_pend(kKind))
                    slot = adapter.miniport.deferrer.reserve(&adapter);
            [[maybe_unused]] const std::array<CallbackRecord *, 2> made =
                records_made(in, out, std::make_index_sequence<kCount>{});
            R result{};
            if constexpr (kGetResults) {
                const Misbehave misbehave = injection.misbehave();
                CqResults *held = face->results.load(std::memory_order_acquire);
                if (std::get<1>(in) != nullptr &&
                    (misbehave == Misbehave::DropCompletion ||
                     misbehave == Misbehave::ReorderCompletions ||
                     (held != nullptr && held->holding.load(std::memory_order_acquire))))
                    result = get_cq_results(*face, misbehave, std::get<1>(in), std::get<2>(in),
                                            kGetResultsEx);
                else
                    result = std::apply(function, out);
            } else {
                result = std::apply(function, out);
            }
            Face *made_face = nullptr;
            if constexpr (kCreated != NdkObjectTypeUndefined)
                result = created(adapter, in, result, made_face);
            if constexpr (kCallbacks > 0)
                own_records(adapter, *face, in, out, made, result, made_face);
            if constexpr (kCompletion != kCount)
                result = maybe_pend(adapter, in, result, saved, slot);
            if constexpr (kKind == Injection::Kind::Close)
                if (result == STATUS_SUCCESS) // closed inline: no completion follows
                    adapter.retire(face, face->generation);
            if constexpr (kCompletion != kCount)
                if (injection.active())
                    complete_after_inline(adapter, in, result);
            if constexpr (kGetResultsEx)
                if (injection.active())
                    break_results(injection.misbehave(), std::get<1>(in), result);
            if (caught)
                injection.returned(&adapter);
            return result;
        }
    }

    // Whether a CQ's face still holds results a knob fetched (drop_completion,
    // reorder_completions): polls hand those out first, through the layer.
    static bool holds_results(Face &face)
    {
        if constexpr (!kGetResults)
            return false;
        CqResults *held = face.results.load(std::memory_order_acquire);
        return held != nullptr && held->holding.load(std::memory_order_acquire);
    }

    // The call handed to the provider's object as it is: nothing to translate, nothing to act.
    static R pass_through(Face &face, A... args)
    {
        const auto *dispatch = static_cast<const Dispatch *>(face.inner->Dispatch);
        auto function = dispatch != nullptr ? dispatch->*Member : nullptr;
        if (function == nullptr)
            return refuse();
        return function(reinterpret_cast<Self>(face.inner), args...);
    }

    // provider_error_code, drop_invalidate_token: what NdkGetCqResultsEx returns, broken on
    // purpose (2.3).
    static void break_results(Misbehave misbehave, NDK_RESULT_EX *results, ULONG count)
    {
        for (ULONG i = 0; i < count; ++i) {
            NDK_RESULT_EX &r = results[i];
            if (misbehave == Misbehave::ProviderErrorCode && r.Status == STATUS_SUCCESS)
                r.ProviderErrorCode = 0x1234; // 0 on success
            if (misbehave == Misbehave::DropInvalidateToken &&
                r.Type == NdkOperationTypeReceiveAndInvalidate) // the token invalidated
                r.TypeSpecificCompletionOutput =
                    static_cast<UINT32>(~static_cast<UINT32>(r.TypeSpecificCompletionOutput));
        }
    }

    // A misbehaviour that answers the call instead of the provider (docs/knobs.md), or
    // STATUS_SUCCESS for none.
    static NTSTATUS misbehave_instead(Misbehave misbehave)
    {
        constexpr std::string_view name = Name.view();
        if (name == "NdkCreatePd" && misbehave == Misbehave::UndocumentedStatus)
            return STATUS_INVALID_PARAMETER_MIX; // not on NdkCreatePd's page (1.2)
        if (name == "NdkControlCqInterruptModeration") {
            if (misbehave == Misbehave::ModerationPending)
                return STATUS_PENDING; // must not pend (1.3)
            if (misbehave == Misbehave::ModerationNotSupported)
                return STATUS_NOT_SUPPORTED; // although the adapter says it is (1.3)
        }
        return STATUS_SUCCESS;
    }

    static bool is_create() { return kCreated != NdkObjectTypeUndefined; }

    // A failure status this function's page documents that is not an argument check.
    static bool documented_outcome(NTSTATUS status)
    {
        if (status == STATUS_INVALID_PARAMETER || status == STATUS_BUFFER_TOO_SMALL)
            return false;
        for (const kit::NdkFunction &f : kit::kFunctions)
            if (f.name == Name.view())
                return f.documents(status);
        return false;
    }

    // complete_after_inline, request_complete_after_inline: an inline return also calls the
    // completion, on the calling thread, before returning (broken on purpose, 1.0).
    static void complete_after_inline(FaultAdapter &adapter, Args &in, NTSTATUS result)
    {
        if (result == STATUS_PENDING || kReturns != kit::Returns::MayPend)
            return;
        Misbehave misbehave = adapter.miniport.injection.misbehave();
        if (misbehave != (is_create() ? Misbehave::CompleteAfterInline
                                      : Misbehave::RequestCompleteAfterInline))
            return;
        Completion completion = completion_of(in);
        if (completion.function == nullptr)
            return;
        using Callback = std::tuple_element_t<kCompletion, Args>;
        auto callback = reinterpret_cast<Callback>(completion.function);
        if constexpr (std::is_same_v<Callback, CreateCallback>) {
            auto *out = std::get<kCount - 1>(in);
            NDK_OBJECT_HEADER *object =
                result == STATUS_SUCCESS && out != nullptr && *out != nullptr ? &(*out)->Header
                                                                               : nullptr;
            callback(completion.context, result, object);
        } else if constexpr (std::is_same_v<Callback, StatusCallback>) {
            callback(completion.context, result);
        }
    }

    static R refuse()
    {
        if constexpr (std::is_same_v<R, NTSTATUS>)
            return STATUS_INVALID_HANDLE;
        else if constexpr (!std::is_void_v<R>)
            return R{};
    }

    template <size_t I>
    static constexpr bool follows_callback()
    {
        if constexpr (I == 0)
            return false;
        else
            return is_callback<std::tuple_element_t<I - 1, Args>>;
    }

    template <size_t I>
    static auto inner_arg(FaultAdapter &adapter, Args &in)
    {
        using T = std::tuple_element_t<I, Args>;
        if constexpr (is_callback<T>) {
            return std::get<I>(in) != nullptr ? relay_for<T>() : T{nullptr};
        } else if constexpr (follows_callback<I>()) {
            static_assert(std::is_same_v<T, PVOID>, "a callback is followed by its context");
            auto callback = std::get<I - 1>(in);
            if (callback == nullptr)
                return std::get<I>(in);
            NDK_OBJECT_TYPE created =
                std::is_same_v<std::tuple_element_t<I - 1, Args>, CreateCallback> ? kCreated
                                                                                   : NdkObjectTypeUndefined;
            CallbackRecord *record = adapter.record(reinterpret_cast<void (*)()>(callback),
                                                    std::get<I>(in), created, I - 1 == kCompletion);
            record->cq_notification =
                Name.view() == std::string_view("NdkCreateCq") && I - 1 != kCompletion;
            if constexpr (kKind == Injection::Kind::Close) {
                if (I - 1 == kCompletion) {
                    record->retires = face_of(std::get<0>(in));
                    record->retires_generation = record->retires->generation;
                }
            }
            return static_cast<PVOID>(record);
        } else {
            return to_inner(std::get<I>(in));
        }
    }

    // Whether an object argument (after the object called) is not one of `adapter`'s faces:
    // another adapter's, a plain adapter's, anything else.  Found by its address alone, so
    // such a pointer is never read (docs/semantics.md, OBJECT-OWN).  NULL is the provider's to
    // judge.
    template <size_t... I>
    static bool foreign_argument(FaultAdapter &adapter, Args &in, std::index_sequence<I...>)
    {
        auto foreign = [&adapter](auto value) {
            if constexpr (is_object_pointer<decltype(value)>)
                return value != nullptr && !adapter.owns(value);
            else
                return false;
        };
        return (foreign(std::get<I + 1>(in)) || ...);
    }

    template <size_t... I>
    static Args inner_args(FaultAdapter &adapter, Args &in, std::index_sequence<I...>)
    {
        return Args{inner_arg<I>(adapter, in)...};
    }

    static Completion completion_of(Args &in)
    {
        if constexpr (kCompletion == kCount) {
            return {};
        } else {
            return {reinterpret_cast<void (*)()>(std::get<kCompletion>(in)),
                    std::get<kCompletion + 1>(in)};
        }
    }

    // The out-parameter (the last argument of every NdkCreateXxx).
    static auto &out_param(Args &in) { return *std::get<kCount - 1>(in); }

    // The records inner_args made for the call's callbacks, in argument order (a create's
    // notification before its completion), nullptr where there are fewer than two.
    template <size_t... I>
    static std::array<CallbackRecord *, 2> records_made(Args &in, Args &out,
                                                        std::index_sequence<I...>)
    {
        std::array<CallbackRecord *, 2> made{};
        size_t n = 0;
        auto take = [&](auto index) {
            constexpr size_t J = decltype(index)::value;
            if constexpr (follows_callback<J>())
                if (std::get<J - 1>(in) != nullptr)
                    made[n++] = static_cast<CallbackRecord *>(std::get<J>(out));
        };
        (take(std::integral_constant<size_t, I>{}), ...);
        return made;
    }

    // Whose the call's records are: the object it made (when the create pends at the
    // provider, its completion takes the other record along, relay_create), nobody's when a
    // create failed (retired now: the provider calls nothing of a failed call, digest 1.0),
    // else the object called.
    static void own_records(FaultAdapter &adapter, Face &called, Args &in, Args &out,
                            const std::array<CallbackRecord *, 2> &made, NTSTATUS result,
                            Face *made_face)
    {
        if constexpr (kCreated == NdkObjectTypeUndefined) {
            adapter.adopt(&called, made[0], made[1]);
        } else if (result == STATUS_PENDING) {
            if constexpr (kCompletion != kCount) {
                if (std::get<kCompletion>(in) == nullptr)
                    return; // nothing will say what was made: the records stay the adapter's
                auto *completion = static_cast<CallbackRecord *>(std::get<kCompletion + 1>(out));
                completion->sibling = made[0] == completion ? made[1] : made[0];
            }
        } else {
            adapter.adopt(result == STATUS_SUCCESS ? made_face : nullptr, made[0], made[1]);
        }
    }

    // An object created inline becomes a face (`made`).
    static NTSTATUS created(FaultAdapter &adapter, Args &in, NTSTATUS result, Face *&made)
    {
        if (result == STATUS_SUCCESS && std::get<kCount - 1>(in) != nullptr) {
            auto &object = out_param(in);
            using O = std::remove_reference_t<decltype(object)>;
            if (object != nullptr) {
                made = adapter.wrap(&object->Header, kCreated);
                object = reinterpret_cast<O>(made);
            }
            // out_param_missing_inline: the object is made (its face stays with the adapter,
            // the provider's object is freed at the adapter's close) and the out-parameter
            // left NULL, although the create returns STATUS_SUCCESS.
            if (adapter.miniport.injection.misbehave() == Misbehave::OutParamMissingInline)
                object = nullptr;
        }
        return result;
    }

    // A pending completion mode: what the provider finished inline is reported through the
    // completion, from the layer's thread; the out-parameter is left as the consumer set it.
    // (A request that pends here has already executed in the provider; the provider's own
    // mode, where it has one, runs it on its own thread instead.)
    static NTSTATUS maybe_pend(FaultAdapter &adapter, Args &in, NTSTATUS result, void *saved,
                               uint64_t slot)
    {
        if constexpr (kKind == Injection::Kind::Close) {
            // A close the provider finished inline while the layer still owes completions of
            // this adapter (a request it made pend may be on this very object) pends behind
            // them: no completion follows the close's (digest 3.1).
            if (slot == 0 && result == STATUS_SUCCESS && completion_of(in).function != nullptr &&
                adapter.miniport.deferrer.busy(&adapter)) {
                defer(adapter, completion_of(in), result, nullptr, 0, 1, face_of(std::get<0>(in)));
                return STATUS_PENDING;
            }
        }
        if (slot == 0)
            return result;
        NTSTATUS pended = pend(adapter, in, result, saved, slot);
        if (pended == result) // the slot was not filled (the provider's own outcome stands)
            adapter.miniport.deferrer.cancel(slot);
        return pended;
    }

    static NTSTATUS pend(FaultAdapter &adapter, Args &in, NTSTATUS result, void *saved,
                         uint64_t slot)
    {
        if (result == STATUS_PENDING || completion_of(in).function == nullptr)
            return result;
        constexpr Injection::Kind kind = kKind;
        // What pends (docs/knobs.md): a create's or a close's success; a request's success, or
        // its failure when the function's page documents that status and it is not an
        // argument check (a connect refused pends; a second disconnect's CONNECTION_INVALID,
        // which NdkDisconnect's page does not list, stays inline).
        if (result != STATUS_SUCCESS &&
            (kind != Injection::Kind::Request || !documented_outcome(result)))
            return result;
        const Misbehave misbehave = adapter.miniport.injection.misbehave();
        NDK_OBJECT_HEADER *object = nullptr;
        if constexpr (kCreated != NdkObjectTypeUndefined) {
            if (std::get<kCount - 1>(in) != nullptr) {
                auto &out = out_param(in);
                object = out != nullptr ? &out->Header : nullptr;
                // digest 1.0: the out-parameter is not written when the call pends (unless
                // out_param_after_pending breaks that on purpose).
                if (misbehave != Misbehave::OutParamAfterPending)
                    out = static_cast<std::remove_reference_t<decltype(out)>>(saved);
            }
        }
        // never_complete, request_never_complete: the completion is never called (the object
        // stays with its adapter); complete_twice, request_complete_twice: called twice.
        if (misbehave == (is_create() ? Misbehave::NeverComplete : Misbehave::RequestNeverComplete) &&
            kind != Injection::Kind::Close) {
            adapter.miniport.deferrer.cancel(slot);
            return STATUS_PENDING;
        }
        int times = misbehave == (is_create() ? Misbehave::CompleteTwice
                                              : Misbehave::RequestCompleteTwice) &&
                            kind != Injection::Kind::Close
                        ? 2
                        : 1;
        Face *closed = nullptr;
        if constexpr (kind == Injection::Kind::Close)
            closed = result == STATUS_SUCCESS ? face_of(std::get<0>(in)) : nullptr;
        defer(adapter, completion_of(in), result, object, slot, times, closed);
        return STATUS_PENDING;
    }

    // The consumer's completion with `status`, from the layer's thread, in `slot` (0: at the
    // end of the queue).
    // `closed`: the face of an object whose close succeeded, retired when the completion runs.
    static void defer(FaultAdapter &adapter, Completion completion, NTSTATUS status,
                      NDK_OBJECT_HEADER *object, uint64_t slot = 0, int times = 1,
                      Face *closed = nullptr)
    {
        if constexpr (kCompletion != kCount) {
            using Callback = std::tuple_element_t<kCompletion, Args>;
            auto callback = reinterpret_cast<Callback>(completion.function);
            PVOID context = completion.context;
            uint64_t generation = closed != nullptr ? closed->generation : 0;
            Deferrer::Job job = [callback, context, status, object, times, closed, generation] {
                (void)status; // not every completion shape takes them
                (void)object;
                if (closed != nullptr)
                    closed->adapter->retire(closed, generation);
                for (int i = 0; i < times; ++i) {
                    if constexpr (std::is_same_v<Callback, CreateCallback>)
                        callback(context, status, object);
                    else if constexpr (std::is_same_v<Callback, StatusCallback>)
                        callback(context, status);
                    else
                        callback(context);
                }
            };
            Deferrer &deferrer = adapter.miniport.deferrer;
            if (slot != 0)
                deferrer.fill(slot, std::move(job));
            else
                deferrer.post(&adapter, std::move(job));
        }
    }
};

} // namespace ndk::fault
