// What the benchmark programs share: a soft adapter opened through the raw provider entry (as
// NDIS would: CreateMiniport + OpenNDKAdapterHandler), object creation through the raw NDK
// dispatch tables, a connected QP pair, registered page-aligned memory, and a few timing and
// memory helpers.  No GoogleTest: these run in the bench programs and in ndk_perf.
//
// Everything here goes through the raw C ABI (core/include/ndk/ndkpi.h), never the C++
// consumer API, so a figure measured with it is the provider's cost plus a function pointer
// call, which is what a kernel consumer of an NDK provider pays.
#pragma once

#include <unistd.h>

#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/raw_adapter.hpp"
#include "ndk/registry.hpp"
#include "ndk/shared_memory.hpp"
#include "ndk/validation.hpp"
#include "ndk/status.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ndkbench {

[[noreturn]] inline void fail(const std::string &what, NTSTATUS status)
{
    throw std::runtime_error(what + ": " + ndk::describe_status(status));
}

// A completion recorder that can be waited on by spinning (the provider's engine thread calls
// it); it outlives every callback because RawAdapter owns it until after the blocking close.
struct Done {
    std::atomic<int> count{0};
    std::atomic<NTSTATUS> status{STATUS_PENDING};
    std::atomic<NDK_OBJECT_HEADER *> object{nullptr};

    static void create(PVOID c, NTSTATUS s, NDK_OBJECT_HEADER *o)
    {
        auto *d = static_cast<Done *>(c);
        d->object = o;
        d->status = s;
        d->count.fetch_add(1);
    }
    static void request(PVOID c, NTSTATUS s)
    {
        auto *d = static_cast<Done *>(c);
        d->status = s;
        d->count.fetch_add(1);
    }
    static void close(PVOID c) { static_cast<Done *>(c)->count.fetch_add(1); }

    NTSTATUS wait(int n = 1, std::chrono::seconds limit = std::chrono::seconds(10)) const
    {
        auto deadline = std::chrono::steady_clock::now() + limit;
        while (count.load() < n) {
            if (std::chrono::steady_clock::now() > deadline)
                return STATUS_IO_TIMEOUT;
            std::this_thread::yield();
        }
        return status.load();
    }
};

inline void ignore_cq(PVOID, NTSTATUS) {}
inline void ignore_srq(PVOID, NTSTATUS) {}

class RawAdapter : public ndk::RawAdapter {
public:
    // `validate`: behind the validation layer (to measure what it costs).
    explicit RawAdapter(const std::string &options = "", const std::string &provider = "soft",
                        bool validate = false)
        : ndk::RawAdapter(options, {2, 0}, provider, validate)
    {
    }

    // The adapter's limits (NdkQueryAdapterInfo).
    NDK_ADAPTER_INFO info()
    {
        NDK_ADAPTER_INFO out{};
        ULONG size = sizeof out;
        if (NTSTATUS s = d().NdkQueryAdapterInfo(adapter_, &out, &size); s != STATUS_SUCCESS)
            fail("NdkQueryAdapterInfo", s);
        return out;
    }

    // The read limits a connection asks for: the adapter's maxima, as perftest's ib_read_bw
    // keeps as many Reads outstanding as the device allows unless -o says otherwise (the
    // provider then grants what both ends allow, digest 1.8).
    struct ReadLimits {
        ULONG inbound = 0, outbound = 0;
    };
    ReadLimits read_limits()
    {
        NDK_ADAPTER_INFO i = info();
        return {i.MaxInboundReadLimit, i.MaxOutboundReadLimit};
    }

    // Knobs (ControlMiniport); "step" returns how many tasks ran.
    std::string knob(const std::string &key, const char *value)
    {
        std::string reply;
        if (NTSTATUS s = control(key, value, reply); s != STATUS_SUCCESS)
            fail("knob " + key, s);
        return reply;
    }
    unsigned step(unsigned n)
    {
        return static_cast<unsigned>(std::stoul(knob("step", std::to_string(n).c_str())));
    }

