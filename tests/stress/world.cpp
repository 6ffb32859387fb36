// The stress test's objects, made through the consumer API on the calling thread before the
// drivers start: two adapters (A, the active sides; B, the passive sides, with the listener),
// per driver and adapter a group (PD, CQ, SRQ), per connection two ends (QP, memory, MW,
// fast-register MR), and the connections themselves.
#include "stress.hpp"

#include "ndk/status.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace stress {
namespace {

constexpr std::chrono::seconds kSetupWait{30};
constexpr uint32_t kReadLimit = 4;

void wait(const ndk::Call &call, const std::string &what)
{
    if (!call.wait(kSetupWait))
        throw std::runtime_error(what + ": no completion within 30 s");
    if (call.result() != STATUS_SUCCESS)
        throw std::runtime_error(what + ": " + ndk::describe_status(call.result()));
}

template <class T>
std::shared_ptr<T> made(const ndk::Call &call, const std::string &what)
{
    wait(call, what);
    auto object = std::dynamic_pointer_cast<T>(call.object());
    if (!object)
        throw std::runtime_error(what + ": no object");
    return object;
}

void register_memory(ndk::Mr &mr, const Memory &memory, ULONG flags, const std::string &what)
{
    wait(mr.register_buffer(memory.at(0), memory.size, flags, memory.bytes), what);
}

void add_table(Run &run, Table &table, Driver *driver)
{
    table.index = static_cast<int>(run.tables.size());
    table.driver = driver;
    run.tables.push_back(&table);
}

} // namespace

World::World(Run &run) : run_(run)
{
    const Config &c = run.config;
    open_adapters();
    derive_limits();
    for (int t = 0; t < c.threads; ++t) {
        auto d = std::make_unique<Driver>();
        d->index = t;
        d->run = &run;
        d->rng = Rng(c.seed * 0x100000001B3ull + static_cast<uint64_t>(t));
        drivers.push_back(std::move(d));
    }
    make_groups();
    listener_ = made<ndk::Listener>(adapter_[1]->create_listener(), "NdkCreateListener");
    wait(listener_->listen(ndk::SocketAddress::from(address_[1], 0)), "NdkListen");
    ndk::SocketAddress bound;
    if (NTSTATUS s = listener_->get_local_address(bound); s != STATUS_SUCCESS)
        throw std::runtime_error("the listener's NdkGetLocalAddress: " + ndk::describe_status(s));
    port_ = bound.port();
    for (auto &connection : connections_) {
        for (End &e : connection->ends)
            make_end(e);
        connect(*connection);
    }
}

World::~World() = default;

void World::open_adapters()
{
    const Config &c = run_.config;
    for (int i = 0; i < 2; ++i) {
        std::string options = c.options;
        if (!c.addresses.empty())
            options += (options.empty() ? "" : "\n") + std::string("address=") + c.addresses[i];
        adapter_[i] = ndk::Adapter::open(c.provider, options, {2, 0}, c.validate);
        if (!c.addresses.empty()) {
            address_[i] = c.addresses[i];
            continue;
        }
        // The provider's own choice (soft: a unique address per adapter), so the run needs no
        // address scheme of its own on any transport.
        auto own = adapter_[i]->addresses();
        if (!own || own->empty())
            throw std::runtime_error("the provider names no address of its adapters: give "
                                     "--addresses A,B");
        auto ipv4 = std::find_if(own->begin(), own->end(), [](const std::string &a) {
            return a.find('.') != std::string::npos;
        });
        address_[i] = ipv4 != own->end() ? *ipv4 : own->front();
    }
}

