// One stress thread: it polls the CQs of its groups, checks each completion against the request
// it completes and the bytes it moved, and posts new requests on its ends until the run stops;
// then it drains: no new work, the receives left are consumed by sends, the windows given back
// and invalidated, until nothing of its own is outstanding.
//
// The data path calls the NDK dispatch tables directly (the objects were made and are kept by
// the consumer API, world.cpp): a consumer API call takes its adapter's mutex on the way in
// and out (InCall), which would order every call on an adapter behind the others and hide the
// provider's own races from TSan.  Nothing is closed while the threads run, and each CQ, QP
// and SRQ is posted to and polled by its one thread, as digest 3.2 and 3.3 ask.
#include "stress.hpp"

#include "ndk/status.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace stress {
namespace {

constexpr int kPostsPerStep = 4;
constexpr ULONG kPollBatch = 32;
constexpr ULONG kWindowAccess = NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;

NDK_OPERATION_TYPE type_of(Op op)
{
    switch (op) {
    case Op::Send:
    case Op::SendSolicit:
    case Op::SendInline:
    case Op::SendInvalidate: return NdkOperationTypeSend; // digest 1.7: SendAndInvalidate too
    case Op::Write:
    case Op::MwWrite:
    case Op::FrWrite: return NdkOperationTypeWrite;
    case Op::Read:
    case Op::MwRead:
    case Op::FrRead: return NdkOperationTypeRead;
    case Op::Bind: return NdkOperationTypeBind;
    case Op::FastRegister: return NdkOperationTypeFastRegister;
    case Op::InvalidateMw:
    case Op::InvalidateFr: return NdkOperationTypeInvalidate;
    default: return NdkOperationTypeReceive;
    }
}

std::string ahead_text(size_t ahead, const char *queue)
{
    return std::to_string(ahead) + " earlier request" + (ahead == 1 ? "" : "s") + " of " + queue +
           " (digest 4.2: in posting order)";
}

const char *state_name(int state)
{
    static constexpr const char *kNames[] = {"idle",     "registering", "published",
                                             "released", "given back for remote invalidation",
                                             "invalidating"};
    return state >= 0 && state < 6 ? kNames[state] : "?";
}

// The provider function a thread is in, for the report of a hang.
class InProvider {
public:
    InProvider(std::atomic<const char *> &mark, const char *function) : mark_(mark)
    {
        mark_.store(function, std::memory_order_relaxed);
    }
    ~InProvider() { mark_.store(nullptr, std::memory_order_relaxed); }
    InProvider(const InProvider &) = delete;
    InProvider &operator=(const InProvider &) = delete;

private:
    std::atomic<const char *> &mark_;
};

ULONG sges(NDK_SGE (&out)[kMaxPieces], const Layout &layout, uint8_t *base, uint32_t token)
{
    for (uint32_t i = 0; i < layout.count; ++i) {
        out[i] = {};
        out[i].VirtualAddress = base + layout.pieces[i].offset;
        out[i].Length = layout.pieces[i].length;
        out[i].MemoryRegionToken = token;
    }
    return layout.count;
}

void fill_layout(uint8_t *base, const Layout &layout, uint64_t id)
{
    uint64_t stream = 0;
    for (uint32_t i = 0; i < layout.count; ++i) {
        fill(base + layout.pieces[i].offset, id, stream, layout.pieces[i].length);
        stream += layout.pieces[i].length;
    }
}

void poison_layout(uint8_t *base, const Layout &layout)
{
    for (uint32_t i = 0; i < layout.count; ++i)
        std::memset(base + layout.pieces[i].offset, kPoison, layout.pieces[i].length);
}

Layout single(uint64_t offset, uint32_t length)
{
    Layout layout;
    layout.pieces[0] = {static_cast<uint32_t>(offset), length};
    layout.count = 1;
    return layout;
}

void merge(std::optional<Mismatch> &into, const std::optional<Mismatch> &m, size_t base)
{
    if (!m)
        return;
    if (!into) {
        into = *m;
        into->at += base;
        into->count = 0;
    }
    into->count += m->count;
}

// The `bytes` region at `base`: the first `length` bytes of the layout's stream are request
// `id`'s from stream offset `start`, every other byte still poison (nothing written beyond the
// request, between its SGEs or past its length).  `at` of a mismatch is an offset in the region.
std::optional<Mismatch> check_region(const uint8_t *base, size_t bytes, const Layout &layout,
                                     uint64_t id, uint64_t start, uint32_t length)
{
    std::optional<Mismatch> m;
    size_t cursor = 0;
    uint64_t stream = 0;
    for (uint32_t i = 0; i < layout.count; ++i) {
        const auto &piece = layout.pieces[i];
        merge(m, check_poison(base + cursor, piece.offset - cursor), cursor);
        uint32_t data = static_cast<uint32_t>(
            std::min<uint64_t>(piece.length, length > stream ? length - stream : 0));
        merge(m, check(base + piece.offset, id, start + stream, data), piece.offset);
        merge(m, check_poison(base + piece.offset + data, piece.length - data),
              piece.offset + data);
        stream += piece.length;
        cursor = piece.offset + piece.length;
    }
    merge(m, check_poison(base + cursor, bytes - cursor), cursor);
    return m;
}

// The first 8 bytes of the layout's stream: the id of the send a receive got.
uint64_t read_id(const uint8_t *base, const Layout &layout)
{
    uint8_t bytes[8] = {};
    size_t got = 0;
    for (uint32_t i = 0; i < layout.count && got < 8; ++i) {
        size_t n = std::min<size_t>(8 - got, layout.pieces[i].length);
        std::memcpy(bytes + got, base + layout.pieces[i].offset, n);
        got += n;
    }
    uint64_t id = 0;
    for (int i = 7; i >= 0; --i)
        id = id << 8 | bytes[i];
    return id;
}

} // namespace

