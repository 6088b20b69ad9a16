// swift-tools-version:6.0
// PhotoDrain: analyse a photo library on the device and drain it safely to a server.
// The layout follows shared/DESIGN.md: C shims first, then one Swift module per pipeline stage
// (PhotoDecoding -> FaceAnalysis -> AssetStore -> Transfer -> Drain -> photodrain), with Receiver
// beside Transfer sharing only UploadProtocol.
import PackageDescription

/// Settings shared by every Swift target. Release builds put each function in a section of its
/// own, so the linker can lay out the code a command runs together (`startupLayout`).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release)),
]

/// The CNN kernels and FaceAnalysis (pyramid, network runner, cascade scanner) are built optimised
/// whatever the configuration: the tests and the CLI tests run the detectors on real photos.
let kernelSettings: [SwiftSetting] = [
    .unsafeFlags(["-O"], .when(configuration: .debug)),
]

/// The package's folder: the linker runs elsewhere, so files it reads are named in full.
let packageFolder = String(#filePath.dropLast("/Package.swift".count))

/// How the tool is linked, for the memory every run pays before main:
/// - it is a position-independent executable with some 78,000 pointers the loader fixes at every
///   start. As 24-byte RELA records (gold's only form) they are 1.8 MB the loader reads in full,
///   resident in every process; lld packs them as RELR bitmaps of a few KB (glibc 2.36 reads
///   them), and the executable keeps its address randomisation;
/// - the kernel maps the 64 KB around each page of code a process first runs, so start-up code
///   spread over 17 MB of text (the tool, the Swift runtime, Foundation) made 9 MB of it resident
///   in an upload; lld lays the functions start-up, `--help` and `upload` run first and together,
///   in the order `Scripts/make-link-order` recorded (a stale list only costs memory again).
let startupLayout: [LinkerSetting] = [
    .unsafeFlags([
        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        "-Xlinker", "--symbol-ordering-file=\(packageFolder)/Scripts/photodrain.order",
        "-Xlinker", "--no-warn-symbol-ordering",
    ]),
]

let package = Package(
    name: "PhotoDrain",
    products: [
        .executable(name: "photodrain", targets: ["photodrain"]),
    ],
    targets: [
        // MARK: C shims and system libraries (the only places that touch C error handling)
        .target(name: "CJPEG", linkerSettings: [.linkedLibrary("jpeg")]),
        .target(name: "CPNG", linkerSettings: [.linkedLibrary("png16")]),
        .target(name: "CHEIF"),  // opens libheif.so.1 on the first HEIF file (pd_heif.c)
        .target(name: "CWEBP", linkerSettings: [.linkedLibrary("webp")]),
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("curl")]),
        .target(name: "CCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        .systemLibrary(name: "CSQLite"),
        .target(name: "CCPUFeatures"),
        .target(name: "CProcess"),
        .target(name: "CMalloc"),

        // MARK: What every module shares: the one libc file reader, the one SHA-256 type, markup escaping
        .target(name: "SystemSupport", dependencies: ["CCrypto"], swiftSettings: swiftSettings),

        // MARK: Pipeline modules
        .target(name: "PhotoDecoding", dependencies: ["CJPEG", "CPNG", "CHEIF", "CWEBP", "SystemSupport"], swiftSettings: swiftSettings),
        // The CNN's kernels, once for the baseline target and once compiled for AVX2 + FMA (picked
        // at run time when the processor has them). x86-64 only, as the package is. Optimised in
        // debug builds too (`kernelSettings`): unoptimised SIMD is hundreds of times slower.
        .target(name: "CNNKernels", swiftSettings: swiftSettings + kernelSettings),
        .target(
            name: "CNNKernelsAVX2",
            dependencies: ["CNNKernels", "CCPUFeatures"],
            swiftSettings: swiftSettings + kernelSettings + [.unsafeFlags(["-target-cpu", "haswell"])]
        ),
        // AVX-512 + VNNI: the int8 1x1 convolution on vpdpbusd and the Float one 16 channels wide.
        .target(
            name: "CNNKernelsAVX512",
            dependencies: ["CNNKernels", "CNNKernelsAVX2", "CCPUFeatures"],
            swiftSettings: swiftSettings + kernelSettings + [.unsafeFlags(["-target-cpu", "icelake-server"])]
        ),
        .target(name: "FaceAnalysis", dependencies: ["PhotoDecoding", "SystemSupport", "CNNKernels", "CNNKernelsAVX2", "CNNKernelsAVX512"],
                swiftSettings: swiftSettings + kernelSettings),
        // The analysis stage: one file in, one typed result out (verdict, digest, format, upright
        // size, capture date). Apart from FaceAnalysis, which stays the detector library the
        // benchmarks and the fuzzer use, so hashing files, memory budgets and malloc stay out of it.
        .target(name: "PhotoAnalysis", dependencies: ["PhotoDecoding", "FaceAnalysis", "SystemSupport", "CMalloc"], swiftSettings: swiftSettings),
        // Faces into people: incremental, deterministic clustering of face embeddings (no imports).
        .target(name: "FaceClustering", swiftSettings: swiftSettings),
        .target(name: "AssetStore", dependencies: ["CSQLite", "UploadProtocol", "FaceClustering"], swiftSettings: swiftSettings),
        .target(name: "UploadProtocol", dependencies: ["SystemSupport"], swiftSettings: swiftSettings),
        .target(name: "Transfer", dependencies: ["CCurl", "SystemSupport", "UploadProtocol"], swiftSettings: swiftSettings),
        .target(name: "Receiver", dependencies: ["UploadProtocol", "SystemSupport", "Transfer"], swiftSettings: swiftSettings),
        .target(
            name: "Drain",
            dependencies: ["FaceAnalysis", "PhotoAnalysis", "AssetStore", "Transfer", "UploadProtocol", "SystemSupport"],
            swiftSettings: swiftSettings
        ),

        // MARK: The command-line tool
        .executableTarget(
            name: "photodrain",
            dependencies: ["PhotoDecoding", "FaceAnalysis", "PhotoAnalysis", "FaceClustering", "AssetStore", "Drain", "Transfer", "UploadProtocol", "Receiver", "CProcess", "SystemSupport"],
            swiftSettings: swiftSettings,
            linkerSettings: startupLayout
        ),

        // MARK: Test support: loopback sockets for test servers and tools, a fault-injecting TCP proxy
        .target(name: "TestSupport", swiftSettings: swiftSettings),
        .target(name: "FaultProxy", dependencies: ["TestSupport"], swiftSettings: swiftSettings),

        // MARK: Reliability evidence: the fault matrix behind Scripts/reliability
        .executableTarget(name: "ReliabilityMatrix", dependencies: ["FaultProxy", "TestSupport", "SystemSupport", "PhotoDecoding"], swiftSettings: swiftSettings),
        // Fuzz targets for Scripts/fuzz (libFuzzer when built with -sanitize=fuzzer, else a replayer)
        .systemLibrary(name: "CLibFuzzer"),
        .executableTarget(
            name: "PhotoDrainFuzz",
            dependencies: ["CLibFuzzer", "PhotoDecoding", "FaceAnalysis", "Receiver", "UploadProtocol"],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests (one target per module, plus CLI tests that run the built binary)
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "PhotoDecodingTests", dependencies: ["PhotoDecoding"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "FaceAnalysisTests", dependencies: ["FaceAnalysis", "PhotoDecoding", "CNNKernels", "CNNKernelsAVX2", "CNNKernelsAVX512"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "PhotoAnalysisTests", dependencies: ["PhotoAnalysis", "FaceAnalysis", "PhotoDecoding", "SystemSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "FaceClusteringTests", dependencies: ["FaceClustering"], swiftSettings: swiftSettings),
        .testTarget(name: "AssetStoreTests", dependencies: ["AssetStore", "FaceClustering"], swiftSettings: swiftSettings),
        .testTarget(name: "UploadProtocolTests", dependencies: ["UploadProtocol"], swiftSettings: swiftSettings),
        .testTarget(name: "TransferTests", dependencies: ["Transfer", "UploadProtocol", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "ReceiverTests", dependencies: ["Receiver", "UploadProtocol", "SystemSupport", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "DrainTests", dependencies: ["Drain", "PhotoAnalysis", "FaceAnalysis", "AssetStore", "Transfer"], swiftSettings: swiftSettings),
        .testTarget(name: "FaultProxyTests", dependencies: ["FaultProxy", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "InteropTests", dependencies: ["Transfer", "Receiver", "FaultProxy", "UploadProtocol", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "CLITests", dependencies: ["photodrain", "PhotoDecoding", "FaceAnalysis", "AssetStore", "FaceClustering", "FaultProxy"], swiftSettings: swiftSettings),
        // S3 against moto (Scripts/bootstrap installs it); also runs the built CLI.
        .testTarget(name: "S3Tests", dependencies: ["Transfer", "Drain", "AssetStore", "FaultProxy", "photodrain", "SystemSupport"], swiftSettings: swiftSettings),
    ]
)
