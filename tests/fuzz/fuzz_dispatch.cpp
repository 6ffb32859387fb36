// fuzz_dispatch: a libFuzzer target on the NDK dispatch surface (docs/testing.md).
//
// Each input is decoded into a bounded sequence of raw NDK calls (core/include/ndk/ndkpi.h)
// against one or two soft adapters opened behind the validation layer (ndk::validate::wrap),
// the way NDIS would open them: CreateMiniport + OpenNDKAdapterHandler.  The raw ABI reaches
// more than the C++ consumer API: closes in any order (antecedents first, twice, objects passed
// after their close), calls the consumer API would refuse before the provider sees them.
//
// What the consumer side still guarantees here, since the contract lets a provider trust it:
//   - every pointer is into memory this harness owns for the whole input: one page-aligned
//     arena (registrations, MDLs, LAMs and every SGE address that can pass a token check),
//     stable slots for out-parameters, addresses, private data and LAM buffers;
//   - an SGE outside the arena carries a token the provider must refuse (its bounds check, or
//     a logical address only the LAM table resolves); INLINE data (read without a token) always
//     lies in the arena;
//   - objects passed as arguments have the type the function takes (the layer's stand-ins are
//     typed), and no knob that breaks the contract on purpose (misbehave) or blocks the only
//     thread (hold) is set.
//
// The oracle: no crash, no sanitizer report, no hang (each input makes at most kMaxOps calls
// and every wait is bounded; libFuzzer's -timeout catches the rest), and no provider-side
// error recorded by the validation layer: a violation of the provider side is a finding and
// abort()s with the rule.  Consumer-side violations are expected (the input misuses the API).
// Both adapters are closed and their miniports destroyed at the end of every input.
#include "ndk/ndkpi.h"
#include "ndk/fault.hpp"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "ndk/status.hpp"
#include "ndk/validation.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kMaxOps = 32;         // calls decoded from one input
constexpr size_t kMaxObjects = 32;     // objects created per input (both adapters)
constexpr size_t kArenaPages = 4;
constexpr size_t kArena = kArenaPages * NDK_PAGE_SIZE;
constexpr size_t kMaxSge = 8;
constexpr size_t kLamPages = 8;        // a LAM over the arena needs at most kArenaPages
constexpr size_t kPrivate = 256;       // private-data buffer
constexpr auto kWait = std::chrono::microseconds(300); // the longest a single wait lasts

// The fuzzer's bytes, read front to back; past the end every read is 0.
class Bytes {
public:
    Bytes(const uint8_t *data, size_t size) : p_(data), n_(size) {}
    bool empty() const { return n_ == 0; }
    uint8_t u8()
    {
        if (n_ == 0)
            return 0;
        --n_;
        return *p_++;
    }
    uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
    uint32_t u32() { return u16() | (static_cast<uint32_t>(u16()) << 16); }
    uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
    // 0..n-1 (n > 0)
    size_t below(size_t n) { return n <= 256 ? u8() % n : u16() % n; }
    bool flip() { return (u8() & 1) != 0; }

    // A queue depth, SGE count or size: mostly small, sometimes the edges.
    ULONG count(ULONG typical, ULONG max)
    {
        switch (u8() % 8) {
        case 0: return 0;
        case 1: return max;
        case 2: return max + 1;
        case 3: return MAXULONG;
        default: return 1 + u8() % std::max<ULONG>(typical, 1);
        }
    }

private:
    const uint8_t *p_;
    size_t n_;
};

// One asynchronous call's completion, as the provider reports it (from its engine thread or
// from step() on ours).  Kept in a deque: the address is the context the provider holds.
struct Rec {
    std::atomic<int> count{0};
    std::atomic<NTSTATUS> status{STATUS_PENDING};
    std::atomic<NDK_OBJECT_HEADER *> object{nullptr};
    int ad = 0;
    NDK_OBJECT_TYPE type = NdkObjectTypeUndefined; // a create: what it makes
    bool harvested = false;

    static void create(PVOID c, NTSTATUS s, NDK_OBJECT_HEADER *o)
    {
        auto *r = static_cast<Rec *>(c);
        r->object.store(o);
        r->status.store(s);
        r->count.fetch_add(1);
    }
    static void request(PVOID c, NTSTATUS s)
    {
        auto *r = static_cast<Rec *>(c);
        r->status.store(s);
        r->count.fetch_add(1);
    }
    static void close(PVOID c) { static_cast<Rec *>(c)->count.fetch_add(1); }
};

// Event callbacks of one adapter's objects.
struct Events {
    std::mutex mu;
    std::vector<NDK_CONNECTOR *> incoming; // connect events not yet taken
    std::atomic<int> cq{0}, srq{0}, disconnects{0};

    static void on_cq(PVOID c, NTSTATUS) { static_cast<Events *>(c)->cq.fetch_add(1); }
    static void on_srq(PVOID c, NTSTATUS) { static_cast<Events *>(c)->srq.fetch_add(1); }
    static void on_connect(PVOID c, NDK_CONNECTOR *connector)
    {
        auto *e = static_cast<Events *>(c);
        std::lock_guard lock(e->mu);
        e->incoming.push_back(connector);
    }
    static void on_disconnect(PVOID c) { static_cast<Events *>(c)->disconnects.fetch_add(1); }
    static void on_disconnect_ex(PVOID c, ULONG)
    {
        static_cast<Events *>(c)->disconnects.fetch_add(1);
    }
};

struct Ad {
    NDIS_HANDLE miniport = nullptr;
    NDK_ADAPTER *adapter = nullptr;
    std::shared_ptr<ndk::validate::Session> session;
    std::string host;
    bool manual = false;
    Events events;
};

struct Obj {
    NDK_OBJECT_HEADER *h = nullptr;
    NDK_OBJECT_TYPE type = NdkObjectTypeUndefined;
    int ad = 0;
    bool closed = false;
};

struct Lam {
    alignas(8) unsigned char buffer[offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
                                    kLamPages * sizeof(NDK_LOGICAL_ADDRESS)] = {};
    ULONG size = 0;
    ULONG fbo = 0;
    int ad = 0;
    Rec *rec = nullptr;
    bool released = false;
    NDK_LOGICAL_ADDRESS_MAPPING *mapping()
    {
        return reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING *>(buffer);
    }
};

const std::shared_ptr<ndk::Provider> &layer()
{
    static const std::shared_ptr<ndk::Provider> provider =
        ndk::validate::wrap(ndk::fault::wrap(ndk::Provider::load("soft")));
    return provider;
}