void Driver::fail(const std::string &message) { run->fail(message); }

void Driver::main()
{
    try {
        for (End *e : ends)
            for (uint32_t i = 0; i < e->receive_slots; ++i)
                post_receive(e, *e->group, static_cast<int>(i));
        for (Group *g : groups)
            for (uint32_t i = 0; i < g->srq_slots; ++i)
                post_receive(nullptr, *g, static_cast<int>(i));
        for (;;) {
            if (run->abort.load()) {
                describe_outstanding();
                break;
            }
            bool stopping = run->stop.load();
            bool busy = false;
            for (Group *g : groups) {
                busy |= poll(*g);
                notifications(*g, stopping);
            }
            for (End *e : ends)
                busy |= step(*e, stopping);
            if (stopping) {
                for (Group *g : groups)
                    g->receives.final.store(true, std::memory_order_release);
                if (drained())
                    break;
            }
            if (!busy)
                std::this_thread::yield();
        }
    } catch (const std::exception &x) {
        fail("thread " + std::to_string(index) + " stopped: " + x.what());
    }
    finished.store(true);
}

bool Driver::poll(Group &g)
{
    NDK_RESULT_EX results[kPollBatch];
    ULONG n;
    {
        InProvider in(in_call, "NdkGetCqResultsEx");
        n = g.raw_cq->Dispatch->NdkGetCqResultsEx(g.raw_cq, results, kPollBatch);
    }
    if (n > kPollBatch) {
        fail("NdkGetCqResultsEx returned " + std::to_string(n) + " results for room for " +
             std::to_string(kPollBatch));
        n = kPollBatch;
    }
    if (n == 0)
        return false;
    for (ULONG i = 0; i < n; ++i)
        complete(g, results[i]);
    completions.fetch_add(n, std::memory_order_relaxed);
    return true;
}

// One arm at a time, re-armed once its notification came: a notification without an arm, or
// two for one, is a provider fault (digest 3.2).  Mostly SOLICITED, so the solicited sends
// are what wakes it; sometimes ANY.
void Driver::notifications(Group &g, bool stopping)
{
    auto cq = [&] {
        return "the CQ of thread " + std::to_string(index) + " on adapter " +
               (g.adapter == 0 ? "A" : "B");
    };
    while (auto status = g.cq->events().notifications.pop()) {
        ++stats.notifications;
        if (!g.armed)
            fail(cq() + ": a notification without an arm (digest 3.2: once per arm)");
        if (*status != STATUS_SUCCESS)
            fail(cq() + ": a notification with " + ndk::describe_status(*status));
        g.armed = false;
    }
    if (g.armed || stopping)
        return;
    ULONG type = rng.below(4) == 0 ? NDK_CQ_NOTIFY_ANY : NDK_CQ_NOTIFY_SOLICITED;
    InProvider in(in_call, "NdkArmCq");
    g.raw_cq->Dispatch->NdkArmCq(g.raw_cq, type);
    g.armed = true;
    ++stats.arms;
}

