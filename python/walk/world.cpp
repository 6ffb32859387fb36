// World: runs one Op against two validated adapters and checks it against the model (the
// walker's oracle, docs/walk.md): the validation layer's record after every op, every byte a
// successful transfer wrote, every request's completion exactly once (or flushed on close).
#include "world.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

namespace walk {

// --- bytes ---------------------------------------------------------------------------------

bool Buf::free_range(uint64_t off, uint64_t len) const
{
    if (off + len > d.size())
        return false;
    if (len == 0)
        return true;
    for (uint64_t c = off / kChunk; c <= (off + len - 1) / kChunk; ++c)
        if (busy[c])
            return false;
    return true;
}

void Buf::mark(uint64_t off, uint64_t len, bool on)
{
    if (len == 0)
        return;
    for (uint64_t c = off / kChunk; c <= (off + len - 1) / kChunk && c < busy.size(); ++c)
        busy[c] = on;
}

namespace {

// First mismatch of `spans` (up to `limit` bytes of the stream) against op's pattern.
std::optional<uint64_t> mismatch(const std::vector<Span> &spans, uint64_t op, uint64_t limit)
{
    uint64_t pos = 0;
    for (const auto &s : spans)
        for (uint32_t i = 0; i < s.len && pos < limit; ++i, ++pos)
            if (s.b->d[s.off + i] != pattern(op, pos))
                return pos;
    return std::nullopt;
}

uint64_t stream_u64(const std::vector<Span> &spans)
{
    uint64_t v = 0, pos = 0;
    for (const auto &s : spans)
        for (uint32_t i = 0; i < s.len && pos < 8; ++i, ++pos)
            v |= static_cast<uint64_t>(s.b->d[s.off + i]) << (8 * pos);
    return v;
}

std::string hex(NTSTATUS s) { return ndk::status_name(s); }

bool type_matches(Code code, int type)
{
    switch (code) {
    case Code::recv:
    case Code::srq_recv:
        return type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate;
    case Code::send:
    case Code::sendinv:
    case Code::badtok:
        return type == NdkOperationTypeSend;
    case Code::write:
        return type == NdkOperationTypeWrite;
    case Code::read:
        return type == NdkOperationTypeRead;
    case Code::bind:
        return type == NdkOperationTypeBind;
    case Code::inval:
        return type == NdkOperationTypeInvalidate;
    case Code::fastreg:
        return type == NdkOperationTypeFastRegister;
    default:
        return true;
    }
}

} // namespace

// --- world ---------------------------------------------------------------------------------

std::vector<std::string> World::default_options(const Config &config)
{
    std::vector<std::string> out;
    for (int i = 0; i < 2; ++i) {
        std::string o;
        if (config.provider == "soft" || config.provider.find("soft") != std::string::npos) {
            int host = 1 + 2 * config.thread_index + i;
            o = "address=192.0.2." + std::to_string(host) + "\nrnr_timeout_ms=0";
            if (!config.misbehave.empty())
                o += "\nmisbehave=" + config.misbehave;
            if (!config.create_mode.empty())
                o += "\ncreate_mode=" + config.create_mode;
        }
        out.push_back(o);
    }
    return out;
}

World::World(const Config &config, std::vector<std::string> options)
    : config_(config), options_(std::move(options)), scratch_(std::make_shared<Buf>(8192))
{
}

World::~World() = default;

bool World::in_flight_on_a_wire() const
{
    // soft's default transport and the loop provider answer every request inside the post.
    const std::string &p = config_.provider;
    return p != "soft" && p != "loop" && p.find("libndk_soft_provider") == std::string::npos &&
           p.find("libndk_loop_provider") == std::string::npos;
}

std::chrono::duration<double> World::wait_for() const
{
    return std::chrono::duration<double>(config_.wait_seconds);
}

std::shared_ptr<ndk::Connector> World::next_connection_or_failure(ndk::Listener &listener,
                                                                  const ndk::Call &connect)
{
    // Short slices: a connect that fails through its completion delivers no connect event, and
    // the walk should not spend the whole wait finding that out.
    const auto slice = std::chrono::duration<double>(0.01);
    auto deadline = std::chrono::steady_clock::now() + wait_for();
    for (;;) {
        if (auto incoming = listener.next_connection(slice))
            return incoming;
        if (connect.done() && connect.result() != STATUS_SUCCESS)
            return nullptr;
        if (std::chrono::steady_clock::now() > deadline)
            return nullptr;
    }
}

bool World::open()
{
    for (size_t i = 0; i < options_.size(); ++i) {
        try {
            auto adapter = ndk::Adapter::open(config_.provider, options_[i], {2, 0}, true);
            info_.push_back(adapter->query_info());
            std::string address;
            if (adapter->has_knobs() && adapter->get_knob("address", address) == STATUS_SUCCESS) {
                auto comma = address.find(',');
                address = address.substr(0, comma);
            } else {
                address.clear();
            }
            host_.push_back(address.empty() ? "0.0.0.0" : address);
            ad_.push_back(std::move(adapter));
        } catch (const std::exception &e) {
            fail("open", "Adapter::open", e.what());
            return false;
        }
    }
    return true;
}

Obj *World::get(int64_t id, Kind kind)
{
    auto it = objs_.find(id);
    if (it == objs_.end() || it->second.kind != kind)
        return nullptr;
    return &it->second;
}

void World::add(Obj obj)
{
    live_[static_cast<size_t>(obj.kind)].push_back(obj.id);
    objs_[obj.id] = std::move(obj);
}

void World::remove(int64_t id)
{
    auto it = objs_.find(id);
    if (it == objs_.end())
        return;
    auto &v = live_[static_cast<size_t>(it->second.kind)];
    v.erase(std::find(v.begin(), v.end(), id));
    objs_.erase(it);
}

void World::note(const char *fn, NTSTATUS status) { ++statuses[fn][hex(status)]; }

void World::fail(const std::string &kind, const std::string &key, const std::string &detail)
{
    if (failure.failed())
        return;
    failure.kind = kind;
    failure.key = key;
    failure.detail = detail;
    failure.op = current_ ? current_->id : 0;
}

bool World::wait(const ndk::Call &call, const char *fn)
{
    if (call.wait(wait_for()))
        return true;
    fail("timeout", fn,
         std::string(fn) + " returned STATUS_PENDING and did not complete within " +
             std::to_string(config_.wait_seconds) + " s");
    return false;
}

void World::note_call(const char *fn, const ndk::Call &call)
{
    note(fn, call.status());
    if (call.status() == STATUS_PENDING && wait(call, fn))
        note((std::string(fn) + " (completion)").c_str(), *call.completion_status());
}

void World::check_violations(const std::set<std::string> &allowed)
{
    for (size_t i = 0; i < ad_.size(); ++i) {
        const auto &session = ad_[i]->validation();
        if (!session)
            continue;
        auto list = session->violations();
        if (list.empty())
            continue;
        session->clear();
        for (const auto &v : list) {
            if (v.severity == ndk::validate::Severity::Warning) {
                ++warnings[v.rule];
                continue;
            }
            if (v.side == ndk::validate::Side::Consumer && allowed.count(v.rule)) {
                ++intended[v.rule];
                continue;
            }
            fail("violation", v.rule,
                 std::string(ndk::validate::side_name(v.side)) + " violation " + v.rule + " on " +
                     v.object + " in " + v.call + ": " + v.message);
        }
    }
}

// --- requests ------------------------------------------------------------------------------

bool World::sge_span(int64_t mr_id, int64_t pd, int64_t off, int64_t len, NDK_SGE &sge,
                     std::vector<Span> &spans, int access, Req &req)
{
    Obj *mr = get(mr_id, Kind::Mr);
    if (!mr || mr->pd != pd || off < 0 || len < 0)
        return false;
    std::vector<Span> got;
    if (mr->fast) {
        // a fast-registered MR: its local token names [BaseVirtualAddress, + Length) (2.4)
        bool sink_flag = !(info_[mr->ad].AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
        if (mr->fr_state != 2 || mr->fr_stale ||
            (access >= 1 && !(mr->fr_flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)) ||
            (access == 2 && sink_flag && !(mr->fr_flags & NDK_OP_FLAG_RDMA_READ_SINK)) ||
            !fr_spans(*mr, off, len, got))
            return false;
        sge.VirtualAddress = reinterpret_cast<void *>(static_cast<uintptr_t>(mr->fr_base + off));
        req.frs.push_back(mr->id);
        switch (req.code) {
        case Code::recv: req.tally = "NdkReceive into a fast-registered SGE (completion)"; break;
        case Code::srq_recv: req.tally = "NdkSrqReceive into a fast-registered SGE (completion)"; break;
        case Code::read: req.tally = "NdkRead into a fast-registered SGE (completion)"; break;
        case Code::write: req.tally = "NdkWrite from a fast-registered SGE (completion)"; break;
        default: req.tally = "NdkSend from a fast-registered SGE (completion)"; break;
        }
    } else {
        if (!mr->registered)
            return false;
        got.push_back(Span{mr->buf, static_cast<uint32_t>(off), static_cast<uint32_t>(len)});
        sge.VirtualAddress = mr->buf->d.data() + off;
    }
    for (const auto &sp : got)
        if (!sp.b->free_range(sp.off, sp.len))
            return false;
    sge.Length = static_cast<ULONG>(len);
    sge.MemoryRegionToken = mr->ltok;
    spans.insert(spans.end(), got.begin(), got.end());
    return true;
}

void World::drop_request(uint64_t id)
{
    auto it = out_.find(id);
    if (it == out_.end())
        return;
    for (auto &s : it->second.hold)
        s.b->mark(s.off, s.len, false);
    for (int64_t mr : it->second.frs)
        if (Obj *m = get(mr, Kind::Mr))
            --m->uses;
    for (int64_t l : it->second.lams)
        if (auto li = lams_.find(l); li != lams_.end())
            --li->second.uses;
    if (Obj *cq = get(it->second.cq, Kind::Cq))
        --cq->pending;
    out_.erase(it);
}

// A request's end: success or not, with its result (nullptr: a silent success implied by a
// later completion of its queue).
void World::settle(uint64_t id, Req &req, bool success, const NDK_RESULT_EX *r)
{
    if (success && corrupt_pending_ && !req.check.empty() && req.check[0].len > 0 &&
        (req.code != Code::recv && req.code != Code::srq_recv ? true
                                                              : r && r->BytesTransferred > 8)) {
        // --inject-failure-at: damage the destination of the next successful transfer
        corrupt_pending_ = false;
        auto &s = req.check[0];
        s.b->d[s.off + s.len - 1] ^= 0xff;
        if (req.code == Code::recv || req.code == Code::srq_recv) {
            uint32_t room = 0; // the last byte received, wherever it landed
            for (auto &c : req.check) {
                if (room + c.len >= r->BytesTransferred) {
                    s.b->d[s.off + s.len - 1] ^= 0xff;
                    c.b->d[c.off + (r->BytesTransferred - room) - 1] ^= 0xff;
                    break;
                }
                room += c.len;
            }
        }
    }
    fr_done(req, success);
    if (success) {
        switch (req.code) {
        case Code::write:
        case Code::read:
            if (auto at = mismatch(req.check, id, req.len))
                fail("data", op_name(req.code),
                     std::string(op_name(req.code)) + " #" + std::to_string(id) +
                         " completed STATUS_SUCCESS but byte " + std::to_string(*at) +
                         " of its destination differs from the source");
            break;
        case Code::recv:
        case Code::srq_recv: {
            uint32_t got = r ? r->BytesTransferred : 0;
            uint32_t room = 0;
            for (auto &s : req.check)
                room += s.len;
            if (got > room) {
                fail("data", "NdkReceive",
                     "receive #" + std::to_string(id) + " reports " + std::to_string(got) +
                         " bytes in a " + std::to_string(room) + "-byte receive");
                break;
            }
            if (got == 0)
                break;
            if (got < 8) {
                fail("data", "NdkReceive", "receive #" + std::to_string(id) + " got " +
                                               std::to_string(got) +
                                               " bytes, no send of that length was posted");
                break;
            }
            uint64_t from = stream_u64(req.check);
            auto send = sends_.find(from);
            if (send == sends_.end()) {
                if (auto maybe = maybe_delivered_.find(from); maybe != maybe_delivered_.end()) {
                    send = sends_.insert(*maybe).first; // it did reach the peer
                    maybe_delivered_.erase(maybe);
                }
            }
            if (send == sends_.end()) {
                fail("data", "NdkReceive",
                     "receive #" + std::to_string(id) + " got " + std::to_string(got) +
                         " bytes naming send #" + std::to_string(from) +
                         ", which was not posted to this QP or was already received" +
                         (sends_gone_.count(from) ? " (" + sends_gone_[from] + ")" : ""));
                break;
            }
            int64_t qp = r ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(r->QPContext)) : -1;
            if (send->second.to_qp != qp || send->second.len != got) {
                fail("data", "NdkReceive",
                     "receive #" + std::to_string(id) + " on QP #" + std::to_string(qp) +
                         " got " + std::to_string(got) + " bytes of send #" + std::to_string(from) +
                         " (" + std::to_string(send->second.len) + " bytes to QP #" +
                         std::to_string(send->second.to_qp) + ")");
                break;
            }
            if (auto at = mismatch(req.check, from, got))
                fail("data", "NdkReceive",
                     "receive #" + std::to_string(id) + ": byte " + std::to_string(*at) +
                         " differs from what send #" + std::to_string(from) + " sent");
            sends_gone_[from] = "received by #" + std::to_string(id);
            sends_.erase(send);
            if (r && r->Type == NdkOperationTypeReceiveAndInvalidate) {
                // the token the peer invalidated: our MW (or fast-registered MR) is unbound now
                for (int64_t mw : live_[static_cast<size_t>(Kind::Mw)]) {
                    Obj *w = get(mw, Kind::Mw);
                    if (w && w->bind_state == 2 && w->mw_tok == r->TypeSpecificCompletionOutput)
                        w->bind_state = 0;
                }
                for (int64_t mr : live_[static_cast<size_t>(Kind::Mr)]) {
                    Obj *m = get(mr, Kind::Mr);
                    if (m && m->fast && m->fr_state == 3 &&
                        m->rtok == r->TypeSpecificCompletionOutput)
                        m->fr_state = 0; // its SendAndInvalidate is still in flight
                }
            }
            break;
        }
        case Code::bind:
            if (Obj *mw = get(req.target, Kind::Mw)) {
                mw->bind_state = 2;
                auto mwh = std::static_pointer_cast<ndk::Mw>(mw->h);
                mw->mw_tok = mwh->get_remote_token();
            }
            break;
        case Code::inval:
            if (Obj *mw = get(req.target, Kind::Mw))
                mw->bind_state = 0;
            break;
        default:
            break;
        }
    } else {
        if (req.code == Code::bind)
            if (Obj *mw = get(req.target, Kind::Mw))
                mw->bind_state = 0;
        if (req.code == Code::send || req.code == Code::sendinv) {
            auto send = sends_.find(id);
            if (send != sends_.end()) {
                // not delivered (or delivered and failed): no receive names it, unless it was
                // on a wire when its connection failed
                if (r && r->Status == STATUS_CANCELLED && in_flight_on_a_wire())
                    maybe_delivered_.insert(*send);
                sends_gone_[id] = "it completed " + (r ? hex(r->Status) : std::string("without a result"));
                sends_.erase(send);
            }
        }
    }
}

void World::complete(const NDK_RESULT_EX &r, int64_t cq_id)
{
    uint64_t id = reinterpret_cast<uintptr_t>(r.RequestContext);
    int64_t qp_id = static_cast<int64_t>(reinterpret_cast<uintptr_t>(r.QPContext));
    auto it = out_.find(id);
    if (it == out_.end()) {
        fail("unknown_completion", "CQ",
             "CQ #" + std::to_string(cq_id) + " returned a result for request #" +
                 std::to_string(id) + " (QP #" + std::to_string(qp_id) + ", status " +
                 hex(r.Status) + "), which is not in flight: never posted, failed inline, or "
                 "already completed");
        return;
    }
    Req &req = it->second;
    if (r.Type != 0 && !type_matches(req.code, r.Type)) {
        fail("data", "Type", "result of " + std::string(op_name(req.code)) + " #" +
                                 std::to_string(id) + " has Type " + std::to_string(r.Type));
        return;
    }
    if (req.qp >= 0 && req.qp != qp_id && req.queue != 2) {
        fail("data", "QPContext", "result of request #" + std::to_string(id) + " carries QP #" +
                                      std::to_string(qp_id) + ", posted on QP #" +
                                      std::to_string(req.qp));
        return;
    }
    if (req.cq != cq_id && req.queue != 2) {
        fail("data", "CQ", "result of request #" + std::to_string(id) + " arrived on CQ #" +
                               std::to_string(cq_id) + ", its QP's CQ is #" +
                               std::to_string(req.cq));
        return;
    }
    // silent successes posted before it on the same queue are done (they succeeded)
    std::deque<uint64_t> *queue = nullptr;
    if (req.queue == 2) {
        if (Obj *srq = get(req.srq, Kind::Srq))
            queue = &srq->rq;
    } else if (Obj *qp = get(req.qp, Kind::Qp)) {
        queue = req.queue == 1 ? &qp->rq : &qp->iq;
    }
    if (queue) {
        auto pos = std::find(queue->begin(), queue->end(), id);
        if (pos != queue->end()) {
            std::vector<uint64_t> earlier(queue->begin(), pos);
            queue->erase(pos);
            for (uint64_t e : earlier) {
                auto ei = out_.find(e);
                if (ei != out_.end() && ei->second.silent) {
                    if (ei->second.tally)
                        ++statuses[ei->second.tally]["STATUS_SUCCESS (silent)"];
                    judge(e, ei->second, STATUS_SUCCESS);
                    settle(e, ei->second, true, nullptr);
                    drop_request(e);
                    queue->erase(std::find(queue->begin(), queue->end(), e));
                }
            }
        }
    }
    it = out_.find(id);
    if (it->second.queue == 2)
        if (Obj *cq = get(cq_id, Kind::Cq))
            cq->pending = std::max<int64_t>(cq->pending - 1, 0); // counted by the send
    if (it->second.tally)
        ++statuses[it->second.tally][hex(r.Status)];
    judge(id, it->second, r.Status);
    settle(id, it->second, r.Status == STATUS_SUCCESS, &r);
    drop_request(id);
}

// A request whose completion status the model knows: a FastRegister or an invalidation of a
// fast-register MR must succeed; a FastRegister of an MR already mapped, or of pages of the
// other adapter's LAM, and an access through an MR whose LAM was released, must fail as
// docs/semantics.md says (DATA-STATUS).  CANCELLED is always possible: a flush, or an earlier
// error that ended the connection (QP-ERROR).
void World::judge(uint64_t id, const Req &req, NTSTATUS status)
{
    if (!req.judged || status == req.want || status == STATUS_CANCELLED)
        return;
    fail("status", std::string(op_name(req.code)) + ":" + hex(req.want),
         std::string(op_name(req.code)) + " #" + std::to_string(id) + " completed " + hex(status) +
             ", the model expects " + hex(req.want) + " (or STATUS_CANCELLED)");
}

// What a request's end does to the fast-register MR it maps or invalidates.
void World::fr_done(Req &req, bool success)
{
    Obj *mr = get(req.target, Kind::Mr);
    if (!mr || !mr->fast)
        return;
    switch (req.code) {
    case Code::fastreg:
        if (mr->fr_state == 1) // a deliberate FastRegister of a mapped MR left it as it was
            mr->fr_state = success && req.want == STATUS_SUCCESS ? 2 : 0;
        break;
    case Code::inval:
        if (mr->fr_state == 3)
            mr->fr_state = success ? 0 : 2; // failed: CANCELLED, never executed
        break;
    case Code::sendinv:
    case Code::read:
        // the peer's ReceiveAndInvalidate may have settled it first; a failure leaves the
        // token undefined (digest 1.7, NdkRead)
        if (mr->fr_state == 3)
            mr->fr_state = success ? 0 : 4;
        break;
    default:
        break;
    }
}

void World::poll_cq(int64_t cq_id, ULONG n, bool ex)
{
    Obj *cq = get(cq_id, Kind::Cq);
    if (!cq) {
        ++skipped;
        return;
    }
    auto h = std::static_pointer_cast<ndk::Cq>(cq->h);
    if (ex) {
        NDK_RESULT_EX results[64];
        ULONG got = h->get_results_into(std::span(results, std::min<ULONG>(n, 64)));
        ++statuses["NdkGetCqResultsEx"][got ? "results" : "empty"];
        for (ULONG i = 0; i < got && !failure.failed(); ++i)
            complete(results[i], cq_id);
    } else {
        auto results = h->get_results(std::min<ULONG>(n, 64));
        ++statuses["NdkGetCqResults"][results.empty() ? "empty" : "results"];
        for (const auto &r : results) {
            if (failure.failed())
                break;
            NDK_RESULT_EX x{};
            x.Status = r.Status;
            x.BytesTransferred = r.BytesTransferred;
            x.QPContext = r.QPContext;
            x.RequestContext = r.RequestContext;
            x.Type = static_cast<NDK_OPERATION_TYPE>(0); // not in NDK_RESULT: not checked
            complete(x, cq_id);
        }
    }
    // a CQ with a notification pending: take it (the event queue would grow otherwise)
    while (h->events().notifications.pop())
        ;
}

void World::abandon_cq(int64_t cq_id)
{
    for (auto &[id, req] : out_)
        if (req.cq == cq_id)
            req.cq = -1; // its completion may never be seen
}

// Drain every open CQ until the requests of `qps` (all QPs when empty) are accounted for;
// with `judge`, a non-silent request still in flight on a CQ that is open and not tainted is a
// lost completion.
void World::drain_for(const std::set<int64_t> &qps, bool judge)
{
    auto deadline = std::chrono::steady_clock::now() + wait_for();
    auto waiting = [&] {
        for (auto &[id, req] : out_) {
            if (!qps.empty() && !qps.count(req.qp))
                continue;
            Obj *cq = get(req.cq, Kind::Cq);
            if (!req.silent && cq && !cq->tainted)
                return id;
        }
        return uint64_t{0};
    };
    while (!failure.failed()) {
        for (int64_t cq : live_[static_cast<size_t>(Kind::Cq)])
            poll_cq(cq, 64, true);
        uint64_t left = waiting();
        if (!left)
            return;
        if (std::chrono::steady_clock::now() > deadline) {
            if (judge) {
                auto &req = out_[left];
                fail("lost", op_name(req.code),
                     std::string(op_name(req.code)) + " #" + std::to_string(left) + " on QP #" +
                         std::to_string(req.qp) + " returned STATUS_SUCCESS but never completed "
                         "(its QP was closed or flushed and its CQ #" + std::to_string(req.cq) +
                         " drained)");
            }
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

void World::pump_events()
{
    for (int64_t id : live_[static_cast<size_t>(Kind::Connector)]) {
        Obj *c = get(id, Kind::Connector);
        auto h = std::static_pointer_cast<ndk::Connector>(c->h);
        while (auto reason = h->events().disconnects.pop()) {
            ++statuses["NdkDisconnectEventCallback"]["reason " + std::to_string(*reason)];
            if (Obj *qp = get(c->conn, Kind::Qp))
                qp->qstate = 2;
        }
    }
    for (int64_t id : live_[static_cast<size_t>(Kind::Srq)]) {
        auto h = handle<ndk::Srq>(id, Kind::Srq);
        while (h->events().notifications.pop())
            ++statuses["NdkSrqNotificationCallback"]["called"];
    }
}

} // namespace walk