void World::derive_limits()
{
    const Config &c = run_.config;
    NDK_ADAPTER_INFO a = adapter_[0]->query_info(), b = adapter_[1]->query_info();
    auto least = [&](ULONG NDK_ADAPTER_INFO::*field) { return std::min(a.*field, b.*field); };
    Limits &l = run_.limits;
    l.features = c.features;
    l.max_size = std::min<uint32_t>(c.max_size, least(&NDK_ADAPTER_INFO::MaxTransferLength));
    if (std::min(a.MaxWindowSize, b.MaxWindowSize) < l.max_size)
        l.features &= ~kMw;
    l.inline_size = std::min<uint32_t>(256, least(&NDK_ADAPTER_INFO::MaxInlineDataSize));
    if (l.inline_size < 8)
        l.features &= ~kInline;
    l.initiator_sge = std::min<uint32_t>(kMaxPieces, least(&NDK_ADAPTER_INFO::MaxInitiatorRequestSge));
    l.receive_sge = std::min<uint32_t>(kMaxPieces, least(&NDK_ADAPTER_INFO::MaxReceiveRequestSge));
    l.read_sge = std::min<uint32_t>(l.initiator_sge, least(&NDK_ADAPTER_INFO::MaxReadRequestSge));
    if (l.initiator_sge == 0 || l.receive_sge == 0)
        throw std::runtime_error("the adapter takes no SGE in a request");
    // Enough for what an end can have in flight: a request per source, sink and window step.
    l.initiator_depth = std::min<uint32_t>(32, least(&NDK_ADAPTER_INFO::MaxInitiatorQueueDepth));
    l.receive_depth = std::min<uint32_t>(16, least(&NDK_ADAPTER_INFO::MaxReceiveQueueDepth));
    if (l.initiator_depth < kSources + kSinks + 4 || l.receive_depth == 0)
        throw std::runtime_error("the adapter's queues are too shallow for the run");
    l.srq_depth_per_end = 16;
    if (least(&NDK_ADAPTER_INFO::MaxSrqDepth) == 0)
        l.features &= ~kSrq;
    l.read_limit = std::min({kReadLimit, least(&NDK_ADAPTER_INFO::MaxInboundReadLimit),
                             least(&NDK_ADAPTER_INFO::MaxOutboundReadLimit),
                             static_cast<ULONG>(kSinks)});
    if (l.read_limit == 0 || l.read_sge == 0)
        l.features &= ~(kRead | kMw | kFr); // window uses read back what they wrote
    l.fr_pages = (l.max_size + NDK_PAGE_SIZE - 1) / NDK_PAGE_SIZE;
    if (least(&NDK_ADAPTER_INFO::FRMRPageCount) < l.fr_pages)
        l.features &= ~kFr;
    l.slot_bytes = (l.max_size + kMaxPieces * kGap + 63) / 64 * 64;
}

Group &World::group(int driver, int adapter)
{
    for (auto &g : groups_)
        if (g->driver->index == driver && g->adapter == adapter)
            return *g;
    auto g = std::make_unique<Group>();
    g->driver = drivers[static_cast<size_t>(driver)].get();
    g->adapter = adapter;
    g->driver->groups.push_back(g.get());
    groups_.push_back(std::move(g));
    return *groups_.back();
}

