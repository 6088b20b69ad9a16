// swift-tools-version:6.0
// PhotoDrain: analyse a photo library on the device and drain it safely to a server.
// The layout follows shared/DESIGN.md: C shims first, then one Swift module per pipeline stage
// (PhotoDecoding -> FaceAnalysis -> AssetStore -> Transfer -> Drain -> photodrain), with Receiver
// beside Transfer sharing only UploadProtocol.
import PackageDescription

/// Settings shared by every Swift target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// The CNN kernels and FaceAnalysis (pyramid, network runner, cascade scanner) are built optimised
/// whatever the configuration: the tests and the CLI tests run the detectors on real photos.
let kernelSettings: [SwiftSetting] = [
    .unsafeFlags(["-O"], .when(configuration: .debug)),
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
        .target(name: "CHEIF", linkerSettings: [.linkedLibrary("heif")]),
        .target(name: "CWEBP", linkerSettings: [.linkedLibrary("webp")]),
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("curl")]),
        .target(name: "CCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        .systemLibrary(name: "CSQLite"),
        .target(name: "CCPUFeatures"),
        .target(name: "CProcess"),
        .target(name: "CMalloc"),

        // MARK: Pipeline modules
        .target(name: "PhotoDecoding", dependencies: ["CJPEG", "CPNG", "CHEIF", "CWEBP"], swiftSettings: swiftSettings),
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
        .target(name: "FaceAnalysis", dependencies: ["PhotoDecoding", "CCrypto", "CNNKernels", "CNNKernelsAVX2", "CNNKernelsAVX512"],
                swiftSettings: swiftSettings + kernelSettings),
        .target(name: "AssetStore", dependencies: ["CSQLite", "UploadProtocol"], swiftSettings: swiftSettings),
        .target(name: "UploadProtocol", swiftSettings: swiftSettings),
        .target(name: "Transfer", dependencies: ["CCurl", "CCrypto", "UploadProtocol"], swiftSettings: swiftSettings),
        .target(name: "Receiver", dependencies: ["UploadProtocol", "CCrypto"], swiftSettings: swiftSettings),
        .target(
            name: "Drain",
            dependencies: ["PhotoDecoding", "FaceAnalysis", "AssetStore", "Transfer", "UploadProtocol", "CMalloc"],
            swiftSettings: swiftSettings
        ),

        // MARK: Benchmark harness for Scripts/bench-vs-opencv (times the detector alone)
        .executableTarget(name: "FaceBench", dependencies: ["FaceAnalysis", "PhotoDecoding"], swiftSettings: swiftSettings),

        // MARK: The command-line tool
        .executableTarget(
            name: "photodrain",
            dependencies: ["PhotoDecoding", "FaceAnalysis", "AssetStore", "Drain", "Transfer", "UploadProtocol", "Receiver", "CProcess"],
            swiftSettings: swiftSettings
        ),

        // MARK: Test support: a fault-injecting TCP proxy for reliability tests
        .target(name: "FaultProxy", swiftSettings: swiftSettings),

        // MARK: Reliability evidence: the fault matrix behind Scripts/reliability
        .executableTarget(name: "ReliabilityMatrix", dependencies: ["FaultProxy", "CCrypto", "PhotoDecoding"], swiftSettings: swiftSettings),
        // Fuzz targets for Scripts/fuzz (libFuzzer when built with -sanitize=fuzzer, else a replayer)
        .systemLibrary(name: "CLibFuzzer"),
        .executableTarget(
            name: "PhotoDrainFuzz",
            dependencies: ["CLibFuzzer", "PhotoDecoding", "FaceAnalysis", "Receiver", "UploadProtocol"],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests (one target per module, plus CLI tests that run the built binary)
        .testTarget(name: "PhotoDecodingTests", dependencies: ["PhotoDecoding"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "FaceAnalysisTests", dependencies: ["FaceAnalysis", "PhotoDecoding", "CNNKernels", "CNNKernelsAVX2", "CNNKernelsAVX512"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "AssetStoreTests", dependencies: ["AssetStore"], swiftSettings: swiftSettings),
        .testTarget(name: "UploadProtocolTests", dependencies: ["UploadProtocol"], swiftSettings: swiftSettings),
        .testTarget(name: "TransferTests", dependencies: ["Transfer", "UploadProtocol"], swiftSettings: swiftSettings),
        .testTarget(name: "ReceiverTests", dependencies: ["Receiver", "UploadProtocol", "CCrypto"], swiftSettings: swiftSettings),
        .testTarget(name: "DrainTests", dependencies: ["Drain", "AssetStore", "Transfer"], swiftSettings: swiftSettings),
        .testTarget(name: "FaultProxyTests", dependencies: ["FaultProxy"], swiftSettings: swiftSettings),
        .testTarget(name: "InteropTests", dependencies: ["Transfer", "Receiver", "FaultProxy", "UploadProtocol"], swiftSettings: swiftSettings),
        .testTarget(name: "CLITests", dependencies: ["photodrain", "PhotoDecoding", "FaceAnalysis", "AssetStore", "FaultProxy"], swiftSettings: swiftSettings),
        // S3 against moto (Scripts/bootstrap installs it); also runs the built CLI.
        .testTarget(name: "S3Tests", dependencies: ["Transfer", "Drain", "AssetStore", "FaultProxy", "photodrain"], swiftSettings: swiftSettings),
    ]
)
