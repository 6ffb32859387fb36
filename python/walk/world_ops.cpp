// World::exec: one Op against the providers.  An op whose objects are gone (their creation
// failed, or was removed by the shrinker) or whose buffers are busy is skipped, so every
// sub-sequence of a trace replays as a conforming consumer would run it.
#include "world.hpp"

#include <algorithm>
#include <optional>
#include <thread>

namespace walk {
namespace {

std::string st(NTSTATUS s) { return ndk::status_name(s); }

void *ctx(uint64_t v) { return reinterpret_cast<void *>(static_cast<uintptr_t>(v)); }

} // namespace

void World::exec(const Op &op)
{
    current_ = &op;
    std::set<std::string> allowed;
    try {
        allowed = allowance(op);
        dispatch(op);
    } catch (const ndk::ClosedError &e) {
        fail("closed", op_name(op.code),
             std::string("the consumer API refused ") + op_name(op.code) + ": " + e.what());
    } catch (const std::exception &e) {
        fail("exception", op_name(op.code), std::string(op_name(op.code)) + ": " + e.what());
    }
    pump_events();
    // Reading the record costs a pass over every call the layer keeps: every 32 ops, and
    // around an op that breaks a consumer rule on purpose (so the allowance is exact).
    if (!allowed.empty() || ++checks_ % 32 == 0)
        check_violations(allowed);
    current_ = nullptr;
}

// The consumer rules `op` breaks on purpose (a bad token, an intended overpost): what came
// before is judged first, without the allowance.
std::set<std::string> World::allowance(const Op &op)
{
    std::set<std::string> allowed;
    if (op.code == Code::badtok)
        allowed.insert("SGE-TOKEN");
    else if (flag_slot(op.code) >= 0 && op.a[flag_slot(op.code)] & kIntendOverpost)
        allowed.insert("POST-QUEUE-DEPTH");
    if (!allowed.empty())
        check_violations({});
    return allowed;
}

void World::dispatch(const Op &op)
{
    switch (op.code) {
    case Code::knob:
        op_knob(op);
        break;
    case Code::query:
        op_query(op);
        break;
    case Code::cq_create:
    case Code::pd_create:
    case Code::conn_create:
    case Code::lis_create:
    case Code::se_create:
    case Code::mr_create:
    case Code::mw_create:
    case Code::srq_create:
    case Code::qp_create:
    case Code::qps_create:
        op_create(op);
        break;
    case Code::listen:
        op_listen(op);
        break;
    case Code::pause:
        op_pause(op);
        break;
    case Code::priv:
        op_priv(op);
        break;
    case Code::reg:
        op_reg(op);
        break;
    case Code::dereg:
        op_dereg(op);
        break;
    case Code::frinit:
        op_frinit(op);
        break;
    case Code::lam:
        op_lam(op);
        break;
    case Code::lamrel:
        op_lamrel(op);
        break;
    case Code::arm:
        op_arm(op);
        break;
    case Code::poll:
        poll_cq(op.a[0], static_cast<ULONG>(op.a[1]), op.a[2] != 0);
        break;
    case Code::resize:
        op_resize(op);
        break;
    case Code::moder:
        op_moder(op);
        break;
    case Code::srq_mod:
        op_srq_mod(op);
        break;
    case Code::badtok:
    case Code::srq_recv:
    case Code::recv:
    case Code::send:
    case Code::sendinv:
    case Code::write:
    case Code::read:
    case Code::bind:
    case Code::inval:
    case Code::fastreg:
        op_post(op);
        break;
    case Code::flush:
        op_flush(op);
        break;
    case Code::connect:
        op_connect(op);
        break;
    case Code::disc:
        op_disc(op);
        break;
    case Code::conndata:
        op_conndata(op);
        break;
    case Code::addr:
        op_addr(op);
        break;
    case Code::close:
        op_close(op);
        break;
    case Code::corrupt:
        // hidden (--inject-failure-at): the next successful transfer's destination is
        // damaged before it is checked, to test the oracle and the shrinker
        corrupt_pending_ = true;
        break;
    case Code::reset:
        op_reset();
        break;
    case Code::count_:
        break;
    }
}

// A completion mode knob of one adapter (create/request/close_mode, inline or pending).
void World::op_knob(const Op &op)
{
    static const char *keys[] = {"create_mode", "request_mode", "close_mode"};
    static const char *values[] = {"inline", "pending"};
    if (op.a[0] < 0 || op.a[0] >= static_cast<int64_t>(ad_.size()) || op.a[1] < 0 ||
        op.a[1] > 2 || op.a[2] < 0 || op.a[2] > 1 || !ad_[op.a[0]]->has_knobs()) {
        ++skipped;
        return;
    }
    std::string reply;
    ad_[op.a[0]]->set_knob(keys[op.a[1]], values[op.a[2]], reply);
}

// NdkQueryAdapterInfo, and with an 8-byte buffer, which must be STATUS_BUFFER_TOO_SMALL.
void World::op_query(const Op &op)
{
    if (op.a[0] < 0 || op.a[0] >= static_cast<int64_t>(ad_.size())) {
        ++skipped;
        return;
    }
    NDK_ADAPTER_INFO info{};
    ULONG size = sizeof(info);
    note("NdkQueryAdapterInfo", ad_[op.a[0]]->query_adapter_info(&info, &size));
    ULONG small = 8;
    NTSTATUS s = ad_[op.a[0]]->query_adapter_info(&info, &small);
    note("NdkQueryAdapterInfo", s);
    if (s != STATUS_BUFFER_TOO_SMALL)
        fail("status", "NdkQueryAdapterInfo",
             "NdkQueryAdapterInfo with an 8-byte buffer returned " + st(s) +
                 ", documented: STATUS_BUFFER_TOO_SMALL");
}

// NdkListen on a listener, and its local address once it listens.
void World::op_listen(const Op &op)
{
    Obj *l = get(op.a[0], Kind::Listener);
    if (!l) {
        ++skipped;
        return;
    }
    auto h = std::static_pointer_cast<ndk::Listener>(l->h);
    auto call = h->listen(ndk::SocketAddress::from(host_[l->ad], op.a[1]));
    note_call("NdkListen", call);
    if (call.done() && call.result() == STATUS_SUCCESS) {
        ndk::SocketAddress local;
        NTSTATUS s = h->get_local_address(local);
        note("NdkGetLocalAddress (listener)", s);
        l->listening = s == STATUS_SUCCESS;
        l->port = local.port();
    }
}

// NdkControlConnectEvents: pause or resume a listener's connect events.
void World::op_pause(const Op &op)
{
    Obj *l = get(op.a[0], Kind::Listener);
    if (!l) {
        ++skipped;
        return;
    }
    std::static_pointer_cast<ndk::Listener>(l->h)->control_connect_events(op.a[1] != 0);
    l->paused = op.a[1] != 0;
    ++statuses["NdkControlConnectEvents"]["called"];
}

// NdkGetPrivilegedMemoryRegionToken of a PD.
void World::op_priv(const Op &op)
{
    auto pd = handle<ndk::Pd>(op.a[0], Kind::Pd);
    if (!pd) {
        ++skipped;
        return;
    }
    pd->get_privileged_memory_region_token();
    ++statuses["NdkGetPrivilegedMemoryRegionToken"]["called"];
}

// NdkRegisterMr of a new buffer.
void World::op_reg(const Op &op)
{
    Obj *mr = get(op.a[0], Kind::Mr);
    if (!mr || op.a[1] <= 0 || op.a[1] > (1 << 20)) {
        ++skipped;
        return;
    }
    auto buf = std::make_shared<Buf>(op.a[1]);
    auto h = std::static_pointer_cast<ndk::Mr>(mr->h);
    auto call = h->register_buffer(buf->d.data(), buf->d.size(),
                                   static_cast<ULONG>(op.a[2]), buf);
    note_call("NdkRegisterMr", call);
    if (call.done() && call.result() == STATUS_SUCCESS) {
        mr->registered = true;
        mr->buf = buf;
        mr->flags = static_cast<uint32_t>(op.a[2]);
        mr->ltok = h->get_local_token();
        mr->rtok = h->get_remote_token();
    }
}

// NdkDeregisterMr.
void World::op_dereg(const Op &op)
{
    Obj *mr = get(op.a[0], Kind::Mr);
    if (!mr) {
        ++skipped;
        return;
    }
    auto call = std::static_pointer_cast<ndk::Mr>(mr->h)->deregister();
    note_call("NdkDeregisterMr", call);
    if (call.done() && call.result() == STATUS_SUCCESS) {
        mr->registered = false;
        mr->buf = nullptr;
        mr->ltok = mr->rtok = 0;
    }
}

// NdkInitializeFastRegisterMr, STATUS_IMPLEMENTATION_LIMIT above the adapter's pages.
void World::op_frinit(const Op &op)
{
    Obj *mr = get(op.a[0], Kind::Mr);
    if (!mr) {
        ++skipped;
        return;
    }
    auto call = std::static_pointer_cast<ndk::Mr>(mr->h)->initialize_fast_register(
        static_cast<ULONG>(op.a[1]), op.a[2] != 0);
    note_call("NdkInitializeFastRegisterMr", call);
    const auto &info = info_[mr->ad];
    uint64_t limit = info.MaxRegistrationSize / 4096;
    if (call.done() && static_cast<uint64_t>(op.a[1]) > limit && mr->fast &&
        !mr->fr_init && call.result() != STATUS_IMPLEMENTATION_LIMIT)
        fail("status", "NdkInitializeFastRegisterMr",
             "AdapterPageCount " + std::to_string(op.a[1]) + " above " +
                 std::to_string(limit) + " returned " + st(call.result()) +
                 ", documented: STATUS_IMPLEMENTATION_LIMIT");
    if (call.done() && call.result() == STATUS_SUCCESS && mr->fast && !mr->fr_init) {
        mr->fr_init = true;
        mr->fr_pages = static_cast<uint32_t>(op.a[1]);
        mr->fr_remote = op.a[2] != 0;
        auto h = std::static_pointer_cast<ndk::Mr>(mr->h);
        mr->ltok = h->get_local_token();
        mr->rtok = h->get_remote_token();
    }
}

// NdkReleaseLAM of a mapping no request in flight uses.
void World::op_lamrel(const Op &op)
{
    // NdkReleaseLAM: never while a request that uses it is in flight (digest 1.1).  An
    // MR it maps stays fast-registered (NdkInvalidate succeeds), but its pages are no
    // logical addresses any more: an access through it fails (docs/walk.md)
    auto it = lams_.find(op.a[0]);
    if (it == lams_.end() || it->second.uses > 0) {
        ++skipped;
        return;
    }
    it->second.h->release();
    ++statuses["NdkReleaseLAM"]["called"];
    for (int64_t id : live_[static_cast<size_t>(Kind::Mr)]) {
        Obj *m = get(id, Kind::Mr);
        if (m->fast && m->fr_lam == it->first) {
            m->fr_stale = true;
            m->fr_lam = -1;
        }
    }
    lams_.erase(it);
}

// NdkArmCq.
void World::op_arm(const Op &op)
{
    auto cq = handle<ndk::Cq>(op.a[0], Kind::Cq);
    if (!cq) {
        ++skipped;
        return;
    }
    cq->arm(static_cast<ULONG>(op.a[1]));
    ++statuses["NdkArmCq"]["called"];
}

// NdkResizeCq, STATUS_INVALID_PARAMETER above MaxCqDepth.
void World::op_resize(const Op &op)
{
    Obj *cq = get(op.a[0], Kind::Cq);
    if (!cq || !(info_[cq->ad].AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED)) {
        ++skipped;
        return;
    }
    auto call = std::static_pointer_cast<ndk::Cq>(cq->h)->resize(
        static_cast<ULONG>(op.a[1]));
    note_call("NdkResizeCq", call);
    if (!call.done())
        return;
    if (static_cast<uint64_t>(op.a[1]) > info_[cq->ad].MaxCqDepth &&
        call.result() != STATUS_INVALID_PARAMETER)
        fail("status", "NdkResizeCq",
             "CqDepth " + std::to_string(op.a[1]) + " above MaxCqDepth returned " +
                 st(call.result()) + ", documented: STATUS_INVALID_PARAMETER");
    if (call.result() == STATUS_SUCCESS) {
        cq->depth = static_cast<uint32_t>(op.a[1]);
        if (cq->pending > cq->depth)
            cq->tainted = true;
    }
}

// NdkControlCqInterruptModeration, the status the adapter's flags and the values call for.
void World::op_moder(const Op &op)
{
    Obj *cq = get(op.a[0], Kind::Cq);
    if (!cq) {
        ++skipped;
        return;
    }
    auto h = std::static_pointer_cast<ndk::Cq>(cq->h);
    NTSTATUS s = h->control_interrupt_moderation(static_cast<ULONG>(op.a[1]),
                                                 static_cast<ULONG>(op.a[2]));
    note("NdkControlCqInterruptModeration", s);
    bool supported =
        info_[cq->ad].AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
    bool mix = static_cast<ULONG>(op.a[1]) == MAXULONG &&
               (static_cast<ULONG>(op.a[2]) == MAXULONG ||
                static_cast<uint64_t>(op.a[2]) > cq->depth);
    NTSTATUS want = !supported ? STATUS_NOT_SUPPORTED
                    : mix      ? STATUS_INVALID_PARAMETER_MIX
                               : s;
    if (s != want && !(supported && !mix && s == STATUS_INSUFFICIENT_RESOURCES))
        fail("status", "NdkControlCqInterruptModeration",
             "returned " + st(s) + ", documented: " + st(want));
}

// NdkModifySrq, STATUS_INVALID_PARAMETER above MaxSrqDepth.
void World::op_srq_mod(const Op &op)
{
    Obj *srq = get(op.a[0], Kind::Srq);
    if (!srq || op.a[2] > std::max<int64_t>(op.a[1], srq->rdepth)) {
        ++skipped;
        return;
    }
    auto call = std::static_pointer_cast<ndk::Srq>(srq->h)->modify(
        static_cast<ULONG>(op.a[1]), static_cast<ULONG>(op.a[2]));
    note_call("NdkModifySrq", call);
    if (!call.done())
        return;
    if (static_cast<uint64_t>(op.a[1]) > info_[srq->ad].MaxSrqDepth &&
        call.result() != STATUS_INVALID_PARAMETER)
        fail("status", "NdkModifySrq",
             "SrqDepth " + std::to_string(op.a[1]) + " above MaxSrqDepth returned " +
                 st(call.result()) + ", documented: STATUS_INVALID_PARAMETER");
    if (call.result() == STATUS_SUCCESS && op.a[1] > 0)
        srq->rdepth = static_cast<uint32_t>(op.a[1]);
}

// NdkFlush of a QP.
void World::op_flush(const Op &op)
{
    Obj *qp = get(op.a[0], Kind::Qp);
    if (!qp) {
        ++skipped;
        return;
    }
    std::static_pointer_cast<ndk::Qp>(qp->h)->flush();
    ++statuses["NdkFlush"]["called"];
    qp->avail = 0;
    qp->defer_open = false;
}

// NdkDisconnect of a connector, and the state of its QP and the peer's.
void World::op_disc(const Op &op)
{
    Obj *c = get(op.a[0], Kind::Connector);
    if (!c) {
        ++skipped;
        return;
    }
    auto call = std::static_pointer_cast<ndk::Connector>(c->h)->disconnect();
    note_call("NdkDisconnect", call);
    if (Obj *qp = get(c->conn, Kind::Qp)) {
        qp->qstate = 2;
        qp->avail = 0;
        if (Obj *peer = get(qp->peer, Kind::Qp))
            peer->qstate = 2;
    }
    c->qstate = 2;
}

// NdkGetConnectionData of a connector.
void World::op_conndata(const Op &op)
{
    Obj *c = get(op.a[0], Kind::Connector);
    if (!c || c->no_conndata) {
        ++skipped;
        return;
    }
    auto h = std::static_pointer_cast<ndk::Connector>(c->h);
    ULONG irl = 0, orl = 0, len = 0;
    NTSTATUS s = h->get_connection_data(&irl, &orl, nullptr, &len);
    note("NdkGetConnectionData", s);
}

// NdkGetLocalAddress and NdkGetPeerAddress of a connector (and a too-small buffer).
void World::op_addr(const Op &op)
{
    Obj *c = get(op.a[0], Kind::Connector);
    if (!c) {
        ++skipped;
        return;
    }
    auto h = std::static_pointer_cast<ndk::Connector>(c->h);
    ndk::SocketAddress a;
    note("NdkGetLocalAddress", h->get_local_address(a));
    ndk::SocketAddress b;
    note("NdkGetPeerAddress", h->get_peer_address(b));
    ndk::SocketAddress tiny;
    NTSTATUS s = h->get_peer_address(tiny, 2);
    note("NdkGetPeerAddress", s);
}

// A new epoch: judge and close everything, then two fresh adapters.
void World::op_reset()
{
    finish();
    if (failure.failed())
        return;
    ad_.clear();
    host_.clear();
    info_.clear();
    sends_.clear();
    sends_gone_.clear();
    maybe_delivered_.clear();
    open();
}

// --- logical address mappings --------------------------------------------------------------

// NdkBuildLAM on adapter `ad` over [off, off + len) of the buffer of MR `mr` (any adapter's:
// the buffer is the walker's), or of a new buffer of off + len bytes (mr -1).  small: a
// *pLAMSize with no room for a page, which must fail STATUS_BUFFER_TOO_SMALL and report the
// size needed (digest 1.1).
void World::op_lam(const Op &op)
{
    int64_t ad = op.a[0], off = op.a[3], len = op.a[4];
    if (ad < 0 || ad >= static_cast<int64_t>(ad_.size()) || off < 0 || len <= 0 ||
        off + len > (1 << 20)) {
        ++skipped;
        return;
    }
    std::shared_ptr<Buf> buf;
    if (op.a[2] >= 0) {
        Obj *mr = get(op.a[2], Kind::Mr);
        if (!mr || mr->fast || !mr->registered ||
            static_cast<uint64_t>(off + len) > mr->buf->d.size()) {
            ++skipped;
            return;
        }
        buf = mr->buf;
    } else {
        buf = std::make_shared<Buf>(off + len);
    }
    MDL mdl{};
    NdkInitializeMdl(&mdl, buf->d.data() + off, static_cast<ULONG>(len));
    auto start = reinterpret_cast<uintptr_t>(buf->d.data() + off);
    ULONG needed = ndk::Lam::size_for(start, len);
    std::optional<ULONG> size;
    if (op.a[5])
        size = static_cast<ULONG>(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray));
    auto [call, lam] = ad_[ad]->build_lam({mdl}, len, size, buf);
    note_call("NdkBuildLAM", call);
    if (!call.done())
        return;
    if (call.result() == STATUS_NOT_SUPPORTED) {
        // A provider that cannot map pages (user-space verbs: ndk.quirks _NO_LAM); NdkBuildLAM
        // documents "other" failures, so the walk goes on without LAMs on this adapter.
        no_lam_.insert(static_cast<int>(ad));
        return;
    }
    if (op.a[5]) {
        if (call.result() != STATUS_BUFFER_TOO_SMALL || lam->lam_size() != needed)
            fail("status", "NdkBuildLAM",
                 "NdkBuildLAM with a *pLAMSize of no page returned " + ndk::status_name(call.result()) +
                     " and *pLAMSize " + std::to_string(lam->lam_size()) +
                     ", documented: STATUS_BUFFER_TOO_SMALL and " + std::to_string(needed));
        return;
    }
    if (call.result() != STATUS_SUCCESS)
        return;
    LamRec rec;
    rec.ad = static_cast<int>(ad);
    rec.h = lam;
    rec.buf = buf;
    rec.off = static_cast<uint32_t>(off);
    rec.len = static_cast<uint32_t>(len);
    rec.fbo = lam->fbo();
    rec.pages = lam->adapter_page_array();
    uint64_t want_pages = (rec.fbo + len + 4095) / 4096;
    if (rec.fbo >= 4096 || rec.pages.size() != want_pages) {
        fail("status", "NdkBuildLAM",
             "NdkBuildLAM over " + std::to_string(len) + " bytes at page offset " +
                 std::to_string(start % 4096) + " reported FBO " + std::to_string(rec.fbo) +
                 " and " + std::to_string(rec.pages.size()) + " pages");
        return;
    }
    lams_[op.a[1]] = std::move(rec);
}