void Driver::complete(Group &g, const NDK_RESULT_EX &r)
{
    auto context = reinterpret_cast<uintptr_t>(r.RequestContext);
    Table *table = run->table_of(context);
    Req *found = table != nullptr && table->driver == this ? table->find(context) : nullptr;
    if (found == nullptr) {
        fail("a completion (" + ndk::status_name(r.Status) + ", type " + std::to_string(r.Type) +
             ") whose RequestContext " + hex(context) +
             " names no outstanding request of this CQ's queues: a second completion, or one "
             "never posted");
        return;
    }
    Req req = *found;
    table->release(context);
    ++stats.ops[static_cast<size_t>(req.op)].completed;
    End *on = nullptr;
    for (End *e : g.ends)
        if (e == r.QPContext)
            on = e;
    if (on == nullptr) {
        fail(std::string(op_name(req.op)) + " " + hex(req.id) + " completed with QPContext " +
             hex(reinterpret_cast<uintptr_t>(r.QPContext)) + ", no QP of this CQ");
        on = table->end;
        if (on == nullptr)
            return;
    }
    if (req.op == Op::Receive || req.op == Op::SrqReceive)
        received(g, *table, *on, context, req, r);
    else
        initiated(*table->end, *on, context, req, r);
}

void Driver::initiated(End &e, End &on, uint64_t context, const Req &req, const NDK_RESULT_EX &r)
{
    const Limits &l = run->limits;
    // Messages are made only for a failure: a completion costs no allocation.
    auto what = [&] { return e.name() + ": " + op_name(req.op) + " " + hex(req.id); };
    if (&on != &e)
        fail(what() + " completed with the QPContext of " + on.name());
    if (auto ahead = check_order(e.initiator_order, context))
        fail(what() + " completed ahead of " + ahead_text(ahead, "its initiator queue"));
    --e.initiator_out;
    bool ok = r.Status == STATUS_SUCCESS && r.Type == type_of(req.op);
    if (!ok)
        fail(what() + " completed with " + ndk::describe_status(r.Status) + ", type " +
             std::to_string(r.Type) + "; expected STATUS_SUCCESS, type " +
             std::to_string(type_of(req.op)));
    Count &count = stats.ops[static_cast<size_t>(req.op)];
    if (ok && req.length > 0)
        count.bytes += req.length;
    switch (req.op) {
    case Op::Send:
    case Op::SendSolicit:
    case Op::SendInvalidate:
        e.free_sources.push_back(req.slot); // the receiver checks the bytes
        break;
    case Op::SendInline: break; // its slot was free once the post returned
    case Op::Write:
        if (ok)
            verify(e, req,
                   check_region(e.peer->exposed.at(e.peer->target_offset(req.target)), l.max_size,
                                single(req.remote_offset, req.length), req.id, 0, req.length),
                   "its slot of the peer's write area");
        e.free_sources.push_back(req.slot);
        e.free_targets.push_back(req.target);
        break;
    case Op::Read:
    case Op::MwRead:
    case Op::FrRead:
        if (ok)
            verify(e, req,
                   check_region(e.sink(req.slot), l.slot_bytes, req.layout, req.source_id,
                                req.op == Op::Read ? req.remote_offset : 0, req.length),
                   "the read's sink");
        e.free_sinks.push_back(req.slot);
        --e.reads_out;
        if (req.op != Op::Read)
            window_used(req, ok);
        break;
    case Op::MwWrite:
    case Op::FrWrite:
        if (ok)
            verify(e, req,
                   check_region(req.window->memory, req.window->length,
                                single(req.remote_offset, req.length), req.id, 0, req.length),
                   req.op == Op::MwWrite ? "the peer's MW" : "the peer's fast-registered MR");
        e.free_sources.push_back(req.slot);
        window_used(req, ok);
        break;
    case Op::Bind:
    case Op::FastRegister: {
        Window &w = *req.window;
        if (!ok) {
            w.state.store(Window::Idle);
            break;
        }
        w.token = w.is_mw ? w.mw->ndk()->Dispatch->NdkGetRemoteTokenFromMw(w.mw->ndk())
                          : w.fr->ndk()->Dispatch->NdkGetRemoteTokenFromMr(w.fr->ndk());
        ++w.registrations;
        w.state.store(Window::Published, std::memory_order_release);
        break;
    }
    case Op::InvalidateMw:
    case Op::InvalidateFr: req.window->state.store(Window::Idle); break;
    default: break;
    }
}

