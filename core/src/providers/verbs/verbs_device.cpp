#include "verbs_device.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <ifaddrs.h>
#include <rdma/rdma_cma.h>

namespace ndk::verbs {

std::string address_to_text(const sockaddr *address)
{
    char text[INET6_ADDRSTRLEN] = {};
    if (address->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(address)->sin_addr, text,
                  sizeof text);
    else if (address->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(address)->sin6_addr, text,
                  sizeof text);
    return text;
}

uint16_t port_of(const sockaddr *address)
{
    if (address->sa_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(address)->sin_port);
    if (address->sa_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(address)->sin6_port);
    return 0;
}

socklen_t length_of(const sockaddr *address)
{
    return address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string Device::address_text() const
{
    std::string text;
    for (const auto &a : addresses)
        text += (text.empty() ? "" : ",") + address_to_text(reinterpret_cast<const sockaddr *>(&a));
    return text;
}

namespace {

// Which device rdma_cm binds an address to: the only portable way to learn a device's IP
// addresses (RoCE devices list them in their GID table, iWARP devices nowhere).
std::string device_of_address(const sockaddr *address)
{
    rdma_cm_id *id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0)
        return {};
    sockaddr_storage copy{};
    std::memcpy(&copy, address, length_of(address));
    std::string name;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&copy)) == 0 && id->verbs != nullptr)
        name = ibv_get_device_name(id->verbs->device);
    rdma_destroy_id(id);
    return name;
}

struct Candidate {
    std::string device;
    sockaddr_storage address;
};

std::vector<Candidate> addressed_devices()
{
    std::vector<Candidate> found;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0)
        return found;
    for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
        const sockaddr *a = i->ifa_addr;
        if (a == nullptr || (a->sa_family != AF_INET && a->sa_family != AF_INET6))
            continue;
        if (a->sa_family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr))
            continue; // needs a scope id: not an address a consumer would pass
        std::string device = device_of_address(a);
        if (device.empty())
            continue;
        Candidate c{device, {}};
        std::memcpy(&c.address, a, length_of(a));
        found.push_back(c);
    }
    freeifaddrs(list);
    return found;
}

// "a,b" -> {"a", "b"} (the `address` option's list form, as the soft provider reads it).
std::vector<std::string> split_list(const std::string &text)
{
    std::vector<std::string> items;
    size_t start = 0;
    while (start < text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos)
            comma = text.size();
        if (comma > start)
            items.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return items;
}

bool same_ip(const sockaddr *a, const std::string &text)
{
    return address_to_text(a) == text;
}

// What a QP is granted for inline data, whether CQs can be resized and whether type 2 memory
// windows exist: probed once on a scratch PD, because ibv_device_attr does not say.
void probe(ibv_context *context, Device &device)
{
    ibv_pd *pd = ibv_alloc_pd(context);
    ibv_cq *cq = ibv_create_cq(context, 2, nullptr, nullptr, 0);
    if (pd != nullptr && cq != nullptr) {
        for (uint32_t ask : {256u, 128u, 64u, 0u}) {
            ibv_qp_init_attr init{};
            init.send_cq = cq;
            init.recv_cq = cq;
            init.qp_type = IBV_QPT_RC;
            init.cap.max_send_wr = 1;
            init.cap.max_recv_wr = 1;
            init.cap.max_send_sge = 1;
            init.cap.max_recv_sge = 1;
            init.cap.max_inline_data = ask;
            if (ibv_qp *qp = ibv_create_qp(pd, &init)) {
                device.max_inline = init.cap.max_inline_data;
                ibv_destroy_qp(qp);
                break;
            }
        }
        device.cq_resize = ibv_resize_cq(cq, 4) == 0;
        if (ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2)) {
            device.memory_windows = true;
            ibv_dealloc_mw(mw);
        }
    }
    if (cq != nullptr)
        ibv_destroy_cq(cq);
    if (pd != nullptr)
        ibv_dealloc_pd(pd);
}

} // namespace

NTSTATUS select_device(const std::string &name, const std::string &address, Device &out,
                       std::string &why)
{
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr || count == 0) {
        if (list != nullptr)
            ibv_free_device_list(list);
        why = "no RDMA device on this host (libibverbs lists none; the verbs provider needs "
              "rdma_rxe or siw, e.g. in the VM lane: tests/vm/verbs-lane.sh)";
        return STATUS_DEVICE_NOT_READY;
    }
    std::vector<Candidate> addressed = addressed_devices();
    std::vector<std::string> wanted = split_list(address);
    std::string chosen = name;
    if (chosen.empty() && !wanted.empty()) {
        for (const Candidate &c : addressed)
            if (same_ip(reinterpret_cast<const sockaddr *>(&c.address), wanted.front()))
                chosen = c.device;
        if (chosen.empty()) {
            ibv_free_device_list(list);
            why = "no RDMA device owns address " + wanted.front();
            return STATUS_INVALID_PARAMETER;
        }
    }
    if (chosen.empty() && !addressed.empty())
        chosen = addressed.front().device;
    ibv_device *device = nullptr;
    for (int i = 0; i < count; ++i)
        if (chosen.empty() || chosen == ibv_get_device_name(list[i])) {
            device = list[i];
            break;
        }
    if (device == nullptr) {
        ibv_free_device_list(list);
        why = "no RDMA device named " + chosen;
        return STATUS_INVALID_PARAMETER;
    }
    out.name = ibv_get_device_name(device);
    out.iwarp = device->transport_type == IBV_TRANSPORT_IWARP;
    for (const Candidate &c : addressed)
        if (c.device == out.name)
            out.addresses.push_back(c.address);
    // The addresses the adapter was opened with come first, in their order (they are the ones
    // its consumer knows); the device must own each of them.
    for (size_t i = 0; i < wanted.size(); ++i) {
        auto owned = std::find_if(out.addresses.begin() + i, out.addresses.end(), [&](const auto &a) {
            return same_ip(reinterpret_cast<const sockaddr *>(&a), wanted[i]);
        });
        if (owned == out.addresses.end()) {
            ibv_free_device_list(list);
            why = "RDMA device " + out.name + " does not own address " + wanted[i];
            return STATUS_DEVICE_NOT_READY;
        }
        std::rotate(out.addresses.begin() + i, owned, owned + 1);
    }
    ibv_context *context = ibv_open_device(device);
    ibv_free_device_list(list);
    if (context == nullptr) {
        why = "cannot open RDMA device " + out.name + ": " + std::strerror(errno);
        return STATUS_DEVICE_NOT_READY;
    }
    NTSTATUS status = STATUS_SUCCESS;
    if (ibv_query_device(context, &out.attr) != 0 || ibv_query_port(context, 1, &out.port) != 0) {
        why = "cannot query RDMA device " + out.name;
        status = STATUS_DEVICE_NOT_READY;
    } else {
        probe(context, out);
    }
    ibv_close_device(context);
    if (status == STATUS_SUCCESS && out.addresses.empty()) {
        why = "RDMA device " + out.name + " has no IP address (rdma_cm needs one)";
        status = STATUS_DEVICE_NOT_READY;
    }
    return status;
}

