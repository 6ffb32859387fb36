// World::generate: the next op, chosen by weight among those the model allows, with its
// arguments resolved (object ids, sizes, free buffer ranges, flags).  Mostly valid; a few
// deliberately invalid (sizes above the adapter's limits, a bad token, a full queue) where the
// documented status or the consumer rule is known.
#include "world.hpp"

#include <functional>

namespace walk {

struct Gen {
    World &w;
    std::mt19937_64 &rng;
    uint64_t id;

    uint64_t r(uint64_t n) { return n ? rng() % n : 0; }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
    int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(r(hi - lo + 1)); }

    std::vector<int64_t> all(Kind k, const std::function<bool(Obj &)> &pred = {})
    {
        std::vector<int64_t> out;
        for (int64_t id : w.live_[static_cast<size_t>(k)]) {
            Obj *o = w.get(id, k);
            if (!pred || pred(*o))
                out.push_back(id);
        }
        return out;
    }
    int64_t pick(Kind k, const std::function<bool(Obj &)> &pred = {})
    {
        auto v = all(k, pred);
        return v.empty() ? -1 : v[r(v.size())];
    }
    int count(Kind k, int ad)
    {
        return static_cast<int>(all(k, [&](Obj &o) { return o.ad == ad; }).size());
    }
    const NDK_ADAPTER_INFO &info(int ad) { return w.info_[ad]; }
    int nad() { return static_cast<int>(w.ad_.size()); }

    // A free range of `len` bytes in the buffer of MR `mr` (offset, or -1).
    int64_t free_at(Obj &mr, int64_t len)
    {
        if (mr.fast) {
            // an offset from the fast registration's BaseVirtualAddress whose bytes are free
            if (mr.fr_state != 2 || len > static_cast<int64_t>(mr.fr_len))
                return -1;
            for (int tries = 0; tries < 6; ++tries) {
                int64_t off = static_cast<int64_t>(r(mr.fr_len - len + 1));
                std::vector<Span> spans;
                bool ok = fr_spans(mr, off, len, spans);
                for (auto &sp : spans)
                    ok = ok && sp.b->free_range(sp.off, sp.len);
                if (ok)
                    return off;
            }
            return -1;
        }
        if (!mr.buf || len > static_cast<int64_t>(mr.buf->d.size()))
            return -1;
        int64_t chunks = static_cast<int64_t>(mr.buf->busy.size());
        for (int tries = 0; tries < 6; ++tries) {
            int64_t off = static_cast<int64_t>(r(chunks)) * kChunk;
            if (off + len <= static_cast<int64_t>(mr.buf->d.size()) && mr.buf->free_range(off, len))
                return off;
        }
        return -1;
    }

    Op make(Code code, std::initializer_list<int64_t> args)
    {
        Op op;
        op.id = id;
        op.code = code;
        size_t k = 0;
        for (int64_t a : args)
            op.a[k++] = a;
        return op;
    }

    uint32_t depth_or_invalid(uint32_t max, uint32_t typical)
    {
        if (chance(0.04))
            return max + 1 + static_cast<uint32_t>(r(4)); // documented INVALID_PARAMETER
        return 1 + static_cast<uint32_t>(r(typical));
    }

    // --- candidates ------------------------------------------------------------------------

