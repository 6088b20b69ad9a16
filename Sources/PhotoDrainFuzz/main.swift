import CLibFuzzer
import Foundation

// PhotoDrainFuzz TARGET [libFuzzer arguments | input files...]
//
// Built with `-sanitize=fuzzer` (Scripts/fuzz), it hands the remaining arguments to libFuzzer and
// fuzzes TARGET. In an ordinary build it replays the given files (or every file in the given
// folders) through TARGET, so a corpus or a crash input can be checked without the fuzzer.

nonisolated(unsafe) var selected = FuzzTarget.jpeg

/// libFuzzer's callback, under the name libFuzzer's own objects refer to (the linker wants it
/// defined even though this program's main drives libFuzzer through LLVMFuzzerRunDriver).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    selected.run(bytes)
    return 0
}

let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
guard CommandLine.arguments.count >= 2, let target = FuzzTarget(rawValue: CommandLine.arguments[1]) else {
    FileHandle.standardError.write(Data("usage: PhotoDrainFuzz \(names) [libFuzzer arguments | input files...]\n".utf8))
    exit(64)
}
selected = target

if pd_libfuzzer_linked() != 0 {
    // libFuzzer sees argv without the target name.
    var arguments = [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2)
    var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    cStrings.append(nil)
    var argc = Int32(arguments.count)
    arguments.removeAll()
    let status = cStrings.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var argv = buffer.baseAddress
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
    }
    exit(status)
}

// Replay mode.
var files: [String] = []
for path in CommandLine.arguments.dropFirst(2) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
    if isDirectory.boolValue {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        files += entries.sorted().map { path + "/" + $0 }
    } else {
        files.append(path)
    }
}
for file in files {
    guard let data = FileManager.default.contents(atPath: file) else { continue }
    target.run([UInt8](data))
}
print("PhotoDrainFuzz \(target.rawValue): replayed \(files.count) input(s) without libFuzzer")
