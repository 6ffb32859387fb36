#include "ndk/close_signal.hpp"

#include <iterator>
#include <utility>

namespace ndk {

CloseSignal::Watch &CloseSignal::Watch::operator=(Watch &&other) noexcept
{
    if (this != &other) {
        reset();
        signal_ = std::move(other.signal_);
        at_ = other.at_;
    }
    return *this;
}

CloseSignal::Watch::~Watch() { reset(); }

void CloseSignal::Watch::reset()
{
    if (!signal_)
        return;
    std::lock_guard lock(signal_->mu_);
    signal_->wakes_.erase(at_);
    signal_.reset();
}

CloseSignal::Watch CloseSignal::watch(const std::shared_ptr<CloseSignal> &signal, Wake wake)
{
    std::lock_guard lock(signal->mu_);
    signal->wakes_.push_back(std::move(wake));
    return Watch(signal, std::prev(signal->wakes_.end()));
}

void CloseSignal::notify()
{
    // A wake takes only the lock of what its waiter waits on (an event queue's, a Call's),
    // which no thread holds while it registers or removes a wake: no cycle with mu_.
    std::lock_guard lock(mu_);
    for (const Wake &wake : wakes_)
        wake();
}

} // namespace ndk