void Driver::received(Group &g, Table &table, End &on, uint64_t context, const Req &req,
                      const NDK_RESULT_EX &r)
{
    const Limits &l = run->limits;
    bool own_queue = req.op == Op::Receive;
    End &e = own_queue ? *table.end : on;
    auto what = [&] { return e.name() + ": " + op_name(req.op); };
    uint8_t *slot = own_queue ? e.receive(req.slot) : g.srq_memory.at(size_t(req.slot) * l.slot_bytes);
    if (own_queue) {
        if (&on != &e)
            fail(what() + " completed with the QPContext of " + on.name());
        if (auto ahead = check_order(e.receive_order, context))
            fail(what() + " completed ahead of " + ahead_text(ahead, "its receive queue"));
    } else if (!on.srq || on.group != &g) {
        fail(what() + " completed on a QP that does not take its receives from this SRQ");
    }
    bool invalidated = r.Type == NdkOperationTypeReceiveAndInvalidate;
    bool ok = r.Status == STATUS_SUCCESS && (r.Type == NdkOperationTypeReceive || invalidated);
    if (!ok)
        fail(what() + " completed with " + ndk::describe_status(r.Status) + ", type " +
             std::to_string(r.Type) + "; expected STATUS_SUCCESS, a receive");
    uint32_t bytes = r.BytesTransferred;
    if (ok && (bytes < 8 || bytes > l.max_size)) {
        fail(what() + " completed with BytesTransferred " + std::to_string(bytes) +
             ": no send of this run is that long");
        ok = false;
    }
    if (ok) {
        // The message names its send: the peer's, the next in its order, of the length its
        // id gives, received the way its kind asks.
        uint64_t message = read_id(slot, req.layout);
        uint64_t expected = id::make(e.connection->index, 1 - e.side, Op::Send, e.expect_seq);
        bool from_peer = id::connection(message) == e.connection->index &&
                         id::side(message) == 1 - e.side && is_send(id::op(message));
        if (!from_peer || id::seq(message) != id::seq(expected)) {
            fail(what() + " got message " + hex(message) + ", expected the peer's send #" +
                 std::to_string(id::seq(expected)) + " (" + hex(expected) +
                 " or another send kind): lost, repeated, reordered or from elsewhere");
        } else if (length_of(message, l) != bytes) {
            fail(what() + " of " + hex(message) + ": BytesTransferred " + std::to_string(bytes) +
                 ", the send moved " + std::to_string(length_of(message, l)));
        } else if ((id::op(message) == Op::SendInvalidate) != invalidated) {
            fail(what() + " of " + hex(message) + " (" + op_name(id::op(message)) +
                 ") completed as type " + std::to_string(r.Type));
        } else {
            Req got = req;
            got.id = message;
            verify(e, got, check_region(slot, l.slot_bytes, req.layout, message, 0, bytes),
                   "the receive's buffer");
            stats.ops[static_cast<size_t>(req.op)].bytes += bytes;
        }
        if (from_peer)
            e.expect_seq = id::seq(message) + 1;
        if (invalidated && from_peer) {
            auto token = static_cast<uint32_t>(r.TypeSpecificCompletionOutput);
            Window *w = nullptr;
            for (Window *mine : {&e.mw, &e.fr})
                if (mine->token == token &&
                    mine->state.load(std::memory_order_acquire) == Window::RemoteInvalidating)
                    w = mine;
            if (w == nullptr) {
                fail(what() + " invalidated token " + hex(token) +
                     ", no window of this end given back for remote invalidation");
            } else {
                ++stats.receive_invalidates;
                w->state.store(Window::Idle);
            }
        }
    }
    Pool &pool = own_queue ? e.receives : g.receives;
    if (ok && !pool.final.load(std::memory_order_relaxed))
        post_receive(own_queue ? &e : nullptr, g, req.slot);
}

// A write or read through a peer's window completed: the next step of its use.
void Driver::window_used(const Req &req, bool ok)
{
    Window::Use &use = req.window->use;
    use.in_flight = false;
    if (!ok) {
        use.next = Window::Use::GiveBack;
    } else if (req.op == Op::MwWrite || req.op == Op::FrWrite) {
        use.next = Window::Use::Read;
    } else {
        use.next = --use.uses_left > 0 ? Window::Use::Write : Window::Use::GiveBack;
    }
}