// --- creates -------------------------------------------------------------------------------

void World::op_create(const Op &op)
{
    const char *fn = "";
    ndk::Call call;
    Obj obj;
    obj.id = op.a[1];
    bool invalid = false; // documented INVALID_PARAMETER
    auto adapter = [&](int64_t i) -> ndk::Adapter * {
        return i >= 0 && i < static_cast<int64_t>(ad_.size()) ? ad_[i].get() : nullptr;
    };
    Obj *pd = nullptr;
    if (op.code == Code::mr_create || op.code == Code::mw_create ||
        op.code == Code::srq_create || op.code == Code::qp_create ||
        op.code == Code::qps_create) {
        pd = get(op.a[0], Kind::Pd);
        if (!pd) {
            ++skipped;
            return;
        }
        obj.ad = pd->ad;
        obj.pd = pd->id;
    } else {
        if (!adapter(op.a[0])) {
            ++skipped;
            return;
        }
        obj.ad = static_cast<int>(op.a[0]);
    }
    const NDK_ADAPTER_INFO &info = info_[obj.ad];
    auto pdh = pd ? std::static_pointer_cast<ndk::Pd>(pd->h) : nullptr;
    switch (op.code) {
    case Code::cq_create:
        fn = "NdkCreateCq";
        obj.kind = Kind::Cq;
        obj.depth = static_cast<uint32_t>(op.a[2]);
        invalid = static_cast<uint64_t>(op.a[2]) > info.MaxCqDepth;
        call = ad_[obj.ad]->create_cq(obj.depth);
        break;
    case Code::pd_create:
        fn = "NdkCreatePd";
        obj.kind = Kind::Pd;
        call = ad_[obj.ad]->create_pd();
        break;
    case Code::conn_create:
        fn = "NdkCreateConnector";
        obj.kind = Kind::Connector;
        call = ad_[obj.ad]->create_connector();
        break;
    case Code::lis_create:
        fn = "NdkCreateListener";
        obj.kind = Kind::Listener;
        call = ad_[obj.ad]->create_listener();
        break;
    case Code::se_create:
        fn = "NdkCreateSharedEndpoint";
        obj.kind = Kind::Endpoint;
        call = ad_[obj.ad]->create_shared_endpoint(
            ndk::SocketAddress::from(host_[obj.ad], static_cast<uint16_t>(op.a[2])));
        break;
    case Code::mr_create:
        fn = "NdkCreateMr";
        obj.kind = Kind::Mr;
        obj.fast = op.a[2] != 0;
        call = pdh->create_mr(obj.fast);
        break;
    case Code::mw_create:
        fn = "NdkCreateMw";
        obj.kind = Kind::Mw;
        call = pdh->create_mw();
        break;
    case Code::srq_create:
        fn = "NdkCreateSrq";
        obj.kind = Kind::Srq;
        obj.rdepth = static_cast<uint32_t>(op.a[2]);
        obj.rsge = static_cast<uint32_t>(op.a[3]);
        if (op.a[4] > op.a[2]) {
            ++skipped; // a threshold above the depth: soft refuses it (SRQ-THRESHOLD)
            return;
        }
        invalid = static_cast<uint64_t>(op.a[2]) > info.MaxSrqDepth ||
                  static_cast<uint64_t>(op.a[3]) > info.MaxReceiveRequestSge;
        call = pdh->create_srq(obj.rdepth, obj.rsge, static_cast<ULONG>(op.a[4]));
        break;
    case Code::qp_create:
    case Code::qps_create: {
        fn = op.code == Code::qp_create ? "NdkCreateQp" : "NdkCreateQpWithSrq";
        obj.kind = Kind::Qp;
        Obj *rcq = get(op.a[2], Kind::Cq), *icq = get(op.a[3], Kind::Cq);
        if (!rcq || !icq || rcq->ad != obj.ad || icq->ad != obj.ad) {
            ++skipped;
            return;
        }
        obj.rcq = rcq->id;
        obj.icq = icq->id;
        auto r = std::static_pointer_cast<ndk::Cq>(rcq->h);
        auto i = std::static_pointer_cast<ndk::Cq>(icq->h);
        if (op.code == Code::qp_create) {
            obj.rdepth = static_cast<uint32_t>(op.a[4]);
            obj.idepth = static_cast<uint32_t>(op.a[5]);
            obj.rsge = static_cast<uint32_t>(op.a[6]);
            obj.isge = static_cast<uint32_t>(op.a[7]);
            obj.inl = static_cast<uint32_t>(op.a[8]);
            invalid = obj.rdepth > info.MaxReceiveQueueDepth ||
                      obj.idepth > info.MaxInitiatorQueueDepth ||
                      obj.rsge > info.MaxReceiveRequestSge ||
                      obj.isge > info.MaxInitiatorRequestSge || obj.inl > info.MaxInlineDataSize;
            call = pdh->create_qp(r, i, ctx(obj.id), obj.rdepth, obj.idepth, obj.rsge, obj.isge,
                                  obj.inl);
        } else {
            Obj *srq = get(op.a[4], Kind::Srq);
            if (!srq || srq->pd != pd->id) {
                ++skipped;
                return;
            }
            obj.srq = srq->id;
            obj.idepth = static_cast<uint32_t>(op.a[5]);
            obj.isge = static_cast<uint32_t>(op.a[6]);
            obj.inl = static_cast<uint32_t>(op.a[7]);
            invalid = obj.idepth > info.MaxInitiatorQueueDepth ||
                      obj.isge > info.MaxInitiatorRequestSge || obj.inl > info.MaxInlineDataSize;
            call = pdh->create_qp_with_srq(r, i, std::static_pointer_cast<ndk::Srq>(srq->h),
                                           ctx(obj.id), obj.idepth, obj.isge, obj.inl);
        }
        break;
    }
    default:
        return;
    }
    note_call(fn, call);
    if (!call.done())
        return;
    NTSTATUS result = call.result();
    if (invalid && result != STATUS_INVALID_PARAMETER)
        fail("status", fn,
             std::string(fn) + " with a size above its NDK_ADAPTER_INFO limit returned " +
                 st(result) + ", documented: STATUS_INVALID_PARAMETER");
    if (result != STATUS_SUCCESS)
        return;
    obj.h = call.object();
    if (!obj.h) {
        fail("status", fn, std::string(fn) + " succeeded without an object");
        return;
    }
    if (obj.kind == Kind::Endpoint) {
        ndk::SocketAddress local;
        note("NdkGetLocalAddress (shared endpoint)",
             std::static_pointer_cast<ndk::SharedEndpoint>(obj.h)->get_local_address(local));
        obj.port = local.port();
    }
    add(std::move(obj));
}

