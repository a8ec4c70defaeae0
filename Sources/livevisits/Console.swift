import Foundation

/// Writes whole lines to standard output at once (unbuffered, so progress shows as it happens).
enum Console {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