bool Driver::step(End &e, bool stopping)
{
    const unsigned features = run->limits.features;
    if (stopping && !e.srq)
        e.receives.final.store(true, std::memory_order_release);
    bool busy = own_window(e, e.mw, stopping);
    busy |= own_window(e, e.fr, stopping);
    busy |= use_window(e, e.peer->mw, stopping);
    busy |= use_window(e, e.peer->fr, stopping);
    if (stopping) {
        // A send for each receive the peer still has posted for us, so none is left over;
        // plain sends even without --ops send.
        while (post_send(e, Op::Send))
            busy = true;
        return busy;
    }
    for (int i = 0; i < kPostsPerStep; ++i) {
        switch (rng.below(7)) {
        case 0: busy |= (features & kSend) && post_send(e, Op::Send); break;
        case 1: busy |= (features & kSolicit) && post_send(e, Op::SendSolicit); break;
        case 2: busy |= (features & kInline) && post_send(e, Op::SendInline); break;
        case 3:
        case 4: busy |= (features & kWrite) && post_write(e); break;
        default: busy |= (features & kRead) && post_read(e); break;
        }
    }
    return busy;
}

bool Driver::own_window(End &e, Window &w, bool stopping)
{
    if (w.is_mw ? !w.mw : !w.fr)
        return false; // left out (--ops)
    int state = w.state.load(std::memory_order_acquire);
    if (state == Window::Idle && !stopping && room(e)) {
        // Registering is stored before the stop flag is read again, both sequentially
        // consistent: a user that read the stop and then Idle (drained()) can rely on no
        // registration starting after it.
        w.state.store(Window::Registering);
        if (run->stop.load()) {
            w.state.store(Window::Idle);
            return false;
        }
        return post_register(e, w);
    }
    if (state == Window::Released && room(e)) {
        w.state.store(Window::Invalidating);
        return post_invalidate(e, w);
    }
    return false;
}

bool Driver::use_window(End &e, Window &w, bool stopping)
{
    Window::Use &use = w.use;
    if (use.in_flight)
        return false;
    if (!use.active) {
        if (w.state.load(std::memory_order_acquire) != Window::Published)
            return false;
        use = {};
        use.active = true;
        use.uses_left = 1 + static_cast<int>(rng.below(3));
    }
    if (stopping)
        use.next = Window::Use::GiveBack;
    switch (use.next) {
    case Window::Use::Write: return post_window_write(e, w);
    case Window::Use::Read: return post_window_read(e, w);
    case Window::Use::GiveBack: break;
    }
    use.active = false;
    if (!stopping && (run->limits.features & kSendInvalidate) && rng.below(2) == 0 &&
        post_send(e, Op::SendInvalidate, &w))
        return true;
    w.state.store(Window::Released, std::memory_order_release);
    return true;
}

// A queue completes in posting order (digest 4.2): how many requests posted before
// `context` are still in `order` (0: none, as it should be).  It leaves `order`.
size_t Driver::check_order(std::deque<uint64_t> &order, uint64_t context)
{
    auto at = std::find(order.begin(), order.end(), context);
    auto ahead = static_cast<size_t>(at - order.begin());
    if (at != order.end())
        order.erase(at);
    return ahead;
}

bool Driver::room(const End &e) const { return e.initiator_out < run->limits.initiator_depth; }

bool Driver::returned(NTSTATUS status, const char *function, End &e, uint64_t context, Op op)
{
    if (status != STATUS_SUCCESS) {
        e.table.release(context);
        fail(e.name() + ": " + function + " (" + op_name(op) + ") returned " +
             ndk::describe_status(status));
        return false;
    }
    e.initiator_order.push_back(context);
    ++e.initiator_out;
    ++stats.ops[static_cast<size_t>(op)].posted;
    return true;
}

void Driver::verify(const End &e, const Req &req, const std::optional<Mismatch> &m,
                    const char *where)
{
    if (!m)
        return;
    fail(e.name() + ": " + op_name(req.op) + " " + hex(req.id) + ": byte " +
         std::to_string(m->at) + " of " + where + " is " + hex(m->got) + ", expected " +
         hex(m->want) + " (" + std::to_string(m->count) + (m->count == 1 ? " byte" : " bytes") +
         " wrong)");
}