// Which connections are split between two threads and which ends take their receives from an
// SRQ: by the connection's index within its thread, so every thread has each combination once
// it has four connections.
void World::make_groups()
{
    const Config &c = run_.config;
    const Limits &l = run_.limits;
    int threads = c.threads;
    for (int t = 0; t < threads; ++t) {
        for (int i = 0; i < c.connections; ++i) {
            auto connection = std::make_unique<Connection>();
            connection->index = static_cast<uint32_t>(t * c.connections + i);
            bool split = c.mode == Mode::Split ||
                         (c.mode == Mode::Mixed && (((i >> 1) ^ i) & 1) != 0);
            connection->split = split && threads > 1;
            int drivers_of[2] = {t, split ? (t + 1) % threads : t};
            bool srq_of[2] = {((i >> 1) & 1) != 0, (i & 1) != 0};
            for (int side = 0; side < 2; ++side) {
                End &e = connection->ends[static_cast<size_t>(side)];
                e.connection = connection.get();
                e.side = side;
                e.peer = &connection->ends[static_cast<size_t>(1 - side)];
                e.group = &group(drivers_of[side], side);
                e.srq = srq_of[side] && (l.features & kSrq) != 0;
                e.group->ends.push_back(&e);
                e.group->driver->ends.push_back(&e);
            }
            connections_.push_back(std::move(connection));
        }
    }
    ULONG max_srq = std::min(adapter_[0]->query_info().MaxSrqDepth,
                             adapter_[1]->query_info().MaxSrqDepth);
    for (auto &g : groups_) {
        ndk::Adapter &adapter = *adapter_[static_cast<size_t>(g->adapter)];
        g->pd = made<ndk::Pd>(adapter.create_pd(), "NdkCreatePd");
        uint32_t srq_ends = 0;
        ULONG cq_depth = 0;
        for (End *e : g->ends) {
            srq_ends += e->srq;
            cq_depth += l.initiator_depth + (e->srq ? 0 : l.receive_depth);
        }
        g->srq_slots = std::min<uint32_t>(srq_ends * l.srq_depth_per_end, max_srq);
        // Room for a completion of everything its queues can hold: the CQ never overruns.
        cq_depth += g->srq_slots;
        g->cq = made<ndk::Cq>(adapter.create_cq(cq_depth), "NdkCreateCq");
        g->raw_cq = g->cq->ndk();
        g->table = Table(g->srq_slots);
        add_table(run_, g->table, g->driver);
        if (g->srq_slots == 0)
            continue;
        g->srq = made<ndk::Srq>(g->pd->create_srq(g->srq_slots, l.receive_sge, 0), "NdkCreateSrq");
        g->raw_srq = g->srq->ndk();
        g->srq_memory = Memory::allocate(size_t(g->srq_slots) * l.slot_bytes);
        g->srq_mr = made<ndk::Mr>(g->pd->create_mr(false), "NdkCreateMr");
        register_memory(*g->srq_mr, g->srq_memory, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, "NdkRegisterMr");
        g->srq_token = g->srq_mr->get_local_token();
    }
}

void World::make_end(End &e)
{
    const Limits &l = run_.limits;
    Group &g = *e.group;
    e.slot_bytes = l.slot_bytes;
    e.max_size = l.max_size;
    e.receive_slots = e.srq ? 0 : l.receive_depth;
    e.local = Memory::allocate(size_t(kSources + e.receive_slots + kSinks) * l.slot_bytes);
    e.local_mr = made<ndk::Mr>(g.pd->create_mr(false), "NdkCreateMr");
    register_memory(*e.local_mr, e.local,
                    NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK, "NdkRegisterMr");
    e.local_token = e.local_mr->get_local_token();
    e.exposed = Memory::allocate(e.window_offset() + l.max_size);
    fill(e.exposed.at(e.read_only_offset()),
         id::make(e.connection->index, e.side, Op::ReadOnlyArea, 0), 0, e.read_only_size());
    e.exposed_mr = made<ndk::Mr>(g.pd->create_mr(false), "NdkCreateMr");
    // Remote write includes local write, which a write-enabled MW needs (digest 1.7).
    register_memory(*e.exposed_mr, e.exposed,
                    NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                    "NdkRegisterMr");
    e.exposed_token = e.exposed_mr->get_remote_token();
    make_window(e, e.mw, true);
    make_window(e, e.fr, false);
    ndk::Call qp = e.srq ? g.pd->create_qp_with_srq(g.cq, g.cq, g.srq, &e, l.initiator_depth,
                                                    l.initiator_sge, l.inline_size)
                         : g.pd->create_qp(g.cq, g.cq, &e, l.receive_depth, l.initiator_depth,
                                           l.receive_sge, l.initiator_sge, l.inline_size);
    e.qp = made<ndk::Qp>(qp, e.srq ? "NdkCreateQpWithSrq" : "NdkCreateQp");
    e.raw_qp = e.qp->ndk();
    e.peer_receives = e.peer->srq ? &e.peer->group->receives : &e.peer->receives;
    for (int i = kSources; i > 0; --i)
        e.free_sources.push_back(i - 1);
    for (int i = kSinks; i > 0; --i)
        e.free_sinks.push_back(i - 1);
    for (int i = kTargets; i > 0; --i)
        e.free_targets.push_back(i - 1);
    e.table = Table(l.initiator_depth + e.receive_slots);
    add_table(run_, e.table, g.driver);
    e.table.end = &e;
}

