// fuzz_tcp_receive: a libFuzzer target on the soft provider's tcp receive path, end to end
// (docs/testing.md, docs/iwarp.md): a peer's byte stream through the kernel's TCP, the
// provider's MPA establishment (tcp_establish.cpp), the TCP link's FPDU reassembly, CRC and
// DDP order checks (tcp_link.cpp), and the transport's placement of Sends, Writes, Read
// Requests and Responses and handling of Terminates into NDK objects (tcp_transport.cpp).
//
// Once per process: a soft adapter with transport=tcp on 127.0.0.9 (127.0.0.0/8 is local
// without root), opened straight through the provider's entry (no layer: see SoftAdapter),
// with a CQ, a PD, a registered MR and a listener.  Per input (tcp_receive_fuzz_input.hpp): a
// QP with the receives the input asks for, and one raw TCP connection from this thread that
// plays the peer:
//
//   - harness establishment: the codec's MPA request (revision 2, IRD/ORD, a Write or Read
//     RTR offered), NdkAccept on the connect event, the provider's reply parsed and judged by
//     the codec, the RTR; the Accept completes; optionally the consumer posts a Send, Write or
//     Read, whose Read Request is awaited on the socket; then the input's stream;
//   - raw establishment: the input's stream is all the peer sends, its MPA request included;
//     for a request the codec finds whole and acceptable the connect event must come, and the
//     consumer accepts, rejects or closes the connector before the FIN;
//
// the stream written in the input's chunks (optionally with pauses, and a receive posted late
// for a Send the provider holds), then the FIN.  Then the harness waits for the
// connection's end as NDK reports it (the disconnect event; the consumer's request completing
// with the error a Terminate named; an Accept that fails; or, with no connect event, the
// provider closing the socket), disconnects, closes the connector and the QP, drains the CQ,
// and waits until the provider has let the connection's socket go.
//
// The oracle: no crash, no ASan/UBSan report, no leak (each input frees what it allocated:
// libFuzzer's leak check), no socket left open (the provider's descriptor must close within
// kLimit of the QP's close), no hang (every wait is bounded by kLimit, after which the input is
// a finding; libFuzzer's -timeout catches the rest), and what the harness itself establishes
// succeeds (its request is answered with a reply the codec accepts, its Accept completes).  A
// Terminate and a connection error are the expected outcomes of most inputs.  A finding
// abort()s with what was missing.
//
//   NDK_FUZZ_TRACE=1 build-fuzz/bin/fuzz_tcp_receive crash-<sha1>   # each step, the CQ's
//                                                                  # results, what came back
#include "tcp_receive_fuzz_input.hpp"

#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "ndk/status.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/terminate_reasons.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace ndk::soft::iwarp;
namespace input_format = ndk::soft::iwarp::tcp_fuzz_input;
using input_format::Posted;
using Clock = std::chrono::steady_clock;

// The adapter's address (NDK_FUZZ_TCP_ADDRESS: another, for a second process beside this one).
const char *address()
{
    const char *chosen = std::getenv("NDK_FUZZ_TCP_ADDRESS");
    return chosen != nullptr ? chosen : "127.0.0.9";
}
constexpr auto kLimit = std::chrono::seconds(5); // the longest any one wait may last
constexpr ULONG kQueueDepth = 16;
constexpr ULONG kCqDepth = 256;
// The peer's memory named by the consumer's Write and Read (any: the peer is this harness).
constexpr UINT32 kPeerToken = 0x1234;
constexpr UINT64 kPeerAddress = 0x10000;
// Request contexts: the consumer's request, and receive i is kReceiveContext + i.
const PVOID kPostedContext = reinterpret_cast<PVOID>(std::uintptr_t{1});
const PVOID kLateReceiveContext = reinterpret_cast<PVOID>(std::uintptr_t{2});
constexpr std::uintptr_t kReceiveContext = 0x100;
// Where the late receive lies in the MR: after the largest set of receives.
constexpr std::size_t kLateReceiveOffset =
    input_format::kReceiveOffset +
    input_format::kReceiveCounts.back() * input_format::kReceiveBytes;
static_assert(kLateReceiveOffset + input_format::kReceiveBytes <= input_format::kPostedOffset);

bool tracing()
{
    static const bool on = std::getenv("NDK_FUZZ_TRACE") != nullptr;
    return on;
}

