// Two soft adapters connected through the raw NDK ABI, for the data-path suites: a listener on
// the server, a connector on each side, Connect / Accept / CompleteConnect, one CQ and one QP
// per side.
#pragma once

#include "support.hpp"

#include <arpa/inet.h>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>

namespace ndktest {

// Connect events, queued for the test thread.
struct Incoming {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<NDK_CONNECTOR *> connectors;

    static void event(PVOID context, NDK_CONNECTOR *connector)
    {
        auto *self = static_cast<Incoming *>(context);
        {
            std::lock_guard lock(self->mu);
            self->connectors.push_back(connector);
        }
        self->cv.notify_all();
    }
    NDK_CONNECTOR *next()
    {
        std::unique_lock lock(mu);
        cv.wait_for(lock, std::chrono::seconds(5), [this] { return !connectors.empty(); });
        if (connectors.empty())
            return nullptr;
        NDK_CONNECTOR *c = connectors.front();
        connectors.pop_front();
        return c;
    }
};

inline sockaddr_in ipv4(const char *host, uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, host, &a.sin_addr);
    return a;
}

struct Side {
    RawAdapter *adapter = nullptr;
    Record *notify = nullptr;
    NDK_CQ *cq = nullptr;
    NDK_PD *pd = nullptr;
    NDK_QP *qp = nullptr;
    NDK_CONNECTOR *connector = nullptr;
};

// Registered memory of one side: a buffer, its MR, and its tokens.
struct Region {
    std::vector<unsigned char> bytes;
    NDK_MR *mr = nullptr;
    UINT32 local = 0, remote = 0;

    Region(RawAdapter &a, NDK_PD *pd, size_t size, ULONG flags) : bytes(size)
    {
        mr = a.mr(pd, false);
        NdkInitializeMdl(&mdl, bytes.data(), static_cast<ULONG>(size));
        Record &r = a.record();
        NTSTATUS s = mr->Dispatch->NdkRegisterMr(mr, &mdl, size, flags, Record::request, &r);
        if (s == STATUS_PENDING) {
            r.wait();
            s = r.status();
        }
        EXPECT_STATUS(STATUS_SUCCESS, s);
        local = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
        remote = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    }
    NDK_SGE sge(size_t offset, ULONG length) const
    {
        NDK_SGE s{};
        s.VirtualAddress = const_cast<unsigned char *>(bytes.data()) + offset;
        s.Length = length;
        s.MemoryRegionToken = local;
        return s;
    }
    UINT64 address(size_t offset = 0) const
    {
        return reinterpret_cast<uintptr_t>(bytes.data()) + offset;
    }

private:
    MDL mdl{};
};

class Pair {
public:
    // With `validate`, both adapters run behind the validation layer.
    Pair(const std::string &client_options = "", const std::string &server_options = "",
         bool validate = false)
        : client_ip_(next_address()), server_ip_(next_address()),
          client_("address=" + client_ip_ + "\n" + client_options, {2, 0}, "soft", validate),
          server_("address=" + server_ip_ + "\n" + server_options, {2, 0}, "soft", validate)
    {
    }

    RawAdapter &client() { return client_; }
    RawAdapter &server() { return server_; }
    Side &a() { return a_; }
    Side &b() { return b_; }

