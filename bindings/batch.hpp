// The batch calls of ndk.Qp (post_many) and ndk.Cq (poll_into) and their record arrays
// (batch.cpp); bind_qp.cpp and bind_cq.cpp bind them as methods.
#pragma once

#include "py_support.hpp"

#include "ndk/objects.hpp"

#include <optional>

namespace ndk::py {

// The struct formats of one record (40 bytes, little-endian, no padding).
inline constexpr const char *kRequestFormat = "<QQIIQII"; // ndk::BatchRequest
inline constexpr const char *kResultFormat = "<IIQQiIQ";  // NDK_RESULT_EX

// The numpy dtype of a "request" or "result" record (needs numpy).
pyb::object numpy_dtype(const char *which);
// A zeroed array of n "request" or "result" records: numpy structured when numpy imports, else
// a bytearray of n * 40 bytes.
pyb::object new_array(const char *which, size_t n);

// Qp.post_many -> (posted, status), through Qp::post_batch with the GIL released.
pyb::tuple post_many(Qp &qp, const pyb::object &op, const pyb::object &requests, ULONG flags,
                     std::optional<UINT64> remote_address, std::optional<UINT32> remote_token,
                     const pyb::object &request_context);
// Cq.poll_into -> how many results were written into `out`.
size_t poll_into(Cq &cq, const pyb::buffer &out, size_t min_results, const pyb::object &timeout,
                 size_t offset);

} // namespace ndk::py