// --- posts ---------------------------------------------------------------------------------

bool World::post_common(const Op &op, Obj &owner, int queue, NTSTATUS status, Req req,
                        int64_t cq_id)
{
    const char *fn = "";
    switch (op.code) {
    case Code::recv: fn = "NdkReceive"; break;
    case Code::srq_recv: fn = "NdkSrqReceive"; break;
    case Code::send: fn = "NdkSend"; break;
    case Code::badtok: fn = "NdkSend"; break;
    case Code::sendinv: fn = "NdkSendAndInvalidate"; break;
    case Code::write: fn = "NdkWrite"; break;
    case Code::read: fn = "NdkRead"; break;
    case Code::bind: fn = "NdkBind"; break;
    case Code::inval: fn = "NdkInvalidate"; break;
    case Code::fastreg: fn = "NdkFastRegister"; break;
    default: break;
    }
    note(fn, status);
    if (status != STATUS_SUCCESS) {
        for (auto &s : req.hold)
            s.b->mark(s.off, s.len, false);
        return false;
    }
    req.cq = cq_id;
    for (int64_t mr : req.frs) {
        if (Obj *m = get(mr, Kind::Mr)) {
            ++m->uses;
            if (m->fr_lam >= 0 && !m->fr_stale)
                req.lams.push_back(m->fr_lam);
        }
    }
    for (int64_t l : req.lams)
        if (auto li = lams_.find(l); li != lams_.end())
            ++li->second.uses;
    if (Obj *cq = get(cq_id, Kind::Cq)) {
        if (++cq->pending > cq->depth)
            cq->tainted = true; // the CQ may overrun: its completions may vanish
    }
    (queue == 0 ? owner.iq : owner.rq).push_back(op.id);
    out_[op.id] = std::move(req);
    return true;
}