// Functions the `fail` knob can arm (inline-only ones fail inline whatever the mode says:
// the knob refuses "async" for them, which is fine).
constexpr const char *kFailable[] = {
    "NdkCreateCq",   "NdkCreatePd",          "NdkCreateMr",        "NdkCreateMw",
    "NdkCreateSrq",  "NdkCreateQp",          "NdkCreateConnector", "NdkCreateListener",
    "NdkRegisterMr", "NdkDeregisterMr",      "NdkResizeCq",        "NdkListen",
    "NdkConnect",    "NdkAccept",            "NdkCompleteConnect", "NdkDisconnect",
    "NdkSend",       "NdkReceive",           "NdkWrite",           "NdkRead",
    "NdkBind",       "NdkBuildLAM",          "NdkModifySrq",       "NdkSrqReceive",
};
constexpr const char *kFailStatus[] = {"0xC000009A", "0xC000000D", "0xC0000184", "0xC00000B5",
                                       "0xC0000120"};
constexpr const char *kModes[] = {"inline", "pending", "random"};

class Run {
public:
    Run(const uint8_t *data, size_t size) : in_(data, size) {}
    ~Run() { std::free(arena_); }

    void go()
    {
        arena_ = static_cast<unsigned char *>(std::aligned_alloc(NDK_PAGE_SIZE, kArena));
        std::memset(arena_, 0xa5, kArena);
        std::memset(private_, 0x5a, sizeof private_);
        uint8_t config = in_.u8();
        uint8_t limits = in_.u8();
        // The second adapter is opened when an operation first picks it (an adapter's open and
        // close, with its engine thread, is most of an execution's cost).
        two_ = (config & 1) != 0;
        config_ = config;
        limits_ = limits;
        open(0, config, limits);
        for (size_t n = 0; n < kMaxOps && !in_.empty() && !ads_.empty(); ++n) {
            op();
            harvest();
        }
        finish();
    }

private:
    // ---- adapters ------------------------------------------------------------------------
    void open(int index, uint8_t config, uint8_t limits)
    {
        auto &ad = *ads_.emplace_back(std::make_unique<Ad>());
        ad.host = "192.0.2." + std::to_string(index + 1);
        ad.manual = (config & 0x80) != 0;
        std::string options = "address=" + ad.host + "\n";
        options += std::string("create_mode=") + kModes[(config >> 1) % 3] + "\n";
        options += std::string("request_mode=") + kModes[(config >> 3) % 3] + "\n";
        options += std::string("close_mode=") + kModes[(config >> 5) % 3] + "\n";
        options += "seed=" + std::to_string(limits) + "\n";
        options += "rnr_timeout_ms=" + std::to_string(limits & 3) + "\n";
        options += "connect_timeout_ms=" + std::to_string(5 + (limits & 0x1c)) + "\n";
        if (limits & 0x20)
            options += "adapter_flags=" +
                       std::to_string(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
                                      NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED |
                                      NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |
                                      NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED |
                                      NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED) +
                       "\n";
        if (limits & 0x40)
            options += "max_qp_count=2\nmax_cq_count=2\nmax_mr_count=3\nmax_cq_depth=8\n"
                       "max_srq_depth=0\nmax_inline_data_size=16\nfrmr_page_count=2\n";
        if (ad.manual)
            options += "progress=manual\n";
        char error[256] = {};
        NDIS_STATUS s = layer()->create_miniport(options.c_str(), error, sizeof error,
                                                 &ad.miniport);
        if (s != STATUS_SUCCESS) {
            std::fprintf(stderr, "fuzz_dispatch: CreateMiniport(%s) failed: %s\n",
                         options.c_str(), error);
            std::abort(); // the options are valid, and the previous input freed the address
        }
        ad.session = ndk::validate::session_of(*layer(), ad.miniport);
        NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
        parameters.Version = {2, static_cast<USHORT>((limits >> 7) & 1)};
        s = entry().Characteristics.OpenNDKAdapterHandler(ad.miniport, &parameters, &ad.adapter);
        if (s != NDIS_STATUS_SUCCESS) {
            std::fprintf(stderr, "fuzz_dispatch: OpenNDKAdapterHandler: %s\n",
                         ndk::describe_status(s).c_str());
            std::abort();
        }
    }

    const NDK_HARNESS_PROVIDER &entry() const { return layer()->entry(); }

    std::string knob(Ad &ad, const char *key, const char *value)
    {
        char reply[512] = {};
        entry().ControlMiniport(ad.miniport, key, value, reply, sizeof reply);
        return reply;
    }

    void step(Ad &ad, unsigned n)
    {
        if (ad.manual)
            knob(ad, "step", std::to_string(n).c_str());
    }

    // Close everything: back to automatic progress (so pending closes can complete), the
    // blocking adapter closes, the miniports; then judge what the layer recorded.
    void finish()
    {
        for (auto &ad : ads_)
            if (ad->manual)
                knob(*ad, "progress", "auto");
        for (auto &ad : ads_)
            entry().Characteristics.CloseNDKAdapterHandler(ad->miniport, ad->adapter);
        for (auto &ad : ads_)
            entry().DestroyMiniport(ad->miniport);
        for (auto &ad : ads_) {
            if (!ad->session)
                continue;
            for (const auto &v : ad->session->violations()) {
                if (v.side != ndk::validate::Side::Provider ||
                    v.severity != ndk::validate::Severity::Error)
                    continue;
                std::fprintf(stderr,
                             "fuzz_dispatch: provider violation %s (digest %s) on %s in %s: %s\n",
                             v.rule.c_str(), v.section.c_str(), v.object.c_str(), v.call.c_str(),
                             v.message.c_str());
                std::abort();
            }
        }
    }

    // ---- bookkeeping -----------------------------------------------------------------------
    Rec &rec(int ad, NDK_OBJECT_TYPE type = NdkObjectTypeUndefined)
    {
        Rec &r = recs_.emplace_back();
        r.ad = ad;
        r.type = type;
        return r;
    }

    void add(NDK_OBJECT_HEADER *h, NDK_OBJECT_TYPE type, int ad)
    {
        if (h != nullptr)
            objs_.push_back(Obj{h, type, ad, false});
    }