    Done &done()
    {
        std::lock_guard lock(mu_);
        return dones_.emplace_back();
    }

    template <class T>
    T *finish(NTSTATUS s, Done &d, T *out, const char *what)
    {
        if (s == STATUS_SUCCESS)
            return out;
        if (s == STATUS_PENDING) {
            s = d.wait();
            if (s == STATUS_SUCCESS)
                return reinterpret_cast<T *>(d.object.load());
        }
        fail(what, s);
    }

    NDK_CQ *cq(ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify = ignore_cq,
               PVOID context = nullptr)
    {
        Done &r = done();
        NDK_CQ *out = nullptr;
        NTSTATUS s = d().NdkCreateCq(adapter_, depth, notify, context, nullptr, Done::create, &r,
                                     &out);
        return finish(s, r, out, "NdkCreateCq");
    }
    NDK_PD *pd()
    {
        Done &r = done();
        NDK_PD *out = nullptr;
        NTSTATUS s = d().NdkCreatePd(adapter_, Done::create, &r, &out); // before `out` is read
        return finish(s, r, out, "NdkCreatePd");
    }
    NDK_MR *mr(NDK_PD *pd, bool fast_register = false)
    {
        Done &r = done();
        NDK_MR *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateMr(pd, fast_register, Done::create, &r, &out);
        return finish(s, r, out, "NdkCreateMr");
    }
    NDK_QP *qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID context, ULONG rdepth, ULONG idepth,
               ULONG inline_size = 0)
    {
        Done &r = done();
        NDK_QP *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateQp(pd, rcq, icq, context, rdepth, idepth, 4, 4,
                                               inline_size, Done::create, &r, &out);
        return finish(s, r, out, "NdkCreateQp");
    }
    NDK_CONNECTOR *connector()
    {
        Done &r = done();
        NDK_CONNECTOR *out = nullptr;
        NTSTATUS s = d().NdkCreateConnector(adapter_, Done::create, &r, &out);
        return finish(s, r, out, "NdkCreateConnector");
    }

    // NdkCloseXxx, waiting for a pending close.
    template <class T>
    void close(T *object, NDK_FN_CLOSE_OBJECT fn)
    {
        Done &r = done();
        NTSTATUS s = fn(&object->Header, Done::close, &r);
        if (s == STATUS_PENDING)
            r.wait();
        else if (s != STATUS_SUCCESS)
            fail("close", s);
    }

private:
    std::mutex mu_;
    std::deque<Done> dones_;
};

// Page-aligned memory registered with one MR (local write, remote read and write, and a
// read sink).
// Where a Region's bytes come from: the heap, or memory another process can map
// (ndk/shared_memory.hpp: a provider that maps it, soft's shm transport, copies with memcpy).
enum class Memory { heap, shared };

struct Region {
    unsigned char *bytes = nullptr;
    size_t size = 0;
    NDK_MR *mr = nullptr;
    UINT32 local = 0, remote = 0;
    MDL mdl{};
    std::unique_ptr<ndk::SharedMemory> shared;

    Region(RawAdapter &a, NDK_PD *pd, size_t n, Memory memory = Memory::heap) : size(n)
    {
        size_t rounded = (std::max<size_t>(n, 1) + 4095) & ~size_t{4095};
        if (memory == Memory::shared) {
            shared = std::make_unique<ndk::SharedMemory>(rounded);
            bytes = static_cast<unsigned char *>(shared->data());
        } else {
            bytes = static_cast<unsigned char *>(std::aligned_alloc(4096, rounded));
        }
        std::memset(bytes, 0x5a, rounded); // touched: no page faults in the timed loop
        mr = a.mr(pd);
        NdkInitializeMdl(&mdl, bytes, static_cast<ULONG>(n));
        Done &r = a.done();
        NTSTATUS s = mr->Dispatch->NdkRegisterMr(
            mr, &mdl, n,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
            Done::request, &r);
        if (s == STATUS_PENDING)
            s = r.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkRegisterMr", s);
        local = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
        remote = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    }
    ~Region() // the MR goes with the adapter's close
    {
        if (!shared)
            std::free(bytes);
    }
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;

