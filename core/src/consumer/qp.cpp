// The QP handle: work-request posting (digest 1.7, 3.3).  Posts are inline; their results come
// through the CQ.
#include "ndk/objects.hpp"

#include "arguments.hpp"

namespace ndk {
namespace {

ULONG count(std::span<const NDK_SGE> sgl) { return static_cast<ULONG>(sgl.size()); }

} // namespace

Qp::Qp(std::shared_ptr<Adapter> adapter, NDK_QP *qp, std::vector<std::shared_ptr<Object>> holds)
    : Object(std::move(adapter), &qp->Header, qp->Dispatch->NdkCloseQp, std::move(holds)), ndk_(qp)
{
}

void Qp::flush()
{
    auto in_call = enter();
    ndk_->Dispatch->NdkFlush(ndk_);
}

NTSTATUS Qp::receive(PVOID request_context, std::span<const NDK_SGE> sgl)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkReceive(ndk_, request_context, sgl.data(), count(sgl));
}

NTSTATUS Qp::send(PVOID request_context, std::span<const NDK_SGE> sgl, ULONG flags)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkSend(ndk_, request_context, sgl.data(), count(sgl), flags);
}

NTSTATUS Qp::send_and_invalidate(PVOID request_context, std::span<const NDK_SGE> sgl,
                                 ULONG flags, UINT32 remote_token)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkSendAndInvalidate(ndk_, request_context, sgl.data(), count(sgl),
                                                flags, remote_token);
}

NTSTATUS Qp::read(PVOID request_context, std::span<const NDK_SGE> sgl, UINT64 remote_address,
                  UINT32 remote_token, ULONG flags)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkRead(ndk_, request_context, sgl.data(), count(sgl), remote_address,
                                   remote_token, flags);
}

NTSTATUS Qp::write(PVOID request_context, std::span<const NDK_SGE> sgl, UINT64 remote_address,
                   UINT32 remote_token, ULONG flags)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkWrite(ndk_, request_context, sgl.data(), count(sgl),
                                    remote_address, remote_token, flags);
}

NTSTATUS Qp::bind(PVOID request_context, const std::shared_ptr<Mr> &mr,
                  const std::shared_ptr<Mw> &mw, PVOID virtual_address, SIZE_T length,
                  ULONG flags)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({mr.get(), mw.get()});
    NTSTATUS status = ndk_->Dispatch->NdkBind(ndk_, request_context, mr ? mr->ndk() : nullptr,
                                              mw ? mw->ndk() : nullptr, virtual_address, length,
                                              flags);
    // A bound MW depends on its MR (digest 3.1): the MR must outlive the MW's handle.
    if (status == STATUS_SUCCESS && mw)
        mw->hold(mr);
    return status;
}

NTSTATUS Qp::fast_register(PVOID request_context, Mr &mr,
                           std::span<const NDK_LOGICAL_ADDRESS> adapter_page_array, ULONG fbo,
                           SIZE_T length, PVOID base_virtual_address, ULONG flags)
{
    auto in_call = enter();
    auto in_mr = mr.enter();
    return ndk_->Dispatch->NdkFastRegister(ndk_, request_context, mr.ndk(),
                                           static_cast<ULONG>(adapter_page_array.size()),
                                           adapter_page_array.data(), fbo, length,
                                           base_virtual_address, flags);
}

NTSTATUS Qp::invalidate(PVOID request_context, Object &mr_or_mw, ULONG flags)
{
    auto in_call = enter();
    auto in_target = mr_or_mw.enter();
    return ndk_->Dispatch->NdkInvalidate(ndk_, request_context, mr_or_mw.header(), flags);
}

BatchOutcome Qp::post_batch(BatchOp op, std::span<const BatchRequest> requests, ULONG flags)
{
    auto in_call = enter();
    const NDK_QP_DISPATCH &d = *ndk_->Dispatch;
    BatchOutcome outcome;
    for (const BatchRequest &r : requests) {
        NDK_SGE sge{};
        sge.VirtualAddress = reinterpret_cast<PVOID>(static_cast<uintptr_t>(r.address));
        sge.Length = r.length;
        sge.MemoryRegionToken = r.token;
        ULONG n = r.length == 0 && r.address == 0 ? 0 : 1;
        auto *context = reinterpret_cast<PVOID>(static_cast<uintptr_t>(r.request_context));
        ULONG f = flags | r.flags;
        switch (op) {
        case BatchOp::Send: outcome.status = d.NdkSend(ndk_, context, &sge, n, f); break;
        case BatchOp::Receive: outcome.status = d.NdkReceive(ndk_, context, &sge, n); break;
        case BatchOp::Write:
            outcome.status = d.NdkWrite(ndk_, context, &sge, n, r.remote_address, r.remote_token, f);
            break;
        case BatchOp::Read:
            outcome.status = d.NdkRead(ndk_, context, &sge, n, r.remote_address, r.remote_token, f);
            break;
        }
        if (outcome.status != STATUS_SUCCESS)
            break;
        ++outcome.posted;
    }
    return outcome;
}

} // namespace ndk
