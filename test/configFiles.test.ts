/**
 * Every configuration file is checked whole at start-up (issue 46 item 9): a guardrails entry
 * whose pattern is not a regular expression, a price that is not finite — each stops start-up
 * with an error naming the file, the entry and the problem (the invalid pattern used to pass
 * start-up and then fail every run). Patterns are compiled once, not per run.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as AgentConfig from "../src/AgentConfig.js"
import * as Budget from "../src/Budget.js"
import * as Guardrail from "../src/Guardrail.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"

const fileOf = (name: string, text: string): string => {
  const file = join(mkdtempSync(join(tmpdir(), "react-config-")), name)
  writeFileSync(file, text)
  return file
}

describe("configuration files, checked at start-up", () => {
  it.effect("a guardrails file: a pattern that is not a regular expression names the file, the entry and the problem", () =>
    Effect.gen(function*() {
      const file = fileOf(
        "guardrails.json",
        JSON.stringify({
          input: [{ type: "length", name: "short", max: 10 }],
          output: [{ type: "pattern", name: "secrets", patterns: ["password", "/a(/i"] }]
        })
      )
      const error = yield* Effect.flip(Guardrail.loadFile(file))
      assert.include(
        String(error),
        `REACT_GUARDRAILS_FILE ${file} is invalid: output[0] ("secrets"): patterns[1] "/a(/i": Invalid regular expression: /a(/i: Unterminated group`
      )
      // bad flags too
      const flags = fileOf(
        "flags.json",
        JSON.stringify({ input: [{ type: "pattern", name: "p", patterns: ["/a/zz"] }] })
      )
      assert.include(
        String(yield* Effect.flip(Guardrail.loadFile(flags))),
        `input[0] ("p"): patterns[0] "/a/zz": Invalid flags`
      )
      // a valid file loads
      const ok = fileOf(
        "ok.json",
        JSON.stringify({ input: [{ type: "pattern", name: "p", patterns: ["/pass(word)?/i", "secret"] }] })
      )
      assert.strictEqual((yield* Guardrail.loadFile(ok)).input.length, 1)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("the agent option: the same check when the guardrails are given in code", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(AgentConfig.resolve({
        guardrails: { input: [{ type: "pattern", name: "secrets", patterns: ["/[/"] }] }
      }))
      assert.include(String(error), `guardrails: input[0] ("secrets"): patterns[0] "/[/": Invalid regular expression`)
    }))

  it.effect("a price file: a price that is not finite (1e999 parses to Infinity) names the file and the entry", () =>
    Effect.gen(function*() {
      const file = fileOf("prices.json", `{"m": {"input": 1, "output": 1e999}}`)
      const error = String(yield* Effect.flip(Budget.loadPrices(file)))
      assert.include(error, `MODEL_PRICES_FILE ${file} is not a price table`)
      assert.include(
        error,
        `MODEL_PRICES_FILE ${file} is not a price table: m.output: Expected a finite price in USD per million tokens`
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it("patterns are compiled once per spec, not once per run", () => {
    const spec = { type: "pattern" as const, name: "p", patterns: ["/x+/"] }
    const llm = ScriptedLlm.makeUnsafe([]).service
    assert.strictEqual(Guardrail.fromSpec(spec, llm), Guardrail.fromSpec(spec, llm))
  })
})
