/**
 * The CLI's `--schema FILE`: the answer is a value of the file's JSON Schema
 * (`done.output` with `--json`); a schema it cannot honour is a usage error
 * naming the keyword, before any model call. The CLI runs as a child process
 * against a fake OpenAI endpoint.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "../src/app/cliArgs.js"
import { type Output, textRenderer } from "../src/app/cliRender.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))

const cleanEnv = (): Record<string, string> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^CONTEXT_GUARD_|^npm_/.test(k)) base[k] = v
  }
  return base
}

const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "src/app/cli.ts", ...args],
        { cwd: ROOT, env: { ...cleanEnv(), ...env }, timeout: 120_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
      )
    })
  )

const WEATHER = {
  type: "object",
  properties: { city: { type: "string" }, celsius: { type: "number" } },
  required: ["city", "celsius"],
  additionalProperties: false
}

describe("npm run ask -- --schema FILE", () => {
  it("parses --schema", () => {
    const parsed = parse(["--schema", "s.json", "q"])
    assert.deepStrictEqual(parsed._tag === "Run" ? parsed.options.schemaFile : undefined, "s.json")
    assert.deepStrictEqual(parse(["--schema", " ", "q"]), { _tag: "Invalid", message: "--schema needs a file." })
  })

  it.scopedLive("--json: done.output is the value; the answer its JSON", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped((body: any) =>
        body.stream === true
          ? FakeOpenAi.sseText(`{"city": "Paris", "celsius": 21}`)
          : FakeOpenAi.completion({ content: "It is 21 degrees in Paris." })
      )
      const dir = mkdtempSync(join(tmpdir(), "cli-schema-"))
      const file = join(dir, "weather.json")
      writeFileSync(file, JSON.stringify(WEATHER))
      const env = { LLM_BASE_URL: fake.url, LLM_API_KEY: "k", LLM_MODEL: "fake-model", LLM_MAX_RETRIES: "0" }
      const run = yield* cli(["--json", "--schema", file, "Weather in Paris?"], env)
      assert.strictEqual(run.code, 0, run.stderr)
      const lines = run.stdout.trim().split("\n").map((l) => JSON.parse(l))
      const done = lines.at(-1)
      assert.strictEqual(done.event, "done")
      assert.deepStrictEqual(done.data.output, { city: "Paris", celsius: 21 })
      assert.strictEqual(done.data.answer, `{"city": "Paris", "celsius": 21}`)
      assert.strictEqual(
        fake.requests.find((r) => r.body.stream === true)?.body.response_format.json_schema.strict,
        true
      )
      // a schema the CLI cannot honour: exit 2, the keyword named, no model call
      const bad = join(dir, "bad.json")
      writeFileSync(bad, JSON.stringify({ type: "object", properties: { a: { type: "string", not: {} } } }))
      const before = fake.requests.length
      const refused = yield* cli(["--schema", bad, "q"], env)
      assert.strictEqual(refused.code, 2)
      assert.include(
        refused.stderr,
        `unsupported JSON Schema: the keyword not is not supported (keyword "not" at /properties/a/not)`
      )
      assert.strictEqual(fake.requests.length, before)
    }), 180_000)

  it("on a terminal a running call's spinner says how far it is; piped, progress prints nothing", () => {
    for (const isTTY of [true, false]) {
      let shown = ""
      const out: Output = { write: (t) => void (shown += t), error: () => {}, isTTY }
      const r = textRenderer(out, { model: "m", demo: false })
      r.event({ _tag: "ToolStart", iteration: 1, tool_name: "lab__work", tool_args: {}, tool_call_id: "c" })
      r.event({
        _tag: "ToolProgress",
        iteration: 1,
        tool_name: "lab__work",
        tool_call_id: "c",
        message: "indexing part 2 of 4",
        progress: 0.5
      })
      r.event({
        _tag: "ToolDone",
        iteration: 1,
        tool_name: "lab__work",
        observation: "indexed",
        error: null,
        iter_elapsed: 1.2,
        tool_call_id: "c"
      })
      r.close()
      const plain = shown.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")
      if (isTTY) assert.include(plain, "running lab__work: indexing part 2 of 4 (50%)…")
      else assert.notInclude(plain, "indexing part")
      assert.include(plain, "lab__work 1.20s: indexed")
    }
  })
})
