#!/usr/bin/env bash
# The project's test command: builds everything and runs the unit and integration tests, then the bad-input sweep
# (about 200 wrong arguments, files, environments and devices against the built tuneup).
# With CI=true (as in .ci/run), or with --under-load, it runs the parallel suite a second time while two CPU-bound busy
# loops hold both cores (tests must not depend on the machine's speed or load). With CI=true, or with --vm, it also:
#   - fuzzes the LightX stream decoder for 45 seconds and the Wearable, Speaker and hub decoders for 15 each (CI only);
#   - boots a Debian kernel under QEMU and drives the simulated headset through the real Linux USB and Bluetooth
#     stacks (tools/vm/e2e.sh tools/vm/tuneup; a few minutes, downloads cached in ~/.cache/tuneup-vm), then records a
#     flash with the guest's usbmon and btmon and decodes it on the host with tshark and the dissectors (tools/vm/usbmon);
#   - and builds and tests in release, the build the guest then runs (one cold build instead of two);
#   - packages that release build as a .deb and proves it on a clean Debian 12 root (tools/packaging/clean-root-test.sh:
#     install, version, probe, flash, man pages, completion, units, lintian, purge; about 90 s).
set -euo pipefail
cd "$(dirname "$0")/.."
vm=false
under_load=false
[ "${CI:-}" = "true" ] && vm=true && under_load=true
for argument in "$@"; do
    case "$argument" in
        --vm) vm=true ;;
        --under-load) under_load=true ;;
        *) echo "usage: tools/test.sh [--vm] [--under-load]" >&2; exit 64 ;;
    esac
done

