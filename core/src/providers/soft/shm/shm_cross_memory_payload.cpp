#include "providers/soft/shm/shm_cross_memory_payload.hpp"

#include <algorithm>

namespace ndk::soft {

CrossMemoryPayload::CrossMemoryPayload(pid_t peer, std::span<const iovec> vectors)
    : peer_(peer), vectors_(vectors)
{
    for (const iovec &v : vectors_)
        length_ += v.iov_len;
}

const std::vector<iovec> &CrossMemoryPayload::local_vectors(const Spans &spans)
{
    local_.clear();
    size_t left = length_;
    for (const Span &s : spans) {
        if (left == 0)
            break;
        size_t n = std::min(s.length, left);
        local_.push_back({s.host, n});
        left -= n;
    }
    return local_;
}

bool CrossMemoryPayload::copy_to(const Spans &sink)
{
    last_ = os::read_from(peer_, local_vectors(sink), vectors_);
    return last_.status == os::CopyStatus::ok && last_.bytes == length_;
}

bool CrossMemoryPayload::copy_from(const Spans &source)
{
    last_ = os::write_to(peer_, local_vectors(source), vectors_);
    return last_.status == os::CopyStatus::ok && last_.bytes == length_;
}

} // namespace ndk::soft
