// A connection's data path below the NDK rules: the transport's half (docs/transport.md).  Each
// established QP holds one; the initiator side (soft_transfer.cpp) resolves its own SGL, then
// hands the operation to the channel, which carries it to the peer's target side
// (soft_target.hpp) and brings back the initiator's status.
//
// The channel is the only thing that knows where the peer is.  InprocChannel (this process)
// calls the peer QP's target side directly and answers at once; a transport to another process
// or host will answer through its progress instead (docs/transport.md, "The interface").
//
// Called with the QP's connection lock and the wire lock held (shared on the data path).
#pragma once

#include "soft_objects.hpp"
#include "soft_pipeline.hpp"
#include "soft_target.hpp"
#include "soft_wire_lock.hpp"

#include <cstdint>
#include <optional>

namespace ndk::soft {

class Channel {
public:
    virtual ~Channel() = default;

    // RDMAP Send (with Solicited Event and/or Invalidate): `source` is the resolved local SGL.
    virtual Answer send(SoftQp &qp, const Spans &source, bool solicited,
                       std::optional<UINT32> invalidate) = 0;
    // RDMA Write of `source` to (token, address) at the peer.
    virtual Answer write(SoftQp &qp, const Spans &source, UINT32 token, UINT64 address) = 0;
    // RDMA Read of `sink`'s length from (token, address) at the peer, into `sink`.
    virtual Answer read(SoftQp &qp, const Spans &sink, UINT32 token, UINT64 address) = 0;

    // How many requests of the QP this channel carries at once (Answer::later each), and how
    // many Reads among them: more than one only where the answers come back in posting order,
    // so that completing them in the order they come keeps NDK's completion order
    // (soft_pipeline.hpp; soft_transfer.cpp, pump()).
    virtual PipelineLimits pipeline_limits() const { return {}; }

    // A receive was posted at this end: a send of the peer waiting for one may go on.
    virtual void receive_posted(Hold hold) = 0;
    // This end's connection failed (an error completion): the peer's QP goes to the error
    // state and flushes too (ND2 QP error model, digest 4.2).
    virtual void fail_peer() = 0;
};

// Both ends in this process: the peer QP's target side is called directly.
class InprocChannel final : public Channel {
public:
    explicit InprocChannel(SoftQp &peer) : peer_(peer) {}

    Answer send(SoftQp &qp, const Spans &source, bool solicited,
               std::optional<UINT32> invalidate) override;
    Answer write(SoftQp &qp, const Spans &source, UINT32 token, UINT64 address) override;
    Answer read(SoftQp &qp, const Spans &sink, UINT32 token, UINT64 address) override;
    void receive_posted(Hold hold) override;
    void fail_peer() override;

private:
    SoftQp &peer_;
};

} // namespace ndk::soft
