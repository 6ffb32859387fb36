// The target end of a connection: what a QP does with an operation that arrives from its peer
// (an RDMAP Send, RDMA Write or RDMA Read Request), whichever transport brought it (digest 1.7,
// 2.3, 4.1; docs/semantics.md, DATA-*).  The transport calls these at the target; the answer
// (a status for the initiator's completion, or "no receive yet") goes back by the transport.
//
// The initiator's bytes are never addressed here: a Payload hides where they are (this
// process's memory for inproc, another process's for shm, a TCP stream for a wire), so a rule
// of the target side is written once for every transport.  Called with the target's
// connection lock and the wire lock held (shared; exclusive when the operation invalidates).
#pragma once

#include "soft_objects.hpp"

#include <cstdint>
#include <optional>

namespace ndk::soft {

// The initiator's bytes of a Send or Write, as the target copies them in.
class PayloadSource {
public:
    virtual size_t length() const = 0;
    // Copy length() bytes into `sink` (which holds at least that many); false when the bytes
    // could not be fetched (the initiator is gone).
    virtual bool copy_to(const Spans &sink) = 0;

protected:
    ~PayloadSource() = default;
};

// Where a Read Response goes: the initiator's sink.
class PayloadSink {
public:
    virtual size_t length() const = 0;
    virtual bool copy_from(const Spans &source) = 0;

protected:
    ~PayloadSink() = default;
};

// Bytes of this process, already resolved (inproc; an inline payload).
class LocalPayload final : public PayloadSource, public PayloadSink {
public:
    explicit LocalPayload(std::span<const Span> spans);
    size_t length() const override { return length_; }
    bool copy_to(const Spans &sink) override;
    bool copy_from(const Spans &source) override;

private:
    std::span<const Span> spans_;
    size_t length_;
};

// What the initiator learns of a request: the status to complete it with, or, for a Send, that
// no receive is posted yet (it waits for one until its rnr_timeout_ms), or that the answer
// comes later (a transport to another process: the request stays at the head of the queue,
// in flight, until the transport calls answered(), soft_transfer.hpp).
struct Answer {
    bool no_receive = false;
    bool later = false;
    NTSTATUS status = STATUS_SUCCESS; // for the initiator's completion
    // A Send the target refused: the status its receive completed with (a transport with no
    // answer message reports the refusal its own way: tcp, a Terminate that names it).
    NTSTATUS at_target = STATUS_SUCCESS;
};

// Consume the target's next receive (its own queue or its SRQ), place the payload, complete the
// receive: STATUS_BUFFER_OVERFLOW or an access error completes the receive with it and
// answers STATUS_REMOTE_RESOURCES (ND_REMOTE_ERROR, digest 4.1).  `invalidate`: the
// SendAndInvalidate's token, invalidated at the target (an invalid one: ACCESS_VIOLATION).
Answer arrive_send(SoftQp &target, PayloadSource &payload, bool solicited,
                        std::optional<UINT32> invalidate);

// An incoming RDMA Write of `payload` to [address, address + length) named by `token`.
NTSTATUS arrive_write(SoftQp &target, UINT32 token, UINT64 address, PayloadSource &payload);

// An incoming RDMA Read Request for `sink.length()` bytes at `address` named by `token`: the
// response is copied into `sink`.
NTSTATUS arrive_read(SoftQp &target, UINT32 token, UINT64 address, PayloadSink &sink);

// Complete a receive of `qp` (its own or its SRQ's) on its receive CQ; `invalidated`: the
// token a SendAndInvalidate invalidated (NdkOperationTypeReceiveAndInvalidate, digest 2.3).
void complete_receive(SoftQp &qp, const ReceiveRequest &rr, NTSTATUS status, ULONG bytes,
                      bool solicited, std::optional<UINT32> invalidated = std::nullopt);

// NDIS_NDK_PERFORMANCE_COUNTERS' RDMA octets and frames of `bytes` of payload, counted on the
// QP that sent them and, separately, on the QP that received them (SoftQp::sent, received).
void count_out(SoftQp &from, size_t bytes);
void count_in(SoftQp &to, size_t bytes);

} // namespace ndk::soft