    NDK_SGE sge(size_t offset, ULONG length) const
    {
        NDK_SGE s{};
        s.VirtualAddress = bytes + offset;
        s.Length = length;
        s.MemoryRegionToken = local;
        return s;
    }
    UINT64 address(size_t offset = 0) const { return reinterpret_cast<uintptr_t>(bytes) + offset; }
};

struct Side {
    NDK_CQ *cq = nullptr;
    NDK_PD *pd = nullptr;
    NDK_QP *qp = nullptr;
    NDK_CONNECTOR *connector = nullptr;
};

inline sockaddr_in ipv4(const std::string &host, uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    return a;
}

// The adapters a test opens: which provider (what ndk::Provider::load takes, as everywhere in
// the harness: soft, soft:tcp, soft:shm, loop, verbs:DEV, a path to a .so), the knob lines they
// open with, and the address of each.  The knob lines are split in two: the progress knob, which
// a Pair applies only once connected (a manual engine would not complete the connection), and
// every other line, which goes to the adapters as they open (e.g. "transport=shm": a transport
// is chosen when the adapter is created).
struct AdapterOptions {
    std::string provider = "soft";
    std::string at_open;
    bool manual = false;
    // The soft provider's transport: the transport knob's value if --options gives one, else
    // the one its name gives (soft:tcp), else inproc; empty for any other provider.  As
    // python/ndk/_peer.py's transport_of reads it.
    std::string transport;

    // `addresses`: "CLIENT,SERVER" (ndk_perf --addresses), or empty for the defaults below.
    explicit AdapterOptions(const std::string &options, std::string provider_name = "soft",
                            const std::string &addresses = "")
        : provider(std::move(provider_name))
    {
        std::string base = provider.substr(0, provider.find(':'));
        if (base == "soft")
            transport = provider.size() > 5 ? provider.substr(5) : "inproc";
        for (size_t start = 0; start <= options.size();) {
            size_t end = std::min(options.find_first_of(";\n", start), options.size());
            std::string line = options.substr(start, end - start);
            start = end + 1;
            if (line.find_first_not_of(" \t") == std::string::npos)
                continue;
            if (line.rfind("progress=", 0) == 0) {
                manual = line == "progress=manual";
                continue;
            }
            at_open += line + "\n";
            if (size_t eq = line.find('='); eq != std::string::npos && base == "soft" &&
                                            trim(line.substr(0, eq)) == "transport")
                transport = trim(line.substr(eq + 1));
        }
        // transport=shm claims addresses host-wide within a fabric: a fabric of this run's
        // own, so that a benchmark beside a test run never meets its adapters.
        if (transport == "shm" && at_open.find("shm_fabric=") == std::string::npos)
            at_open += "shm_fabric=perf-" + std::to_string(::getpid()) + "\n";
        for (size_t start = 0; !addresses.empty() && start <= addresses.size();) {
            size_t end = std::min(addresses.find(',', start), addresses.size());
            given_.push_back(trim(addresses.substr(start, end - start)));
            start = end + 1;
        }
    }

    // Why an adapter of this provider cannot reach one in another process (send_lat /
    // write_bw / read_bw --processes), or "" when it can or is not known to the harness (then
    // the run is tried).  The rule of python/ndk/_peer.py's REACH: soft's inproc transport and
    // the loop provider's fabric live in one process.
    std::string cannot_reach_other_processes() const
    {
        if (transport == "inproc")
            return provider + " with transport=inproc reaches only adapters of its own process "
                              "(soft:shm or soft:tcp reach another)";
        if (provider == "loop")
            return "loop reaches only adapters of its own process (its fabric is the process's)";
        return "";
    }