// --- posts ---------------------------------------------------------------------------------

namespace {

// The spans of a request's SGEs, reserved while it is in flight.
void reserve(Req &req, std::vector<Span> &spans)
{
    for (auto &sp : spans) {
        sp.b->mark(sp.off, sp.len, true);
        req.hold.push_back(sp);
    }
}

// The source of a transfer: the pattern of op `id`, which the destination must hold after a
// success (a receive names the send by its first 8 bytes).
void fill_source(uint64_t id, const std::vector<Span> &spans)
{
    uint64_t pos = 0;
    for (auto &sp : spans)
        for (uint32_t i = 0; i < sp.len; ++i, ++pos)
            sp.b->d[sp.off + i] = pattern(id, pos);
}

void release(const std::vector<Span> &spans)
{
    for (auto &sp : spans)
        sp.b->mark(sp.off, sp.len, false);
}

} // namespace

bool World::receive_sges(const Op &op, int64_t pd, NDK_SGE (&sge)[2], int &n,
                         std::vector<Span> &spans, Req &req)
{
    n = 0;
    for (int k = 0; k < 2; ++k) {
        if (op.a[3 + 2 * k] == 0 && k == 1)
            break;
        if (!sge_span(op.a[1], pd, op.a[2 + 2 * k], op.a[3 + 2 * k], sge[n], spans, 1, req))
            return false;
        ++n;
    }
    return true;
}

