// Which process image an adapter belongs to: fork() gives the child a copy of the parent's
// adapters without the threads that serve them (docs/semantics.md, FORK).
#pragma once

namespace ndk {

// How many fork()s lie between the first process that used the consumer API and this one (0
// there, 1 in its child, ...).  Cheap: one relaxed load, so every call may ask.
unsigned fork_generation();

} // namespace ndk
