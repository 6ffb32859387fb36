// Work completions -> NDK_RESULT_EX, and the status tables (docs/semantics.md, VERBS-STATUS).
#include "verbs_objects.hpp"

#include <cerrno>

namespace ndk::verbs {

NTSTATUS wc_status(ibv_wc_status status, NDK_OPERATION_TYPE type)
{
    bool receive = type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate;
    switch (status) {
    case IBV_WC_SUCCESS: return STATUS_SUCCESS;
    // A receive too small for the incoming send; on the initiator, SGEs the device cannot send.
    case IBV_WC_LOC_LEN_ERR: return receive ? STATUS_BUFFER_OVERFLOW : STATUS_DATA_OVERRUN;
    case IBV_WC_LOC_QP_OP_ERR: return STATUS_INVALID_DEVICE_REQUEST; // malformed request
    case IBV_WC_LOC_PROT_ERR: return STATUS_ACCESS_VIOLATION;         // local token / PD
    case IBV_WC_LOC_ACCESS_ERR: return STATUS_ACCESS_VIOLATION;
    case IBV_WC_LOC_RDD_VIOL_ERR: return STATUS_ACCESS_VIOLATION;
    case IBV_WC_WR_FLUSH_ERR: return STATUS_CANCELLED;                 // flushed (digest 1.7)
    case IBV_WC_MW_BIND_ERR: return STATUS_INVALID_DEVICE_REQUEST;     // ND2: bad bind
    case IBV_WC_REM_ACCESS_ERR: return STATUS_ACCESS_VIOLATION;        // remote token / range
    case IBV_WC_REM_INV_REQ_ERR: return STATUS_REMOTE_RESOURCES;       // ND_REMOTE_ERROR
    case IBV_WC_REM_OP_ERR: return STATUS_REMOTE_RESOURCES;
    case IBV_WC_REM_INV_RD_REQ_ERR: return STATUS_REMOTE_RESOURCES;
    case IBV_WC_REM_ABORT_ERR: return STATUS_REMOTE_RESOURCES;
    case IBV_WC_RETRY_EXC_ERR: return STATUS_IO_TIMEOUT;               // peer unresponsive
    case IBV_WC_RNR_RETRY_EXC_ERR: return STATUS_IO_TIMEOUT;           // no receive posted
    case IBV_WC_RESP_TIMEOUT_ERR: return STATUS_IO_TIMEOUT;
    default: return STATUS_INTERNAL_ERROR; // BAD_RESP, FATAL, GENERAL, EEC/EECN, TM errors
    }
}

NTSTATUS errno_status(int error)
{
    switch (error) {
    case ENOMEM: case ENOSPC: case EAGAIN: return STATUS_INSUFFICIENT_RESOURCES;
    case EINVAL: return STATUS_INVALID_PARAMETER;
    case EOPNOTSUPP: case ENOSYS: return STATUS_NOT_SUPPORTED;
    case EBUSY: return STATUS_DEVICE_BUSY;
    case EADDRINUSE: return STATUS_SHARING_VIOLATION;
    case EADDRNOTAVAIL: return STATUS_INVALID_ADDRESS;
    case ECONNREFUSED: return STATUS_CONNECTION_REFUSED;
    case ENETUNREACH: return STATUS_NETWORK_UNREACHABLE;
    case EHOSTUNREACH: return STATUS_HOST_UNREACHABLE;
    case ETIMEDOUT: return STATUS_IO_TIMEOUT;
    case EFAULT: case EACCES: case EPERM: return STATUS_ACCESS_VIOLATION;
    default: return STATUS_UNSUCCESSFUL;
    }
}

namespace {

// What every result of `request` carries, however it ends.
NDK_RESULT_EX result_of(const VQp &qp, const Request &request)
{
    NDK_RESULT_EX r{};
    r.QPContext = qp.qp_context;
    r.RequestContext = request.context;
    r.Type = request.type;
    return r;
}

} // namespace

NDK_RESULT_EX cancelled_result(const VQp &qp, const Request &request)
{
    NDK_RESULT_EX r = result_of(qp, request);
    r.Status = STATUS_CANCELLED; // as IBV_WC_WR_FLUSH_ERR reads (VERBS-STATUS)
    return r;
}

namespace {

// The NDK result of one request's work completion.  Lock held.
NDK_RESULT_EX to_result(const VQp &qp, const Request &request, const ibv_wc &wc)
{
    NDK_RESULT_EX r = result_of(qp, request);
    r.Status = wc_status(wc.status, request.type);
    if (r.Status != STATUS_SUCCESS)
        r.ProviderErrorCode = wc.vendor_err; // 0 = not provided (digest 2.3)
    if (request.type == NdkOperationTypeReceive) {
        r.BytesTransferred = wc.byte_len;
        // rxe writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the CQE it shares
        // with user space, where that bit reads as IBV_WC_IP_CSUM_OK; no device sets
        // IP_CSUM_OK on an RC receive, so on one it can only mean "invalidated".
        unsigned invalidated = IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK;
        if (wc.status == IBV_WC_SUCCESS && (wc.wc_flags & invalidated)) {
            r.Type = NdkOperationTypeReceiveAndInvalidate;
            r.TypeSpecificCompletionOutput = wc.invalidated_rkey;
        }
    } else if (r.Status == STATUS_SUCCESS) {
        r.BytesTransferred = request.bytes; // nothing was transferred by a failed request
    }
    if (request.bind != nullptr && !request.invalidate && wc.status != IBV_WC_SUCCESS)
        window_rkey_bound(request.rkey, false); // the bind failed: the window is not bound
    return r;
}

// Initiator results leave in issue order (digest 4.2), whatever order the device completes
// them in (docs/semantics.md, VERBS-SQ-ORDER): siw completes a Send or Write once it is
// handed to TCP but a Read only when its response arrives, so a later request's completion
// can come before an earlier Read's.  A completed request waits until every signalled
// request before it has completed; unsignalled ones before it (silent, no completion will
// come for them: they finished without one, digest 2.5) leave with it.  Lock held.
void release_in_order(RequestQueue &queue, std::deque<NDK_RESULT_EX> &out)
{
    auto last_done = queue.pending.end();
    for (auto it = queue.pending.begin(); it != queue.pending.end(); ++it) {
        if (it->second.done)
            last_done = it;
        else if (it->second.signaled)
            break; // its completion is still due: everything after it waits
    }
    if (last_done == queue.pending.end())
        return;
    auto past = std::next(last_done);
    for (auto it = queue.pending.begin(); it != past; ++it)
        if (it->second.done && it->second.report)
            out.push_back(it->second.result);
    queue.pending.erase(queue.pending.begin(), past);
}

} // namespace

bool poll_device(VCq &cq, std::deque<NDK_RESULT_EX> &out)
{
    ibv_wc wc{};
    if (ibv_poll_cq(cq.cq, 1, &wc) != 1)
        return false;
    VerbsAdapter &adapter = cq.adapter();
    auto qp_it = adapter.qps().find(wc.qp_num);
    if (qp_it == adapter.qps().end())
        return true; // its QP was closed: nobody to report to
    VQp &qp = *qp_it->second;
    if (wc.status != IBV_WC_SUCCESS)
        qp.in_error = true; // any error completion leaves an RC QP in the error state
    // On error wc.opcode is undefined: the work request id says which queue (kReceiveTag).
    if (wc.wr_id & kReceiveTag) {
        // Receive completions: in order on a QP's own queue; an SRQ's go to any QP.
        RequestQueue &queue = qp.srq != nullptr ? qp.srq->receives : qp.receives;
        auto it = queue.pending.find(wc.wr_id);
        if (it != queue.pending.end()) {
            out.push_back(to_result(qp, it->second, wc));
            queue.pending.erase(it);
        }
        return true;
    }
    auto it = qp.sends.pending.find(wc.wr_id);
    if (it == qp.sends.pending.end() || it->second.done)
        return true;
    Request &request = it->second;
    request.done = true;
    request.result = to_result(qp, request, wc);
    // A silent request the device was asked to signal (post_initiator: Reads) reports only a
    // failure (digest 2.5).
    request.report = !request.silent || wc.status != IBV_WC_SUCCESS;
    release_in_order(qp.sends, out);
    return true;
}

} // namespace ndk::verbs