    // The address the n-th adapter a test opens asks for (its knob address=), or "" to open it
    // without one and take the address it reports (the knob `address` read back: verbs:DEV
    // answers with its device's, docs/knobs.md).  --addresses gives client (even n) and server
    // (odd n).  Otherwise the providers that take any address (soft's inproc and shm
    // transports, loop) get TEST-NET-2 (198.51.100.0/24).  transport=tcp binds real sockets,
    // so its addresses must be this host's: 127.0.0.0/8, local on every Linux host without
    // set-up or root.  They are this run's own, 127.<pid>.n (the pid as two bytes), because a
    // soft listener on port 0 takes the first port of the provider's ephemeral range that its
    // own process has not used, not one the host's kernel picks: two runs side by side on one
    // address would both try to listen on the same port.
    std::string address(unsigned n) const
    {
        if (!given_.empty())
            return given_[n % given_.size()];
        if (transport == "tcp")
            return "127." + std::to_string((pid_ >> 8) & 0xFF) + "." +
                   std::to_string(pid_ & 0xFF) + "." + std::to_string(n % 250 + 1);
        if (!transport.empty() || provider == "loop")
            return "198.51.100." + std::to_string(n % 250 + 1);
        return "";
    }

    // The knob lines the n-th adapter opens with.
    std::string open_options(unsigned n) const
    {
        std::string ip = address(n);
        return ip.empty() ? at_open : "address=" + ip + "\n" + at_open;
    }

private:
    unsigned pid_ = static_cast<unsigned>(::getpid()); // made before a fork: one for both sides
    std::vector<std::string> given_;

    static std::string trim(const std::string &text)
    {
        size_t first = text.find_first_not_of(" \t");
        if (first == std::string::npos)
            return "";
        return text.substr(first, text.find_last_not_of(" \t") - first + 1);
    }
};

// The IPv4 address an adapter opened for `ip` listens and connects on: `ip`, or when it is
// empty (AdapterOptions::address) the first IPv4 address of the adapter's knob `address`.
inline std::string own_address(RawAdapter &adapter, const std::string &ip)
{
    if (!ip.empty())
        return ip;
    std::string reply;
    NTSTATUS s = adapter.control("address", nullptr, reply);
    in_addr parsed{};
    for (size_t start = 0; s == STATUS_SUCCESS && start <= reply.size();) {
        size_t end = std::min(reply.find(',', start), reply.size());
        std::string word = reply.substr(start, end - start);
        if (inet_pton(AF_INET, word.c_str(), &parsed) == 1)
            return word;
        start = end + 1;
    }
    throw std::runtime_error(
        "the provider " + adapter.provider().name() + " reports no IPv4 address (knob 'address'" +
        (s == STATUS_SUCCESS ? " answered '" + reply + "'" : ": " + ndk::describe_status(s)) +
        "): name the adapters' addresses with --addresses CLIENT,SERVER");
}

// A listener of `adapter` on ip, port 0, whose connect events go to on_connect(context); the
// port it was given.
inline uint16_t listen_any_port(RawAdapter &adapter, const std::string &ip,
                                NDK_FN_CONNECT_EVENT_CALLBACK on_connect, PVOID context)
{
    NDK_LISTENER *listener = nullptr;
    Done &created = adapter.done();
    NTSTATUS s = adapter.d().NdkCreateListener(adapter.get(), on_connect, context, Done::create,
                                               &created, &listener);
    listener = adapter.finish(s, created, listener, "NdkCreateListener");
    sockaddr_in any = ipv4(ip, 0);
    Done &listened = adapter.done();
    s = listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&any), sizeof any,
                                      Done::request, &listened);
    if (s == STATUS_PENDING)
        s = listened.wait();
    if (s != STATUS_SUCCESS)
        fail("NdkListen", s);
    sockaddr_in bound{};
    ULONG length = sizeof bound;
    listener->Dispatch->NdkGetLocalAddress(listener, reinterpret_cast<PSOCKADDR>(&bound), &length);
    return ntohs(bound.sin_port);
}