bool Driver::post_receive(End *e, Group &g, int slot)
{
    const Limits &l = run->limits;
    uint8_t *base = e ? e->receive(slot) : g.srq_memory.at(size_t(slot) * l.slot_bytes);
    std::memset(base, kPoison, l.slot_bytes);
    Req req;
    req.op = e ? Op::Receive : Op::SrqReceive;
    req.slot = slot;
    req.layout = scatter(rng, l.max_size, l.receive_sge);
    req.posted = Clock::now();
    Table &table = e ? e->table : g.table;
    uint64_t context = table.add(req);
    NDK_SGE sgl[kMaxPieces];
    ULONG n = sges(sgl, req.layout, base, e ? e->local_token : g.srq_token);
    auto *ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(context));
    NTSTATUS status;
    const char *function = e ? "NdkReceive" : "NdkSrqReceive";
    {
        InProvider in(in_call, function);
        status = e ? e->raw_qp->Dispatch->NdkReceive(e->raw_qp, ctx, sgl, n)
                   : g.raw_srq->Dispatch->NdkSrqReceive(g.raw_srq, ctx, sgl, n);
    }
    if (status != STATUS_SUCCESS) {
        table.release(context);
        fail((e ? e->name() : "the SRQ of thread " + std::to_string(index)) + ": " + function +
             " returned " + ndk::describe_status(status));
        return false;
    }
    ++stats.ops[static_cast<size_t>(req.op)].posted;
    if (e)
        e->receive_order.push_back(context);
    (e ? e->receives : g.receives).credits.fetch_add(1, std::memory_order_release);
    return true;
}

bool Driver::post_send(End &e, Op op, Window *invalidate)
{
    if (!room(e) || e.free_sources.empty() || !e.peer_receives->take())
        return false;
    const Limits &l = run->limits;
    int slot = e.free_sources.back();
    e.free_sources.pop_back();
    Req req;
    req.op = op;
    req.id = id::make(e.connection->index, e.side, op, e.send_seq);
    req.length = length_of(req.id, l);
    req.slot = slot;
    req.layout = scatter(rng, req.length, l.initiator_sge);
    req.window = invalidate;
    req.posted = Clock::now();
    uint8_t *base = e.source(slot);
    fill_layout(base, req.layout, req.id);
    uint64_t context = e.table.add(req);
    NDK_SGE sgl[kMaxPieces];
    ULONG n = sges(sgl, req.layout, base, e.local_token);
    auto *ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(context));
    ULONG flags = op == Op::SendSolicit  ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT
                  : op == Op::SendInline ? NDK_OP_FLAG_INLINE
                                         : 0;
    NTSTATUS status;
    const char *function = invalidate ? "NdkSendAndInvalidate" : "NdkSend";
    if (invalidate != nullptr) {
        // Given back before the post: the owner checks the state when the receive completes.
        invalidate->state.store(Window::RemoteInvalidating, std::memory_order_release);
        InProvider in(in_call, function);
        status = e.raw_qp->Dispatch->NdkSendAndInvalidate(e.raw_qp, ctx, sgl, n, flags,
                                                          invalidate->token);
    } else {
        InProvider in(in_call, function);
        status = e.raw_qp->Dispatch->NdkSend(e.raw_qp, ctx, sgl, n, flags);
    }
    if (!returned(status, function, e, context, op)) {
        e.free_sources.push_back(slot);
        e.peer_receives->credits.fetch_add(1, std::memory_order_release);
        if (invalidate != nullptr)
            invalidate->state.store(Window::Released, std::memory_order_release);
        return false;
    }
    ++e.send_seq;
    if (op == Op::SendInline) {
        // The provider took the bytes during the call (digest 2.4): poison them at once, so a
        // send that read them later carries poison, which the receiver sees.
        poison_layout(base, req.layout);
        e.free_sources.push_back(slot);
        e.table.find(context)->slot = -1;
    }
    return true;
}

Req Driver::initiator_request(const End &e, Op op) const
{
    Req req;
    req.op = op;
    req.id = id::make(e.connection->index, e.side, op, e.op_seq);
    req.posted = Clock::now();
    return req;
}

// NdkWrite or NdkRead of `req`, its SGEs over its source or sink slot, at `remote` under
// `token`; on success the slot is taken.
bool Driver::post_rdma(End &e, const Req &req, uint64_t remote, uint32_t token)
{
    bool read = type_of(req.op) == NdkOperationTypeRead;
    uint8_t *local = read ? e.sink(req.slot) : e.source(req.slot);
    uint64_t context = e.table.add(req);
    NDK_SGE sgl[kMaxPieces];
    ULONG n = sges(sgl, req.layout, local, e.local_token);
    auto *ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(context));
    const char *function = read ? "NdkRead" : "NdkWrite";
    NTSTATUS status;
    {
        InProvider in(in_call, function);
        status = read ? e.raw_qp->Dispatch->NdkRead(e.raw_qp, ctx, sgl, n, remote, token, 0)
                      : e.raw_qp->Dispatch->NdkWrite(e.raw_qp, ctx, sgl, n, remote, token, 0);
    }
    if (!returned(status, function, e, context, req.op))
        return false;
    (read ? e.free_sinks : e.free_sources).pop_back();
    e.reads_out += read;
    ++e.op_seq;
    return true;
}