    // Created objects from completed creates, connectors from connect events.
    void harvest()
    {
        for (size_t i = first_pending_; i < recs_.size(); ++i) {
            Rec &r = recs_[i];
            if (r.harvested || r.type == NdkObjectTypeUndefined)
                continue;
            if (r.count.load() == 0)
                continue;
            r.harvested = true;
            if (r.status.load() == STATUS_SUCCESS)
                add(r.object.load(), r.type, r.ad);
        }
        while (first_pending_ < recs_.size() &&
               (recs_[first_pending_].harvested ||
                recs_[first_pending_].type == NdkObjectTypeUndefined))
            ++first_pending_;
        for (size_t a = 0; a < ads_.size(); ++a) {
            std::vector<NDK_CONNECTOR *> incoming;
            {
                std::lock_guard lock(ads_[a]->events.mu);
                incoming.swap(ads_[a]->events.incoming);
            }
            for (auto *c : incoming)
                add(&c->Header, NdkObjectTypeConnector, static_cast<int>(a));
        }
    }

    // Wait (bounded) for `r`, stepping a manual adapter.
    void settle(Rec &r)
    {
        auto deadline = std::chrono::steady_clock::now() + kWait;
        while (r.count.load() == 0 && std::chrono::steady_clock::now() < deadline) {
            step(*ads_[r.ad], 16);
            std::this_thread::yield();
        }
    }

    // A created object from an inline return, or once its pending create completes.
    template <class T>
    void created(NTSTATUS s, Rec &r, T *out)
    {
        note(current_, s);
        if (s == STATUS_SUCCESS) {
            r.harvested = true;
            add(reinterpret_cast<NDK_OBJECT_HEADER *>(out), r.type, r.ad);
        } else if (s == STATUS_PENDING) {
            if (in_.u8() & 1)
                settle(r);
        } else {
            r.harvested = true;
        }
    }

    // A request is not waited for (its completion may wait for the peer): a `pump` op, or
    // any later wait, lets it run.
    void requested(NTSTATUS s, Rec &)
    {
        note(current_, s);
    }

    Ad &ad_pick()
    {
        if (!two_ || !in_.flip())
            return *ads_[0];
        if (ads_.size() < 2)
            open(1, config_, limits_);
        return *ads_[1];
    }
    int ad_index(const Ad &ad) const
    {
        for (size_t i = 0; i < ads_.size(); ++i)
            if (ads_[i].get() == &ad)
                return static_cast<int>(i);
        return 0;
    }

    // An object of `type` (open or closed: a closed one is the consumer's misuse, which the
    // layer reports and does not forward); `ad` >= 0 restricts it to that adapter.
    template <class T>
    T *pick(NDK_OBJECT_TYPE type, int ad = -1, int *which = nullptr)
    {
        size_t n = 0;
        for (const auto &o : objs_)
            if (o.type == type && (ad < 0 || o.ad == ad))
                ++n;
        if (n == 0)
            return nullptr;
        size_t k = in_.below(n);
        for (auto &o : objs_)
            if (o.type == type && (ad < 0 || o.ad == ad) && k-- == 0) {
                if (which != nullptr)
                    *which = o.ad;
                return reinterpret_cast<T *>(o.h);
            }
        return nullptr;
    }

    bool room() const { return objs_.size() < kMaxObjects; }

    UINT32 token()
    {
        uint8_t k = in_.u8();
        if (!tokens_.empty() && k < 200)
            return tokens_[k % tokens_.size()];
        if (k < 230)
            return in_.u32();
        return static_cast<UINT32>(k);
    }
    void learn(UINT32 t)
    {
        if (t != 0 && tokens_.size() < 64)
            tokens_.push_back(t);
    }

    // An offset and length inside the arena.
    std::pair<size_t, size_t> range()
    {
        size_t off = in_.below(kArena);
        size_t len = in_.below(kArena - off + 1);
        if (in_.u8() < 128)
            len = std::min<size_t>(len, 64);
        return {off, len};
    }

    // An SGE list: arena ranges with known or made-up tokens, or (not inline) made-up
    // addresses the provider must refuse by token and bounds checks.
    ULONG sgl(NDK_SGE *out, bool inline_data)
    {
        ULONG n = in_.u8() % 4 == 0 ? static_cast<ULONG>(in_.below(kMaxSge + 1))
                                     : static_cast<ULONG>(in_.below(3));
        for (ULONG i = 0; i < n; ++i) {
            NDK_SGE &s = out[i];
            s = NDK_SGE{};
            uint8_t kind = in_.u8();
            auto [off, len] = range();
            s.VirtualAddress = arena_ + off;
            s.Length = static_cast<ULONG>(len);
            s.MemoryRegionToken = token();
            if (inline_data)
                continue;
            if (kind < 16) {
                s.LogicalAddress.QuadPart = static_cast<LONGLONG>(in_.u64());
                s.Length = in_.u32();
            } else if (kind < 32 && !lams_.empty()) {
                Lam &l = lams_[in_.below(lams_.size())];
                s.LogicalAddress.QuadPart =
                    l.mapping()->AdapterPageArray[in_.below(kLamPages)].QuadPart +
                    in_.below(NDK_PAGE_SIZE);
                s.Length = static_cast<ULONG>(in_.below(2 * NDK_PAGE_SIZE));
                s.MemoryRegionToken = privileged_ ? privileged_ : token();
            }
        }
        return n;
    }

    // An MDL chain inside the arena (sometimes with a gap, an overlap or a malformed element,
    // which the provider must refuse), and a Length near what it covers.
    MDL *mdl(SIZE_T &length)
    {
        auto &chain = mdls_.emplace_back();
        size_t elements = 1 + in_.below(3);
        auto [cur, first] = range();
        size_t covered = 0;
        for (size_t i = 0; i < elements; ++i) {
            MDL &m = chain[i];
            size_t len = i == 0 ? first : in_.below(kArena - cur + 1);
            NdkInitializeMdl(&m, arena_ + cur, static_cast<ULONG>(len));
            m.Next = i + 1 < elements ? &chain[i + 1] : nullptr;
            uint8_t odd = in_.u8();
            if (odd == 1)
                m.ByteOffset += NDK_PAGE_SIZE; // malformed: never dereferenced
            else if (odd == 2)
                m.StartVa = static_cast<unsigned char *>(m.StartVa) + 8; // misaligned
            cur += len;
            covered += len;
            if (odd == 3 && cur + 16 <= kArena)
                cur += 16; // a gap
            else if (odd == 4 && cur >= 16)
                cur -= 16; // an overlap
        }
        switch (in_.u8() % 6) {
        case 0: length = covered + 1 + in_.u8(); break;
        case 1: length = covered > 0 ? in_.below(covered) : 0; break;
        case 2: length = static_cast<SIZE_T>(in_.u64()); break;
        default: length = covered;
        }
        return chain.data();
    }