void World::op_post(const Op &op)
{
    if (op.code == Code::srq_recv) {
        post_srq_receive(op);
        return;
    }
    Req req;
    req.code = op.code;
    std::optional<QpPost> post = qp_post(op, req);
    if (!post) {
        ++skipped;
        return;
    }
    switch (op.code) {
    case Code::recv: post_receive(op, std::move(req), *post); return;
    case Code::send:
    case Code::sendinv:
    case Code::badtok: post_send(op, std::move(req), *post); return;
    case Code::write:
    case Code::read: post_rdma(op, std::move(req), *post); return;
    case Code::bind: post_bind(op, std::move(req), *post); return;
    case Code::inval: post_invalidate(op, std::move(req), *post); return;
    case Code::fastreg: op_fastreg(op, std::move(req), post->qp, post->flags); return;
    default: return;
    }
}

void World::post_srq_receive(const Op &op)
{
    Obj *srq = get(op.a[0], Kind::Srq);
    Req req;
    req.code = op.code;
    NDK_SGE sge[2];
    int n = 0;
    std::vector<Span> spans;
    if (!srq || !receive_sges(op, srq->pd, sge, n, spans, req) || srq->rq.size() >= srq->rdepth) {
        ++skipped;
        return;
    }
    reserve(req, spans);
    req.check = spans;
    req.queue = 2;
    req.srq = srq->id;
    auto h = std::static_pointer_cast<ndk::Srq>(srq->h);
    NTSTATUS s = h->receive(ctx(op.id), std::span(sge, n));
    // the CQ is the receive CQ of whichever QP takes it: count it on none
    if (post_common(op, *srq, 1, s, std::move(req), -1))
        ++srq->avail;
}

std::optional<World::QpPost> World::qp_post(const Op &op, Req &req)
{
    Obj *qp = get(op.a[0], Kind::Qp);
    if (!qp)
        return std::nullopt;
    bool receive = op.code == Code::recv;
    int slot = flag_slot(op.code);
    int64_t intent = slot >= 0 ? op.a[slot] & kIntentMask : 0;
    ULONG flags = slot >= 0 ? static_cast<ULONG>(op.a[slot] & ~kIntentMask) : 0;
    Obj *cq = get(receive ? qp->rcq : qp->icq, Kind::Cq);
    auto &queue = receive ? qp->rq : qp->iq;
    uint32_t depth = receive ? qp->rdepth : qp->idepth;
    // a conforming consumer: room in the queue, and in the CQ, unless the op says otherwise.
    // NdkReceive on a QP with an SRQ is posted: soft refuses it inline (QP-SRQ-RECEIVE)
    if (!(receive && qp->srq >= 0) && queue.size() >= depth && !(intent & kIntendOverpost))
        return std::nullopt;
    if (cq && cq->pending >= cq->depth && !(intent & kIntendOverrun) && !cq->tainted)
        return std::nullopt;
    if (flags & NDK_OP_FLAG_SILENT_SUCCESS && queue.size() + 2 > depth)
        flags &= ~NDK_OP_FLAG_SILENT_SUCCESS; // keep room for a request that completes
    req.qp = qp->id;
    req.queue = receive ? 1 : 0;
    req.silent = flags & NDK_OP_FLAG_SILENT_SUCCESS;
    return QpPost{*qp, std::static_pointer_cast<ndk::Qp>(qp->h), flags, get(qp->peer, Kind::Qp)};
}

void World::post_receive(const Op &op, Req req, QpPost &post)
{
    NDK_SGE sge[2];
    int n = 0;
    std::vector<Span> spans;
    if (!receive_sges(op, post.qp.pd, sge, n, spans, req)) {
        ++skipped;
        return;
    }
    reserve(req, spans);
    req.check = spans;
    NTSTATUS s = post.h->receive(ctx(op.id), std::span(sge, n));
    if (post_common(op, post.qp, 1, s, std::move(req), post.qp.rcq) && post.qp.srq < 0)
        ++post.qp.avail;
}

bool World::send_sges(const Op &op, const QpPost &post, bool inl, NDK_SGE (&sge)[2], int &n,
                      std::vector<Span> &spans, Req &req)
{
    n = 0;
    int nspans = op.code == Code::send ? 2 : 1;
    for (int k = 0; k < nspans; ++k) {
        int64_t off = op.a[2 + 2 * k], len = op.a[3 + 2 * k];
        if (len == 0 && k == 1)
            break;
        if (inl) {
            if (off < 0 || len < 0 || !scratch_->free_range(off, len))
                return false;
            sge[n].VirtualAddress = scratch_->d.data() + off;
            sge[n].Length = static_cast<ULONG>(len);
            sge[n].MemoryRegionToken = 0x5eed; // ignored with INLINE (digest 2.4)
            spans.push_back(Span{scratch_, static_cast<uint32_t>(off), static_cast<uint32_t>(len)});
        } else if (!sge_span(op.a[1], post.qp.pd, off, len, sge[n], spans, 0, req) ||
                   (op.code == Code::badtok && !req.frs.empty())) {
            return false;
        }
        if (op.code == Code::badtok)
            sge[n].MemoryRegionToken = ~sge[n].MemoryRegionToken; // not a token of this PD
        ++n;
    }
    return true;
}

uint32_t World::send_invalidate_token(const Op &op, const QpPost &post, Req &req)
{
    // the token of a window bound on the peer, or of a fast-register MR it mapped
    Obj *tgt = get(op.a[5], Kind::Mw);
    Obj *tmr = get(op.a[5], Kind::Mr);
    if (tgt && tgt->bind_state == 2 && post.peer && tgt->pd == post.peer->pd)
        return tgt->mw_tok;
    if (tmr && tmr->fast && tmr->fr_state == 2 && tmr->uses == 0 && post.peer &&
        tmr->pd == post.peer->pd) {
        req.tally = "NdkSendAndInvalidate of a fast-registered token (completion)";
        req.target = tmr->id;
        req.frs.push_back(tmr->id);
        return tmr->rtok;
    }
    return 0;
}

void World::post_send(const Op &op, Req req, QpPost &post)
{
    NDK_SGE sge[2];
    int n = 0;
    std::vector<Span> spans;
    bool inl = op.code != Code::badtok && (post.flags & NDK_OP_FLAG_INLINE);
    if (!send_sges(op, post, inl, sge, n, spans, req)) {
        ++skipped;
        return;
    }
    uint32_t total = 0;
    for (auto &sp : spans)
        total += sp.len;
    if (total > 0 && total < 8) {
        ++skipped; // messages are 0 or >= 8 bytes: the first 8 name the send
        return;
    }
    reserve(req, spans);
    fill_source(op.id, spans);
    if (inl)
        req.hold.clear(); // the provider copies inline data during the call: free after it
    NTSTATUS s;
    if (op.code == Code::sendinv) {
        uint32_t token = send_invalidate_token(op, post, req);
        if (token == 0) {
            release(spans);
            ++skipped;
            return;
        }
        s = post.h->send_and_invalidate(ctx(op.id), std::span(sge, n), post.flags, token);
    } else {
        s = post.h->send(ctx(op.id), std::span(sge, n), post.flags);
    }
    if (inl)
        release(spans);
    int64_t target = req.target;
    if (post_common(op, post.qp, 0, s, std::move(req), post.qp.icq))
        count_send(op, post, total, target);
}