NDK_ADAPTER_INFO Device::info(NDK_VERSION version) const
{
    auto cap = [](uint64_t v) { return static_cast<ULONG>(std::min<uint64_t>(v, MAXULONG)); };
    NDK_ADAPTER_INFO info{};
    info.Version = version;
    info.VendorId = attr.vendor_id;
    info.DeviceId = attr.vendor_part_id;
    // A registration is bounded by the device and by what a SIZE_T length can describe here.
    info.MaxRegistrationSize = std::min<uint64_t>(attr.max_mr_size, uint64_t{1} << 46);
    info.MaxWindowSize = info.MaxRegistrationSize;
    // Fast registration is a kernel verb (IB_WR_REG_MR): user space cannot post it, so no
    // page count is supported and NdkInitializeFastRegisterMr reports IMPLEMENTATION_LIMIT.
    // Digest 2.1 asks for at least 16; a count no initialize accepts would be untrue, so the
    // difference is recorded instead (docs/semantics.md, quirks of the verbs provider).
    info.FRMRPageCount = 0;
    info.MaxInitiatorRequestSge = cap(attr.max_sge);
    // One limit for QP and SRQ receives: rxe allows fewer SGEs on an SRQ than on a QP.
    info.MaxReceiveRequestSge =
        cap(attr.max_srq > 0 && attr.max_srq_sge > 0 ? std::min(attr.max_sge, attr.max_srq_sge)
                                                     : attr.max_sge);
    info.MaxReadRequestSge = cap(attr.max_sge_rd ? attr.max_sge_rd : attr.max_sge);
    info.MaxTransferLength = cap(port.max_msg_sz);
    info.MaxInlineDataSize = max_inline;
    info.MaxInboundReadLimit = cap(attr.max_qp_rd_atom);
    info.MaxOutboundReadLimit = cap(attr.max_qp_init_rd_atom);
    info.MaxReceiveQueueDepth = cap(attr.max_qp_wr);
    info.MaxInitiatorQueueDepth = cap(attr.max_qp_wr);
    info.MaxSrqDepth = attr.max_srq > 0 ? cap(attr.max_srq_wr) : 0;
    info.MaxCqDepth = cap(attr.max_cqe);
    info.LargeRequestThreshold = 4096;
    // rdma_cm's private data on IB/RoCE: 56 bytes in a REQ after its own header, 148 in a REJ
    // (196 in a REP); iWARP's MPA carries more, but the same bounds keep the model simple.
    info.MaxCallerData = 56;
    info.MaxCalleeData = 148;
    info.AdapterFlags = NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED | // any LOCAL_WRITE MR
                        NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    if (cq_resize)
        info.AdapterFlags |= NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
    if (iwarp)
        info.RdmaTechnology = NdkiWarp;
    else if (port.link_layer == IBV_LINK_LAYER_ETHERNET)
        info.RdmaTechnology = NdkRoCEv2; // rxe: RoCE v2 (UDP/IP)
    else
        info.RdmaTechnology = NdkInfiniBand;
    return info;
}

void Device::ndk_capabilities(NDIS_NDK_CAPABILITIES &capabilities) const
{
    auto count = [](int v) { return v > 0 ? static_cast<ULONG>(v) : ULONG{0}; };
    capabilities.MaxQpCount = count(attr.max_qp);
    capabilities.MaxCqCount = count(attr.max_cq);
    capabilities.MaxMrCount = count(attr.max_mr);
    capabilities.MaxPdCount = count(attr.max_pd);
    capabilities.MaxMwCount = memory_windows ? count(attr.max_mw) : 0;
    capabilities.MaxSrqCount = count(attr.max_srq); // 0: no SRQ, as MaxSrqDepth says
    // The read limits are per QP (max_qp_rd_atom, in NDK_ADAPTER_INFO); none adapter-wide.
    capabilities.MaxInboundReadLimit = 0;
    capabilities.MaxOutboundReadLimit = 0;
    // The octets and frames are the device's, which the miniport does not count (verbs_oid.cpp).
    capabilities.MissingCounterMask = NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInOctets) |
                                      NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAOutOctets) |
                                      NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInFrames) |
                                      NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAOutFrames);
}

} // namespace ndk::verbs
