// drop_completion and reorder_completions: the layer takes a CQ's results from the provider
// and hands them out changed (docs/knobs.md).  What it took and has not handed out waits in
// the CQ's face, and is handed out first, so a call returns fewer results than asked only when
// the CQ is empty, as NdkGetCqResults says: a consumer that then arms misses nothing.
#include "layers/fault/fault_layer.hpp"

#include "ndk/status.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace ndk::fault {

namespace {

// A completion of the initiator queue (digest 2.3: the request's operation type).
bool initiator(NDK_OPERATION_TYPE type)
{
    switch (type) {
    case NdkOperationTypeSend:
    case NdkOperationTypeFastRegister:
    case NdkOperationTypeBind:
    case NdkOperationTypeInvalidate:
    case NdkOperationTypeRead:
    case NdkOperationTypeWrite: return true;
    default: return false;
    }
}

// Up to `count` results from the provider, as NDK_RESULT_EX (Type 0 when it has only
// NdkGetCqResults, so nothing is taken for an initiator completion).
ULONG fetch(const Face &face, NDK_RESULT_EX *into, ULONG count)
{
    const auto *dispatch = static_cast<const NDK_CQ_DISPATCH *>(face.inner->Dispatch);
    auto *cq = reinterpret_cast<NDK_CQ *>(face.inner);
    ULONG n = 0;
    if (dispatch->NdkGetCqResultsEx != nullptr) {
        n = dispatch->NdkGetCqResultsEx(cq, into, count);
    } else if (dispatch->NdkGetCqResults != nullptr) {
        std::vector<NDK_RESULT> plain(count);
        n = std::min(dispatch->NdkGetCqResults(cq, plain.data(), count), count);
        for (ULONG i = 0; i < n; ++i)
            into[i] = NDK_RESULT_EX{plain[i].Status, plain[i].BytesTransferred,
                                    plain[i].QPContext, plain[i].RequestContext,
                                    static_cast<NDK_OPERATION_TYPE>(0), 0, 0};
    }
    return std::min(n, count); // a provider that claims more than it was given room for
}

} // namespace

ULONG get_cq_results(Face &face, Misbehave misbehave, void *out, ULONG count, bool ex)
{
    CqResults &cq = face.adapter->results_of(face);
    std::lock_guard lock(cq.mu);
    constexpr ULONG kChunk = 64;
    // reorder_completions: the first of a pair of one QP's initiator completions waits for the
    // second; one without a partner in what this call takes comes as it is.
    std::vector<std::pair<PVOID, NDK_RESULT_EX>> first;
    while (cq.ready.size() < count) {
        NDK_RESULT_EX batch[kChunk];
        const ULONG n = fetch(face, batch, kChunk);
        for (ULONG i = 0; i < n; ++i) {
            const NDK_RESULT_EX &r = batch[i];
            if (!initiator(r.Type) || (misbehave != Misbehave::DropCompletion &&
                                       misbehave != Misbehave::ReorderCompletions)) {
                cq.ready.push_back(r);
            } else if (misbehave == Misbehave::DropCompletion) {
                // The 1st, 3rd, ... successful one of each QP is lost (broken on purpose).
                if (r.Status != STATUS_SUCCESS || ++cq.successes[r.QPContext] % 2 == 0)
                    cq.ready.push_back(r);
            } else {
                auto it = std::find_if(first.begin(), first.end(),
                                       [&](const auto &held) { return held.first == r.QPContext; });
                if (it == first.end()) {
                    first.emplace_back(r.QPContext, r);
                } else { // the second, then the first (broken on purpose)
                    cq.ready.push_back(r);
                    cq.ready.push_back(it->second);
                    first.erase(it);
                }
            }
        }
        if (n < kChunk)
            break; // the provider's CQ is empty
    }
    for (const auto &held : first)
        cq.ready.push_back(held.second);
    const ULONG given = static_cast<ULONG>(std::min<size_t>(count, cq.ready.size()));
    for (ULONG i = 0; i < given; ++i) {
        const NDK_RESULT_EX &r = cq.ready.front();
        if (ex)
            static_cast<NDK_RESULT_EX *>(out)[i] = r;
        else
            static_cast<NDK_RESULT *>(out)[i] =
                NDK_RESULT{r.Status, r.BytesTransferred, r.QPContext, r.RequestContext};
        cq.ready.pop_front();
    }
    cq.holding.store(!cq.ready.empty(), std::memory_order_release);
    return given;
}

} // namespace ndk::fault
