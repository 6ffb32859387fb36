// ndk_perf's --processes runs: the other side of the connection in a child process, the figure
// a consumer and its peer on one host meet (fi_pingpong's and iperf3's shape: two processes).
// The adapters need a provider that reaches another process (soft's transport=shm or
// transport=tcp, verbs:DEV, ...; AdapterOptions::address gives each process an address the
// provider takes, or none: then the child tells the parent the address its adapter reports).
//
// Two roles for the child:
// - the pong (send_lat --processes): it answers each ping with a Send of its own.  The last
//   ping carries a stop byte: the pong answers it and exits, so neither side waits for a
//   message that will not come.
// - the target (write_bw / read_bw --processes): it registers `size` bytes, tells the parent
//   their address and token, and waits (sleeping, not polling: a passive target takes no
//   core) for the parent's stop Send, sent once the parent's loop is done, which it answers
//   as the pong answers its last ping.
//
// The child is forked before any adapter opens (no thread is copied half-way), listens on its
// address and tells the parent its port (and the target's memory) through a pipe; the parent
// connects and runs its loop.
//
// The ending: the child waits for its answer's Send to complete before it exits, and the
// parent keeps its adapter open until the child has exited.  Over transport=tcp a Send
// completes when the peer answers the zero-length Read sent after it, from the peer's progress
// thread, which may do so after the peer's consumer saw the message; so neither side may close
// while the other waits for that answer.  The child's Send completes only after its progress
// thread has answered the parent's last Send (the stream is taken in order), so once the child
// has exited, nothing of the parent's is left waiting.
#pragma once

#include "raw_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace ndkbench {

class ProcessPeer {
public:
    static constexpr unsigned char kStop = 0xA5;
    enum class Role { pong, target };

    // What the parent's loop gets: its connected QP and CQ, two registered buffers of `size`
    // bytes (Send source and Receive sink), and the target's memory (Role::target).
    struct Connected {
        NDK_QP *qp;
        NDK_CQ *cq;
        Region &send, &receive;
        UINT64 remote_address;
        UINT32 remote_token;
    };

    // `options`: the provider and the knob lines both adapters open with (made before the
    // fork, so a generated shm_fabric is the same on both sides), and their addresses.
    // `memory`: where both sides' registered buffers come from (Memory::shared: --zero-copy).
    ProcessPeer(const AdapterOptions &options, ULONG size, Role role,
                Memory memory = Memory::heap)
        : options_(options), size_(size), role_(role), memory_(memory)
    {
    }

    // Fork the child, connect to it, run `work` (the timed loop) on the connected QP, stop a
    // target, then reap the child.  A pong's stop is `work`'s: the stop byte in its last ping.
    void run(const std::function<void(Connected &)> &work)
    {
        int fds[2];
        if (::pipe(fds) != 0)
            throw std::runtime_error("pipe");
        std::fflush(stdout);
        std::fflush(stderr);
        pid_t child = ::fork();
        if (child < 0)
            throw std::runtime_error("fork");
        if (child == 0) {
            ::close(fds[0]);
            int status = 0;
            try {
                if (role_ == Role::pong)
                    pong(fds[1]);
                else
                    target(fds[1]);
            } catch (const std::exception &e) {
                std::fprintf(stderr, "ndk_perf: the %s process: %s\n",
                             role_ == Role::pong ? "pong" : "target", e.what());
                status = 1;
            }
            std::fflush(stderr);
            ::_exit(status);
        }
        ::close(fds[1]);
        try {
            Hello hello{};
            if (::read(fds[0], &hello, sizeof hello) != static_cast<ssize_t>(sizeof hello))
                throw std::runtime_error("the child process did not listen (see its error)");
            ::close(fds[0]);
            parent(hello, work, child);
        } catch (...) {
            if (child > 0) {
                ::kill(child, SIGKILL);
                ::waitpid(child, nullptr, 0);
            }
            throw;
        }
    }

private:
    // What the child tells the parent through the pipe.
    struct Hello {
        uint16_t port;
        UINT64 address; // the target's memory (Role::target)
        UINT32 token;
        char ip[INET_ADDRSTRLEN]; // where the child listens
    };
    static constexpr unsigned kPing = 200, kPong = 201; // AdapterOptions::address's n

    // Queue depths: the ping-pong has one message each way at a time; the bandwidth loop
    // keeps up to 1024 (--inflight) in flight.
    ULONG cq_depth() const { return role_ == Role::pong ? 64 : 4096; }
    ULONG queue_depth() const { return role_ == Role::pong ? 16 : 1024; }

    void make_side(RawAdapter &adapter, Side &side) const
    {
        side.cq = adapter.cq(cq_depth());
        side.pd = adapter.pd();
        side.qp = adapter.qp(side.pd, side.cq, side.cq, &side, queue_depth(), queue_depth());
    }

    static void on_connect(PVOID context, NDK_CONNECTOR *connector)
    {
        static_cast<std::atomic<NDK_CONNECTOR *> *>(context)->store(connector);
    }

    static void receive(NDK_QP *qp, NDK_SGE &sge)
    {
        if (NTSTATUS r = qp->Dispatch->NdkReceive(qp, nullptr, &sge, 1); r != STATUS_SUCCESS)
            fail("NdkReceive", r);
    }
    static void send(NDK_QP *qp, NDK_SGE &sge, const char *what = "NdkSend")
    {
        if (NTSTATUS r = qp->Dispatch->NdkSend(qp, nullptr, &sge, 1, 0); r != STATUS_SUCCESS)
            fail(what, r);
    }