bool Driver::post_write(End &e)
{
    if (!room(e) || e.free_sources.empty() || e.free_targets.empty())
        return false;
    const Limits &l = run->limits;
    Req req = initiator_request(e, Op::Write);
    req.length = length_of(req.id, l);
    req.slot = e.free_sources.back();
    req.target = e.free_targets.back();
    req.remote_offset = rng.below(l.max_size - req.length + 1);
    req.layout = scatter(rng, req.length, l.initiator_sge);
    fill_layout(e.source(req.slot), req.layout, req.id);
    // The writer owns its slots of the peer's write area: poison, so the check after the
    // completion sees every byte the write did or did not put there.
    size_t target = e.peer->target_offset(req.target);
    std::memset(e.peer->exposed.at(target), kPoison, l.max_size);
    if (!post_rdma(e, req, e.peer->exposed.address(target + req.remote_offset),
                   e.peer->exposed_token))
        return false;
    e.free_targets.pop_back();
    return true;
}

bool Driver::post_read(End &e)
{
    const Limits &l = run->limits;
    if (!room(e) || e.free_sinks.empty() || e.reads_out >= l.read_limit)
        return false;
    Req req = initiator_request(e, Op::Read);
    req.length = length_of(req.id, l);
    req.slot = e.free_sinks.back();
    req.remote_offset = rng.below(static_cast<uint32_t>(e.peer->read_only_size()) - req.length + 1);
    req.source_id = id::make(e.connection->index, e.peer->side, Op::ReadOnlyArea, 0);
    req.layout = scatter(rng, req.length, l.read_sge);
    std::memset(e.sink(req.slot), kPoison, l.slot_bytes);
    return post_rdma(e, req, e.peer->exposed.address(e.peer->read_only_offset() + req.remote_offset),
                     e.peer->exposed_token);
}

bool Driver::post_window_write(End &e, Window &w)
{
    if (!room(e) || e.free_sources.empty())
        return false;
    const Limits &l = run->limits;
    Req req = initiator_request(e, w.is_mw ? Op::MwWrite : Op::FrWrite);
    req.length = std::min(length_of(req.id, l), w.length);
    req.slot = e.free_sources.back();
    req.remote_offset = rng.below(w.length - req.length + 1);
    req.layout = scatter(rng, req.length, l.initiator_sge);
    req.window = &w;
    fill_layout(e.source(req.slot), req.layout, req.id);
    // While the window is published its bytes are the user's to poison and check.
    std::memset(w.memory, kPoison, w.length);
    if (!post_rdma(e, req, w.address + req.remote_offset, w.token)) {
        w.use.next = Window::Use::GiveBack;
        return false;
    }
    w.use.in_flight = true;
    w.use.offset = static_cast<uint32_t>(req.remote_offset);
    w.use.length = req.length;
    w.use.written = req.id;
    return true;
}

bool Driver::post_window_read(End &e, Window &w)
{
    const Limits &l = run->limits;
    if (!room(e) || e.free_sinks.empty() || e.reads_out >= l.read_limit)
        return false;
    Req req = initiator_request(e, w.is_mw ? Op::MwRead : Op::FrRead);
    req.length = w.use.length;
    req.slot = e.free_sinks.back();
    req.remote_offset = w.use.offset;
    req.source_id = w.use.written;
    req.layout = scatter(rng, req.length, l.read_sge);
    req.window = &w;
    std::memset(e.sink(req.slot), kPoison, l.slot_bytes);
    if (!post_rdma(e, req, w.address + req.remote_offset, w.token)) {
        w.use.next = Window::Use::GiveBack;
        return false;
    }
    w.use.in_flight = true;
    return true;
}

