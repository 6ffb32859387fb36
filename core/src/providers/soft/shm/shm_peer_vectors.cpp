#include "providers/soft/shm/shm_peer_vectors.hpp"

#include <climits>
#include <cstdint>

namespace ndk::soft::shm {

namespace {

// Appends `v` to `out` unless its length breaks the sum; false then.
bool add(const WireVector &v, std::uint64_t &sum, std::vector<iovec> &out)
{
    if (v.length > SSIZE_MAX || v.length > UINT64_MAX - sum)
        return false;
    sum += v.length;
    out.push_back({reinterpret_cast<void *>(static_cast<std::uintptr_t>(v.address)),
                   static_cast<std::size_t>(v.length)});
    return true;
}

} // namespace

PeerVectors peer_vectors(pid_t peer, const Payload &payload, std::vector<iovec> &out)
{
    out.clear();
    std::uint64_t sum = 0;
    PeerVectors result;
    if (payload.form == PayloadForm::vectors || payload.form == PayloadForm::shared_vectors) {
        out.reserve(payload.vector_count());
        for (std::size_t i = 0; i < payload.vector_count(); ++i)
            if (!add(payload.vector(i), sum, out))
                result.status = PeerVectorsStatus::malformed;
    } else if (payload.form == PayloadForm::vector_list) {
        // decode() bounded list_count by kMaxRemoteVectors: at most 16 MiB here.
        std::vector<WireVector> list(payload.list_count);
        const iovec local{list.data(), list.size() * sizeof(WireVector)};
        const iovec remote{reinterpret_cast<void *>(static_cast<std::uintptr_t>(payload.list_address)),
                           local.iov_len};
        result.copy = os::read_from(peer, {&local, 1}, {&remote, 1});
        if (result.copy.status != os::CopyStatus::ok) {
            result.status = PeerVectorsStatus::copy_failed;
            return result;
        }
        out.reserve(list.size());
        for (const WireVector &v : list)
            if (!add(v, sum, out))
                result.status = PeerVectorsStatus::malformed;
    }
    if (result.status == PeerVectorsStatus::ok && sum != payload.total_length)
        result.status = PeerVectorsStatus::malformed;
    if (result.status != PeerVectorsStatus::ok)
        out.clear();
    return result;
}

} // namespace ndk::soft::shm