void World::count_send(const Op &op, QpPost &post, uint32_t total, int64_t target)
{
    Obj &qp = post.qp;
    if (Obj *tmr = get(target, Kind::Mr))
        tmr->fr_state = 3; // the peer invalidates it when the send arrives
    if (qp.peer >= 0) // even a peer closed meanwhile: its close may still be pending
        sends_[op.id] = SendRec{qp.peer, total};
    if (Obj *peer = post.peer) {
        if (peer->srq >= 0) {
            // An SRQ whose close pended (the peer QP still uses it) still hands out its
            // receives: only the live object counts them.
            if (Obj *psrq = get(peer->srq, Kind::Srq))
                --psrq->avail;
            // the SRQ receive it takes completes on the peer's receive CQ: count it there
            // (SRQ receives are counted on no CQ when posted)
            if (Obj *prcq = get(peer->rcq, Kind::Cq))
                if (++prcq->pending > prcq->depth)
                    prcq->tainted = true;
        } else {
            --peer->avail;
        }
    }
    qp.defer_open = post.flags & NDK_OP_FLAG_DEFER;
}

bool World::rdma_remote(const Op &op, Req &req, QpPost &post, RdmaRemote &remote)
{
    // the remote side: an MR of the peer (by its remote token), a fast-register MR the peer
    // mapped, or an MW bound on it
    bool read = op.code == Code::read;
    Obj *rmr = get(op.a[4], Kind::Mr);
    Obj *rmw = get(op.a[4], Kind::Mw);
    uint64_t roff = static_cast<uint64_t>(op.a[5]);
    if (op.a[5] < 0)
        return false;
    if (rmr && !rmr->fast && rmr->registered) {
        remote.spans.push_back(
            Span{rmr->buf, static_cast<uint32_t>(roff), static_cast<uint32_t>(op.a[3])});
        remote.token = rmr->rtok;
        remote.address = reinterpret_cast<uintptr_t>(rmr->buf->d.data()) + roff;
        return true;
    }
    if (rmr && rmr->fast && rmr->fr_state == 2 && fr_spans(*rmr, roff, op.a[3], remote.spans)) {
        remote.token = rmr->rtok;
        remote.address = rmr->fr_base + roff;
        req.tally = read ? "NdkRead from a fast-registered token (completion)"
                         : "NdkWrite to a fast-registered token (completion)";
        req.frs.push_back(rmr->id);
        if (rmr->fr_stale) {
            // its LAM was released: the pages are no logical addresses any more, so the
            // access fails (PRIVILEGED-RELEASED-LAM, DATA-STATUS)
            req.judged = true;
            req.want = STATUS_ACCESS_VIOLATION;
            post.flags &= ~NDK_OP_FLAG_SILENT_SUCCESS;
            req.silent = false;
        }
        return true;
    }
    if (rmw && rmw->bind_state == 2) {
        Obj *under = get(rmw->mw_mr, Kind::Mr);
        if (!under || !under->registered || roff + op.a[3] > rmw->mw_len)
            return false;
        roff += rmw->mw_off;
        remote.spans.push_back(
            Span{under->buf, static_cast<uint32_t>(roff), static_cast<uint32_t>(op.a[3])});
        remote.token = rmw->mw_tok;
        remote.address = reinterpret_cast<uintptr_t>(under->buf->d.data()) + roff;
        return true;
    }
    return false;
}

void World::post_rdma(const Op &op, Req req, QpPost &post)
{
    bool read = op.code == Code::read;
    bool local_inval = read && (post.flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE);
    NDK_SGE sge;
    std::vector<Span> local;
    if (!sge_span(op.a[1], post.qp.pd, op.a[2], op.a[3], sge, local, read ? 2 : 0, req)) {
        ++skipped;
        return;
    }
    Obj *lmr = get(op.a[1], Kind::Mr);
    if (local_inval) {
        // the first SGE's fast-register MR is invalidated by the read's success (1.7)
        if (!lmr->fast || lmr->uses > 0 ||
            !(info_[post.qp.ad].AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED)) {
            ++skipped;
            return;
        }
        req.target = lmr->id;
        req.tally = "NdkRead with RDMA_READ_LOCAL_INVALIDATE (completion)";
    }
    RdmaRemote remote;
    if (!rdma_remote(op, req, post, remote) || overlaps(local, remote.spans)) {
        ++skipped;
        return;
    }
    reserve(req, local);
    reserve(req, remote.spans);
    req.len = static_cast<uint32_t>(op.a[3]);
    fill_source(op.id, read ? remote.spans : local);
    req.check = read ? local : remote.spans;
    NTSTATUS s = read ? post.h->read(ctx(op.id), std::span(&sge, 1), remote.address,
                                     remote.token, post.flags)
                      : post.h->write(ctx(op.id), std::span(&sge, 1), remote.address,
                                      remote.token, post.flags);
    if (post_common(op, post.qp, 0, s, std::move(req), post.qp.icq)) {
        post.qp.defer_open = post.flags & NDK_OP_FLAG_DEFER;
        if (local_inval)
            lmr->fr_state = 3;
    }
}

// Whether the remote spans are busy or overlap the local ones (or either side is empty).
bool World::overlaps(const std::vector<Span> &local, const std::vector<Span> &remote)
{
    bool clash = local.empty() || remote.empty();
    for (auto &r : remote) {
        clash |= !r.b->free_range(r.off, r.len);
        for (auto &l : local)
            clash |= r.b == l.b && !(l.off + l.len <= r.off || r.off + r.len <= l.off);
    }
    return clash;
}

void World::post_bind(const Op &op, Req req, QpPost &post)
{
    Obj &qp = post.qp;
    Obj *mr = get(op.a[1], Kind::Mr);
    Obj *mw = get(op.a[2], Kind::Mw);
    if (!mr || !mw || !mr->registered || mw->bind_state != 0 || mr->pd != qp.pd ||
        mw->pd != qp.pd || op.a[3] < 0 || op.a[4] <= 0 ||
        static_cast<uint64_t>(op.a[3] + op.a[4]) > mr->buf->d.size()) {
        ++skipped;
        return;
    }
    req.target = mw->id;
    mw->bind_state = 1;
    mw->mw_mr = mr->id;
    mw->mw_off = static_cast<uint32_t>(op.a[3]);
    mw->mw_len = static_cast<uint32_t>(op.a[4]);
    mw->mw_flags = post.flags;
    NTSTATUS s = post.h->bind(ctx(op.id), std::static_pointer_cast<ndk::Mr>(mr->h),
                              std::static_pointer_cast<ndk::Mw>(mw->h),
                              mr->buf->d.data() + op.a[3], static_cast<SIZE_T>(op.a[4]),
                              post.flags);
    if (!post_common(op, qp, 0, s, std::move(req), qp.icq))
        mw->bind_state = 0;
    else
        qp.defer_open = post.flags & NDK_OP_FLAG_DEFER;
}

void World::post_invalidate(const Op &op, Req req, QpPost &post)
{
    Obj &qp = post.qp;
    Obj *mw = get(op.a[1], Kind::Mw);
    Obj *mr = get(op.a[1], Kind::Mr);
    NTSTATUS s;
    if (mw && mw->bind_state == 2 && mw->pd == qp.pd) {
        req.target = mw->id;
        s = post.h->invalidate(ctx(op.id), *mw->h, post.flags);
    } else if (mr && mr->fast && mr->fr_state == 2 && mr->uses == 0 && mr->pd == qp.pd) {
        // a fast-registered MR (digest 1.7), its LAM released or not: it must succeed
        req.target = mr->id;
        req.judged = true;
        req.tally = "NdkInvalidate of a fast-registered MR (completion)";
        req.frs.push_back(mr->id);
        s = post.h->invalidate(ctx(op.id), *mr->h, post.flags);
    } else {
        ++skipped;
        return;
    }
    if (post_common(op, qp, 0, s, std::move(req), qp.icq)) {
        qp.defer_open = post.flags & NDK_OP_FLAG_DEFER;
        if (mr && !mw)
            mr->fr_state = 3;
    }
}

