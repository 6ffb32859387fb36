#include "providers/soft/tcp/tcp_stream.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace ndk::soft::tcp {

namespace {

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

} // namespace

StreamStatus TcpStream::write_now(std::vector<iovec> &pieces, std::size_t &first)
{
    while (first < pieces.size()) {
        msghdr message{};
        message.msg_iov = pieces.data() + first;
        message.msg_iovlen = std::min<std::size_t>(pieces.size() - first, IOV_MAX);
        const ssize_t sent = ::sendmsg(fd_.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            if (would_block(errno))
                return StreamStatus::queued;
            write_error_ = errno;
            return StreamStatus::broken;
        }
        tally_.written += static_cast<std::uint64_t>(sent);
        // Skip the pieces that went whole; shorten the one that went in part.
        auto left = static_cast<std::size_t>(sent);
        while (first < pieces.size() && left >= pieces[first].iov_len) {
            left -= pieces[first].iov_len;
            ++first;
        }
        if (left > 0) {
            pieces[first].iov_base = static_cast<char *>(pieces[first].iov_base) + left;
            pieces[first].iov_len -= left;
        }
    }
    return StreamStatus::ok;
}

void TcpStream::enqueue(std::span<const iovec> pieces, std::size_t first)
{
    if (head_ > 0 && head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
    }
    for (std::size_t i = first; i < pieces.size(); ++i) {
        const auto *begin = static_cast<const std::byte *>(pieces[i].iov_base);
        queue_.insert(queue_.end(), begin, begin + pieces[i].iov_len);
    }
}

StreamStatus TcpStream::write(std::span<const iovec> pieces)
{
    if (write_error_ != 0)
        return StreamStatus::broken;
    if (corked_) {
        std::size_t size = 0;
        for (const iovec &piece : pieces)
            size += piece.iov_len;
        if (queued() + size <= kCorkLimit) {
            enqueue(pieces, 0);
            return StreamStatus::queued;
        }
    }
    return write_out(pieces);
}

StreamStatus TcpStream::write(std::span<const std::byte> bytes)
{
    const iovec piece{const_cast<std::byte *>(bytes.data()), bytes.size()};
    return write(std::span(&piece, 1));
}

StreamStatus TcpStream::flush()
{
    if (write_error_ != 0)
        return StreamStatus::broken;
    if (queued() == 0)
        return StreamStatus::ok;
    return write_out({});
}

StreamStatus TcpStream::write_out(std::span<const iovec> pieces)
{
    // What waits goes first and the pieces behind it, in one sendmsg.
    std::vector<iovec> all;
    all.reserve(pieces.size() + 1);
    const bool waiting = queued() > 0;
    if (waiting)
        all.push_back({queue_.data() + head_, queued()});
    all.insert(all.end(), pieces.begin(), pieces.end());
    std::size_t first = 0;
    const StreamStatus status = write_now(all, first);
    if (!waiting) {
        if (status == StreamStatus::queued)
            enqueue(all, first);
        return status;
    }
    if (status != StreamStatus::queued || first > 0) {
        // The queue went (or the stream broke): only the pieces' rest may still wait.
        queue_.clear();
        head_ = 0;
        if (status == StreamStatus::queued)
            enqueue(all, first);
        return status;
    }
    // Part of the queue went, none of the pieces: they wait behind its rest.
    head_ = static_cast<std::size_t>(static_cast<std::byte *>(all[0].iov_base) - queue_.data());
    // Keep the queue from growing without bound at its front: drop what went once it is most.
    if (head_ > queue_.size() / 2) {
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
    enqueue(all, 1);
    return StreamStatus::queued;
}

StreamStatus TcpStream::read_some(std::span<std::byte> buffer, std::size_t &got)
{
    got = 0;
    for (;;) {
        const ssize_t n = ::recv(fd_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (n > 0) {
            got = static_cast<std::size_t>(n);
            tally_.read += got;
            return StreamStatus::ok;
        }
        if (n == 0) {
            tally_.eof = true;
            return StreamStatus::eof;
        }
        if (errno == EINTR)
            continue;
        if (would_block(errno))
            return StreamStatus::drained;
        read_error_ = errno;
        return StreamStatus::broken;
    }
}

StreamStatus TcpStream::read_available(std::vector<std::byte> &into, std::size_t limit)
{
    while (into.size() < limit) {
        const std::size_t before = into.size();
        into.resize(limit);
        std::size_t got = 0;
        const StreamStatus status = read_some(std::span(into).subspan(before), got);
        into.resize(before + got);
        if (status != StreamStatus::ok)
            return status;
    }
    return StreamStatus::ok;
}

void TcpStream::shutdown_write()
{
    ::shutdown(fd_.get(), SHUT_WR);
    tally_.shut_down = true;
}

} // namespace ndk::soft::tcp