# Every section's line says when it started, counted from the start of the run (.ci/run's start under CI), so that a
# slow run's log shows where the time went.
run_started=${TUNEUP_RUN_STARTED:-$(date +%s)}
section_starts=()
section_names=()
section() {
    local t=$(( $(date +%s) - run_started ))
    section_starts+=("$t")
    section_names+=("$*")
    printf '== [%d:%02d] %s\n' $(( t / 60 )) $(( t % 60 )) "$*"
}
# At the end (also of a failed run), the sections again with their lengths: the end of a long log shows where the time
# went.
timeline() {
    local end=$(( $(date +%s) - run_started )) i next
    [ ${#section_starts[@]} -gt 0 ] || return 0
    echo "== where the time went (minutes:seconds from the start of the run; length)"
    for i in "${!section_starts[@]}"; do
        next=${section_starts[$((i + 1))]:-$end}
        printf '   [%d:%02d] %4d s  %s\n' $(( section_starts[i] / 60 )) $(( section_starts[i] % 60 )) \
            $(( next - section_starts[i] )) "${section_names[$i]:0:90}"
    done
    printf '   [%d:%02d] end\n' $(( end / 60 )) $(( end % 60 ))
}
busy_loops=()
background=()
# Whatever happens, nothing this script started in the background outlives it.
cleanup() {
    [ ${#busy_loops[@]} -eq 0 ] || kill "${busy_loops[@]}" 2>/dev/null || true
    [ ${#background[@]} -eq 0 ] || kill "${background[@]}" 2>/dev/null || true
    timeline
}
trap cleanup EXIT
# What the build and the tests need (Debian packages, imgtool); a no-op when all is installed, so the command also
# works on a fresh machine and not only under .ci/run. What only the tests need (browsers, database servers, the
# broker), and the VM's kernel, QEMU and guest packages, are downloads and unpacking: they come in while the build
# computes, one after the other (apt's lock) in one background job.
section "installing what the build needs (tools/install-deps.sh build)"
tools/install-deps.sh build
mkdir -p .build
section "installing what the tests need in the background (.build/setup.log)"
if $vm; then
    { tools/install-deps.sh runtime && tools/vm/fetch.sh; } > .build/setup.log 2>&1 &
else
    tools/install-deps.sh runtime > .build/setup.log 2>&1 &
fi
setup=$!
background+=("$setup")
# Waits for the background setup (before the first test): its log's end and a failure if it failed.
setup_done() {
    [ -n "$setup" ] || return 0
    if ! wait "$setup"; then
        tail -20 .build/setup.log
        echo "installing what the tests need failed (above: the end of .build/setup.log)" >&2
        exit 1
    fi
    setup=
}
section "blocking calls off the cooperative pool (tools/check-blocking.py)"
python3 tools/check-blocking.py
section "every command names itself (tools/check-command-names.py: a derived name costs every start a conformance scan)"
python3 tools/check-command-names.py
section "the station links no simulator (tools/check-layering.py: the target graph of Package.swift)"
python3 tools/check-layering.py

if $vm; then
    # With the VM (as under CI), one release build serves both the tests and the guest: a debug build for the tests
    # plus a release build for the guest were two cold builds of every dependency, most of CI's CPU (the run took 48
    # minutes). Testable imports need -enable-testing in release; no debug information (nobody reads it here, and it
    # costs the compiler and the linker). The guest gets this tuneup (the Swift runtime linked in, see
    # Package.swift) with the system libraries it links beside it (tools/vm/build-initramfs.sh copies what ldd lists).
    build=(-c release -debug-info-format none -Xswiftc -enable-testing)
    products=.build/release
    # The package made from this build names its commit (`tuneup --version`; only CBuildInfo is rebuilt for a new one).
    if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then export TUNEUP_COMMIT=$commit; fi
else
    # Alone, the tests run on the debug build a developer's incremental builds keep warm.
    build=()
    products=.build/debug
fi
section "swift build (${build[*]:-debug}, with tests)"
swift build --build-tests ${build[@]+"${build[@]}"}
setup_done
section "swift test"
# Tests whose subject is real-time behaviour run on their own afterwards, one at a time: the line-outage test (four
# stations, a PostgreSQL server stopped for 30 s, units that leave the line on their own time; the watch-mode station on a
# simulated line), playback to simulated
# speakers over loopback (synchronisation measured in microseconds; `speaker play` controlled by other commands, where a
# speaker gives up on a stream after 3 s without audio) and discovery across network namespaces. Under the
# whole parallel suite's load on two cores they measure the load, not the code. (The descriptor-leak checks of TCP and
# Bluetooth count the whole process's descriptors, which other tests open meanwhile: CI failed on 38 → 142.)
# Also here: the link conditioner's pacing (it emulates a link on the real clock by design), the hub's streaming to
# speakers (a speaker gives up after 3 s without audio; the player's notifications when its speakers are switched off
# and on, or every one is lost for its real 3 s),
# discovery windows of a fraction of a second, and the hub page in headless Chromium (a browser's load, not its timing).
# The operator page and the line dashboard in headless Chromium: a browser each, and the dashboard's heartbeats and
# refreshes run on the real clock. CFX over AMQP: a real RabbitMQ stopped for 20 s mid-run, its start-up and the
# consumer's wait are real time (one broker per test process). The speaker receiver's capture: a real stream played on the
# host's clock into ALSA's file plugin, compared sample for sample, and its output thread's sleep between streams.
# The SPC alarm in watch mode: a simulated line whose units leave after 1.5 s without a request, as in watch mode's test.
# speaker play - from a pipe: a real stream played to a simulated speaker on the real clock, as SpeakerPlayCLITests.
# A scan and a prompt answered on the operator page: a headless Chromium driven through DevTools, as the page tests.
# An operator signing in on the operator page (SignInBrowserTests): the same, a headless Chromium through DevTools.
# LivePlaybackTests keep what only real sockets on the real clock show; their control and timing (sync timeout, a
# speaker's underrun, another controller's pause/resume/stop, a lost speaker's reconnection, a failing source's end)
# run on a ManualClock in VirtualClockPlayerTests, in the parallel run. One line each:
#   playsToTheEndInSyncSampleForSampleWithEvents: the spread between speakers and the output sample for sample, over UDP;
#   lostPacketsAreAskedForAndResent: retransmissions over lossy, jittery UDP arriving before their frames are due;
#   aSecondControllerPausesResumesAndStopsThePlayback: the resumed stream's spread between speakers over real sockets;
#   speakersAddedAndRemovedDuringPlayback: a joiner's first sound within 1 s of real time, and its spread;
#   aSpeakerThatVanishesIsReportedAndRejoinsInSync: the rejoined speaker's spread over real sockets;
#   aSourceThatFailsIsReportedWhereItStoppedAfterWhatItGaveIsPlayed: what the source gave, heard sample for sample;
#   recordingsAreWAVFilesWithRenderLogs: the WAV file and render log of a stream rendered from real UDP.
realtime='openingAndClosingManyConnectionsLeaksNoDescriptors|failuresLeakNoDescriptors|PromptBrowserTests|SignInBrowserTests|anSPCAlarmStopsTheStation|SpeakerReceiveCLITests|SpeakerReceiverTests.ReceiverTests|StationCFXCLITests|StationPageBrowserTests|LineDashboardBrowserTests|LivePlaybackTests|SpeakerPlayCLITests|SpeakerPipeCLITests|SpeakerNamespaceTests|watchModeProvisionsUnitsAsTheyArrive|cancellationWakesTheWaitPromptlyAndLeaksNothing|LinkConditionerTests|HubStreamingTests|HubPlayerNotificationTests|HubPageTests|SnapcastClientTests|discoveryFollowsSpeakersThatAppearAndVanish|listFindsSimulatedSpeakersByDiscovery|findsSpeakersAndReportsAddedAndRemoved'
# Of those, the two that mostly wait out an outage (a RabbitMQ broker stopped for 20 s, a PostgreSQL server for 30 s)
# run side by side in one process before the others: their waits overlap (57 s + 38 s one after the other).
outages='CFXBrokerTests|LineOutageTests'
# Seconds of CPU each in a debug build (seeded fuzz loops, playback simulations with sample-by-sample analysis, audio
# decoding with signal-to-noise analysis): run
# one at a time after the parallel suite, so that they do not take the cores from the timers of every other test.
heavy='FirmwareFuzzTests|RoundTripTests|FuzzTests|VirtualPlaybackTests|SeededRandomTests|StreamDecoderTests|MotionTests|FileDecodingTests|AudioInputSourceTests|HTTPSourceTests'
# Swift Testing starts every test of the parallel run at once; on two cores, 900 tests sharing two threads make every
# timer late by whatever the others compute. Eight at a time is as fast (the cores are busy either way) and a test's
# timers wait for seven others at most. (Swift Testing's own setting; swift test's --num-workers is XCTest's.)
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}
started=$(date +%s)
swift test --skip-build ${build[@]+"${build[@]}"} --parallel --skip "$realtime|$outages|$heavy"
echo "== the parallel suite took $(( $(date +%s) - started )) s"
section "swift test: CPU-heavy tests, one at a time"
swift test --skip-build ${build[@]+"${build[@]}"} --no-parallel --filter "$heavy"
if $under_load; then
    # The same suite while two busy loops hold both cores: a test that waits on wall-clock time, or code that blocks
    # Swift's cooperative pool, fails here. The loops end with the script, whatever happens.
    section "swift test again, under load: two CPU-bound busy loops on both cores"
    for _ in 1 2; do (while :; do :; done) & busy_loops+=($!); done
    started=$(date +%s)
    swift test --skip-build ${build[@]+"${build[@]}"} --parallel --skip "$realtime|$outages|$heavy"
    echo "== the parallel suite under load took $(( $(date +%s) - started )) s"
    kill "${busy_loops[@]}" 2>/dev/null || true
    busy_loops=()
fi
section "swift test: real-time tests that wait out outages, side by side"
swift test --skip-build ${build[@]+"${build[@]}"} --parallel --filter "$outages"
section "swift test: real-time tests, one at a time"
swift test --skip-build ${build[@]+"${build[@]}"} --no-parallel --filter "$realtime"
section "bad-input sweep (tools/bad-input-sweep.py)"
python3 tools/bad-input-sweep.py "$products/tuneup"

if [ "${CI:-}" = "true" ]; then
    # Two lanes, one a core (each fuzzer is one process on one core): the LightX stream decoder for 45 s; the
    # Wearable decoders, the Speaker protocol decoders and the hub's query handling for 15 s each, one after another.
    # Each lane's output goes to its log, printed when both have ended.
    section "fuzzing, two at a time: LightX (45 s) | Wearable, Speaker, hub (15 s each)"
    mkdir -p .build/fuzz-logs
    tools/fuzz/run.sh 45 > .build/fuzz-logs/lightx.log 2>&1 &
    lightx=$!
    lane=0
    { tools/fuzz/wearable/run.sh 15 && tools/fuzz/speaker/run.sh 15 && tools/fuzz/hub/run.sh 15; } \
        > .build/fuzz-logs/others.log 2>&1 || lane=$?
    wait "$lightx" || lane=$?
    tail -n 30 .build/fuzz-logs/lightx.log .build/fuzz-logs/others.log
    [ "$lane" = 0 ] || { echo "a fuzzer failed (above: the end of its log; crash inputs in tools/fuzz/*/crash-*)" >&2; exit 1; }
fi
if $vm; then
    section "USB and Bluetooth through a real kernel (QEMU)"
    TUNEUP_GUEST_BINARY="$PWD/$products/tuneup" tools/vm/e2e.sh tools/vm/tuneup --timeout 600
    section "a flash as the guest kernel sees it: usbmon and btmon captures decoded by tshark and lightx.lua (QEMU)"
    TUNEUP_GUEST_BINARY="$PWD/$products/tuneup" tools/vm/e2e.sh tools/vm/usbmon --timeout 300
    section "the Debian package on a clean Debian 12 root (tools/package.sh, tools/packaging/clean-root-test.sh)"
    rm -rf .build/package && mkdir -p .build/package
    tools/package.sh --binary "$products/tuneup" --out .build/package
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo tools/packaging/clean-root-test.sh .build/package/tuneup_*_amd64.deb
fi
section "all tests passed"