    sockaddr *address(Ad &ad, uint16_t port, ULONG &length)
    {
        auto &s = addresses_.emplace_back();
        uint8_t kind = in_.u8();
        if (kind < 16) {
            auto *a6 = reinterpret_cast<sockaddr_in6 *>(&s);
            a6->sin6_family = AF_INET6;
            a6->sin6_port = htons(port);
            inet_pton(AF_INET6, "2001:db8::1", &a6->sin6_addr);
            length = sizeof(sockaddr_in6);
        } else {
            auto *a4 = reinterpret_cast<sockaddr_in *>(&s);
            a4->sin_family = kind < 24 ? AF_UNIX : AF_INET;
            a4->sin_port = htons(port);
            const char *host = ad.host.c_str();
            if (kind < 40)
                host = "0.0.0.0";
            else if (kind < 48)
                host = "203.0.113.9";
            inet_pton(AF_INET, host, &a4->sin_addr);
            length = sizeof(sockaddr_in);
        }
        uint8_t odd = in_.u8();
        if (odd < 16)
            length = odd % sizeof(sockaddr_storage); // too short (or long)
        return reinterpret_cast<sockaddr *>(&s);
    }

    uint16_t port() { return in_.u8() < 32 ? 0 : static_cast<uint16_t>(4791 + in_.below(3)); }

    ULONG private_length(const void *&data)
    {
        uint8_t k = in_.u8();
        data = private_;
        if (k < 128)
            return 0;
        if (k < 132) {
            data = nullptr; // NULL with a length: PRIVATE-DATA-NULL (consumer side)
            return 1 + in_.u8();
        }
        if (k < 136) {
            data = nullptr;
            return 0;
        }
        return static_cast<ULONG>(in_.below(kPrivate + 1));
    }

    // ---- the operations --------------------------------------------------------------------
    // NDK_FUZZ_TRACE=1: one line per operation and asynchronous status (to read a reproducer).
    void note(const char *what, NTSTATUS s)
    {
        if (trace_)
            std::fprintf(stderr, "  %-16s %s\n", what, ndk::describe_status(s).c_str());
    }

    void op()
    {
        static constexpr const char *kNames[] = {
            "query", "create_cq", "create_cq", "create_pd", "create_mr", "create_mw",
            "create_srq", "create_qp", "create_qp", "create_qp_srq", "create_conn",
            "create_conn", "create_listener", "create_se", "close", "close", "register_mr",
            "mr_misc", "cq_ops", "poll", "srq_ops", "receive", "post", "post", "bind",
            "fast_register", "invalidate", "listen", "connect", "connect", "accept", "accept",
            "complete_conn", "conn_misc", "disconnect", "lam", "knob", "pump", "oid", "query_ext"};
        uint8_t code = in_.u8() % 40;
        current_ = kNames[code];
        if (trace_)
            std::fprintf(stderr, "op %s (%zu objects)\n", current_, objs_.size());
        switch (code) {
        case 0: query(); break;
        case 1: case 2: create_cq(); break;
        case 3: create_pd(); break;
        case 4: create_mr(); break;
        case 5: create_mw(); break;
        case 6: create_srq(); break;
        case 7: case 8: create_qp(); break;
        case 9: create_qp_with_srq(); break;
        case 10: case 11: create_connector(); break;
        case 12: create_listener(); break;
        case 13: create_shared_endpoint(); break;
        case 14: case 15: close(); break;
        case 16: register_mr(); break;
        case 17: mr_misc(); break;
        case 18: cq_ops(); break;
        case 19: poll(); break;
        case 20: srq_ops(); break;
        case 21: receive(); break;
        case 22: case 23: post(); break;
        case 24: bind(); break;
        case 25: fast_register(); break;
        case 26: invalidate(); break;
        case 27: listen(); break;
        case 28: case 29: connect(); break;
        case 30: case 31: accept(); break;
        case 32: complete_connect(); break;
        case 33: connector_misc(); break;
        case 34: disconnect(); break;
        case 35: lam(); break;
        case 36: knob_op(); break;
        case 37: pump(); break;
        case 38: oid(); break;
        case 39: query_extension(); break;
        }
    }

    void query()
    {
        Ad &ad = ad_pick();
        NDK_ADAPTER_INFO info{};
        ULONG size = in_.flip() ? sizeof info : static_cast<ULONG>(in_.below(sizeof info + 1));
        ad.adapter->Dispatch->NdkQueryAdapterInfo(ad.adapter, &info, &size);
    }