    // The child's side up to the connection: listen, post the receive, say the port (and
    // `hello`'s memory), accept one connection.
    void accept_one(RawAdapter &server, Side &b, NDK_SGE &r_b, Hello hello, int port_fd) const
    {
        std::atomic<NDK_CONNECTOR *> incoming{nullptr};
        std::string ip = own_address(server, options_.address(kPong));
        std::snprintf(hello.ip, sizeof hello.ip, "%s", ip.c_str());
        hello.port = listen_any_port(server, ip, on_connect, &incoming);
        receive(b.qp, r_b);
        if (::write(port_fd, &hello, sizeof hello) != static_cast<ssize_t>(sizeof hello))
            throw std::runtime_error("cannot tell the port");
        ::close(port_fd);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (incoming.load() == nullptr) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("no connect event");
            std::this_thread::yield();
        }
        b.connector = incoming.load();
        Done &accepted = server.done();
        const RawAdapter::ReadLimits limits = server.read_limits();
        NTSTATUS s = b.connector->Dispatch->NdkAccept(b.connector, b.qp, limits.inbound,
                                                      limits.outbound, nullptr, 0, nullptr,
                                                      nullptr, Done::request, &accepted);
        if (s == STATUS_PENDING)
            s = accepted.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkAccept", s);
    }

    // The pong: answer pings, busy-polling (as fi_pingpong's processes do), until the stop.
    void pong(int port_fd)
    {
        RawAdapter server(options_.open_options(kPong), options_.provider);
        Side b;
        make_side(server, b);
        Region sb(server, b.pd, size_), rb(server, b.pd, size_);
        NDK_SGE s_b = sb.sge(0, size_), r_b = rb.sge(0, size_);
        accept_one(server, b, r_b, Hello{}, port_fd);
        Completions completions(b.cq); // the next ping may come before our Send completes
        for (;;) {
            completions.take(NdkOperationTypeReceive);
            bool last = rb.bytes[0] == kStop;
            receive(b.qp, r_b);
            send(b.qp, s_b);
            completions.take(NdkOperationTypeSend);
            if (last)
                return;
        }
    }

    // The target: its memory is the parent's to write and read; it only waits for the stop.
    void target(int port_fd)
    {
        RawAdapter server(options_.open_options(kPong), options_.provider);
        Side b;
        make_side(server, b);
        Region memory(server, b.pd, size_, memory_), rb(server, b.pd, size_, memory_);
        NDK_SGE r_b = rb.sge(0, size_);
        accept_one(server, b, r_b, Hello{0, memory.address(), memory.remote, {}}, port_fd);
        NDK_RESULT_EX r{};
        while (b.cq->Dispatch->NdkGetCqResultsEx(b.cq, &r, 1) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (r.Status != STATUS_SUCCESS)
            fail("the stop's receive", r.Status);
        if (r.Type != NdkOperationTypeReceive || rb.bytes[0] != kStop)
            throw std::runtime_error("the target got something other than the stop");
        NDK_SGE answer = rb.sge(0, 1);
        send(b.qp, answer, "NdkSend (the stop's answer)");
        Completions(b.cq).take(NdkOperationTypeSend);
    }

    // The parent: connect to the child, then `work`; a target is stopped after it.  The
    // child is reaped (`child` set to 0) before this side's adapter closes.
    void parent(const Hello &hello, const std::function<void(Connected &)> &work, pid_t &child)
    {
        RawAdapter client(options_.open_options(kPing), options_.provider);
        std::string ping_ip = own_address(client, options_.address(kPing));
        Side a;
        make_side(client, a);
        Region sa(client, a.pd, size_, memory_), ra(client, a.pd, size_, memory_);
        NDK_SGE r_a = ra.sge(0, size_);
        receive(a.qp, r_a);
        a.connector = client.connector();
        Done &connected = client.done();
        sockaddr_in src = ipv4(ping_ip, 0), dst = ipv4(hello.ip, hello.port);
        const RawAdapter::ReadLimits limits = client.read_limits();
        NTSTATUS s = a.connector->Dispatch->NdkConnect(
            a.connector, a.qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
            reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, limits.inbound, limits.outbound,
            nullptr, 0, Done::request, &connected);
        if (s == STATUS_PENDING)
            s = connected.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkConnect", s);
        Done &completed = client.done();
        s = a.connector->Dispatch->NdkCompleteConnect(a.connector, nullptr, nullptr,
                                                      Done::request, &completed);
        if (s == STATUS_PENDING)
            s = completed.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkCompleteConnect", s);
        Connected c{a.qp, a.cq, sa, ra, hello.address, hello.token};
        work(c);
        if (role_ == Role::target) {
            sa.bytes[0] = kStop;
            NDK_SGE stop = sa.sge(0, 1);
            send(a.qp, stop, "NdkSend (the stop)");
            Completions completions(a.cq);
            completions.take(NdkOperationTypeSend);
            completions.take(NdkOperationTypeReceive); // the target's answer
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        child = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw std::runtime_error("the child process failed");
    }

    AdapterOptions options_;
    ULONG size_;
    Role role_;
    Memory memory_;
};

} // namespace ndkbench
