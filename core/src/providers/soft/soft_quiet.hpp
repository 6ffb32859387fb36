// What the soft provider's read-only knob `quiescent` gathers from the transports of this
// process before it answers (soft_provider.cpp, docs/knobs.md): the progress threads'
// mutexes, each held from the moment its transport was looked at until the answer is made, so
// that what one transport showed cannot change while the others are looked at; and the ends
// of the connections seen, each open end with the end it talks to.  A peer in another process
// may send at any time, so every end an open end talks to must have been seen here too, and
// must have taken in everything the open end sent.
//
// An end is named the same way by both sides: tcp by its 4-tuple as that side sees it (the
// peer's is the reverse), shm by the connection's segment and the side.  What an end has taken
// in is the transport's to say (tcp: the bytes read and whether the stream's end was; shm says
// nothing, its rings are looked at instead).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ndk::soft {

// How much of one direction of a connection has crossed: its bytes, and its end.
struct Crossed {
    std::uint64_t bytes = 0;
    bool end = false;
    bool operator==(const Crossed &) const = default;
};

class QuietLedger {
public:
    // Keep `lock` until the answer is made.
    void hold(std::unique_lock<std::recursive_mutex> lock) { held_.push_back(std::move(lock)); }

    // An end of a connection, seen in this process, and what it has taken in from its peer.
    void end_here(const std::string &name, Crossed taken = {})
    {
        End &end = here_[name];
        ++end.seen;
        end.taken = taken;
    }
    // An end seen here is open and talks to `peer`, which must be here too, having taken in
    // `sent`: everything this end sent.
    void needs(const std::string &peer, Crossed sent = {})
    {
        needed_.emplace_back(peer, sent);
    }

    // Every end that an open end talks to was seen here once (two ends of one name cannot be
    // told apart) and has taken in what it was sent, and no end is needed twice.
    bool ends_meet() const
    {
        std::map<std::string, unsigned> needs;
        for (const auto &[peer, sent] : needed_) {
            const auto it = here_.find(peer);
            if (it == here_.end() || it->second.seen != 1 || it->second.taken != sent ||
                ++needs[peer] > 1)
                return false;
        }
        return true;
    }

private:
    struct End {
        unsigned seen = 0;
        Crossed taken;
    };
    std::map<std::string, End> here_;
    std::vector<std::pair<std::string, Crossed>> needed_;
    std::vector<std::unique_lock<std::recursive_mutex>> held_;
};

} // namespace ndk::soft
