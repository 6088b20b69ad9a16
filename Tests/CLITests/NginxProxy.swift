import Foundation

/// Debian's nginx as a user puts it in front of a home server: TLS on a loopback port with a
/// certificate from a private CA, proxying to `photodrain serve`, and nginx's defaults otherwise
/// (a 1 MB `client_max_body_size`, request buffering, HTTP/1.0 to the backend). It is its own
/// process with its own configuration under `prefix`, stopped when the test ends: the package's
/// service, and whatever listens on port 80, play no part.
final class NginxProxy {
    /// The nginx binary, when the package is installed (Scripts/bootstrap installs it).
    static let binary: String? = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The TLS port nginx listens on (127.0.0.1).
    let port: Int
    let prefix: String
    private let process: Process

    /// Starts nginx under `prefix` (created) on a free loopback port, serving `certificate`/`key`
    /// and proxying to 127.0.0.1:`backendPort`; returns once it listens. Throws, with nginx's
    /// error log, when it will not start.
    init(prefix: String, certificate: String, key: String, backendPort: Int) throws {
        guard let binary = Self.binary else { throw CLIFixtureError("nginx is not installed") }
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        self.prefix = prefix
        var tried: [Int] = []
        while true {
            // A port below Linux's ephemeral range, so no client connection holds it; another
            // listener may, and then the next one is tried.
            let port = Int.random(in: 20_000..<32_000)
            tried.append(port)
            let config = prefix + "/nginx.conf"
            try Data(Self.configuration(prefix: prefix, port: port, certificate: certificate, key: key,
                                        backendPort: backendPort).utf8).write(to: URL(fileURLWithPath: config))
            try? FileManager.default.removeItem(atPath: prefix + "/nginx.pid")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            // -e: the error log from the start, before nginx reads the configuration (it would
            // otherwise open /var/log/nginx/error.log first).
            process.arguments = ["-p", prefix, "-c", config, "-e", prefix + "/error.log"]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // nginx writes its pid file once its sockets are bound.
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning && !FileManager.default.fileExists(atPath: prefix + "/nginx.pid") && Date() < deadline {
                usleep(20_000)
            }
            if process.isRunning && FileManager.default.fileExists(atPath: prefix + "/nginx.pid") {
                self.port = port
                self.process = process
                return
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let log = Self.contents(of: prefix + "/error.log")
            guard log.contains("Address already in use") && tried.count < 5 else {
                throw CLIFixtureError("nginx did not start (ports \(tried)): \(log.suffix(2000))")
            }
        }
    }

    deinit {
        // SIGTERM: nginx's fast shutdown, which ends its worker too.
        process.terminate()
        process.waitUntilExit()
    }

    /// The https URL of the receiver's upload endpoint through the proxy.
    var uploadURL: String { "https://127.0.0.1:\(port)/uploads" }

    /// nginx's access log: one line per request, with the status it answered.
    var accessLog: String { Self.contents(of: prefix + "/access.log") }

    var errorLog: String { Self.contents(of: prefix + "/error.log") }

    private static func contents(of path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The configuration: the site as Debian's example and most guides write it (Host and the
    /// X-Forwarded headers passed on), and nothing about body sizes, buffering or HTTP versions.
    static func configuration(prefix: String, port: Int, certificate: String, key: String, backendPort: Int) -> String {
        """
        daemon off;
        worker_processes 1;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/error.log;
        events { worker_connections 64; }
        http {
            access_log \(prefix)/access.log;
            client_body_temp_path \(prefix)/client_body;
            proxy_temp_path \(prefix)/proxy;
            fastcgi_temp_path \(prefix)/fastcgi;
            uwsgi_temp_path \(prefix)/uwsgi;
            scgi_temp_path \(prefix)/scgi;
            server {
                listen 127.0.0.1:\(port) ssl;
                server_name localhost;
                ssl_certificate \(certificate);
                ssl_certificate_key \(key);
                location / {
                    proxy_pass http://127.0.0.1:\(backendPort);
                    proxy_set_header Host $host;
                    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                    proxy_set_header X-Forwarded-Proto $scheme;
                }
            }
        }

        """
    }
}