    std::optional<Op> create()
    {
        int ad = static_cast<int>(r(nad()));
        switch (r(10)) {
        case 0:
        case 1:
            if (count(Kind::Cq, ad) >= 4)
                return std::nullopt;
            return make(Code::cq_create,
                        {ad, static_cast<int64_t>(id),
                         depth_or_invalid(info(ad).MaxCqDepth, chance(0.2) ? 8 : 128)});
        case 2:
            if (count(Kind::Pd, ad) >= 2)
                return std::nullopt;
            return make(Code::pd_create, {ad, static_cast<int64_t>(id)});
        case 3:
            if (count(Kind::Connector, ad) >= 4)
                return std::nullopt;
            return make(Code::conn_create, {ad, static_cast<int64_t>(id)});
        case 4:
            if (count(Kind::Listener, ad) >= 2)
                return std::nullopt;
            return make(Code::lis_create, {ad, static_cast<int64_t>(id)});
        case 5:
            if (count(Kind::Endpoint, ad) >= 1)
                return std::nullopt;
            return make(Code::se_create, {ad, static_cast<int64_t>(id), 0});
        default: {
            int64_t pd = pick(Kind::Pd);
            if (pd < 0)
                return std::nullopt;
            Obj &p = *w.get(pd, Kind::Pd);
            auto children = [&](Kind k) {
                return all(k, [&](Obj &o) { return o.pd == pd; }).size();
            };
            switch (r(5)) {
            case 0:
            case 1:
                if (children(Kind::Mr) >= 4)
                    return std::nullopt;
                return make(Code::mr_create, {pd, static_cast<int64_t>(id), chance(0.2)});
            case 2:
                if (children(Kind::Mw) >= 2)
                    return std::nullopt;
                return make(Code::mw_create, {pd, static_cast<int64_t>(id)});
            case 3: {
                if (children(Kind::Srq) >= 1 || info(p.ad).MaxSrqDepth == 0)
                    return std::nullopt;
                uint32_t depth = depth_or_invalid(info(p.ad).MaxSrqDepth, 32);
                return make(Code::srq_create,
                            {pd, static_cast<int64_t>(id), depth, 1 + static_cast<int64_t>(r(2)),
                             chance(0.3) ? static_cast<int64_t>(r(std::min<uint32_t>(depth, 4)))
                                         : 0});
            }
            default: {
                if (children(Kind::Qp) >= 3)
                    return std::nullopt;
                int64_t rcq = pick(Kind::Cq, [&](Obj &o) { return o.ad == p.ad; });
                int64_t icq = chance(0.7) ? rcq : pick(Kind::Cq, [&](Obj &o) { return o.ad == p.ad; });
                if (rcq < 0 || icq < 0)
                    return std::nullopt;
                const auto &i = info(p.ad);
                int64_t srq = pick(Kind::Srq, [&](Obj &o) { return o.pd == pd; });
                uint32_t idepth = depth_or_invalid(i.MaxInitiatorQueueDepth, 32);
                uint32_t isge = chance(0.02) ? i.MaxInitiatorRequestSge + 1 : 1 + r(2);
                uint32_t inl = chance(0.5) ? static_cast<uint32_t>(r(std::min<ULONG>(i.MaxInlineDataSize, 256) + 1)) : 0;
                if (srq >= 0 && chance(0.4))
                    return make(Code::qps_create, {pd, static_cast<int64_t>(id), rcq, icq, srq,
                                                   idepth, isge, inl});
                return make(Code::qp_create,
                            {pd, static_cast<int64_t>(id), rcq, icq,
                             depth_or_invalid(i.MaxReceiveQueueDepth, 32), idepth,
                             1 + static_cast<int64_t>(r(2)), isge, inl});
            }
            }
        }
        }
    }

    std::optional<Op> mr_state()
    {
        int64_t mr = pick(Kind::Mr);
        if (mr < 0)
            return std::nullopt;
        Obj &m = *w.get(mr, Kind::Mr);
        if (m.fast) {
            if (m.fr_init && !chance(0.1))
                return std::nullopt;
            uint64_t limit = info(m.ad).MaxRegistrationSize / 4096;
            return make(Code::frinit, {mr, chance(0.1) ? static_cast<int64_t>(limit + 1)
                                                       : 1 + static_cast<int64_t>(r(16)),
                                       chance(0.5)});
        }
        if (m.registered)
            return chance(0.15) ? std::optional(make(Code::dereg, {mr})) : std::nullopt;
        static const int64_t flags[] = {
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
            NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
            NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                NDK_MR_FLAG_RDMA_READ_SINK,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
            0};
        return make(Code::reg, {mr, chance(0.5) ? 4096 : 16384, flags[r(6)]});
    }