void trace(const char *format, ...)
{
    if (!tracing())
        return;
    va_list args;
    va_start(args, format);
    static const auto start = Clock::now();
    std::fprintf(stderr, "fuzz_tcp_receive: %8.3f ms: ",
                 std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
    va_end(args);
}

[[noreturn]] void finding(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    std::fputs("fuzz_tcp_receive: ", stderr);
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
    va_end(args);
    std::abort();
}

// Everything the provider calls back, on its threads; each call wakes the harness's waits
// through an eventfd, which poll() watches beside the peer's socket.
class Signals {
public:
    Signals() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
    {
        if (fd_ < 0)
            finding("eventfd: %s", std::strerror(errno));
        incoming.reserve(64);
    }
    int fd() const { return fd_; }
    void wake() const
    {
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
    }
    void clear() const
    {
        std::uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(fd_, &count, sizeof count);
    }

    // Connect events, and the disconnect events of the current connection.
    std::mutex mu;
    std::vector<NDK_CONNECTOR *> incoming; // reserved: no allocation per input
    std::atomic<int> disconnects{0};

private:
    int fd_;
};

Signals &signals()
{
    static Signals *s = new Signals; // for the whole process, as the adapter
    return *s;
}

// One asynchronous call's completion.
struct Done {
    std::atomic<bool> done{false};
    std::atomic<NTSTATUS> status{STATUS_PENDING};
    std::atomic<NDK_OBJECT_HEADER *> object{nullptr};

    static void create(PVOID c, NTSTATUS s, NDK_OBJECT_HEADER *o)
    {
        auto *d = static_cast<Done *>(c);
        d->object.store(o);
        d->status.store(s);
        d->done.store(true);
        signals().wake();
    }
    static void request(PVOID c, NTSTATUS s)
    {
        auto *d = static_cast<Done *>(c);
        d->status.store(s);
        d->done.store(true);
        signals().wake();
    }
    static void close(PVOID c)
    {
        static_cast<Done *>(c)->done.store(true);
        signals().wake();
    }
};

void on_connect(PVOID, NDK_CONNECTOR *connector)
{
    Signals &s = signals();
    {
        std::lock_guard lock(s.mu);
        s.incoming.push_back(connector);
    }
    s.wake();
}

void on_disconnect(PVOID)
{
    signals().disconnects.fetch_add(1);
    signals().wake();
}

void on_cq(PVOID, NTSTATUS)
{
    signals().wake();
}

// With NDK_FUZZ_TRACE: what the provider sent that no step of the harness took, decoded when
// the input ends.
std::vector<std::byte> &traced_inbound()
{
    static auto *bytes = new std::vector<std::byte>;
    return *bytes;
}

// Wait until `ready()` or the deadline; the peer's socket (fd >= 0) is read and what it says
// discarded meanwhile (kept for the trace), unless `on_bytes` takes it.  Returns ready().
template <class Ready>
bool wait_until(Clock::time_point deadline, Ready &&ready, int fd = -1,
                std::vector<std::byte> *on_bytes = nullptr, bool *peer_closed = nullptr)
{
    Signals &s = signals();
    std::byte buffer[16384];
    for (;;) {
        if (ready())
            return true;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            return ready();
        pollfd set[2] = {{s.fd(), POLLIN, 0}, {fd, POLLIN, 0}};
        const int n =
            ::poll(set, fd >= 0 ? 2 : 1, static_cast<int>(std::min<long>(left.count() + 1, 100)));
        if (n <= 0)
            continue;
        if (set[0].revents != 0)
            s.clear();
        if (fd >= 0 && set[1].revents != 0) {
            for (;;) {
                const ssize_t got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
                if (got > 0) {
                    if (on_bytes != nullptr)
                        on_bytes->insert(on_bytes->end(), buffer, buffer + got);
                    else if (tracing())
                        traced_inbound().insert(traced_inbound().end(), buffer, buffer + got);
                    continue;
                }
                if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    if (peer_closed != nullptr)
                        *peer_closed = true;
                    fd = -1; // nothing more to read: wait on the signals alone
                }
                break;
            }
        }
    }
}

// What the descriptors are, for a finding's message.
std::string describe_descriptors()
{
    std::string out;
    if (DIR *d = ::opendir("/proc/self/fd")) {
        while (const dirent *e = ::readdir(d)) {
            char target[256] = {};
            const std::string path = std::string("/proc/self/fd/") + e->d_name;
            if (e->d_name[0] == '.' || ::readlink(path.c_str(), target, sizeof target - 1) < 0)
                continue;
            out += std::string(" ") + e->d_name + "=" + target;
        }
        ::closedir(d);
    }
    return out;
}

