// What every parse function of the iWARP codec returns: the value, or the one error enum of
// its layer that says precisely what was wrong.  (std::expected is C++23; this is the part
// of it the codec needs.)
#pragma once

#include <cassert>
#include <optional>
#include <utility>

namespace ndk::soft::iwarp {

template <class T, class Error>
class ParseResult {
public:
    ParseResult(T value) : value_(std::move(value)) {}
    ParseResult(Error error) : error_(error) {}

    bool ok() const { return value_.has_value(); }
    explicit operator bool() const { return ok(); }
    Error error() const { return error_; }

    const T &value() const
    {
        assert(ok());
        return *value_;
    }
    const T &operator*() const { return value(); }
    const T *operator->() const { return &value(); }

private:
    std::optional<T> value_;
    Error error_{};
};

} // namespace ndk::soft::iwarp