    // Listen on the server, connect the client to it; false (with a test failure) if any step
    // does not succeed.  `before` runs once both QPs exist, before the connect request.
    bool connect(ULONG cq_depth = 64, ULONG depth = 16, const std::function<void()> &before = {})
    {
        listener_ = listen();
        if (listener_ == nullptr)
            return false;
        make_side(client_, a_, cq_depth, depth);
        make_side(server_, b_, cq_depth, depth);
        if (before)
            before();
        Record &connected = client_.record();
        sockaddr_in src = ipv4(client_address().c_str(), 0);
        sockaddr_in dst = ipv4(server_address().c_str(), port_);
        EXPECT_STATUS(STATUS_PENDING,
                      a_.connector->Dispatch->NdkConnect(
                          a_.connector, a_.qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
                          reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, 4, 4, nullptr, 0,
                          Record::request, &connected));
        b_.connector = incoming_.next();
        if (b_.connector == nullptr) {
            ADD_FAILURE() << "no connect event";
            return false;
        }
        Record &accepted = server_.record();
        EXPECT_STATUS(STATUS_PENDING, b_.connector->Dispatch->NdkAccept(
                                          b_.connector, b_.qp, 4, 4, nullptr, 0, nullptr,
                                          nullptr, Record::request, &accepted));
        if (!connected.wait() || connected.status() != STATUS_SUCCESS) {
            ADD_FAILURE() << "Connect completed with " << ndk::describe_status(connected.status());
            return false;
        }
        Record &completed = client_.record();
        NTSTATUS s = a_.connector->Dispatch->NdkCompleteConnect(a_.connector, nullptr, nullptr,
                                                                Record::request, &completed);
        if (s == STATUS_PENDING) {
            completed.wait();
            s = completed.status();
        }
        EXPECT_STATUS(STATUS_SUCCESS, s);
        EXPECT_TRUE(accepted.wait());
        EXPECT_STATUS(STATUS_SUCCESS, accepted.status());
        return s == STATUS_SUCCESS && accepted.status() == STATUS_SUCCESS;
    }

    NDK_LISTENER *listen()
    {
        Record &created = server_.record();
        NDK_LISTENER *listener = nullptr;
        NTSTATUS s = server_.d().NdkCreateListener(server_.get(), Incoming::event, &incoming_,
                                                   Record::create, &created, &listener);
        listener = server_.finish(s, created, listener, "NdkCreateListener");
        if (listener == nullptr)
            return nullptr;
        sockaddr_in any = ipv4(server_address().c_str(), 0);
        Record &listened = server_.record();
        s = listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&any), sizeof any,
                                          Record::request, &listened);
        if (s == STATUS_PENDING) {
            listened.wait();
            s = listened.status();
        }
        EXPECT_STATUS(STATUS_SUCCESS, s);
        sockaddr_in bound{};
        ULONG length = sizeof bound;
        EXPECT_STATUS(STATUS_SUCCESS, listener->Dispatch->NdkGetLocalAddress(
                                          listener, reinterpret_cast<PSOCKADDR>(&bound), &length));
        port_ = ntohs(bound.sin_port);
        return listener;
    }

    // Poll a side's CQ until `n` results arrived (or 5 s passed).
    std::vector<NDK_RESULT_EX> poll(Side &side, size_t n)
    {
        std::vector<NDK_RESULT_EX> out;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            NDK_RESULT_EX r[16];
            ULONG got = side.cq->Dispatch->NdkGetCqResultsEx(side.cq, r, 16);
            out.insert(out.end(), r, r + got);
            if (got == 0)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return out;
    }

    const std::string &client_address() const { return client_ip_; }
    const std::string &server_address() const { return server_ip_; }

private:
    static std::string next_address()
    {
        static std::atomic<int> n{1};
        int i = n++;
        return "203.0.113." + std::to_string(i % 250 + 1);
    }
    void make_side(RawAdapter &adapter, Side &side, ULONG cq_depth, ULONG depth)
    {
        side.adapter = &adapter;
        side.notify = &adapter.record();
        side.cq = adapter.cq(cq_depth, side.notify);
        side.pd = adapter.pd();
        side.qp = adapter.qp(side.pd, side.cq, side.cq, &side, depth, depth, 4, 4, 64);
        if (&side == &a_)
            side.connector = adapter.connector();
    }

    std::string client_ip_, server_ip_;
    RawAdapter client_, server_;
    Incoming incoming_;
    NDK_LISTENER *listener_ = nullptr;
    uint16_t port_ = 0;
    Side a_, b_;
};

} // namespace ndktest