// Two adapters of options.provider (client a, server b) with `connections` connected QPs
// between them, each with its own CQ and PD on either side (a(i), b(i)).  `options` gives the
// provider, the knob lines for both adapters (e.g. "transport=shm", "progress=manual") and
// their addresses.  With manual progress
// the connections are made in auto mode first, then both adapters switch.
class Pair {
public:
    explicit Pair(ULONG cq_depth = 4096, ULONG queue_depth = 1024,
                  const AdapterOptions &options = AdapterOptions(""), ULONG inline_size = 0,
                  bool validate = false, unsigned connections = 1)
        : options_(options), client_n_(next_n()), server_n_(next_n()),
          client_(options_.open_options(client_n_), options_.provider, validate),
          server_(options_.open_options(server_n_), options_.provider, validate),
          client_ip_(own_address(client_, options_.address(client_n_))),
          server_ip_(own_address(server_, options_.address(server_n_)))
    {
        uint16_t port = listen_any_port(server_, server_ip_, on_connect, this);
        a_.resize(std::max(connections, 1u));
        b_.resize(a_.size());
        for (size_t i = 0; i < a_.size(); ++i)
            connect(a_[i], b_[i], cq_depth, queue_depth, inline_size, port);
        if (options_.manual) {
            client_.knob("progress", "manual");
            server_.knob("progress", "manual");
        }
    }
    ~Pair()
    {
        // Back to automatic progress so the blocking adapter closes can complete.
        try {
            client_.knob("progress", "auto");
            server_.knob("progress", "auto");
        } catch (...) {
        }
    }

    RawAdapter &client() { return client_; }
    RawAdapter &server() { return server_; }
    Side &a(size_t connection = 0) { return a_.at(connection); }
    Side &b(size_t connection = 0) { return b_.at(connection); }
    size_t connections() const { return a_.size(); }

private:
    static unsigned next_n()
    {
        static std::atomic<unsigned> n{0};
        return n++;
    }
    static void on_connect(PVOID context, NDK_CONNECTOR *connector)
    {
        static_cast<Pair *>(context)->incoming_.store(connector);
    }
    void make_side(RawAdapter &adapter, Side &side, ULONG cq_depth, ULONG depth, ULONG inline_size)
    {
        side.cq = adapter.cq(cq_depth);
        side.pd = adapter.pd();
        side.qp = adapter.qp(side.pd, side.cq, side.cq, &side, depth, depth, inline_size);
    }
    // One connection to the listener on `port`: connect, accept, complete; one at a time, so
    // the connect event in `incoming_` is this connection's.
    void connect(Side &a, Side &b, ULONG cq_depth, ULONG queue_depth, ULONG inline_size,
                 uint16_t port)
    {
        make_side(client_, a, cq_depth, queue_depth, inline_size);
        make_side(server_, b, cq_depth, queue_depth, inline_size);
        incoming_.store(nullptr);
        a.connector = client_.connector();
        Done &connected = client_.done();
        sockaddr_in src = ipv4(client_ip_, 0);
        sockaddr_in dst = ipv4(server_ip_, port);
        const RawAdapter::ReadLimits ask = client_.read_limits(), give = server_.read_limits();
        NTSTATUS s = a.connector->Dispatch->NdkConnect(
            a.connector, a.qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
            reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, ask.inbound, ask.outbound, nullptr,
            0, Done::request, &connected);
        if (s != STATUS_PENDING && s != STATUS_SUCCESS)
            fail("NdkConnect", s);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (incoming_.load() == nullptr) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("no connect event");
            std::this_thread::yield();
        }
        b.connector = incoming_.load();
        Done &accepted = server_.done();
        s = b.connector->Dispatch->NdkAccept(b.connector, b.qp, give.inbound, give.outbound,
                                             nullptr, 0, nullptr, nullptr, Done::request,
                                             &accepted);
        if (s != STATUS_PENDING && s != STATUS_SUCCESS)
            fail("NdkAccept", s);
        if ((s = connected.wait()) != STATUS_SUCCESS)
            fail("NdkConnect completion", s);
        Done &completed = client_.done();
        s = a.connector->Dispatch->NdkCompleteConnect(a.connector, nullptr, nullptr,
                                                      Done::request, &completed);
        if (s == STATUS_PENDING)
            s = completed.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkCompleteConnect", s);
        if ((s = accepted.wait()) != STATUS_SUCCESS)
            fail("NdkAccept completion", s);
    }

    AdapterOptions options_;
    unsigned client_n_, server_n_; // AdapterOptions::address's n of each
    RawAdapter client_, server_;
    std::string client_ip_, server_ip_;
    std::atomic<NDK_CONNECTOR *> incoming_{nullptr};
    std::vector<Side> a_, b_;
};

