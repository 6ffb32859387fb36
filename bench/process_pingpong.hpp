// send_lat --processes (ndk_perf): the 64 B ping-pong with its pong in another process, the
// figure a consumer and its peer on one host meet (fi_pingpong's shape: two processes).  The
// adapters need a transport that reaches another process (soft's transport=shm).
//
// The child is forked before any adapter opens (no thread is copied half-way), listens on its
// address and tells the parent its port through a pipe; the parent connects and pings.  The
// last ping carries a stop byte: the pong answers it and exits, so neither side waits for a
// message that will not come.
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

class ProcessPingPong {
public:
    static constexpr unsigned char kStop = 0xA5;

    // `at_open`: the knob lines both adapters open with (AdapterOptions::at_open, made before
    // the fork, so a generated shm_fabric is the same on both sides).
    ProcessPingPong(std::string at_open, ULONG size) : at_open_(std::move(at_open)), size_(size) {}

    // Fork the pong, connect to it, run `ping` (the timed loop) on the connected QP, then
    // reap the pong.  `ping` gets (qp, cq, send SGE, receive SGE, the send buffer's bytes).
    void run(const std::function<void(NDK_QP *, NDK_CQ *, NDK_SGE &, NDK_SGE &, unsigned char *)>
                 &ping)
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
                pong(fds[1]);
            } catch (const std::exception &e) {
                std::fprintf(stderr, "ndk_perf: the pong process: %s\n", e.what());
                status = 1;
            }
            std::fflush(stderr);
            ::_exit(status);
        }
        ::close(fds[1]);
        try {
            uint16_t port = 0;
            if (::read(fds[0], &port, sizeof port) != static_cast<ssize_t>(sizeof port))
                throw std::runtime_error("the pong process did not listen (see its error)");
            ::close(fds[0]);
            pinger(port, ping);
        } catch (...) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            throw;
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw std::runtime_error("the pong process failed");
    }

private:
    static constexpr const char *kPingIp = "198.51.100.201";
    static constexpr const char *kPongIp = "198.51.100.202";

    static void make_side(RawAdapter &adapter, Side &side)
    {
        side.cq = adapter.cq(64);
        side.pd = adapter.pd();
        side.qp = adapter.qp(side.pd, side.cq, side.cq, &side, 16, 16);
    }

    static void poll_one(NDK_CQ *cq, NDK_OPERATION_TYPE type)
    {
        NDK_RESULT_EX r[1];
        poll_n(cq, r, 1);
        if (r[0].Type != type)
            throw std::runtime_error("unexpected completion type " + std::to_string(r[0].Type));
    }

    static void on_connect(PVOID context, NDK_CONNECTOR *connector)
    {
        static_cast<std::atomic<NDK_CONNECTOR *> *>(context)->store(connector);
    }

    // The child: listen, say the port, accept one connection, answer pings until the stop.
    void pong(int port_fd)
    {
        RawAdapter server("address=" + std::string(kPongIp) + "\n" + at_open_);
        std::atomic<NDK_CONNECTOR *> incoming{nullptr};
        uint16_t port = listen_any_port(server, kPongIp, on_connect, &incoming);
        Side b;
        make_side(server, b);
        Region sb(server, b.pd, size_), rb(server, b.pd, size_);
        NDK_SGE s_b = sb.sge(0, size_), r_b = rb.sge(0, size_);
        if (NTSTATUS r = b.qp->Dispatch->NdkReceive(b.qp, nullptr, &r_b, 1); r != STATUS_SUCCESS)
            fail("NdkReceive", r);
        if (::write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port))
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
        NTSTATUS s = b.connector->Dispatch->NdkAccept(b.connector, b.qp, 4, 4, nullptr, 0, nullptr,
                                             nullptr, Done::request, &accepted);
        if (s == STATUS_PENDING)
            s = accepted.wait();
        if (s != STATUS_SUCCESS)
            fail("NdkAccept", s);
        for (;;) {
            poll_one(b.cq, NdkOperationTypeReceive);
            bool last = rb.bytes[0] == kStop;
            if (NTSTATUS r = b.qp->Dispatch->NdkReceive(b.qp, nullptr, &r_b, 1);
                r != STATUS_SUCCESS)
                fail("NdkReceive", r);
            if (NTSTATUS r = b.qp->Dispatch->NdkSend(b.qp, nullptr, &s_b, 1, 0);
                r != STATUS_SUCCESS)
                fail("NdkSend", r);
            poll_one(b.cq, NdkOperationTypeSend);
            if (last)
                return;
        }
    }

    // The parent: connect to the pong, then `ping`.
    void pinger(uint16_t port,
                const std::function<void(NDK_QP *, NDK_CQ *, NDK_SGE &, NDK_SGE &,
                                         unsigned char *)> &ping)
    {
        RawAdapter client("address=" + std::string(kPingIp) + "\n" + at_open_);
        Side a;
        make_side(client, a);
        Region sa(client, a.pd, size_), ra(client, a.pd, size_);
        NDK_SGE s_a = sa.sge(0, size_), r_a = ra.sge(0, size_);
        if (NTSTATUS r = a.qp->Dispatch->NdkReceive(a.qp, nullptr, &r_a, 1); r != STATUS_SUCCESS)
            fail("NdkReceive", r);
        a.connector = client.connector();
        Done &connected = client.done();
        sockaddr_in src = ipv4(kPingIp, 0), dst = ipv4(kPongIp, port);
        NTSTATUS s = a.connector->Dispatch->NdkConnect(
            a.connector, a.qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
            reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, 4, 4, nullptr, 0, Done::request,
            &connected);
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
        ping(a.qp, a.cq, s_a, r_a, sa.bytes);
    }

    std::string at_open_;
    ULONG size_;
};

} // namespace ndkbench