bool Driver::post_register(End &e, Window &w)
{
    Req req = initiator_request(e, w.is_mw ? Op::Bind : Op::FastRegister);
    req.window = &w;
    uint64_t context = e.table.add(req);
    auto *ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(context));
    NTSTATUS status;
    const char *function = w.is_mw ? "NdkBind" : "NdkFastRegister";
    if (w.is_mw) {
        InProvider in(in_call, function);
        status = e.raw_qp->Dispatch->NdkBind(e.raw_qp, ctx, e.exposed_mr->ndk(), w.mw->ndk(),
                                             reinterpret_cast<PVOID>(w.address), w.length,
                                             kWindowAccess);
    } else {
        // A new base address each time (page aligned: the FBO is 0), so a peer that kept the
        // old one would miss.
        w.address = (uint64_t{1} << 32) + (w.registrations % 1024) * (uint64_t{1} << 20);
        InProvider in(in_call, function);
        status = e.raw_qp->Dispatch->NdkFastRegister(
            e.raw_qp, ctx, w.fr->ndk(), static_cast<ULONG>(w.pages.size()), w.pages.data(), 0,
            w.length, reinterpret_cast<PVOID>(w.address), kWindowAccess);
    }
    if (!returned(status, function, e, context, req.op)) {
        w.state.store(Window::Idle);
        return false;
    }
    ++e.op_seq;
    return true;
}

bool Driver::post_invalidate(End &e, Window &w)
{
    Req req = initiator_request(e, w.is_mw ? Op::InvalidateMw : Op::InvalidateFr);
    req.window = &w;
    uint64_t context = e.table.add(req);
    NTSTATUS status;
    {
        InProvider in(in_call, "NdkInvalidate");
        status = e.raw_qp->Dispatch->NdkInvalidate(
            e.raw_qp, reinterpret_cast<PVOID>(static_cast<uintptr_t>(context)),
            w.is_mw ? w.mw->header() : w.fr->header(), 0);
    }
    if (!returned(status, "NdkInvalidate", e, context, req.op)) {
        w.state.store(Window::Idle);
        return false;
    }
    ++e.op_seq;
    return true;
}

// Nothing of this thread is outstanding, and nothing can come: its receives are consumed, the
// peers' receives it had credits for are sent to, every window it owns or uses is idle.
bool Driver::drained() const
{
    for (const End *e : ends) {
        if (e->table.outstanding() != 0 || e->peer->mw.use.active || e->peer->fr.use.active)
            return false;
        for (const Window *w :
             std::initializer_list<const Window *>{&e->mw, &e->fr, &e->peer->mw, &e->peer->fr})
            if (w->state.load() != Window::Idle)
                return false;
        if (!e->peer_receives->final.load(std::memory_order_acquire) ||
            e->peer_receives->credits.load(std::memory_order_acquire) != 0)
            return false;
    }
    for (const Group *g : groups)
        if (g->table.outstanding() != 0)
            return false;
    return true;
}

void Driver::describe_outstanding()
{
    auto now = Clock::now();
    auto age = [&](const Req &req) {
        return std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - req.posted)
                       .count()) +
               " ms ago";
    };
    // The initiator requests oldest first; receives (posted ahead, waiting for the peer's
    // sends) only counted.
    auto list = [&](const std::string &owner, const Table &table) {
        std::vector<const Req *> requests;
        size_t receives = 0;
        for (const Req &req : table.requests()) {
            if (req.gen == 0)
                continue;
            if (req.op == Op::Receive || req.op == Op::SrqReceive)
                ++receives;
            else
                requests.push_back(&req);
        }
        std::sort(requests.begin(), requests.end(),
                  [](const Req *a, const Req *b) { return a->posted < b->posted; });
        for (size_t i = 0; i < requests.size() && i < 8; ++i)
            outstanding.push_back(owner + ": " + op_name(requests[i]->op) + " " +
                                  hex(requests[i]->id) + ", posted " + age(*requests[i]));
        if (requests.size() > 8)
            outstanding.push_back(owner + ": ... " + std::to_string(requests.size()) +
                                  " requests in all");
        if (receives != 0)
            outstanding.push_back(owner + ": " + std::to_string(receives) +
                                  " receives still posted");
    };
    for (const End *e : ends) {
        list(e->name(), e->table);
        for (const Window *w : {&e->mw, &e->fr}) {
            int state = w->state.load();
            if (state != Window::Idle)
                outstanding.push_back(e->name() + ": its " + (w->is_mw ? "MW" : "FR MR") +
                                      " is " + state_name(state));
        }
        int64_t credits = e->peer_receives->credits.load();
        if (credits != 0 || !e->peer_receives->final.load())
            outstanding.push_back(e->name() + ": " + std::to_string(credits) +
                                  " receives of the peer to send to" +
                                  (e->peer_receives->final.load() ? "" : ", more may come"));
    }
    for (const Group *g : groups)
        list("the SRQ of thread " + std::to_string(index) + " on adapter " +
                 (g->adapter == 0 ? "A" : "B"),
             g->table);
}

} // namespace stress
