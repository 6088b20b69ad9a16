import Foundation
import PhotoDecoding

/// A temporary folder for one end-to-end test: a library of small photos, a store path, and
/// helpers to run `photodrain` (and `photodrain serve`) in it. Removed when the test ends.
final class Workspace {
    let root: URL
    var library: String { root.appendingPathComponent("library").path }
    var store: String { root.appendingPathComponent("store.sqlite").path }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pd-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("library"), withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// The sample photos, shrunk to `shortSide` so debug-build analysis stays quick, as JPEGs.
    @discardableResult
    func addSmallSamples(shortSide: Int = 120, copies: Int = 1) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: CLI.repository.appendingPathComponent("SampleImages").path)
            .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }.sorted()
        var written: [String] = []
        for copy in 0..<copies {
            for name in names {
                let image = try PhotoDecoder.decode(CLI.sample(name), options: DecodeOptions(output: .rgb, targetShortSide: shortSide * 2))
                let small = shrink(image, shortSide: shortSide)
                let stem = (name as NSString).deletingPathExtension
                let file = copies == 1 ? "\(stem).jpg" : "set\(copy)/\(stem).jpg"
                try write(file, bytes: try ImageEncoder.jpeg(small, quality: 85 + copy % 10))
                written.append(file)
            }
        }
        return written
    }

    /// A plain gray JPEG of `width` x `height`: large photos for the memory-limit tests, cheap to
    /// make and to probe.
    func addGrayPhoto(_ relative: String, width: Int, height: Int) throws {
        let image = Image(width: width, height: height, channels: 3) { out in
            for index in 0..<out.count { out[index] = UInt8(truncatingIfNeeded: 96 + index % 7) }
        }
        try write(relative, bytes: try ImageEncoder.jpeg(image, quality: 70))
    }

    func write(_ relative: String, bytes: [UInt8]) throws {
        let url = root.appendingPathComponent("library").appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
    }

    func path(_ relative: String) -> String { root.appendingPathComponent("library").appendingPathComponent(relative).path }

    /// Nearest-neighbour shrink: good enough for test photos.
    private func shrink(_ image: Image, shortSide: Int) -> Image {
        let scale = Double(shortSide) / Double(min(image.width, image.height))
        guard scale < 1 else { return image }
        let w = max(1, Int(Double(image.width) * scale)), h = max(1, Int(Double(image.height) * scale))
        return Image(width: w, height: h, channels: image.channels) { out in
            for y in 0..<h {
                for x in 0..<w {
                    let sx = min(image.width - 1, Int(Double(x) / scale)), sy = min(image.height - 1, Int(Double(y) / scale))
                    for c in 0..<image.channels { out[(y * w + x) * image.channels + c] = image.pixels[(sy * image.width + sx) * image.channels + c] }
                }
            }
        }
    }
}

/// A `photodrain` process started in the background, to be signalled or waited for.
///
/// Its output is read by two threads doing blocking reads, not by `FileHandle.readabilityHandler`:
/// on Linux, tearing down the dispatch read source that handler installs races libdispatch's epoll
/// bookkeeping and can crash the whole test process in `_dispatch_event_loop_drain`
/// (swift-corelibs-libdispatch#949; it did, in CI).
final class Running: @unchecked Sendable {
    let process = Process()
    private let outPipe = Pipe(), errPipe = Pipe()
    private let collected = NSCondition()
    nonisolated(unsafe) private var outData = Data()
    nonisolated(unsafe) private var errData = Data()
    nonisolated(unsafe) private var streamsOpen = 2

    /// Starts `photodrain arguments...`, with `environment` laid over this process's.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = CLI.binary
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        // `run` closes the parent's copies of the write ends, so the readers see end of file.
        try process.run()
        startReader(outPipe.fileHandleForReading.fileDescriptor, stdout: true)
        startReader(errPipe.fileHandleForReading.fileDescriptor, stdout: false)
    }

    private func startReader(_ fd: Int32, stdout: Bool) {
        // The thread holds `self` until end of file, so the pipes outlive their readers.
        let thread = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                collected.lock()
                if stdout { outData.append(contentsOf: chunk[0..<n]) } else { errData.append(contentsOf: chunk[0..<n]) }
                collected.unlock()
            }
            collected.lock(); streamsOpen -= 1; collected.broadcast(); collected.unlock()
        }
        thread.start()
    }

    var stdout: String { collected.lock(); defer { collected.unlock() }; return String(decoding: outData, as: UTF8.self) }
    var stderr: String { collected.lock(); defer { collected.unlock() }; return String(decoding: errData, as: UTF8.self) }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for exit and returns the status (a signal death is 128 + signal).
    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        // Collect what is left in the pipes. A grandchild that kept them open would hold the readers
        // past the exit; wait for that only a little.
        collected.lock()
        let deadline = Date().addingTimeInterval(5)
        while streamsOpen > 0 && collected.wait(until: deadline) {}
        collected.unlock()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    /// Waits until stdout holds a line containing `text`, up to `seconds`.
    func waitForOutput(containing text: String, seconds: Double = 20) -> Bool {
        waitFor(text, in: { $0.stdout }, seconds: seconds)
    }

    /// Waits until stderr holds a line containing `text`, up to `seconds`.
    func waitForError(containing text: String, seconds: Double = 20) -> Bool {
        waitFor(text, in: { $0.stderr }, seconds: seconds)
    }

    private func waitFor(_ text: String, in stream: (Running) -> String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if stream(self).contains(text) { return true }
            if !process.isRunning { return stream(self).contains(text) }
            usleep(20_000)
        }
        return false
    }
}

/// `photodrain serve` on a free port, stopped when the test ends.
final class ServeProcess {
    let running: Running
    let url: String
    let directory: String

    init(directory: String, extra: [String] = []) throws {
        self.directory = directory
        running = try Running(["serve", "--dir", directory, "--port", "0"] + extra)
        guard running.waitForOutput(containing: "/uploads"),
              let line = running.stdout.split(separator: "\n").first(where: { $0.contains("http://") }),
              let start = line.range(of: "http://"),
              let end = line[start.lowerBound...].firstIndex(of: ",") else {
            running.signal(SIGKILL)
            throw CocoaError(.fileReadUnknown)
        }
        url = String(line[start.lowerBound..<end])
    }

    deinit {
        running.signal(SIGTERM)
        running.wait()
    }

    /// The receiver's stored objects, as its /objects listing gives them.
    func objects() throws -> [[String: Any]] {
        let base = url.replacingOccurrences(of: "/uploads", with: "/objects")
        let result = try CLI.curlJSON(base)
        return result as? [[String: Any]] ?? []
    }
}

extension CLI {
    /// GETs a URL with a tiny blocking client (URLSession is not used: FoundationNetworking is heavy).
    static func curlJSON(_ url: String) throws -> Any {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "--max-time", "10", url]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONSerialization.jsonObject(with: data)
    }
}