// How a loop waits for completions (ndk_perf --poll): spinning on NdkGetCqResultsEx
// (perftest's way; the default), or yielding the core after each empty poll.  A provider whose
// transfers run on its own threads (soft's shm and tcp transports: their progress threads)
// needs those threads to get a core, which a spinning consumer on a small machine takes from
// them.  Set once, before any thread starts or the process forks.
inline bool &poll_yields()
{
    static bool yields = false;
    return yields;
}

// An empty poll: yield the core if the loop is told to.
inline void empty_poll()
{
    if (poll_yields())
        std::this_thread::yield();
}

// Poll `cq` until `n` results arrived; the results land in `out` (at least n long).  Throws
// on a result that is not STATUS_SUCCESS, or after 2^28 empty polls.
inline void poll_n(NDK_CQ *cq, NDK_RESULT_EX *out, ULONG n)
{
    ULONG got = 0;
    unsigned spins = 0;
    while (got < n) {
        ULONG k = cq->Dispatch->NdkGetCqResultsEx(cq, out + got, n - got);
        for (ULONG i = got; i < got + k; ++i)
            if (out[i].Status != STATUS_SUCCESS)
                fail("completion", out[i].Status);
        got += k;
        if (k != 0)
            continue;
        empty_poll();
        if (++spins > (1u << 28))
            throw std::runtime_error("poll_n: completions did not arrive");
    }
}

// Send and Receive completions taken by type from one CQ that carries both.  Their order is
// not fixed: over transport=tcp a Send completes when the Read Response to the zero-length
// Read sent after it arrives, so the peer's next message (a Receive here) can come first.
// What arrives early is counted until it is taken.  Throws on a result that is not
// STATUS_SUCCESS, or after as long as poll_n waits.
class Completions {
public:
    explicit Completions(NDK_CQ *cq) : cq_(cq) {}

    void take(NDK_OPERATION_TYPE type)
    {
        unsigned spins = 0;
        while (count(type) == 0) {
            NDK_RESULT_EX r{};
            if (cq_->Dispatch->NdkGetCqResultsEx(cq_, &r, 1) == 0) {
                empty_poll();
                if (++spins > (1u << 28))
                    throw std::runtime_error("completions did not arrive");
                continue;
            }
            spins = 0;
            if (r.Status != STATUS_SUCCESS)
                fail("completion", r.Status);
            if (r.Type != NdkOperationTypeSend && r.Type != NdkOperationTypeReceive)
                throw std::runtime_error("unexpected completion type " + std::to_string(r.Type));
            ++count(r.Type);
        }
        --count(type);
    }

private:
    uint64_t &count(NDK_OPERATION_TYPE type)
    {
        return type == NdkOperationTypeSend ? sends_ : receives_;
    }

    NDK_CQ *cq_;
    uint64_t sends_ = 0, receives_ = 0;
};

// Resident set size in bytes (from /proc/self/statm).
inline size_t rss_bytes()
{
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

} // namespace ndkbench
