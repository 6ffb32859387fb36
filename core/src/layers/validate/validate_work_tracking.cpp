// Work requests from post to retirement.  The layer gives the provider its own RequestContext
// (a record handle) and QPContext (the QP's shadow), and translates both back in every result,
// so it knows exactly which request of which queue each completion is: that is what the order,
// silent-success and missing-completion rules (digest 2.5, 3.4, 4.2) and the queue-depth rule
// (3.3) are judged on.  A request is outstanding until its completion, or the completion of a
// later request of its queue, is retrieved.
#include "layers/validate/validate_layer.hpp"

#include <algorithm>
#include <cstdio>

namespace ndk::validate {

namespace {

PVOID encode(uint32_t index, uint32_t generation)
{
    return reinterpret_cast<PVOID>((static_cast<uintptr_t>(generation) << 32) | (index + 1u));
}

std::string hex(UINT32 value)
{
    char text[16];
    std::snprintf(text, sizeof text, "0x%08X", static_cast<unsigned>(value));
    return text;
}

} // namespace

uint32_t LayerAdapter::alloc_record()
{
    uint32_t index;
    if (!free_records_.empty()) {
        index = free_records_.back();
        free_records_.pop_back();
    } else {
        index = static_cast<uint32_t>(records_.size());
        records_.emplace_back();
    }
    WorkRecord &rec = records_[index];
    uint32_t generation = rec.generation + 1;
    rec = WorkRecord{};
    rec.generation = generation;
    rec.live = true;
    return index;
}

void LayerAdapter::free_record(uint32_t index)
{
    records_[index].live = false;
    free_records_.push_back(index);
}

WorkRecord *LayerAdapter::find_record(PVOID handle, uint32_t *index)
{
    auto value = reinterpret_cast<uintptr_t>(handle);
    auto low = static_cast<uint32_t>(value & 0xffffffffu);
    if (low == 0 || low > records_.size())
        return nullptr;
    WorkRecord &rec = records_[low - 1];
    if (!rec.live || rec.generation != static_cast<uint32_t>(value >> 32))
        return nullptr;
    *index = low - 1;
    return &rec;
}

PVOID LayerAdapter::post_begin(WorkQueue &queue, Shadow &owner, const char *function,
                               PVOID context, ULONG flags, bool initiator)
{
    bool owns = !queue.posting.exchange(true, std::memory_order_acquire);
    if (!owns)
        owner.report("POST-CONCURRENT", function,
                     std::string("posted while another post to its ") + queue.what +
                         " had not returned");
    std::lock_guard lock(wr_mu_);
    if (queue.outstanding.size() >= queue.depth)
        owner.report("POST-QUEUE-DEPTH", function,
                     std::string("its ") + queue.what + " (depth " +
                         std::to_string(queue.depth) + ") already holds " +
                         std::to_string(queue.outstanding.size()) +
                         " requests whose completions were not retrieved");
    uint32_t index = alloc_record();
    WorkRecord &rec = records_[index];
    rec.silent = initiator && (flags & NDK_OP_FLAG_SILENT_SUCCESS);
    rec.expects_completion = !rec.silent;
    rec.owns_posting = owns;
    rec.queue = &queue;
    rec.owner = &owner;
    rec.consumer_context = context;
    rec.function = function;
    queue.outstanding.push_back(index); // before the provider sees it: it may complete at once
    return encode(index, rec.generation);
}

void LayerAdapter::post_end(WorkQueue &queue, PVOID handle, NTSTATUS status)
{
    bool owns = false;
    {
        std::lock_guard lock(wr_mu_);
        uint32_t index;
        WorkRecord *rec = find_record(handle, &index);
        if (rec != nullptr) {
            owns = rec->owns_posting;
            rec->owns_posting = false;
            if (status != STATUS_SUCCESS) { // an inline failure: no completion (digest 3.4)
                auto it = std::find(queue.outstanding.rbegin(), queue.outstanding.rend(), index);
                if (it != queue.outstanding.rend())
                    queue.outstanding.erase(std::next(it).base());
                free_record(index);
            }
        }
    }
    if (owns)
        queue.posting.store(false, std::memory_order_release);
}

void LayerAdapter::retire(uint32_t index, NTSTATUS status, const char *call)
{
    WorkRecord &rec = records_[index];
    WorkQueue &queue = *rec.queue;
    if (rec.overtaken) {
        if (!rec.missing_reported)
            rec.owner->report("WR-COMPLETION-ORDER", call,
                              std::string("the completion of an earlier ") + rec.function +
                                  " came after that of a later request of its " + queue.what);
        queue.overtaken.erase(std::remove(queue.overtaken.begin(), queue.overtaken.end(), index),
                              queue.overtaken.end());
        free_record(index);
        return;
    }
    auto it = std::find(queue.outstanding.begin(), queue.outstanding.end(), index);
    if (it != queue.outstanding.end()) {
        // Everything posted before it is settled now: a silent success, or overtaken.
        for (auto earlier = queue.outstanding.begin(); earlier != it; ++earlier) {
            WorkRecord &e = records_[*earlier];
            if (e.expects_completion) {
                e.overtaken = true;
                if (queue.judge_order)
                    queue.overtaken.push_back(*earlier);
                else
                    e.missing_reported = true; // retired quietly when it comes (SRQ)
            } else {
                free_record(*earlier);
            }
        }
        queue.outstanding.erase(queue.outstanding.begin(), std::next(it));
    }
    if (rec.silent && status == STATUS_SUCCESS)
        rec.owner->report("WR-SILENT-COMPLETED", call,
                          std::string("a ") + rec.function +
                              " posted with NDK_OP_FLAG_SILENT_SUCCESS succeeded and still "
                              "produced a completion");
    free_record(index);
}

PVOID LayerAdapter::translate_one(PVOID &qp_context, PVOID request_context, NTSTATUS status,
                                  const char *call)
{
    if (qps_.count(qp_context) != 0)
        qp_context = static_cast<const QpShadow *>(qp_context)->consumer_qp_context;
    uint32_t index;
    WorkRecord *rec = find_record(request_context, &index);
    if (rec == nullptr)
        return request_context; // not a context the layer gave: passed on as it is
    PVOID consumer = rec->consumer_context;
    retire(index, status, call);
    return consumer;
}

void LayerAdapter::translate(CqShadow &, NDK_RESULT *results, ULONG count, const char *call)
{
    std::lock_guard lock(wr_mu_);
    for (ULONG i = 0; i < count; ++i)
        results[i].RequestContext = translate_one(results[i].QPContext,
                                                  results[i].RequestContext,
                                                  results[i].Status, call);
}

void LayerAdapter::translate(CqShadow &cq, NDK_RESULT_EX *results, ULONG count,
                             const char *call)
{
    std::lock_guard lock(wr_mu_);
    // ProviderErrorCode exists from NDKPI 2.1; before, its offset is padding that nobody
    // writes (digest 2.3), so the rule is judged only at 2.1 and later.
    NDK_VERSION v = version();
    const bool has_error_code = v.Major > 2 || (v.Major == 2 && v.Minor >= 1);
    for (ULONG i = 0; i < count; ++i) {
        NDK_RESULT_EX &r = results[i];
        if (has_error_code && r.Status == STATUS_SUCCESS && r.ProviderErrorCode != 0)
            cq.report("RESULT-PROVIDER-ERROR-CODE", call,
                      "a successful result carries ProviderErrorCode " +
                          hex(r.ProviderErrorCode));
        if (r.Status == STATUS_SUCCESS && r.Type == NdkOperationTypeReceiveAndInvalidate &&
            remote_tokens_.count(static_cast<UINT32>(r.TypeSpecificCompletionOutput)) == 0)
            cq.report("RESULT-INVALIDATE-TOKEN", call,
                      "a ReceiveAndInvalidate result carries " +
                          hex(static_cast<UINT32>(r.TypeSpecificCompletionOutput)) +
                          ", not a remote token of this adapter's MRs or MWs");
        r.RequestContext = translate_one(r.QPContext, r.RequestContext, r.Status, call);
    }
}

void LayerAdapter::close_queue(WorkQueue &queue, Shadow &owner)
{
    std::lock_guard lock(wr_mu_);
    for (uint32_t index : queue.overtaken) {
        WorkRecord &rec = records_[index];
        if (rec.missing_reported)
            continue;
        rec.missing_reported = true;
        owner.report("WR-COMPLETION-MISSING", "NdkClose",
                     std::string("a ") + rec.function +
                         " that succeeded inline never completed, though a later request of "
                         "its " + queue.what + " did");
    }
}

void QpShadow::closing()
{
    adapter().close_queue(initiator, *this);
    adapter().close_queue(receive, *this);
}

void SrqShadow::closing() { adapter().close_queue(queue, *this); }

void LayerAdapter::check_sgl(WorkQueue &queue, const char *call, const NDK_SGE *sgl, ULONG count,
                             ULONG flags, const std::string &object)
{
    if ((flags & NDK_OP_FLAG_INLINE) || sgl == nullptr)
        return; // inline data: the token may be invalid and is ignored (digest 1.7)
    std::lock_guard lock(wr_mu_);
    for (ULONG i = 0; i < count; ++i) {
        UINT32 token = sgl[i].MemoryRegionToken;
        auto it = local_tokens_.find(token);
        if (it == local_tokens_.end() || it->second.empty()) {
            report("SGE-TOKEN", object, call,
                   "SGE " + std::to_string(i) + ": " + hex(token) +
                       " is not the local token of a registered MR (or the privileged token)");
            return;
        }
        if (std::find(it->second.begin(), it->second.end(), queue.pd) == it->second.end()) {
            report("SGE-TOKEN", object, call,
                   "SGE " + std::to_string(i) + ": " + hex(token) +
                       " belongs to another PD than the queue's");
            return;
        }
    }
}

void LayerAdapter::learn_local_token(UINT32 token, Shadow *pd)
{
    std::lock_guard lock(wr_mu_);
    auto &pds = local_tokens_[token];
    if (std::find(pds.begin(), pds.end(), pd) == pds.end())
        pds.push_back(pd);
}

void LayerAdapter::forget_local_token(UINT32 token, Shadow *pd)
{
    std::lock_guard lock(wr_mu_);
    auto it = local_tokens_.find(token);
    if (it == local_tokens_.end())
        return;
    auto &pds = it->second;
    pds.erase(std::remove(pds.begin(), pds.end(), pd), pds.end());
}

void LayerAdapter::learn_remote_token(UINT32 token)
{
    std::lock_guard lock(wr_mu_);
    remote_tokens_.insert(token);
}

void LayerAdapter::register_qp(QpShadow &qp)
{
    std::lock_guard lock(wr_mu_);
    qps_.insert(&qp);
}

} // namespace ndk::validate