    // An MR of PD `pd` whose local token may name an SGE: registered with `flags`, or a
    // fast-register MR mapped (not over a released LAM) with the matching access (1.7, 2.4);
    // access 0 read, 1 write, 2 read sink.
    bool local_ok(Obj &m, int64_t pd, uint32_t flags, int access = 0)
    {
        if (m.pd != pd)
            return false;
        if (!m.fast)
            return m.registered && (m.flags & flags) == flags;
        bool sink_flag = !(info(m.ad).AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
        return m.fr_state == 2 && !m.fr_stale && m.fr_len >= 16 && chance(0.5) &&
               (access == 0 || (m.fr_flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)) &&
               (access != 2 || !sink_flag || (m.fr_flags & NDK_OP_FLAG_RDMA_READ_SINK));
    }

    bool connected(Obj &q)
    {
        Obj *peer = w.get(q.peer, Kind::Qp);
        return q.qstate == 1 && peer && peer->qstate == 1;
    }

    int64_t qp_for_post(bool receive)
    {
        return pick(Kind::Qp, [&](Obj &q) {
            if (receive && q.srq >= 0)
                return false;
            return connected(q) || chance(0.03);
        });
    }

    // one or two SGEs in MR `mr` for `total` bytes: offsets/lengths, or false
    bool sges(Obj &mr, int64_t total, int n, int64_t out[4])
    {
        out[0] = out[1] = out[2] = out[3] = 0;
        if (mr.fast)
            n = 1;
        int64_t first = n == 2 && total >= 16 ? total / 2 : total;
        out[0] = free_at(mr, std::max<int64_t>(first, 1));
        out[1] = first;
        if (out[0] < 0)
            return false;
        if (n == 2 && total - first > 0) {
            mr.buf->mark(out[0], first, true); // not overlapping the first
            out[2] = free_at(mr, total - first);
            mr.buf->mark(out[0], first, false);
            out[3] = total - first;
            if (out[2] < 0)
                return false;
        }
        return true;
    }

    int64_t intent(Obj &q, bool receive)
    {
        int64_t bits = 0;
        Obj *cq = w.get(receive ? q.rcq : q.icq, Kind::Cq);
        auto &queue = receive ? q.rq : q.iq;
        if (queue.size() >= (receive ? q.rdepth : q.idepth)) {
            if (!receive && chance(0.05))
                bits |= kIntendOverpost;
            else
                return -1;
        }
        if (cq && cq->pending >= cq->depth && !cq->tainted) {
            if (!receive && chance(0.05))
                bits |= kIntendOverrun;
            else
                return -1;
        }
        return bits;
    }

    std::optional<Op> recv()
    {
        int64_t qp = qp_for_post(true);
        if (qp < 0)
            return std::nullopt;
        Obj &q = *w.get(qp, Kind::Qp);
        if (intent(q, true) < 0)
            return std::nullopt;
        int64_t mr = pick(Kind::Mr, [&](Obj &m) {
            return local_ok(m, q.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, 1);
        });
        if (mr < 0)
            return std::nullopt;
        int n = q.rsge >= 2 && chance(0.3) ? 2 : 1;
        int64_t s[4];
        if (!sges(*w.get(mr, Kind::Mr), range(256, 1024), n, s))
            return std::nullopt;
        return make(Code::recv, {qp, mr, s[0], s[1], s[2], s[3]});
    }

    std::optional<Op> srq_recv()
    {
        int64_t srq = pick(Kind::Srq, [&](Obj &s) { return s.rq.size() < s.rdepth; });
        if (srq < 0)
            return std::nullopt;
        Obj &s = *w.get(srq, Kind::Srq);
        int64_t mr = pick(Kind::Mr, [&](Obj &m) {
            return local_ok(m, s.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, 1);
        });
        if (mr < 0)
            return std::nullopt;
        int64_t o[4];
        int n = s.rsge >= 2 && chance(0.3) ? 2 : 1;
        if (!sges(*w.get(mr, Kind::Mr), range(256, 1024), n, o))
            return std::nullopt;
        return make(Code::srq_recv, {srq, mr, o[0], o[1], o[2], o[3]});
    }

    int64_t post_flags(Obj &q, bool send_like)
    {
        int64_t f = 0;
        if (chance(0.1))
            f |= NDK_OP_FLAG_SILENT_SUCCESS;
        if (chance(0.05))
            f |= NDK_OP_FLAG_READ_FENCE;
        if (send_like && chance(0.1))
            f |= NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT;
        if (chance(0.03) && !q.defer_open)
            f |= NDK_OP_FLAG_DEFER;
        return f;
    }

    // receives the peer of `q` has for incoming sends
    int64_t peer_room(Obj &q)
    {
        Obj *peer = w.get(q.peer, Kind::Qp);
        if (!peer)
            return 0;
        if (Obj *srq = w.get(peer->srq, Kind::Srq))
            return srq->avail;
        return peer->avail;
    }

    std::optional<Op> send(bool invalidate)
    {
        int64_t qp = qp_for_post(false);
        if (qp < 0)
            return std::nullopt;
        Obj &q = *w.get(qp, Kind::Qp);
        int64_t bits = intent(q, false);
        if (bits < 0 || (peer_room(q) <= 0 && !chance(0.02)))
            return std::nullopt;
        int64_t flags = post_flags(q, true) | bits;
        int64_t total = chance(0.03) ? 0 : chance(0.02) ? range(1025, 4000) : range(8, 256);
        if (invalidate) {
            Obj *peer = w.get(q.peer, Kind::Qp);
            if (!peer)
                return std::nullopt;
            int64_t tgt = chance(0.5) ? pick(Kind::Mr, [&](Obj &m) {
                return m.fast && m.pd == peer->pd && m.fr_state == 2 && m.uses == 0;
            }) : -1;
            if (tgt < 0)
                tgt = pick(Kind::Mw, [&](Obj &m) { return m.pd == peer->pd && m.bind_state == 2; });
            int64_t mr = pick(Kind::Mr, [&](Obj &m) { return local_ok(m, q.pd, 0); });
            if (tgt < 0 || mr < 0)
                return std::nullopt;
            int64_t s[4];
            if (!sges(*w.get(mr, Kind::Mr), total, 1, s))
                return std::nullopt;
            return make(Code::sendinv, {qp, mr, s[0], s[1], flags, tgt});
        }
        if (q.inl >= 8 && total <= q.inl && total > 0 && chance(0.3)) {
            int64_t off = static_cast<int64_t>(r(w.scratch_->d.size() / kChunk - 8)) * kChunk;
            return make(Code::send, {qp, -1, off, total, 0, 0, flags | NDK_OP_FLAG_INLINE});
        }
        int64_t mr = pick(Kind::Mr, [&](Obj &m) { return local_ok(m, q.pd, 0); });
        if (mr < 0)
            return std::nullopt;
        int64_t s[4];
        int n = q.isge >= 2 && total >= 16 && chance(0.3) ? 2 : 1;
        if (chance(0.01)) // more SGEs than the QP allows: the provider refuses it inline
            n = 2;
        if (!sges(*w.get(mr, Kind::Mr), total, n, s))
            return std::nullopt;
        return make(Code::send, {qp, mr, s[0], s[1], s[2], s[3], flags});
    }

    std::optional<Op> rdma(bool write)
    {
        int64_t qp = qp_for_post(false);
        if (qp < 0)
            return std::nullopt;
        Obj &q = *w.get(qp, Kind::Qp);
        Obj *peer = w.get(q.peer, Kind::Qp);
        int64_t bits = intent(q, false);
        if (bits < 0 || !peer)
            return std::nullopt;
        bool sink_flag = !(info(q.ad).AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
        bool local_inval = !write && chance(0.15) &&
                           (info(q.ad).AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED);
        int64_t mr = pick(Kind::Mr, [&](Obj &m) {
            if (m.fast)
                return local_ok(m, q.pd, 0, write ? 0 : 2) && (!local_inval || m.uses == 0);
            if (local_inval || m.pd != q.pd || !m.registered)
                return false;
            if (!write && !(m.flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE))
                return false;
            if (!write && sink_flag && !(m.flags & NDK_MR_FLAG_RDMA_READ_SINK))
                return chance(0.05);
            return true;
        });
        if (mr < 0)
            return std::nullopt;
        int64_t len = range(1, 1024);
        Obj &lm = *w.get(mr, Kind::Mr);
        if (lm.fast)
            len = std::min<int64_t>(len, lm.fr_len);
        int64_t remote = -1, roff = 0;
        if (chance(0.4)) {
            // a fast-register MR the peer mapped (now and then one whose LAM was released:
            // the access must fail)
            int64_t need = write ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE : NDK_OP_FLAG_ALLOW_REMOTE_READ;
            remote = pick(Kind::Mr, [&](Obj &m) {
                return m.fast && m.pd == peer->pd && m.fr_state == 2 &&
                       ((m.fr_flags & need) == need || chance(0.02)) &&
                       (!m.fr_stale || chance(0.05));
            });
            if (remote >= 0) {
                Obj &m = *w.get(remote, Kind::Mr);
                len = std::min<int64_t>(len, m.fr_len);
                roff = free_at(m, len);
                if (roff < 0)
                    return std::nullopt;
            }
        }
        if (remote < 0 && chance(0.3)) {
            remote = pick(Kind::Mw, [&](Obj &m) {
                return m.pd == peer->pd && m.bind_state == 2 &&
                       (m.mw_flags & (write ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE : NDK_OP_FLAG_ALLOW_REMOTE_READ));
            });
            if (remote >= 0) {
                Obj &m = *w.get(remote, Kind::Mw);
                Obj *under = w.get(m.mw_mr, Kind::Mr);
                if (!under || !under->buf || m.mw_len == 0)
                    return std::nullopt;
                len = std::min<int64_t>(len, m.mw_len);
                roff = static_cast<int64_t>(r((m.mw_len - len) / kChunk + 1)) * kChunk;
                if (m.mw_off % kChunk)
                    return std::nullopt;
            }
        }
        if (remote < 0) {
            uint32_t need = write ? NDK_MR_FLAG_ALLOW_REMOTE_WRITE : NDK_MR_FLAG_ALLOW_REMOTE_READ;
            remote = pick(Kind::Mr, [&](Obj &m) {
                return m.pd == peer->pd && m.registered && ((m.flags & need) == need || chance(0.02));
            });
            if (remote < 0)
                return std::nullopt;
            Obj &rm = *w.get(remote, Kind::Mr);
            roff = free_at(rm, len);
            if (roff < 0)
                return std::nullopt;
        }
        int64_t off = free_at(*w.get(mr, Kind::Mr), len);
        if (off < 0)
            return std::nullopt;
        int64_t flags = post_flags(q, false) | bits;
        if (local_inval)
            flags |= NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
        return make(write ? Code::write : Code::read, {qp, mr, off, len, remote, roff, flags});
    }

    // A QP for an initiator post and the post's intent bits (nullptr: none now).
    Obj *initiator_post(int64_t &bits)
    {
        int64_t qp = qp_for_post(false);
        if (qp < 0)
            return nullptr;
        Obj *q = w.get(qp, Kind::Qp);
        bits = intent(*q, false);
        return bits < 0 ? nullptr : q;
    }

    std::optional<Op> bind()
    {
        int64_t bits = 0;
        Obj *poster = initiator_post(bits);
        if (!poster)
            return std::nullopt;
        Obj &q = *poster;
        int64_t qp = q.id;
        int64_t mw = pick(Kind::Mw, [&](Obj &m) { return m.pd == q.pd && m.bind_state == 0; });
        int64_t mr = pick(Kind::Mr, [&](Obj &m) {
            return m.pd == q.pd && m.registered && (m.flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        });
        if (mw < 0 || mr < 0)
            return std::nullopt;
        Obj &m = *w.get(mr, Kind::Mr);
        int64_t size = static_cast<int64_t>(m.buf->d.size());
        int64_t off = static_cast<int64_t>(r(size / kChunk / 2)) * kChunk;
        int64_t len = range(1, size - off);
        int64_t flags = NDK_OP_FLAG_ALLOW_REMOTE_READ;
        if (chance(0.7))
            flags |= NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
        if (chance(0.05))
            flags |= NDK_OP_FLAG_SILENT_SUCCESS;
        return make(Code::bind, {qp, mr, mw, off, len, flags | bits});
    }

    std::optional<Op> inval()
    {
        int64_t qp = qp_for_post(false);
        if (qp < 0)
            return std::nullopt;
        Obj &q = *w.get(qp, Kind::Qp);
        int64_t bits = intent(q, false);
        int64_t mw = chance(0.5) ? pick(Kind::Mr, [&](Obj &m) {
            return m.fast && m.pd == q.pd && m.fr_state == 2 && m.uses == 0;
        }) : -1;
        if (mw < 0)
            mw = pick(Kind::Mw, [&](Obj &m) { return m.pd == q.pd && m.bind_state == 2; });
        if (bits < 0 || mw < 0)
            return std::nullopt;
        return make(Code::inval, {qp, mw, bits});
    }

    // NdkBuildLAM over a region of a registered MR's buffer (either adapter's) or of a new
    // buffer; now and then with no room for the page array (BUFFER_TOO_SMALL).
    std::optional<Op> lam()
    {
        int ad = static_cast<int>(r(nad()));
        if (w.no_lam_.count(ad))
            return std::nullopt;
        int n = 0;
        for (auto &[id, l] : w.lams_)
            n += l.ad == ad;
        if (n >= 4)
            return std::nullopt;
        int64_t mr = chance(0.5) ? pick(Kind::Mr, [](Obj &m) { return !m.fast && m.registered; })
                                 : -1;
        int64_t off, len;
        if (mr >= 0) {
            int64_t size = static_cast<int64_t>(w.get(mr, Kind::Mr)->buf->d.size());
            off = static_cast<int64_t>(r(size / 2));
            len = range(std::min<int64_t>(512, size - off), size - off);
        } else {
            off = static_cast<int64_t>(r(4096));
            len = chance(0.2) ? range(1, 512) : range(512, 3 * 4096);
        }
        return make(Code::lam, {ad, static_cast<int64_t>(id), mr, off, len, chance(0.05)});
    }

    std::optional<Op> lamrel()
    {
        std::vector<int64_t> idle;
        for (auto &[id, l] : w.lams_)
            if (l.uses == 0)
                idle.push_back(id);
        if (idle.empty() || !chance(0.25))
            return std::nullopt;
        return make(Code::lamrel, {idle[r(idle.size())]});
    }

    // NdkFastRegister of an initialized fast-register MR onto pages of a LAM of the QP's
    // adapter.  Now and then on purpose: an MR already mapped, the other adapter's LAM, more
    // pages than the MR was initialized for, remote flags without RemoteAccess.
    std::optional<Op> fastreg()
    {
        bool again = chance(0.03);
        int64_t bits = 0;
        Obj *poster = initiator_post(bits);
        if (!poster)
            return std::nullopt;
        Obj &q = *poster;
        int64_t mr = pick(Kind::Mr, [&](Obj &m) {
            return m.fast && m.fr_init && m.pd == q.pd &&
                   (again ? m.fr_state == 2 : m.fr_state == 0 && m.uses == 0);
        });
        if (mr < 0)
            return std::nullopt;
        Obj &m = *w.get(mr, Kind::Mr);
        bool foreign = !again && chance(0.03);
        std::vector<int64_t> lams;
        for (auto &[id, l] : w.lams_)
            if ((l.ad == q.ad) != foreign)
                lams.push_back(id);
        if (lams.empty())
            return std::nullopt;
        int64_t lam = lams[r(lams.size())];
        const LamRec &l = w.lams_.at(lam);
        int64_t pages = static_cast<int64_t>(l.pages.size());
        int64_t n = range(1, std::min<int64_t>(pages, m.fr_pages));
        if (chance(0.03))
            n = m.fr_pages + 1; // above what the MR was initialized for: INVALID_PARAMETER
        int64_t first = static_cast<int64_t>(r(std::max<int64_t>(pages - n, 0) + 1));
        int order = n > 1 && chance(0.2);
        int64_t flags = post_flags(q, false) | bits;
        if (m.fr_remote || chance(0.02)) {
            if (chance(0.8))
                flags |= NDK_OP_FLAG_ALLOW_REMOTE_READ;
            if (chance(0.7))
                flags |= NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
        }
        if (chance(0.6))
            flags |= NDK_OP_FLAG_ALLOW_LOCAL_WRITE;
        if (chance(0.5))
            flags |= NDK_OP_FLAG_RDMA_READ_SINK;
        // FBO and Length: the mapped bytes must lie inside the LAM's region (the walker's
        // memory); the LAM's own FBO from its first page maps exactly the region
        std::vector<int64_t> map;
        for (int64_t j = 0; j < n; ++j)
            map.push_back(l.page_start(fr_page(l, first, n, order, j)));
        for (int tries = 0; tries < 8; ++tries) {
            int64_t fbo = first == 0 && !order && chance(0.5) ? l.fbo : static_cast<int64_t>(r(4096));
            int64_t most = n * 4096 - fbo;
            int64_t len = chance(0.3) ? most : range(1, most);
            std::vector<Span> spans;
            if (tries == 7 || map_spans(l.buf, map, static_cast<uint32_t>(fbo), l.off,
                                        l.off + l.len, 0, len, spans))
                return make(Code::fastreg, {q.id, mr, lam, first, n, fbo, len, flags, order});
            len = range(1, std::max<int64_t>(1, std::min<int64_t>(most, 256)));
            spans.clear();
            if (map_spans(l.buf, map, static_cast<uint32_t>(fbo), l.off, l.off + l.len, 0, len,
                          spans))
                return make(Code::fastreg, {q.id, mr, lam, first, n, fbo, len, flags, order});
        }
        return std::nullopt;
    }

    std::optional<Op> connect()
    {
        int64_t c = pick(Kind::Connector, [](Obj &o) { return o.qstate == 0 && o.conn < 0; });
        if (c < 0)
            return std::nullopt;
        Obj &co = *w.get(c, Kind::Connector);
        int64_t qp = pick(Kind::Qp, [&](Obj &q) { return q.ad == co.ad && q.qstate == 0; });
        int64_t l = pick(Kind::Listener, [](Obj &o) { return o.listening; });
        if (qp < 0 || l < 0)
            return std::nullopt;
        Obj &lo = *w.get(l, Kind::Listener);
        int64_t aqp = pick(Kind::Qp, [&](Obj &q) { return q.ad == lo.ad && q.qstate == 0 && q.id != qp; });
        if (aqp < 0)
            return std::nullopt;
        static const int modes[] = {0, 0, 0, 0, 0, 1, 1, 1, 2, 3, 4, 5, 5};
        return make(Code::connect, {c, qp, l, aqp, static_cast<int64_t>(id), modes[r(13)]});
    }

    std::optional<Op> cq_op()
    {
        int64_t cq = pick(Kind::Cq);
        if (cq < 0)
            return std::nullopt;
        Obj &c = *w.get(cq, Kind::Cq);
        switch (r(12)) {
        case 0:
            return make(Code::arm, {cq, static_cast<int64_t>(r(3))});
        case 1:
            if (!(info(c.ad).AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
                return std::nullopt;
            return make(Code::resize,
                        {cq, chance(0.05) ? static_cast<int64_t>(info(c.ad).MaxCqDepth) + 1
                                          : std::max<int64_t>(c.pending, 1) + range(0, 128)});
        case 2: {
            static const int64_t values[] = {0, 1, 10, 1000, MAXULONG};
            return make(Code::moder, {cq, values[r(5)], values[r(5)]});
        }
        default:
            return make(Code::poll, {cq, range(1, 16), !chance(0.2)});
        }
    }

    std::optional<Op> misc()
    {
        switch (r(10)) {
        case 0:
            return make(Code::query, {static_cast<int64_t>(r(nad()))});
        case 1:
            if (!w.ad_[0]->has_knobs())
                return std::nullopt;
            return make(Code::knob, {static_cast<int64_t>(r(nad())), static_cast<int64_t>(r(3)),
                                     chance(0.3)});
        case 2: {
            int64_t l = pick(Kind::Listener, [](Obj &o) { return !o.listening; });
            return l < 0 ? std::nullopt : std::optional(make(Code::listen, {l, 0}));
        }
        case 3: {
            int64_t l = pick(Kind::Listener, [](Obj &o) { return o.listening; });
            if (l < 0)
                return std::nullopt;
            return make(Code::pause, {l, !w.get(l, Kind::Listener)->paused && chance(0.3)});
        }
        case 4: {
            int64_t pd = pick(Kind::Pd);
            return pd < 0 ? std::nullopt : std::optional(make(Code::priv, {pd}));
        }
        case 5: {
            int64_t srq = pick(Kind::Srq);
            if (srq < 0)
                return std::nullopt;
            Obj &s = *w.get(srq, Kind::Srq);
            int64_t depth = chance(0.05) ? static_cast<int64_t>(info(s.ad).MaxSrqDepth) + 1
                                         : chance(0.5) ? 0 : static_cast<int64_t>(s.rq.size()) + range(1, 32);
            return make(Code::srq_mod, {srq, depth, chance(0.5) ? static_cast<int64_t>(r(2)) : 0});
        }
        case 6: {
            int64_t c = pick(Kind::Connector);
            return c < 0 ? std::nullopt
                         : std::optional(make(chance(0.5) && !w.get(c, Kind::Connector)->no_conndata
                                                  ? Code::conndata
                                                  : Code::addr,
                                              {c}));
        }
        case 7: {
            int64_t c = pick(Kind::Connector, [](Obj &o) { return o.qstate == 1; });
            return c < 0 || !chance(0.3) ? std::nullopt : std::optional(make(Code::disc, {c}));
        }
        case 8: {
            int64_t qp = pick(Kind::Qp);
            return qp < 0 || !chance(0.3) ? std::nullopt : std::optional(make(Code::flush, {qp}));
        }
        default: {
            int64_t qp = qp_for_post(false);
            if (qp < 0 || !chance(0.2))
                return std::nullopt;
            Obj &q = *w.get(qp, Kind::Qp);
            if (intent(q, false) != 0)
                return std::nullopt;
            int64_t mr = pick(Kind::Mr, [&](Obj &m) { return m.pd == q.pd && m.registered; });
            if (mr < 0)
                return std::nullopt;
            int64_t off = free_at(*w.get(mr, Kind::Mr), 16);
            return off < 0 ? std::nullopt : std::optional(make(Code::badtok, {qp, mr, off, 16}));
        }
        }
    }

    std::optional<Op> close()
    {
        std::vector<int64_t> any;
        for (auto &v : w.live_)
            any.insert(any.end(), v.begin(), v.end());
        if (any.empty())
            return std::nullopt;
        return make(Code::close, {any[r(any.size())]});
    }
};

Op World::generate(std::mt19937_64 &rng, uint64_t id)
{
    Gen g{*this, rng, id};
    struct Choice {
        int weight;
        std::function<std::optional<Op>()> make;
    };
    const Choice choices[] = {
        {6, [&] { return g.create(); }},
        {5, [&] { return g.mr_state(); }},
        {12, [&] { return g.recv(); }},
        {3, [&] { return g.srq_recv(); }},
        {14, [&] { return g.send(false); }},
        {1, [&] { return g.send(true); }},
        {8, [&] { return g.rdma(true); }},
        {6, [&] { return g.rdma(false); }},
        {2, [&] { return g.bind(); }},
        {1, [&] { return g.inval(); }},
        {2, [&] { return g.lam(); }},
        {1, [&] { return g.lamrel(); }},
        {4, [&] { return g.fastreg(); }},
        {5, [&] { return g.connect(); }},
        {20, [&] { return g.cq_op(); }},
        {3, [&] { return g.misc(); }},
        {2, [&] { return g.close(); }},
    };
    int sum = 0;
    for (const auto &c : choices)
        sum += c.weight;
    for (int tries = 0; tries < 32; ++tries) {
        int x = static_cast<int>(g.r(sum));
        for (const auto &c : choices) {
            if (x < c.weight) {
                if (auto op = c.make())
                    return *op;
                break;
            }
            x -= c.weight;
        }
    }
    // nothing possible: poll something, or create a PD
    if (auto op = g.cq_op())
        return *op;
    return g.make(Code::pd_create, {static_cast<int64_t>(g.r(g.nad())), static_cast<int64_t>(id)});
}

} // namespace walk
