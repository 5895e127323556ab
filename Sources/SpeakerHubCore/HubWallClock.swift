#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock of the hub: when a speaker was last seen (`HubDevice.lastSeen`, Snapcast's `{sec, usec}` of Unix
/// time). The hub's own clock (time since it started, injected) times its waits; tests inject this one too.
public enum HubWallClock {
    /// Now, as time since the Unix epoch (CLOCK_REALTIME).
    @Sendable public static func now() -> Duration {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return .seconds(Int64(t.tv_sec)) + .nanoseconds(Int64(t.tv_nsec))
    }
}
