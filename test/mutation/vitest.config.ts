/**
 * The test files of mutation runs (`npm run mutate`, stryker.config.json): the
 * unit and in-process tests that cover the engine's core — the loop, the
 * context guard, guardrails, hooks, approvals, JSON extraction, structured calls and the
 * durable journal. No browser, no spawned process, no PostgreSQL: every mutant
 * runs the tests that cover it, so these must be fast.
 */
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: [
      "test/ReactAgent.*.test.ts",
      "test/ContextGuard.test.ts",
      "test/ContextGuardIncremental.test.ts",
      "test/ContextGuard.cut.test.ts",
      "test/ContextGuard.units.test.ts",
      "test/ContextGuard.plan.test.ts",
      "test/ContextGuard.transcript.test.ts",
      "test/ContextGuardScan.test.ts",
      "test/Hooks.test.ts",
      "test/Hooks.results.test.ts",
      "test/HookBuiltins.test.ts",
      "test/Approvals.test.ts",
      "test/Approvals.contract.test.ts",
      "test/ExtractJson.test.ts",
      "test/ExtractJson.stages.test.ts",
      "test/ExtractJson.wholeText.test.ts",
      "test/StructuredCall.test.ts",
      "test/StructuredCall.edges.test.ts",
      "test/Output.test.ts",
      "test/Output.properties.test.ts",
      "test/Tool.progress.test.ts",
      "test/Interrupts.test.ts",
      "test/Budget.test.ts",
      "test/Guardrail.test.ts",
      "test/Guardrail.abort.test.ts",
      "test/Telemetry.test.ts",
      "test/Telemetry.layers.test.ts",
      "test/AgentTool.test.ts",
      "test/DagAgent.test.ts",
      "test/server/durableJournalKeys.test.ts",
      "test/server/durableJournalActivities.test.ts",
      "test/server/duplicateIds.test.ts",
      "test/server/resumeRace.test.ts",
      "test/server/runs.test.ts",
      "test/server/runEvents.test.ts",
      "test/server/largeToolArgs.test.ts"
    ],
    // one worker keeps the modules it loaded from file to file: a mutant's run
    // imports nothing again (the instrumented code reads the active mutant at
    // run time), which halves a run (42 s instead of 84 s for the whole set)
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"]
  }
})