// The sockets open in this process (the sanitizers' symbolizer and libFuzzer add pipes of
// their own at any time).
long open_sockets()
{
    long n = 0;
    if (DIR *d = ::opendir("/proc/self/fd")) {
        while (const dirent *e = ::readdir(d)) {
            char target[16] = {};
            const std::string path = std::string("/proc/self/fd/") + e->d_name;
            if (e->d_name[0] != '.' && ::readlink(path.c_str(), target, sizeof target - 1) > 0 &&
                std::strncmp(target, "socket:", 7) == 0)
                ++n;
        }
        ::closedir(d);
    }
    return n;
}

// The soft provider itself, opened as NDIS would (CreateMiniport, OpenNDKAdapterHandler), with
// no layer between: the fault and validation layers keep a record of every call and object
// until the adapter closes, which an adapter that serves every input would accumulate (and
// libFuzzer would take for a leak in each input).
class SoftAdapter {
public:
    explicit SoftAdapter(const std::string &options) : provider_(ndk::Provider::load("soft"))
    {
        char error[512] = {};
        NDIS_STATUS s =
            provider_->create_miniport(options.c_str(), error, sizeof error, &miniport_);
        if (s != STATUS_SUCCESS)
            finding("CreateMiniport: %s", error);
        NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
        parameters.Version = {2, 0};
        s = provider_->entry().Characteristics.OpenNDKAdapterHandler(miniport_, &parameters,
                                                                     &adapter_);
        if (s != STATUS_SUCCESS)
            finding("OpenNDKAdapterHandler: %s", ndk::describe_status(s).c_str());
    }
    NDK_ADAPTER *get() const { return adapter_; }
    const NDK_ADAPTER_DISPATCH &d() const { return *adapter_->Dispatch; }
    void knob(const char *key, const std::string &value) const
    {
        char reply[256] = {};
        NTSTATUS s =
            provider_->entry().ControlMiniport(miniport_, key, value.c_str(), reply, sizeof reply);
        if (s != STATUS_SUCCESS)
            finding("knob %s=%s: %s", key, value.c_str(), ndk::describe_status(s).c_str());
    }

private:
    std::shared_ptr<ndk::Provider> provider_;
    NDIS_HANDLE miniport_ = nullptr;
    NDK_ADAPTER *adapter_ = nullptr;
};

class Harness {
public:
    Harness()
        : adapter_(std::string("address=") + address() + "\ntransport=tcp\nrnr_timeout_ms=1\n")
    {
        signals(); // its eventfd before the descriptors are counted
        Done cq_done, pd_done, mr_done, listener_done;
        NTSTATUS s = adapter_.d().NdkCreateCq(adapter_.get(), kCqDepth, on_cq, nullptr, nullptr,
                                              Done::create, &cq_done, &cq_);
        cq_ = finish(s, cq_done, cq_, "NdkCreateCq");
        s = adapter_.d().NdkCreatePd(adapter_.get(), Done::create, &pd_done, &pd_);
        pd_ = finish(s, pd_done, pd_, "NdkCreatePd");
        s = pd_->Dispatch->NdkCreateMr(pd_, FALSE, Done::create, &mr_done, &mr_);
        mr_ = finish(s, mr_done, mr_, "NdkCreateMr");

        memory_ = static_cast<unsigned char *>(std::aligned_alloc(4096, input_format::kMrBytes));
        std::memset(memory_, 0, input_format::kMrBytes);
        NdkInitializeMdl(&mdl_, memory_, static_cast<ULONG>(input_format::kMrBytes));
        Done registered;
        s = mr_->Dispatch->NdkRegisterMr(
            mr_, &mdl_, input_format::kMrBytes,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
            Done::request, &registered);
        complete(s, registered, "NdkRegisterMr");
        local_token_ = mr_->Dispatch->NdkGetLocalTokenFromMr(mr_);
        remote_token_ = mr_->Dispatch->NdkGetRemoteTokenFromMr(mr_);

        s = adapter_.d().NdkCreateListener(adapter_.get(), on_connect, nullptr, Done::create,
                                           &listener_done, &listener_);
        listener_ = finish(s, listener_done, listener_, "NdkCreateListener");
        sockaddr_in any{};
        any.sin_family = AF_INET;
        if (::inet_pton(AF_INET, address(), &any.sin_addr) != 1)
            finding("NDK_FUZZ_TCP_ADDRESS=%s is not an IPv4 address", address());
        Done listened;
        s = listener_->Dispatch->NdkListen(listener_, reinterpret_cast<PSOCKADDR>(&any), sizeof any,
                                           Done::request, &listened);
        complete(s, listened, "NdkListen");
        ULONG length = sizeof listen_address_;
        s = listener_->Dispatch->NdkGetLocalAddress(
            listener_, reinterpret_cast<PSOCKADDR>(&listen_address_), &length);
        if (s != STATUS_SUCCESS)
            finding("NdkGetLocalAddress: %s", ndk::describe_status(s).c_str());
        results_.reserve(2 * kCqDepth);
        baseline_sockets_ = open_sockets();
        trace("descriptors after set-up (%ld sockets):%s", baseline_sockets_,
              describe_descriptors().c_str());
        trace("adapter on %s port %u, MR token 0x%x at %p", address(),
              ntohs(listen_address_.sin_port), remote_token_, static_cast<void *>(memory_));
    }

