import Headset
import LightX
import Logging
import Session
import Transport

/// The updater's connection to the device. It reopens the link when it drops (a lost connection, a device that
/// re-enumerates after jumping to its bootloader, a power cut) and retries idempotent steps on the new link.
actor DeviceLink {
    private let connect: @Sendable () async throws -> any Transport
    let sessionOptions: LightXSession.Options
    private let reconnectWait: Duration
    private let logger: Logger
    /// Every deadline and pause of the link (and the sessions it opens) is on this clock.
    private let baseClock: any Clock<Duration>
    private let clock: SessionClock
    private var headset: Headset?
    /// Whether a link was ever open (so the next open is a reconnection).
    private var everOpened = false
    /// Whether the device ever answered. Until it has, a lost or silent link is not waited for: a device that was
    /// never there does not come back (`--wait` is for one that restarts).
    private var everAnswered = false
    /// How many times the link was reopened.
    private(set) var reconnects = 0
    private(set) var retransmissions = 0
    /// Why the last link was dropped, for the reconnect events.
    private var lossReason: String?
    /// Told about every attempt to reopen a lost link.
    private var reconnectObserver: (@Sendable (ReconnectAttempt) -> Void)?

    /// One attempt to reopen a lost link.
    struct ReconnectAttempt: Sendable {
        /// 1 for the first attempt after the loss.
        var number: Int
        /// Why the link was lost.
        var reason: String
        /// Why the previous attempt failed.
        var lastError: String?

        var message: String {
            if number == 1 { return "link lost (\(reason)); reconnecting, attempt 1" }
            return "reconnecting, attempt \(number) (last: \(lastError ?? reason))"
        }
    }

    init(connect: @escaping @Sendable () async throws -> any Transport, sessionOptions: LightXSession.Options,
         reconnectWait: Duration, clock: any Clock<Duration>, logger: Logger) {
        self.connect = connect
        self.sessionOptions = sessionOptions
        self.reconnectWait = reconnectWait
        self.baseClock = clock
        self.clock = SessionClock(clock)
        self.logger = logger
    }

    /// The link's time (since it was made).
    func now() -> Duration { clock.now() }

    /// Pauses for `duration` on the link's clock.
    private func pause(_ duration: Duration) async throws {
        try await clock.sleep(clock.now() + duration)
    }

    /// Calls `observer` on every attempt to reopen a lost link (from the actor; keep it short).
    func observeReconnects(_ observer: @escaping @Sendable (ReconnectAttempt) -> Void) {
        reconnectObserver = observer
    }

    /// The open device, opening it when there is none. The first open is tried once and its error thrown as it is
    /// (a device that was never there does not come back: the CLI maps the error's type to its exit code); a reopen
    /// after a lost link is retried up to the reconnect wait.
    func device() async throws -> Headset {
        if let headset, await headset.session.isOpen { return headset }
        if let old = headset {
            retransmissions += await old.session.statistics.retransmissions
            await old.close()
            headset = nil
        }
        guard everOpened else {
            let opened = try await open()
            everOpened = true
            return opened
        }
        let deadline = clock.now() + reconnectWait
        var delay: Duration = .milliseconds(50)
        var lastError: Error?
        let reason = lossReason ?? "the link closed"
        var attempt = 0
        while clock.now() < deadline {
            try Task.checkCancellation()
            attempt += 1
            reconnectObserver?(ReconnectAttempt(number: attempt, reason: reason, lastError: lastError.map { "\($0)" }))
            do {
                let opened = try await open()
                reconnects += 1
                lossReason = nil
                return opened
            } catch let error as CancellationError {
                throw error
            } catch {
                lastError = error
                logger.debug("reconnecting: \(error)")
                try await pause(delay)
                delay = min(delay * 2, .seconds(1))
            }
        }
        let why = lastError.map { "\($0)" } ?? "no attempt finished"
        throw UpdateError(.disconnected, "the device did not come back within \(reconnectWait.shortDescription): \(why)")
    }

    private func open() async throws -> Headset {
        let transport = try await connect()
        let opened = Headset(session: LightXSession(transport: transport, options: sessionOptions, clock: baseClock, logger: logger))
        headset = opened
        return opened
    }

    /// Closes the current link (the next `device()` reopens it), after a failure `reason` when it was lost.
    func drop(because reason: String? = nil) async {
        if let reason { lossReason = reason }
        if let headset {
            retransmissions += await headset.session.statistics.retransmissions
            await headset.close()
        }
        headset = nil
    }

    /// Closes the link for good.
    func close() async { await drop() }

    /// Runs an idempotent step, reopening the link and running it again when the link fails under it.
    func retrying<T: Sendable>(_ step: (Headset) async throws -> T) async throws -> T {
        let deadline = clock.now() + reconnectWait
        while true {
            let headset = try await device()
            do {
                let value = try await step(headset)
                everAnswered = true
                return value
            } catch let error as HeadsetError where error.code == .deviceNotReady {
                // An answer: the device is starting (after a jump or a power cycle, another host's too) and asks to
                // be asked again. Before, this ended the update as a device refusal (exit 65) when a second host's
                // read came during the first host's jump into the bootloader.
                everAnswered = true
                guard clock.now() < deadline else { throw UpdateError(.notReady, "the device did not become ready within \(reconnectWait.shortDescription) (\(error.message))") }
                try await pause(.milliseconds(50))
            } catch let error as HeadsetError where error.category == .connection && error.code != .timeout {
                guard everAnswered else { throw error }
                guard clock.now() < deadline else { throw UpdateError(.disconnected, error.message) }
                logger.debug("link lost (\(error.message)); reconnecting")
                await drop(because: error.message)
            }
        }
    }

    /// Whether the device runs its bootloader, waiting while it answers NotReady or does not answer (after a jump
    /// or a power cycle), reconnecting when the link drops. Throws `.notReady` after `wait`.
    func imageType(wait: Duration, expecting wanted: Bool? = nil) async throws -> Bool {
        let deadline = clock.now() + wait
        var lastNews = "no answer"
        while true {
            try Task.checkCancellation()
            do {
                let headset = try await device()
                // Before the device ever answered, one request with the session's own timeout and retries decides.
                let type = try await headset.bootloader.imageType(timeout: everAnswered ? .milliseconds(500) : nil,
                                                                  retransmissions: everAnswered ? 0 : nil)
                everAnswered = true
                switch type {
                case .bootloader, .application:
                    let isBootloader = type == .bootloader
                    if wanted == nil || wanted == isBootloader { return isBootloader }
                    lastNews = isBootloader ? "still in the bootloader" : "still running the application"
                case .notReady:
                    lastNews = "not ready"
                }
            } catch let error as HeadsetError where error.category == .connection {
                guard everAnswered else { throw error }
                lastNews = error.message
                if error.code != .timeout { await drop(because: error.message) }
            }
            guard clock.now() < deadline else {
                let what = wanted.map { $0 ? "the bootloader" : "the application" } ?? "the device"
                throw UpdateError(.notReady, "\(what) did not become ready within \(wait.shortDescription) (\(lastNews))")
            }
            try await pause(.milliseconds(50))
        }
    }
}

