@testable import SpeakerSession
import Testing

/// `DiscoveryTracker`, the decisions of `DiscoveryClient.watch` round by round (no network): alone, and following the
/// consumer's speakers as `tuneup speaker events` does.
@Suite struct DiscoveryTrackerTests {
    static func speaker(_ id: UInt64) -> DiscoveredSpeaker {
        DiscoveredSpeaker(deviceId: id, host: "127.0.0.1", controlPort: UInt16(9000 + id), audioPort: UInt16(9100 + id), protocolVersions: 1...2,
                          deviceName: "Speaker \(id)", modelName: "Sim")
    }

    static func names(_ changes: [DiscoveryChange]) -> [String] {
        changes.map {
            switch $0 {
            case let .added(s): "+\(s.deviceId)"
            case let .removed(s): "-\(s.deviceId)"
            }
        }
    }

    @Test func addedOnceAndRemovedAfterTheMisses() {
        var tracker = DiscoveryTracker(missesBeforeRemoval: 2)
        let (a, b) = (Self.speaker(1), Self.speaker(2))
        #expect(Self.names(tracker.round([a, b])) == ["+1", "+2"])
        #expect(Self.names(tracker.round([b, a])) == [])
        #expect(Self.names(tracker.round([a])) == [], "one round missed")
        #expect(Self.names(tracker.round([a, b])) == [], "back: the count starts again")
        #expect(Self.names(tracker.round([a])) == [])
        #expect(Self.names(tracker.round([])) == ["-2"], "2 missed its second round in a row, 1 its first")
        #expect(Self.names(tracker.round([])) == ["-1"])
        #expect(Self.names(tracker.round([])) == [], "nothing known any more")
        #expect(Self.names(tracker.round([b])) == ["+2"])
        #expect(DiscoveryTracker(missesBeforeRemoval: 0).missesBeforeRemoval == 1)
    }

    /// Following: a speaker not followed is reported every round until it is (a connection that failed or ended is
    /// tried again); a followed one that misses two rounds is removed once; one followed but never seen is not.
    @Test func followingReportsUntilFollowedAndRemovesWhatIsFollowed() {
        var tracker = DiscoveryTracker(missesBeforeRemoval: 2)
        let (a, b) = (Self.speaker(1), Self.speaker(2))
        #expect(Self.names(tracker.round([a, b], following: [])) == ["+1", "+2"])
        #expect(Self.names(tracker.round([a, b], following: [1])) == ["+2"], "2 could not be connected: again")
        #expect(Self.names(tracker.round([a, b], following: [1, 2])) == [])
        #expect(Self.names(tracker.round([b], following: [1, 2])) == [])
        #expect(Self.names(tracker.round([b], following: [1, 2, 7])) == ["-1"], "7 was never seen")
        #expect(Self.names(tracker.round([b], following: [1, 2])) == [], "removed once, while the consumer still follows it")
        #expect(Self.names(tracker.round([a, b], following: [2])) == ["+1"], "it answers again")
        #expect(Self.names(tracker.round([a], following: [1])) == [], "2 no longer followed: not counted")
        #expect(Self.names(tracker.round([a], following: [1])) == [])
        #expect(Self.names(tracker.round([a], following: [1, 2])) == [], "followed again: its first miss")
        #expect(Self.names(tracker.round([a], following: [1, 2])) == ["-2"])
    }
}