    void run(const input_format::Input &input)
    {
        Signals &sig = signals();
        sig.disconnects.store(0);
        {
            std::lock_guard lock(sig.mu);
            if (!sig.incoming.empty())
                finding("a connect event nobody asked for");
        }
        make_qp(input.receives());
        connect_peer();

        raw_ = input.raw();
        crc_ = true; // what the provider asks for, always
        if (const unsigned rnr = input.long_rnr ? input_format::kLongRnrMs : 1; rnr != rnr_ms_) {
            adapter_.knob("rnr_timeout_ms", std::to_string(rnr));
            rnr_ms_ = rnr;
        }
        if (raw_)
            run_raw(input);
        else
            run_established(input);

        teardown();
    }

private:
    template <class T>
    T *finish(NTSTATUS s, Done &d, T *out, const char *what)
    {
        if (s == STATUS_PENDING) {
            if (!wait_until(Clock::now() + kLimit, [&] { return d.done.load(); }))
                finding("%s did not complete", what);
            s = d.status.load();
            out = reinterpret_cast<T *>(d.object.load());
        }
        if (s != STATUS_SUCCESS)
            finding("%s: %s", what, ndk::describe_status(s).c_str());
        return out;
    }
    // A request's status: inline, or its completion.
    static NTSTATUS settle(NTSTATUS s, Done &d, const char *what)
    {
        if (s != STATUS_PENDING)
            return s;
        if (!wait_until(Clock::now() + kLimit, [&] { return d.done.load(); }))
            finding("%s did not complete within %lld s", what,
                    static_cast<long long>(kLimit.count()));
        return d.status.load();
    }
    static void complete(NTSTATUS s, Done &d, const char *what)
    {
        if ((s = settle(s, d, what)) != STATUS_SUCCESS)
            finding("%s: %s", what, ndk::describe_status(s).c_str());
    }
    template <class T>
    static void close(T *object, NDK_FN_CLOSE_OBJECT fn, const char *what)
    {
        Done d;
        NTSTATUS s = fn(&object->Header, Done::close, &d);
        if (s == STATUS_PENDING) {
            if (!wait_until(Clock::now() + kLimit, [&] { return d.done.load(); }))
                finding("%s did not complete", what);
        } else if (s != STATUS_SUCCESS) {
            finding("%s: %s", what, ndk::describe_status(s).c_str());
        }
    }

    NDK_SGE sge(std::size_t offset, std::size_t length) const
    {
        NDK_SGE s{};
        s.VirtualAddress = memory_ + offset;
        s.Length = static_cast<ULONG>(length);
        s.MemoryRegionToken = local_token_;
        return s;
    }

    void make_qp(unsigned receives)
    {
        Done created;
        NDK_QP *qp = nullptr;
        NTSTATUS s = pd_->Dispatch->NdkCreateQp(pd_, cq_, cq_, nullptr, kQueueDepth, kQueueDepth, 1,
                                                1, 0, Done::create, &created, &qp);
        qp_ = finish(s, created, qp, "NdkCreateQp");
        for (unsigned i = 0; i < receives; ++i) {
            const NDK_SGE one = sge(input_format::kReceiveOffset + i * input_format::kReceiveBytes,
                                    input_format::kReceiveBytes);
            PVOID context = reinterpret_cast<PVOID>(kReceiveContext + i);
            if ((s = qp_->Dispatch->NdkReceive(qp_, context, &one, 1)) != STATUS_SUCCESS)
                finding("NdkReceive: %s", ndk::describe_status(s).c_str());
        }
    }

