import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

// Vitest's default on 2 cores is a single worker (cores - 1): the files then run one after
// another, though the slowest ones mostly wait on the server processes, databases and
// browsers they start. One worker per core (at least 2) overlaps those waits;
// TEST_WORKERS overrides it (TEST_WORKERS=1 runs the files one at a time).
const workers = Number(process.env.TEST_WORKERS) || Math.max(2, availableParallelism())

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: workers,
    minWorkers: 1,
    reporters: ["default"]
  }
})
