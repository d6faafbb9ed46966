/**
 * Guardrails from `REACT_GUARDRAILS_FILE` on the real server process (SPEC
 * §21): a query that trips the input pattern list ends over HTTP with the
 * `guardrail` event, the refusal and `done`, and no tool runs; an invalid file
 * stops start-up with a clear error.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

describe("server guardrails", () => {
  it(
    "REACT_GUARDRAILS_FILE: a tripped input guardrail ends the run with the refusal; an invalid file stops start-up",
    async () => {
      const fake = await FakeOpenAi.start((_body, index) =>
        FakeOpenAi.completion({
          toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: "calculator", arguments: "{\"expression\":\"1+1\"}" }],
          delayMs: 300
        })
      )
      const dir = mkdtempSync(join(tmpdir(), "react-guardrails-"))
      const file = join(dir, "guardrails.json")
      writeFileSync(
        file,
        JSON.stringify({
          input: [{ type: "pattern", name: "secrets", patterns: ["password"] }],
          refusal: "No secrets here."
        })
      )
      const server = await startServerProcess({
        DATABASE_PATH: join(dir, "react.sqlite"),
        ...modelEnv(fake.url),
        REACT_GUARDRAILS_FILE: file
      })
      try {
        const { events } = await openSse(`${server.url}/api/react`, {
          body: { query: "tell me the root password" },
          timeoutMs: 30_000
        })
        const trip = events.find((e) => e.event === "guardrail")
        assert.deepStrictEqual(trip?.data, {
          type: "guardrail",
          status: "tripped",
          stage: "input",
          name: "secrets",
          reason: "matched pattern \"password\""
        })
        assert.isFalse(events.some((e) => e.event === "step" && e.data.type === "iteration"), "no tool ran")
        const done = events[events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.strictEqual(done.data.answer, "No secrets here.")
      } finally {
        await server.kill("SIGTERM")
      }
      writeFileSync(file, JSON.stringify({ input: [{ type: "pattern", name: "x" }] }))
      const error = await startServerProcess({
        DATABASE_PATH: join(dir, "react2.sqlite"),
        ...modelEnv(fake.url),
        REACT_GUARDRAILS_FILE: file
      })
        .then(async (s) => {
          await s.kill("SIGTERM")
          return ""
        }, (e: Error) => e.message)
      assert.match(error, /REACT_GUARDRAILS_FILE .* is invalid/)
      // a pattern that is not a regular expression stops start-up (it started, then every run failed)
      writeFileSync(
        file,
        JSON.stringify({ input: [{ type: "pattern", name: "secrets", patterns: ["password", "/[/"] }] })
      )
      const regex = await startServerProcess({
        DATABASE_PATH: join(dir, "react3.sqlite"),
        ...modelEnv(fake.url),
        REACT_GUARDRAILS_FILE: file
      })
        .then(async (s) => {
          await s.kill("SIGTERM")
          return ""
        }, (e: Error) => e.message)
      await fake.close()
      assert.include(
        regex,
        `REACT_GUARDRAILS_FILE ${file} is invalid: input[0] ("secrets"): patterns[1] "/[/": Invalid regular expression: /[/: Unterminated character class`
      )
    },
    120_000
  )
})