    // The peer's socket, connected to the listener.  Non-blocking: libFuzzer's -timeout alarm
    // interrupts a blocking connect (EINTR) while the connection goes on.
    void connect_peer()
    {
        peer_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (peer_ < 0)
            finding("socket: %s", std::strerror(errno));
        const int one = 1;
        ::setsockopt(peer_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::connect(peer_, reinterpret_cast<const sockaddr *>(&listen_address_),
                      sizeof listen_address_) == 0)
            return;
        if (errno != EINPROGRESS && errno != EINTR)
            finding("connect: %s", std::strerror(errno));
        const auto deadline = Clock::now() + kLimit;
        pollfd writable{peer_, POLLOUT, 0};
        while (::poll(&writable, 1, 100) <= 0)
            if (Clock::now() > deadline)
                finding("connect: no connection within %lld s",
                        static_cast<long long>(kLimit.count()));
        int error = 0;
        socklen_t size = sizeof error;
        ::getsockopt(peer_, SOL_SOCKET, SO_ERROR, &error, &size);
        if (error != 0)
            finding("connect: %s", std::strerror(error));
    }

    // Write `bytes`; what the socket does not take within kSendLimit (a provider that stopped
    // reading: the link ended) is dropped, as is all after an error (it reset the connection).
    void send_all(std::span<const std::byte> bytes) const
    {
        constexpr auto kSendLimit = std::chrono::milliseconds(200);
        const auto deadline = Clock::now() + kSendLimit;
        while (!bytes.empty()) {
            const ssize_t n =
                ::send(peer_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0) {
                bytes = bytes.subspan(static_cast<std::size_t>(n));
                continue;
            }
            if (errno == EINTR)
                continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) {
                pollfd writable{peer_, POLLOUT, 0};
                ::poll(&writable, 1, 10);
                continue;
            }
            trace("send: %s, %zu bytes dropped", std::strerror(errno), bytes.size());
            return;
        }
    }

    // The stream, in the input's chunks (the late receive after the first), then the FIN
    // unless the caller sends it later.
    void send_stream(const input_format::Input &input, std::span<const std::byte> stream,
                     bool fin = true) const
    {
        std::size_t at = 0, chunk = 0;
        while (at < stream.size()) {
            std::size_t size =
                input.chunks.empty() ? stream.size() : input.chunks[chunk++ % input.chunks.size()];
            size = std::min(size, stream.size() - at);
            send_all(stream.subspan(at, size));
            const bool first = at == 0;
            at += size;
            if ((input.pause && at < stream.size()) || (first && input.late_receive))
                std::this_thread::sleep_for(
                    std::chrono::microseconds(input_format::kPauseMicroseconds));
            if (first && input.late_receive) {
                const NDK_SGE one = sge(kLateReceiveOffset, input_format::kReceiveBytes);
                const NTSTATUS s = qp_->Dispatch->NdkReceive(qp_, kLateReceiveContext, &one, 1);
                trace("late receive: %s", ndk::describe_status(s).c_str());
            }
        }
        if (fin)
            ::shutdown(peer_, SHUT_WR);
        trace("sent %zu bytes in %zu chunks%s", stream.size(),
              input.chunks.empty() ? std::size_t{1} : chunk, fin ? ", then the FIN" : "");
    }

    NDK_CONNECTOR *take_connect_event(bool wait)
    {
        Signals &sig = signals();
        NDK_CONNECTOR *connector = nullptr;
        auto take = [&] {
            std::lock_guard lock(sig.mu);
            if (sig.incoming.empty())
                return false;
            connector = sig.incoming.front();
            sig.incoming.erase(sig.incoming.begin());
            return true;
        };
        if (wait ? !wait_until(Clock::now() + kLimit, take, peer_) : !take())
            return nullptr;
        return connector;
    }

    NTSTATUS accept(NDK_CONNECTOR *connector, Done &accepted)
    {
        static const char kPrivate[] = "fuzz_tcp_receive";
        return connector->Dispatch->NdkAccept(connector, qp_, input_format::kReadDepth,
                                              input_format::kReadDepth,
                                              const_cast<char *>(kPrivate), sizeof kPrivate,
                                              on_disconnect, nullptr, Done::request, &accepted);
    }

    // Harness establishment, then the consumer's request, then the input's stream.
    void run_established(const input_format::Input &input)
    {
        const bool read_rtr = (input.flags & input_format::kReadRtr) != 0;
        const MpaSettings settings =
            input_format::request_settings((input.flags & input_format::kCrc) != 0, read_rtr);
        const MpaFrame request = make_mpa_request(settings, {});
        send_all(encode_mpa_frame(request));
        connector_ = take_connect_event(true);
        if (connector_ == nullptr)
            finding("no connect event for a valid MPA request");
        trace("connect event");
        Done accepted;
        NTSTATUS s = accept(connector_, accepted);
        if (s != STATUS_PENDING && s != STATUS_SUCCESS)
            finding("NdkAccept: %s", ndk::describe_status(s).c_str());

        // The reply, judged by the codec.
        std::vector<std::byte> received;
        std::optional<ParsedMpaFrame> reply;
        bool closed = false;
        wait_until(
            Clock::now() + kLimit,
            [&] {
                auto parsed = parse_mpa_frame(received, MpaFrameKind::reply);
                if (parsed)
                    reply = *parsed;
                return static_cast<bool>(parsed) || parsed.error() != MpaParseError::incomplete ||
                       closed;
            },
            peer_, &received, &closed);
        if (!reply)
            finding("no MPA reply that parses (%zu bytes)", received.size());
        const MpaInitiatorOutcome outcome = accept_mpa_reply(request, reply->frame, settings);
        if (outcome.refusal != MpaRefusal::none)
            finding("the provider's reply is refused by the codec (%d)",
                    static_cast<int>(outcome.refusal));
        crc_ = outcome.negotiated.crc;
        trace("reply: crc %d, ird %u, ord %u, rtr %d", crc_, outcome.negotiated.ird,
              outcome.negotiated.ord, static_cast<int>(outcome.negotiated.rtr));

        // The RTR: a zero-length RDMA Write, or a zero-length Read Request taking MSN 1.
        ParsedSegment rtr;
        if (outcome.negotiated.rtr == MpaRtr::read) {
            rtr.header.opcode = RdmapOpcode::read_request;
            rtr.header.queue = kQueueReadRequest;
            rtr.header.msn = 1;
            rtr.read_request = ReadRequest{};
        } else {
            rtr.header.opcode = RdmapOpcode::rdma_write;
        }
        send_all(encode_fpdu(encode_segment(rtr), crc_));
        trace("RTR sent");
        if ((s = settle(s, accepted, "NdkAccept")) != STATUS_SUCCESS)
            finding("NdkAccept completed %s", ndk::describe_status(s).c_str());

        post(input.posted());

        std::vector<std::byte> stream(input.stream.begin(), input.stream.end());
        if ((input.flags & input_format::kFixUp) != 0)
            input_format::fix_up(stream, 0, crc_, remote_token_,
                                 reinterpret_cast<uintptr_t>(memory_));
        send_stream(input, stream);
        await_end();
    }

    // The consumer's Send, Write or Read; its (zero-length, for a Send or Write) Read Request
    // awaited on the socket, so that the provider waits for its answer before the stream comes.
    void post(Posted posted)
    {
        if (posted == Posted::none)
            return;
        const NDK_SGE one = sge(input_format::kPostedOffset, input_format::kPostedBytes);
        NTSTATUS s = STATUS_SUCCESS;
        switch (posted) {
        case Posted::send: s = qp_->Dispatch->NdkSend(qp_, kPostedContext, &one, 1, 0); break;
        case Posted::write:
            s = qp_->Dispatch->NdkWrite(qp_, kPostedContext, &one, 1, kPeerAddress, kPeerToken, 0);
            break;
        default:
            s = qp_->Dispatch->NdkRead(qp_, kPostedContext, &one, 1, kPeerAddress, kPeerToken, 0);
            break;
        }
        if (s != STATUS_SUCCESS)
            finding("posting the consumer's request: %s", ndk::describe_status(s).c_str());
        FpduReassembler reassembler(crc_);
        std::vector<std::byte> received;
        bool closed = false;
        const bool seen = wait_until(
            Clock::now() + kLimit,
            [&] {
                if (!received.empty()) {
                    reassembler.push(received);
                    received.clear();
                }
                for (FpduStep step; (step = reassembler.next()).status == FpduStatus::complete;) {
                    const auto segment = parse_segment(step.ulpdu);
                    if (segment && segment->header.opcode == RdmapOpcode::read_request)
                        return true;
                }
                return closed;
            },
            peer_, &received, &closed);
        if (!seen || closed)
            finding("the consumer's request never reached the peer as a Read Request");
        trace("the consumer's request (%d) is in flight", static_cast<int>(posted));
    }

    // The CQ's results so far, into results_; whether the consumer's request failed.
    void drain_cq()
    {
        NDK_RESULT results[32];
        while (ULONG n = cq_->Dispatch->NdkGetCqResults(cq_, results, 32)) {
            for (ULONG i = 0; i < n; ++i) {
                results_.push_back(results[i]);
                if (results[i].RequestContext == kPostedContext &&
                    results[i].Status != STATUS_SUCCESS)
                    posted_failed_ = true;
            }
        }
    }

    // The connection's end as NDK reports it: the disconnect event or, when a Terminate from
    // the peer names the consumer's request, that request's completion with the error (the
    // initiator's connection ends with it, without a disconnect event, as in-process).
    void await_end()
    {
        auto ended = [this] {
            if (signals().disconnects.load() > 0 || posted_failed_)
                return true;
            drain_cq();
            cq_->Dispatch->NdkArmCq(cq_, NDK_CQ_NOTIFY_ANY); // then look again: no wake is lost
            drain_cq();
            return signals().disconnects.load() > 0 || posted_failed_;
        };
        if (!wait_until(Clock::now() + kLimit, ended, peer_))
            finding("no disconnect event nor failed request within %lld s of the FIN",
                    static_cast<long long>(kLimit.count()));
        trace(signals().disconnects.load() > 0 ? "disconnect event"
                                               : "the consumer's request failed");
    }

    // Raw establishment: the input is the whole stream; whatever the provider makes of it
    // comes to an end: no connect event and the socket closed (a refused or broken request),
    // an answer that fails, or an established connection's end.  A request the codec finds
    // whole and acceptable is answered before the FIN (the provider must deliver its connect
    // event while the peer waits); for any other, the FIN follows the stream at once.
    void run_raw(const input_format::Input &input)
    {
        std::vector<std::byte> stream(input.stream.begin(), input.stream.end());
        const auto request = parse_mpa_frame(stream, MpaFrameKind::request);
        if (request && (input.flags & input_format::kFixUp) != 0)
            input_format::fix_up(stream, request->size, true, remote_token_,
                                 reinterpret_cast<uintptr_t>(memory_));
        MpaSettings any;
        any.rtr = {true, true, true};
        const bool acceptable =
            request && answer_mpa_request(request->frame, any, {}).refusal == MpaRefusal::none;
        send_stream(input, stream, !acceptable);

        bool closed = false;
        wait_until(
            Clock::now() + kLimit,
            [&] {
                std::lock_guard lock(signals().mu);
                return (closed && !acceptable) || !signals().incoming.empty();
            },
            peer_, nullptr, &closed);
        connector_ = take_connect_event(false);
        if (connector_ == nullptr) {
            if (acceptable)
                finding("no connect event within %lld s for a request the codec accepts",
                        static_cast<long long>(kLimit.count()));
            if (!closed)
                finding("the provider neither took nor closed a connection within %lld s",
                        static_cast<long long>(kLimit.count()));
            trace("no connect event; the provider closed the socket");
            return;
        }
        if (!acceptable)
            finding("a connect event for a request the codec refuses");
        NTSTATUS s = STATUS_SUCCESS;
        Done accepted;
        if ((input.flags & input_format::kCrc) != 0) { // raw: the consumer rejects
            static const char kPrivate[] = "rejected";
            s = connector_->Dispatch->NdkReject(connector_, const_cast<char *>(kPrivate),
                                                sizeof kPrivate);
            trace("Reject: %s", ndk::describe_status(s).c_str());
        } else if ((input.flags & input_format::kReadRtr) != 0) { // raw: no answer
            close(connector_, connector_->Dispatch->NdkCloseConnector, "NdkCloseConnector");
            connector_ = nullptr;
            trace("connector closed unanswered");
        } else {
            s = accept(connector_, accepted);
        }
        ::shutdown(peer_, SHUT_WR);
        if (connector_ == nullptr || (input.flags & input_format::kCrc) != 0)
            return;
        s = settle(s, accepted, "NdkAccept");
        trace("Accept: %s", ndk::describe_status(s).c_str());
        if (s == STATUS_SUCCESS)
            await_end();
    }

    void teardown()
    {
        if (connector_ != nullptr) {
            Done disconnected;
            NTSTATUS s =
                connector_->Dispatch->NdkDisconnect(connector_, Done::request, &disconnected);
            s = settle(s, disconnected, "NdkDisconnect");
            trace("Disconnect: %s", ndk::describe_status(s).c_str());
            close(connector_, connector_->Dispatch->NdkCloseConnector, "NdkCloseConnector");
            connector_ = nullptr;
            trace("connector closed");
        }
        close(qp_, qp_->Dispatch->NdkCloseQp, "NdkCloseQp");
        trace("QP closed");
        qp_ = nullptr;
        drain_cq();
        for (const NDK_RESULT &r : results_)
            trace("completion %#lx: %s, %lu bytes",
                  static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(r.RequestContext)),
                  ndk::describe_status(r.Status).c_str(),
                  static_cast<unsigned long>(r.BytesTransferred));
        results_.clear();
        posted_failed_ = false;
        if (tracing())
            trace_inbound();
        ::close(peer_);
        peer_ = -1;
        // The provider lets the connection's socket go on its progress thread, after the
        // closes completed: wait for that, so that the connection's memory is freed within
        // this input (libFuzzer counts the mallocs and frees of each input: more mallocs
        // costs a leak check) and a descriptor the provider keeps is found at once.
        const auto deadline = Clock::now() + kLimit;
        while (open_sockets() > baseline_sockets_) {
            if (Clock::now() > deadline)
                finding("%ld sockets open %lld s after the input's connection was closed "
                        "(%ld after set-up):%s",
                        open_sockets(), static_cast<long long>(kLimit.count()), baseline_sockets_,
                        describe_descriptors().c_str());
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        {
            std::lock_guard lock(signals().mu);
            if (!signals().incoming.empty())
                finding("a connect event after the input's connection ended");
        }
    }

    // What the provider sent after the reply (after the handshake in raw mode), segment by
    // segment.
    void trace_inbound()
    {
        std::vector<std::byte> &in = traced_inbound();
        std::byte buffer[16384];
        for (ssize_t got; (got = ::recv(peer_, buffer, sizeof buffer, MSG_DONTWAIT)) > 0;)
            in.insert(in.end(), buffer, buffer + got);
        std::span<const std::byte> rest(in);
        if (raw_) {
            const auto reply = parse_mpa_frame(rest, MpaFrameKind::reply);
            if (!reply) {
                trace("provider sent %zu bytes, no MPA reply", in.size());
                in.clear();
                return;
            }
            trace("provider's reply: reject %d, crc %d", reply->frame.reject, reply->frame.crc);
            rest = rest.subspan(reply->size);
        }
        FpduReassembler reassembler(crc_);
        reassembler.push(rest);
        for (FpduStep step; (step = reassembler.next()).status == FpduStatus::complete;) {
            const auto segment = parse_segment(step.ulpdu);
            if (!segment) {
                trace("provider sent a segment that does not parse");
                continue;
            }
            std::string what;
            if (segment->terminate) {
                const auto *entry = find_terminate_reason(
                    segment->terminate->layer, segment->terminate->etype, segment->terminate->code);
                what = entry ? std::string(entry->name) : "unknown reason";
            }
            trace("provider sent opcode %d, %zu bytes%s%s",
                  static_cast<int>(segment->header.opcode), segment->payload.size(),
                  what.empty() ? "" : ": Terminate, ", what.c_str());
        }
        in.clear();
    }

    SoftAdapter adapter_;
    NDK_CQ *cq_ = nullptr;
    NDK_PD *pd_ = nullptr;
    NDK_MR *mr_ = nullptr;
    NDK_LISTENER *listener_ = nullptr;
    unsigned char *memory_ = nullptr;
    MDL mdl_{};
    UINT32 local_token_ = 0, remote_token_ = 0;
    sockaddr_in listen_address_{};
    long baseline_sockets_ = 0;

    // The current input's.
    NDK_QP *qp_ = nullptr;
    NDK_CONNECTOR *connector_ = nullptr;
    int peer_ = -1;
    bool crc_ = true;
    bool raw_ = false;
    unsigned rnr_ms_ = 1;             // the adapter's rnr_timeout_ms
    std::vector<NDK_RESULT> results_; // reserved: no allocation per input
    bool posted_failed_ = false;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    static Harness *harness = new Harness; // the adapter and its listener serve every input
    harness->run(input_format::decode(std::as_bytes(std::span(data, size))));
    return 0;
}
