import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the timeline of the speakers' controller (presentation times, clock sync) and of
/// the kernel's receive timestamps once converted (`KernelTimestamp`).
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
