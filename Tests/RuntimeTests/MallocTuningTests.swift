import Runtime
import Testing

/// The allocator settings every `livevisits` process starts with, unless the operator tunes malloc.
@Suite struct MallocTuningTests {
    @Test func oneArenaPerCoreTwoAtLeastAndLargeBlocksMapped() throws {
        let two = try #require(MallocTuning.settings(environment: [:], cores: 2))
        #expect(two.arenas == 2 && two.mmapThreshold == 256 * 1024)
        #expect(MallocTuning.settings(environment: ["PATH": "/usr/bin"], cores: 1)?.arenas == 2)
        #expect(MallocTuning.settings(environment: [:], cores: 16)?.arenas == 16)
    }

    @Test(arguments: ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"])
    func theOperatorsOwnTuningWins(_ variable: String) {
        #expect(MallocTuning.settings(environment: [variable: "glibc.malloc.arena_max=8"], cores: 2) == nil)
        #expect(!MallocTuning.apply(environment: [variable: "4"], cores: 2))
    }

    @Test func glibcTakesThem() {
        // What the product does at start, done here to this process: glibc answers each mallopt with 1.
        #expect(MallocTuning.apply(environment: [:], cores: 2))
    }
}