    void create_cq()
    {
        if (!room())
            return;
        Ad &ad = ad_pick();
        Rec &r = rec(ad_index(ad), NdkObjectTypeCq);
        ULONG depth = in_.count(16, 0x10000);
        GROUP_AFFINITY affinity{};
        affinity.Mask = in_.u8();
        NDK_CQ *out = nullptr;
        NTSTATUS s = ad.adapter->Dispatch->NdkCreateCq(
            ad.adapter, depth, Events::on_cq, &ad.events, in_.flip() ? &affinity : nullptr,
            Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_pd()
    {
        if (!room())
            return;
        Ad &ad = ad_pick();
        Rec &r = rec(ad_index(ad), NdkObjectTypePd);
        NDK_PD *out = nullptr;
        NTSTATUS s = ad.adapter->Dispatch->NdkCreatePd(ad.adapter, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_connector()
    {
        if (!room())
            return;
        Ad &ad = ad_pick();
        Rec &r = rec(ad_index(ad), NdkObjectTypeConnector);
        NDK_CONNECTOR *out = nullptr;
        NTSTATUS s = ad.adapter->Dispatch->NdkCreateConnector(ad.adapter, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_listener()
    {
        if (!room())
            return;
        Ad &ad = ad_pick();
        Rec &r = rec(ad_index(ad), NdkObjectTypeListener);
        NDK_LISTENER *out = nullptr;
        NTSTATUS s = ad.adapter->Dispatch->NdkCreateListener(ad.adapter, Events::on_connect,
                                                             &ad.events, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_shared_endpoint()
    {
        if (!room())
            return;
        Ad &ad = ad_pick();
        Rec &r = rec(ad_index(ad), NdkObjectTypeSharedEndpoint);
        ULONG length = 0;
        sockaddr *a = address(ad, port(), length);
        NDK_SHARED_ENDPOINT *out = nullptr;
        NTSTATUS s = ad.adapter->Dispatch->NdkCreateSharedEndpoint(ad.adapter, a, length,
                                                                   Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_mr()
    {
        int a = 0;
        auto *pd = pick<NDK_PD>(NdkObjectTypePd, -1, &a);
        if (pd == nullptr || !room())
            return;
        Rec &r = rec(a, NdkObjectTypeMr);
        NDK_MR *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateMr(pd, in_.flip(), Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_mw()
    {
        int a = 0;
        auto *pd = pick<NDK_PD>(NdkObjectTypePd, -1, &a);
        if (pd == nullptr || !room())
            return;
        Rec &r = rec(a, NdkObjectTypeMw);
        NDK_MW *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateMw(pd, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_srq()
    {
        int a = 0;
        auto *pd = pick<NDK_PD>(NdkObjectTypePd, -1, &a);
        if (pd == nullptr || !room())
            return;
        Rec &r = rec(a, NdkObjectTypeSrq);
        ULONG depth = in_.count(8, 1024), sge = in_.count(2, 4), threshold = in_.count(4, depth);
        NDK_SRQ *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateSrq(pd, depth, sge, threshold, Events::on_srq,
                                                &ads_[a]->events, nullptr, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_qp()
    {
        int a = 0;
        auto *pd = pick<NDK_PD>(NdkObjectTypePd, -1, &a);
        auto *rcq = pick<NDK_CQ>(NdkObjectTypeCq, a);
        auto *icq = in_.flip() ? rcq : pick<NDK_CQ>(NdkObjectTypeCq, a);
        if (pd == nullptr || rcq == nullptr || icq == nullptr || !room())
            return;
        Rec &r = rec(a, NdkObjectTypeQp);
        ULONG rdepth = in_.count(8, 1024), idepth = in_.count(8, 1024);
        ULONG rsge = in_.count(2, 4), isge = in_.count(2, 4), inl = in_.count(64, 256);
        NDK_QP *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateQp(
            pd, rcq, icq, reinterpret_cast<PVOID>(static_cast<uintptr_t>(in_.u8())), rdepth,
            idepth, rsge, isge, inl, Rec::create, &r, &out);
        created(s, r, out);
    }

    void create_qp_with_srq()
    {
        int a = 0;
        auto *pd = pick<NDK_PD>(NdkObjectTypePd, -1, &a);
        auto *rcq = pick<NDK_CQ>(NdkObjectTypeCq, a);
        auto *icq = pick<NDK_CQ>(NdkObjectTypeCq, a);
        auto *srq = pick<NDK_SRQ>(NdkObjectTypeSrq, a);
        if (pd == nullptr || rcq == nullptr || icq == nullptr || srq == nullptr || !room())
            return;
        Rec &r = rec(a, NdkObjectTypeQp);
        ULONG idepth = in_.count(8, 1024), isge = in_.count(2, 4), inl = in_.count(64, 256);
        NDK_QP *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateQpWithSrq(pd, rcq, icq, srq, nullptr, idepth, isge,
                                                      inl, Rec::create, &r, &out);
        created(s, r, out);
    }

    void close()
    {
        if (objs_.empty())
            return;
        Obj &o = objs_[in_.below(objs_.size())];
        Rec &r = rec(o.ad);
        NDK_FN_CLOSE_OBJECT fn = nullptr;
        switch (o.type) {
        case NdkObjectTypeCq: fn = reinterpret_cast<NDK_CQ *>(o.h)->Dispatch->NdkCloseCq; break;
        case NdkObjectTypePd: fn = reinterpret_cast<NDK_PD *>(o.h)->Dispatch->NdkClosePd; break;
        case NdkObjectTypeMr: fn = reinterpret_cast<NDK_MR *>(o.h)->Dispatch->NdkCloseMr; break;
        case NdkObjectTypeMw: fn = reinterpret_cast<NDK_MW *>(o.h)->Dispatch->NdkCloseMw; break;
        case NdkObjectTypeSrq:
            fn = reinterpret_cast<NDK_SRQ *>(o.h)->Dispatch->NdkCloseSrq;
            break;
        case NdkObjectTypeQp: fn = reinterpret_cast<NDK_QP *>(o.h)->Dispatch->NdkCloseQp; break;
        case NdkObjectTypeConnector:
            fn = reinterpret_cast<NDK_CONNECTOR *>(o.h)->Dispatch->NdkCloseConnector;
            break;
        case NdkObjectTypeListener:
            fn = reinterpret_cast<NDK_LISTENER *>(o.h)->Dispatch->NdkCloseListener;
            break;
        case NdkObjectTypeSharedEndpoint:
            fn = reinterpret_cast<NDK_SHARED_ENDPOINT *>(o.h)->Dispatch->NdkCloseSharedEndpoint;
            break;
        default: return;
        }
        o.closed = true;
        if (trace_)
            std::fprintf(stderr, "  close object type %d of adapter %d\n", o.type, o.ad);
        NTSTATUS s = fn(o.h, Rec::close, &r);
        requested(s, r);
    }

    void register_mr()
    {
        int a = 0;
        auto *mr = pick<NDK_MR>(NdkObjectTypeMr, -1, &a);
        if (mr == nullptr)
            return;
        Rec &r = rec(a);
        SIZE_T length = 0;
        MDL *chain = mdl(length);
        ULONG flags = in_.u8() < 32 ? in_.u32() : in_.u8() & 0xf;
        NTSTATUS s = mr->Dispatch->NdkRegisterMr(mr, chain, length, flags, Rec::request, &r);
        requested(s, r);
        if (r.count.load() > 0 || s == STATUS_SUCCESS) {
            learn(mr->Dispatch->NdkGetLocalTokenFromMr(mr));
            learn(mr->Dispatch->NdkGetRemoteTokenFromMr(mr));
        }
    }

    void mr_misc()
    {
        uint8_t what = in_.u8() % 6;
        if (what == 5) {
            auto *mw = pick<NDK_MW>(NdkObjectTypeMw);
            if (mw != nullptr)
                learn(mw->Dispatch->NdkGetRemoteTokenFromMw(mw));
            return;
        }
        if (what == 4) {
            auto *pd = pick<NDK_PD>(NdkObjectTypePd);
            if (pd != nullptr) {
                UINT32 t = 0;
                pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &t);
                privileged_ = t;
                learn(t);
            }
            return;
        }
        int a = 0;
        auto *mr = pick<NDK_MR>(NdkObjectTypeMr, -1, &a);
        if (mr == nullptr)
            return;
        if (what == 0) {
            Rec &r = rec(a);
            requested(mr->Dispatch->NdkDeregisterMr(mr, Rec::request, &r), r);
        } else if (what == 1) {
            Rec &r = rec(a);
            ULONG pages = in_.count(2, 64);
            requested(mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, in_.flip(),
                                                                Rec::request, &r),
                      r);
        } else {
            learn(mr->Dispatch->NdkGetLocalTokenFromMr(mr));
            learn(mr->Dispatch->NdkGetRemoteTokenFromMr(mr));
        }
    }

    void cq_ops()
    {
        int a = 0;
        auto *cq = pick<NDK_CQ>(NdkObjectTypeCq, -1, &a);
        if (cq == nullptr)
            return;
        switch (in_.u8() % 4) {
        case 0:
        case 1: {
            uint8_t k = in_.u8();
            cq->Dispatch->NdkArmCq(cq, k < 240 ? k % 3 : k);
            break;
        }
        case 2: {
            Rec &r = rec(a);
            requested(cq->Dispatch->NdkResizeCq(cq, in_.count(16, 0x10000), Rec::request, &r),
                      r);
            break;
        }
        case 3:
            cq->Dispatch->NdkControlCqInterruptModeration(cq, in_.u8() < 128 ? in_.u8() : in_.u32(),
                                                          in_.u8());
            break;
        }
    }

    void poll()
    {
        auto *cq = pick<NDK_CQ>(NdkObjectTypeCq);
        if (cq == nullptr)
            return;
        ULONG n = static_cast<ULONG>(in_.below(17));
        if (in_.flip()) {
            std::array<NDK_RESULT_EX, 16> results{};
            cq->Dispatch->NdkGetCqResultsEx(cq, results.data(), n);
        } else {
            std::array<NDK_RESULT, 16> results{};
            cq->Dispatch->NdkGetCqResults(cq, results.data(), n);
        }
    }

    void srq_ops()
    {
        int a = 0;
        auto *srq = pick<NDK_SRQ>(NdkObjectTypeSrq, -1, &a);
        if (srq == nullptr)
            return;
        if (in_.flip()) {
            Rec &r = rec(a);
            ULONG depth = in_.count(8, 1024);
            requested(srq->Dispatch->NdkModifySrq(srq, depth, in_.count(4, depth), Rec::request,
                                                  &r),
                      r);
        } else {
            std::array<NDK_SGE, kMaxSge> s{};
            ULONG n = sgl(s.data(), false);
            srq->Dispatch->NdkSrqReceive(srq, reinterpret_cast<PVOID>(uintptr_t{in_.u8()}),
                                         s.data(), n);
        }
    }

    void receive()
    {
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp);
        if (qp == nullptr)
            return;
        std::array<NDK_SGE, kMaxSge> s{};
        ULONG n = sgl(s.data(), false);
        qp->Dispatch->NdkReceive(qp, reinterpret_cast<PVOID>(uintptr_t{in_.u8()}), s.data(), n);
    }

    ULONG op_flags()
    {
        uint8_t k = in_.u8();
        if (k < 16)
            return in_.u32();
        ULONG flags = 0;
        if (k & 0x10)
            flags |= NDK_OP_FLAG_SILENT_SUCCESS;
        if (k & 0x20)
            flags |= NDK_OP_FLAG_DEFER;
        if (k & 0x40)
            flags |= NDK_OP_FLAG_INLINE;
        if ((k & 0x8f) == 0x81)
            flags |= NDK_OP_FLAG_READ_FENCE;
        if ((k & 0x8f) == 0x82)
            flags |= NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT;
        if ((k & 0x8f) == 0x83)
            flags |= NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
        return flags;
    }

    UINT64 remote_address()
    {
        uint8_t k = in_.u8();
        if (k < 24)
            return in_.u64();
        return reinterpret_cast<uintptr_t>(arena_) + in_.below(kArena);
    }

    void post()
    {
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp);
        if (qp == nullptr)
            return;
        uint8_t which = in_.u8() % 4;
        ULONG flags = op_flags();
        std::array<NDK_SGE, kMaxSge> s{};
        // INLINE is read without a token: keep every SGE in the arena.
        ULONG n = sgl(s.data(), (flags & NDK_OP_FLAG_INLINE) != 0);
        auto context = reinterpret_cast<PVOID>(uintptr_t{in_.u8()});
        switch (which) {
        case 0: qp->Dispatch->NdkSend(qp, context, s.data(), n, flags); break;
        case 1:
            qp->Dispatch->NdkSendAndInvalidate(qp, context, s.data(), n, flags, token());
            break;
        case 2: {
            UINT64 remote = remote_address();
            qp->Dispatch->NdkWrite(qp, context, s.data(), n, remote, token(), flags);
            break;
        }
        case 3: {
            UINT64 remote = remote_address();
            qp->Dispatch->NdkRead(qp, context, s.data(), n, remote, token(), flags);
            break;
        }
        }
        if (in_.u8() < 16)
            qp->Dispatch->NdkFlush(qp);
    }

    void bind()
    {
        int a = 0;
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp, -1, &a);
        auto *mr = pick<NDK_MR>(NdkObjectTypeMr, a);
        auto *mw = pick<NDK_MW>(NdkObjectTypeMw, a);
        if (qp == nullptr || mr == nullptr || mw == nullptr)
            return;
        auto [off, len] = range();
        unsigned char *va = in_.u8() < 16 ? nullptr : arena_ + off;
        SIZE_T length = in_.u8() < 16 ? static_cast<SIZE_T>(in_.u64()) : len;
        ULONG flags = in_.u8() < 128 ? NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE
                                     : op_flags();
        qp->Dispatch->NdkBind(qp, reinterpret_cast<PVOID>(uintptr_t{in_.u8()}), mr, mw, va,
                              length, flags);
    }

    void fast_register()
    {
        int a = 0;
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp, -1, &a);
        auto *mr = pick<NDK_MR>(NdkObjectTypeMr, a);
        if (qp == nullptr || mr == nullptr)
            return;
        std::array<NDK_LOGICAL_ADDRESS, kLamPages> pages{};
        ULONG count = static_cast<ULONG>(in_.below(kLamPages + 1));
        if (!lams_.empty() && in_.u8() < 200) {
            Lam &l = lams_[in_.below(lams_.size())];
            for (size_t i = 0; i < kLamPages; ++i)
                pages[i] = l.mapping()->AdapterPageArray[i];
        } else {
            for (auto &p : pages)
                p.QuadPart = static_cast<LONGLONG>(in_.u64());
        }
        ULONG fbo = in_.u8() < 32 ? in_.u32() : static_cast<ULONG>(in_.below(NDK_PAGE_SIZE));
        SIZE_T length = in_.u8() < 32 ? static_cast<SIZE_T>(in_.u64())
                                      : in_.below(count * NDK_PAGE_SIZE + 1);
        uintptr_t base = (static_cast<uintptr_t>(in_.u16()) << 12) + (in_.flip() ? fbo : 0);
        ULONG flags = op_flags() | (in_.flip() ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE : 0);
        qp->Dispatch->NdkFastRegister(qp, reinterpret_cast<PVOID>(uintptr_t{in_.u8()}), mr, count,
                                      pages.data(), fbo, length, reinterpret_cast<PVOID>(base),
                                      flags);
    }

    void invalidate()
    {
        int a = 0;
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp, -1, &a);
        if (qp == nullptr)
            return;
        NDK_OBJECT_HEADER *target = nullptr;
        if (in_.flip()) {
            if (auto *mr = pick<NDK_MR>(NdkObjectTypeMr, a))
                target = &mr->Header;
        } else if (auto *mw = pick<NDK_MW>(NdkObjectTypeMw, a)) {
            target = &mw->Header;
        }
        if (target == nullptr)
            return;
        qp->Dispatch->NdkInvalidate(qp, reinterpret_cast<PVOID>(uintptr_t{in_.u8()}), target,
                                    op_flags());
    }

    void listen()
    {
        int a = 0;
        auto *l = pick<NDK_LISTENER>(NdkObjectTypeListener, -1, &a);
        if (l == nullptr)
            return;
        switch (in_.u8() % 4) {
        case 0: l->Dispatch->NdkControlConnectEvents(l, in_.flip()); break;
        case 1: {
            sockaddr_storage s{};
            ULONG length = static_cast<ULONG>(in_.below(sizeof s + 1));
            l->Dispatch->NdkGetLocalAddress(l, reinterpret_cast<sockaddr *>(&s), &length);
            break;
        }
        default: {
            ULONG length = 0;
            sockaddr *address_ = address(*ads_[a], port(), length);
            Rec &r = rec(a);
            requested(l->Dispatch->NdkListen(l, address_, length, Rec::request, &r), r);
        }
        }
    }

    void connect()
    {
        int a = 0;
        auto *c = pick<NDK_CONNECTOR>(NdkObjectTypeConnector, -1, &a);
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp, a);
        if (c == nullptr || qp == nullptr)
            return;
        Ad &to = ad_pick();
        ULONG dst_length = 0;
        sockaddr *dst = address(to, static_cast<uint16_t>(4791 + in_.below(3)), dst_length);
        ULONG ird = in_.count(4, 16), ord = in_.count(4, 16);
        const void *data = nullptr;
        ULONG data_length = private_length(data);
        Rec &r = rec(a);
        NTSTATUS s;
        auto *se = in_.u8() < 48 ? pick<NDK_SHARED_ENDPOINT>(NdkObjectTypeSharedEndpoint, a)
                                 : nullptr;
        if (se != nullptr) {
            s = c->Dispatch->NdkConnectWithSharedEndpoint(c, qp, se, dst, dst_length, ird, ord,
                                                          const_cast<void *>(data), data_length,
                                                          Rec::request, &r);
        } else {
            ULONG src_length = 0;
            sockaddr *src = address(*ads_[a], in_.u8() < 200 ? 0 : port(), src_length);
            s = c->Dispatch->NdkConnect(c, qp, src, src_length, dst, dst_length, ird, ord,
                                        const_cast<void *>(data), data_length, Rec::request, &r);
        }
        requested(s, r);
    }

    void accept()
    {
        int a = 0;
        auto *c = pick<NDK_CONNECTOR>(NdkObjectTypeConnector, -1, &a);
        if (c == nullptr)
            return;
        const void *data = nullptr;
        ULONG data_length = private_length(data);
        uint8_t how = in_.u8() % 4;
        if (how == 3) {
            c->Dispatch->NdkReject(c, const_cast<void *>(data), data_length);
            return;
        }
        auto *qp = pick<NDK_QP>(NdkObjectTypeQp, a);
        if (qp == nullptr)
            return;
        ULONG ird = in_.count(4, 16), ord = in_.count(4, 16);
        bool events = in_.flip();
        Events *e = &ads_[a]->events;
        Rec &r = rec(a);
        NTSTATUS s;
        if (how == 2)
            s = c->Dispatch->NdkAcceptEx(c, qp, ird, ord, const_cast<void *>(data), data_length,
                                         events ? Events::on_disconnect_ex : nullptr,
                                         events ? e : nullptr, Rec::request, &r);
        else
            s = c->Dispatch->NdkAccept(c, qp, ird, ord, const_cast<void *>(data), data_length,
                                       events ? Events::on_disconnect : nullptr,
                                       events ? e : nullptr, Rec::request, &r);
        requested(s, r);
    }

    void complete_connect()
    {
        int a = 0;
        auto *c = pick<NDK_CONNECTOR>(NdkObjectTypeConnector, -1, &a);
        if (c == nullptr)
            return;
        bool events = in_.flip();
        Events *e = &ads_[a]->events;
        Rec &r = rec(a);
        NTSTATUS s = in_.flip()
                         ? c->Dispatch->NdkCompleteConnectEx(
                               c, events ? Events::on_disconnect_ex : nullptr,
                               events ? e : nullptr, Rec::request, &r)
                         : c->Dispatch->NdkCompleteConnect(c, events ? Events::on_disconnect
                                                                     : nullptr,
                                                           events ? e : nullptr, Rec::request, &r);
        requested(s, r);
    }

    void connector_misc()
    {
        auto *c = pick<NDK_CONNECTOR>(NdkObjectTypeConnector);
        if (c == nullptr)
            return;
        switch (in_.u8() % 3) {
        case 0: {
            ULONG ird = 0, ord = 0;
            unsigned char data[kPrivate];
            ULONG length = static_cast<ULONG>(in_.below(kPrivate + 1));
            bool null_data = in_.u8() < 32;
            if (null_data)
                length = 0; // NULL with *len > 0 is a consumer error the provider may trust
            c->Dispatch->NdkGetConnectionData(c, in_.flip() ? &ird : nullptr,
                                              in_.flip() ? &ord : nullptr,
                                              null_data ? nullptr : data, &length);
            break;
        }
        default: {
            sockaddr_storage s{};
            ULONG length = static_cast<ULONG>(in_.below(sizeof s + 1));
            if (in_.flip())
                c->Dispatch->NdkGetLocalAddress(c, reinterpret_cast<sockaddr *>(&s), &length);
            else
                c->Dispatch->NdkGetPeerAddress(c, reinterpret_cast<sockaddr *>(&s), &length);
        }
        }
    }

    void disconnect()
    {
        int a = 0;
        auto *c = pick<NDK_CONNECTOR>(NdkObjectTypeConnector, -1, &a);
        if (c == nullptr)
            return;
        Rec &r = rec(a);
        requested(c->Dispatch->NdkDisconnect(c, Rec::request, &r), r);
    }

    void lam()
    {
        Ad &ad = ad_pick();
        if (in_.u8() < 64 && !lams_.empty()) {
            Lam &l = lams_[in_.below(lams_.size())];
            // Released once, after its build completed (its buffer is the provider's until then).
            if (l.released || &ad != ads_[l.ad].get() || l.rec->count.load() == 0)
                return;
            l.released = true;
            ad.adapter->Dispatch->NdkReleaseLAM(ad.adapter, l.mapping());
            return;
        }
        if (lams_.size() >= 8)
            return;
        Lam &l = lams_.emplace_back();
        l.ad = ad_index(ad);
        l.rec = &rec(l.ad);
        SIZE_T length = 0;
        MDL *chain = mdl(length);
        l.size = in_.u8() < 200 ? sizeof l.buffer : static_cast<ULONG>(in_.below(sizeof l.buffer));
        NTSTATUS s = ad.adapter->Dispatch->NdkBuildLAM(ad.adapter, chain, length, Rec::request,
                                                       l.rec, in_.u8() < 8 ? nullptr : l.mapping(),
                                                       &l.size, &l.fbo);
        if (s != STATUS_PENDING && s != STATUS_SUCCESS)
            l.released = true; // nothing to release
        if (s == STATUS_SUCCESS)
            l.rec->count.store(1);
        requested(s, *l.rec);
    }

    void knob_op()
    {
        Ad &ad = ad_pick();
        switch (in_.u8() % 6) {
        case 0: knob(ad, "create_mode", kModes[in_.below(3)]); break;
        case 1: knob(ad, "request_mode", kModes[in_.below(3)]); break;
        case 2: knob(ad, "close_mode", kModes[in_.below(3)]); break;
        case 3: {
            std::string value = std::string(kFailable[in_.below(std::size(kFailable))]) + " " +
                                kFailStatus[in_.below(std::size(kFailStatus))] +
                                (in_.flip() ? " async" : " inline") +
                                (in_.flip() ? " 1" : " 2");
            knob(ad, "fail", value.c_str());
            break;
        }
        case 4: knob(ad, "clear_failures", "1"); break;
        case 5:
            ad.manual = !ad.manual;
            knob(ad, "progress", ad.manual ? "manual" : "auto");
            break;
        }
    }

    void pump()
    {
        Ad &ad = ad_pick();
        if (ad.manual) {
            step(ad, 1 + in_.u8());
        } else {
            auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
            while (std::chrono::steady_clock::now() < until)
                std::this_thread::yield();
        }
    }

    void oid()
    {
        Ad &ad = ad_pick();
        static constexpr NDIS_OID kOids[] = {OID_NDK_STATISTICS, OID_NDK_CONNECTIONS,
                                             OID_NDK_LOCAL_ENDPOINTS, OID_NDK_SET_STATE,
                                             0x12345678u};
        alignas(8) unsigned char buffer[1024] = {};
        ULONG length = static_cast<ULONG>(in_.below(sizeof buffer + 1));
        ULONG written = 0, needed = 0;
        NDIS_OID oid = kOids[in_.below(std::size(kOids))];
        if (entry().OidRequest != nullptr && oid != OID_NDK_SET_STATE)
            entry().OidRequest(ad.miniport, oid, FALSE, buffer, length, &written, &needed);
    }

    void query_extension()
    {
        GUID id{};
        id.Data1 = in_.u32();
        NDK_VERSION version{in_.u8(), in_.u8()};
        NDK_EXTENSION_INTERFACE out{};
        if (objs_.empty() || in_.u8() < 64) {
            Ad &ad = ad_pick();
            ad.adapter->Dispatch->NdkQueryExtension(&ad.adapter->Header, &id, version, &out);
            return;
        }
        Obj &o = objs_[in_.below(objs_.size())];
        NDK_FN_QUERY_EXTENSION_INTERFACE fn = nullptr;
        switch (o.type) {
        case NdkObjectTypeCq: fn = reinterpret_cast<NDK_CQ *>(o.h)->Dispatch->NdkQueryExtension; break;
        case NdkObjectTypePd: fn = reinterpret_cast<NDK_PD *>(o.h)->Dispatch->NdkQueryExtension; break;
        case NdkObjectTypeMr: fn = reinterpret_cast<NDK_MR *>(o.h)->Dispatch->NdkQueryExtension; break;
        case NdkObjectTypeQp: fn = reinterpret_cast<NDK_QP *>(o.h)->Dispatch->NdkQueryExtension; break;
        case NdkObjectTypeConnector:
            fn = reinterpret_cast<NDK_CONNECTOR *>(o.h)->Dispatch->NdkQueryExtension;
            break;
        default: return;
        }
        fn(o.h, &id, version, &out);
    }

    Bytes in_;
    unsigned char *arena_ = nullptr;
    unsigned char private_[kPrivate];
    std::vector<std::unique_ptr<Ad>> ads_;
    std::vector<Obj> objs_;
    std::deque<Rec> recs_;
    size_t first_pending_ = 0;
    std::deque<std::array<MDL, 3>> mdls_;
    std::deque<sockaddr_storage> addresses_;
    std::deque<Lam> lams_;
    std::vector<UINT32> tokens_;
    UINT32 privileged_ = 0;
    const char *current_ = "";
    bool two_ = false;
    uint8_t config_ = 0, limits_ = 0;
    bool trace_ = std::getenv("NDK_FUZZ_TRACE") != nullptr;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Run run(data, size);
    run.go();
    return 0;
}