// NdkFastRegister of MR `mr` onto `n` pages of LAM `lam` from page `page` (order 1: the
// pages in reverse), FBO `fbo`, Length `len`, at BaseVirtualAddress (op id % 4096 + 1) pages
// + FBO.  Mostly valid; deliberately (the model sees which): an MR already mapped (completes
// INVALID_DEVICE_REQUEST), pages of the other adapter's LAM (ACCESS_VIOLATION), more pages
// than the MR was initialized for (inline INVALID_PARAMETER), remote flags on an MR
// initialized without RemoteAccess (inline ACCESS_VIOLATION, digest 1.7).
void World::op_fastreg(const Op &op, Req req, Obj &qp, ULONG flags)
{
    Obj *mr = get(op.a[1], Kind::Mr);
    auto lit = lams_.find(op.a[2]);
    int64_t first = op.a[3], n = op.a[4];
    uint32_t fbo = static_cast<uint32_t>(op.a[5]), len = static_cast<uint32_t>(op.a[6]);
    int order = op.a[8] != 0;
    if (!mr || !mr->fast || !mr->fr_init || mr->pd != qp.pd || lit == lams_.end() ||
        lit->second.pages.empty() || first < 0 || n <= 0 || n > 64 || op.a[5] < 0 ||
        op.a[5] >= 4096 || op.a[6] <= 0 || (mr->fr_state != 0 && mr->fr_state != 2) ||
        (mr->fr_state == 0 && mr->uses > 0)) {
        ++skipped;
        return;
    }
    LamRec &lam = lit->second;
    bool mapped = mr->fr_state == 2;
    bool foreign = lam.ad != qp.ad;
    bool over = static_cast<uint64_t>(n) > mr->fr_pages;
    bool remote = (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) ||
                  (flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
    bool denied = remote && !mr->fr_remote;
    bool bad_inline = over || denied || static_cast<uint64_t>(len) + fbo > n * 4096ull;
    std::vector<int64_t> map;
    std::vector<NDK_LOGICAL_ADDRESS> pages;
    for (int64_t j = 0; j < n; ++j) {
        size_t k = fr_page(lam, first, n, order, j);
        map.push_back(lam.page_start(k));
        pages.push_back(lam.pages[k]);
    }
    std::vector<Span> spans;
    if (!bad_inline && !map_spans(lam.buf, map, fbo, lam.off, lam.off + lam.len, 0, len, spans)) {
        ++skipped; // the walker maps only memory it owns
        return;
    }
    if (mapped || foreign || bad_inline) {
        flags &= ~NDK_OP_FLAG_SILENT_SUCCESS; // the failure must show
        req.silent = false;
    }
    uint64_t base = ((op.id & 0xfff) + 1) * 4096 + fbo;
    req.target = mr->id;
    req.judged = true;
    req.want = mapped ? STATUS_INVALID_DEVICE_REQUEST
               : foreign ? STATUS_ACCESS_VIOLATION
                         : STATUS_SUCCESS;
    req.lams.push_back(lit->first);
    req.tally = mapped    ? "NdkFastRegister of a mapped MR (completion)"
                : foreign ? "NdkFastRegister of the other adapter's pages (completion)"
                          : "NdkFastRegister (completion)";
    auto h = std::static_pointer_cast<ndk::Qp>(qp.h);
    NTSTATUS s = h->fast_register(ctx(op.id), *std::static_pointer_cast<ndk::Mr>(mr->h), pages,
                                  fbo, len, reinterpret_cast<void *>(static_cast<uintptr_t>(base)),
                                  flags);
    if (bad_inline) {
        // what each problem documents; with both, either (digest 1.7; POST-CHECKS)
        bool length = static_cast<uint64_t>(len) + fbo > n * 4096ull;
        bool documented = (denied && s == STATUS_ACCESS_VIOLATION) ||
                          ((over || length) && s == STATUS_INVALID_PARAMETER) ||
                          s == STATUS_CONNECTION_INVALID || s == STATUS_NO_MORE_ENTRIES ||
                          s == STATUS_INVALID_DEVICE_STATE;
        if (!documented) {
            std::string what = over ? std::to_string(n) + " pages on an MR initialized for " +
                                          std::to_string(mr->fr_pages)
                               : length ? std::string("a Length beyond its pages")
                                        : std::string("remote access on an MR initialized "
                                                      "without RemoteAccess");
            fail("status", "NdkFastRegister",
                 "NdkFastRegister with " + what + " returned " + ndk::status_name(s) +
                     ", documented: " +
                     (denied ? "STATUS_ACCESS_VIOLATION" : "STATUS_INVALID_PARAMETER"));
            return;
        }
    }
    if (!post_common(op, qp, 0, s, std::move(req), qp.icq))
        return;
    qp.defer_open = flags & NDK_OP_FLAG_DEFER;
    if (mapped)
        return; // it stays as it was
    mr->fr_state = 1;
    if (foreign)
        return;
    mr->fr_lam = lit->first;
    mr->fr_stale = false;
    mr->fr_buf = lam.buf;
    mr->fr_map = std::move(map);
    mr->fr_base = base;
    mr->fr_len = len;
    mr->fr_fbo = fbo;
    mr->fr_flags = flags;
    mr->fr_lo = lam.off;
    mr->fr_hi = lam.off + lam.len;
}

// --- connections ---------------------------------------------------------------------------

// Modes: 0 accept + complete, 1 AcceptEx + CompleteConnectEx, 2 the passive side rejects,
// 3 the active side rejects after the connect completed, 4 connect to a port nobody listens
// on, 5 connect through a shared endpoint (the endpoint's id in "lis"... see below).
void World::op_connect(const Op &op)
{
    Obj *c = get(op.a[0], Kind::Connector);
    Obj *qp = get(op.a[1], Kind::Qp);
    int mode = static_cast<int>(op.a[5]);
    if (!c || !qp || c->ad != qp->ad || c->qstate != 0 || qp->qstate != 0) {
        ++skipped;
        return;
    }
    auto ch = std::static_pointer_cast<ndk::Connector>(c->h);
    auto qh = std::static_pointer_cast<ndk::Qp>(qp->h);
    ndk::PrivateData priv(std::vector<uint8_t>{'w', 'a', 'l', 'k'});
    if (mode == 4) {
        Obj *l = get(op.a[2], Kind::Listener);
        int dest_ad = l ? l->ad : c->ad;
        auto call = ch->connect(qh, ndk::SocketAddress::from(host_[c->ad], 0),
                                ndk::SocketAddress::from(host_[dest_ad], 1), 1, 1, priv);
        note_call("NdkConnect", call);
        if (call.done() && call.result() == STATUS_SUCCESS) {
            fail("status", "NdkConnect", "a connect to port 1, where nobody listens, succeeded");
            return;
        }
        return;
    }
    Obj *l = get(op.a[2], Kind::Listener);
    Obj *aqp = get(op.a[3], Kind::Qp);
    if (!l || !l->listening || !aqp || aqp == qp || aqp->ad != l->ad || aqp->qstate != 0) {
        ++skipped;
        return;
    }
    ndk::Call call;
    Obj *se = nullptr;
    if (mode == 5) {
        for (int64_t id : live_[static_cast<size_t>(Kind::Endpoint)]) {
            Obj *e = get(id, Kind::Endpoint);
            if (e->ad == c->ad) {
                se = e;
                break;
            }
        }
        if (!se) {
            ++skipped;
            return;
        }
        call = ch->connect_with_shared_endpoint(
            qh, std::static_pointer_cast<ndk::SharedEndpoint>(se->h),
            ndk::SocketAddress::from(host_[l->ad], l->port), 1, 1, priv);
        note("NdkConnectWithSharedEndpoint", call.status());
    } else {
        call = ch->connect(qh, ndk::SocketAddress::from(host_[c->ad], 0),
                           ndk::SocketAddress::from(host_[l->ad], l->port), 1, 1, priv);
        note("NdkConnect", call.status());
    }
    if (call.status() != STATUS_PENDING && call.status() != STATUS_SUCCESS)
        return; // an inline failure: nothing reached the listener, both may try again
    c->qstate = 2; // a connector and a QP carry one connection attempt in their life
    qp->qstate = 2;
    auto incoming = l->paused ? nullptr
                              : next_connection_or_failure(
                                    *std::static_pointer_cast<ndk::Listener>(l->h), call);
    if (!incoming && !l->paused && call.done() && call.result() != STATUS_SUCCESS) {
        // A failure that comes through the completion (i/a, digest 1.8: ADDRESS_ALREADY_EXISTS
        // when a shared endpoint already carries a connection to this listener): nothing
        // reached the listener, as for the inline failure above.
        note(mode == 5 ? "NdkConnectWithSharedEndpoint (completion)" : "NdkConnect (completion)",
             call.result());
        c->qstate = 0;
        return;
    }
    if (!incoming) {
        if (!l->paused) {
            fail("timeout", "NdkConnectEventCallback",
                 "no connect event at listener #" + std::to_string(l->id) + " within " +
                     std::to_string(config_.wait_seconds) + " s of a connect to it");
            return;
        }
        if (wait(call, "NdkConnect"))
            note("NdkConnect (completion)", call.result());
        c->qstate = 0;
        return;
    }
    Obj in;
    in.kind = Kind::Connector;
    in.ad = l->ad;
    in.id = op.a[4];
    in.h = incoming;
    in.qstate = 2;
    add(in);
    ULONG irl = 0, orl = 0, len = 0;
    note("NdkGetConnectionData", incoming->get_connection_data(&irl, &orl, nullptr, &len));
    auto aqh = std::static_pointer_cast<ndk::Qp>(aqp->h);
    if (mode == 2) {
        note("NdkReject", incoming->reject(priv));
        if (wait(call, "NdkConnect")) {
            note("NdkConnect (completion)", call.result());
            if (call.result() == STATUS_SUCCESS)
                fail("status", "NdkConnect", "a connect the peer rejected succeeded");
        }
        return;
    }
    objs_[in.id].no_conndata = true;
    ndk::Call accept = mode == 1 ? incoming->accept_ex(aqh, 1, 1, priv, true)
                                 : incoming->accept(aqh, 1, 1, priv, true);
    note(mode == 1 ? "NdkAcceptEx" : "NdkAccept", accept.status());
    aqp->qstate = 2;
    qp->qstate = 2;
    if (!wait(call, "NdkConnect"))
        return;
    note(mode == 5 ? "NdkConnectWithSharedEndpoint (completion)" : "NdkConnect (completion)",
         call.result());
    if (call.result() != STATUS_SUCCESS) {
        wait(accept, "NdkAccept");
        return;
    }
    len = 0;
    note("NdkGetConnectionData", ch->get_connection_data(&irl, &orl, nullptr, &len));
    if (mode == 3) {
        note("NdkReject", ch->reject(priv));
        if (wait(accept, "NdkAccept"))
            note("NdkAccept (completion)", accept.result());
        return;
    }
    c->no_conndata = true;
    ndk::Call complete = mode == 1 ? ch->complete_connect_ex(true) : ch->complete_connect(true);
    note_call(mode == 1 ? "NdkCompleteConnectEx" : "NdkCompleteConnect", complete);
    if (!wait(accept, "NdkAccept"))
        return;
    note(mode == 1 ? "NdkAcceptEx (completion)" : "NdkAccept (completion)", accept.result());
    if (complete.done() && complete.result() == STATUS_SUCCESS &&
        accept.result() == STATUS_SUCCESS) {
        qp->qstate = aqp->qstate = 1;
        qp->peer = aqp->id;
        aqp->peer = qp->id;
        qp->conn = c->id;
        aqp->conn = in.id;
        c->conn = qp->id;
        objs_[in.id].conn = aqp->id;
        c->qstate = objs_[in.id].qstate = 1;
    }
}

// --- close ---------------------------------------------------------------------------------

void World::op_close(const Op &op)
{
    auto it = objs_.find(op.a[0]);
    if (it == objs_.end()) {
        ++skipped;
        return;
    }
    Obj &o = it->second;
    static const char *fns[] = {"NdkCloseCq", "NdkClosePd", "NdkCloseMr", "NdkCloseMw",
                                "NdkCloseSrq", "NdkCloseQp", "NdkCloseConnector",
                                "NdkCloseListener", "NdkCloseSharedEndpoint"};
    const char *fn = fns[static_cast<int>(o.kind)];
    if (o.kind == Kind::Cq)
        abandon_cq(o.id);
    std::set<int64_t> qps;
    if (o.kind == Kind::Qp) {
        qps.insert(o.id);
        if (Obj *peer = get(o.peer, Kind::Qp))
            peer->qstate = 2;
    }
    if (o.kind == Kind::Connector) {
        if (Obj *qp = get(o.conn, Kind::Qp)) {
            qp->qstate = 2;
            if (Obj *peer = get(qp->peer, Kind::Qp))
                peer->qstate = 2;
        }
    }
    if (o.kind == Kind::Mw) {
        // a window still bound: nothing to do; its MR's deregistration reports DEVICE_BUSY
    }
    auto call = o.h->close();
    note(fn, call.status());
    closes_.push_back({call, fn, op.id});
    closed_.push_back(o.h);
    int64_t id = o.id;
    remove(id);
    if (!qps.empty() && call.done()) {
        // the QP is gone: each of its requests has completed or been flushed to its CQs
        drain_for(qps, true);
        for (auto rit = out_.begin(); rit != out_.end();) {
            if (rit->second.qp == id) {
                uint64_t rid = rit->first;
                ++rit;
                drop_request(rid);
            } else {
                ++rit;
            }
        }
    }
}

// --- the end -------------------------------------------------------------------------------

void World::finish()
{

    if (!failure.failed()) {
        // release deferred chains and flush every QP: every request in flight must complete
        for (int64_t id : live_[static_cast<size_t>(Kind::Qp)])
            std::static_pointer_cast<ndk::Qp>(get(id, Kind::Qp)->h)->flush();
        drain_for({}, true);
        check_violations({});
    }
    // close everything (successors first), then the adapters: every close must complete
    out_.clear();
    objs_.clear();
    lams_.clear(); // NdkReleaseLAM of each, before its adapter closes
    for (auto &v : live_)
        v.clear();
    closed_.clear();
    for (auto &a : ad_)
        a->close();
    if (!failure.failed()) {
        for (auto &close : closes_)
            if (!close.call.done()) {
                fail("lost", close.fn,
                     "a close that returned STATUS_PENDING (op " + std::to_string(close.op) +
                         ") had not completed when the adapter's close returned");
                break;
            }
        check_violations({});
    }
    closes_.clear();
}

} // namespace walk