void World::make_window(End &e, Window &w, bool is_mw)
{
    const Limits &l = run_.limits;
    Group &g = *e.group;
    w.is_mw = is_mw;
    w.length = l.max_size;
    if (is_mw) {
        if (!(l.features & kMw))
            return;
        w.mw = made<ndk::Mw>(g.pd->create_mw(), "NdkCreateMw");
        w.mw->hold(e.exposed_mr); // bound to it, through the raw NdkBind (digest 3.1)
        w.memory = e.exposed.at(e.window_offset());
        w.address = e.exposed.address(e.window_offset());
        return;
    }
    if (!(l.features & kFr))
        return;
    w.fr_memory = Memory::allocate(size_t(l.fr_pages) * NDK_PAGE_SIZE);
    w.fr = made<ndk::Mr>(g.pd->create_mr(true), "NdkCreateMr (fast register)");
    wait(w.fr->initialize_fast_register(l.fr_pages, true), "NdkInitializeFastRegisterMr");
    MDL mdl{};
    NdkInitializeMdl(&mdl, w.fr_memory.at(0), static_cast<ULONG>(w.fr_memory.size));
    auto [call, lam] = adapter_[static_cast<size_t>(g.adapter)]->build_lam(
        {mdl}, w.fr_memory.size, std::nullopt, w.fr_memory.bytes);
    wait(call, "NdkBuildLAM");
    w.lam = lam;
    w.pages = lam->adapter_page_array();
    if (w.pages.size() != l.fr_pages || lam->fbo() != 0)
        throw std::runtime_error("NdkBuildLAM of " + std::to_string(l.fr_pages) +
                                 " aligned pages gave " + std::to_string(w.pages.size()) +
                                 " pages, FBO " + std::to_string(lam->fbo()));
    w.memory = w.fr_memory.at(0);
}

void World::connect(Connection &c)
{
    const Limits &l = run_.limits;
    End &a = c.ends[0], &b = c.ends[1];
    std::string what = "connection " + std::to_string(c.index) + ": ";
    a.connector = made<ndk::Connector>(adapter_[0]->create_connector(), what + "NdkCreateConnector");
    ndk::Call connecting = a.connector->connect(a.qp, ndk::SocketAddress::from(address_[0], 0),
                                                ndk::SocketAddress::from(address_[1], port_),
                                                l.read_limit, l.read_limit);
    if (connecting.done() && connecting.result() != STATUS_SUCCESS)
        throw std::runtime_error(what + "NdkConnect: " + ndk::describe_status(connecting.result()));
    b.connector = listener_->next_connection(kSetupWait);
    if (!b.connector)
        throw std::runtime_error(what + "no connect event at the listener within 30 s");
    ndk::Call accepting = b.connector->accept(b.qp, l.read_limit, l.read_limit, {}, true);
    wait(connecting, what + "NdkConnect");
    wait(a.connector->complete_connect(true), what + "NdkCompleteConnect");
    wait(accepting, what + "NdkAccept");
}

uint32_t World::split_connections() const
{
    return static_cast<uint32_t>(std::count_if(connections_.begin(), connections_.end(),
                                               [](const auto &c) { return c->split; }));
}

uint32_t World::srq_ends() const
{
    uint32_t n = 0;
    for (const auto &c : connections_)
        for (const End &e : c->ends)
            n += e.srq;
    return n;
}

void World::close(std::vector<std::string> &failures, std::vector<std::string> &warnings)
{
    for (const auto &c : connections_)
        for (const End &e : c->ends)
            if (e.connector && e.connector->events().disconnects.delivered() != 0)
                failures.push_back(e.name() +
                                   ": a disconnect event during the run (the connection ended)");
    for (auto &adapter : adapter_) {
        adapter->close();
        if (!adapter->validation())
            continue;
        for (const auto &v : adapter->validation()->violations()) {
            std::string line = "validation: " + v.rule + " (" +
                               ndk::validate::side_name(v.side) + ", digest " + v.section +
                               ") " + v.object + " " + v.call + ": " + v.message;
            (v.severity == ndk::validate::Severity::Error ? failures : warnings).push_back(line);
        }
    }
}

} // namespace stress
