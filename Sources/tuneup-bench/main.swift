import Foundation
let r = CodecBenchmark(megabytes: Int(ProcessInfo.processInfo.environment["MB"] ?? "64")!, chunkSize: Int(ProcessInfo.processInfo.environment["CHUNK"] ?? "65536")!, rounds: 5).run()
print("stream \(r.streamBytes) B, \(r.frames) frames")
print(String(format: "byte-sum %.0f MB/s; decode views %.0f MB/s (ratio %.2f); decode packets %.0f MB/s (ratio %.2f)",
             r.rate(r.sumSeconds) / 1e6, r.rate(r.viewSeconds) / 1e6, r.viewRatio, r.rate(r.packetSeconds) / 1e6, r.packetRatio))
