/**
 * `npm run ask -- --file PATH` (SPEC §24): the CLI reads each file, checks and
 * stores it, and the model gets it in its shape; a file the engine refuses
 * stops the CLI with a message naming it (exit 2), the model never called.
 * The CLI as a child process, the real `openai` SDK against the fake.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const base: Record<string, string> = {}
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^npm_/.test(k)) base[k] = v
    }
    execFile(
      process.execPath,
      ["--import", "tsx", "src/app/cli.ts", ...args],
      { cwd: ROOT, env: { ...base, ...env }, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    )
  })

describe("the CLI's --file", () => {
  it.scopedLive(
    "sends each file in the model's shape; a refused file exits 2 naming it, no model call",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped((body) => (body?.stream
          ? FakeOpenAi.sseText("A square and 2 pages.")
          : FakeOpenAi.completion({ content: "A square and 2 pages." }))
        )
        const dir = mkdtempSync(join(tmpdir(), "cli-files-"))
        const png = join(dir, "square.png")
        const pdf = join(dir, "two.pdf")
        const bad = join(dir, "fake.png")
        writeFileSync(png, Files.png(10, 10))
        writeFileSync(pdf, Files.pdf(2))
        writeFileSync(bad, "not a picture at all")
        const env = { LLM_BASE_URL: fake.url, LLM_MODEL: "fake", LLM_API_KEY: "k", LLM_MAX_RETRIES: "0" }
        const [ok, refused] = yield* Effect.promise(() =>
          Promise.all([
            cli(["--json", "--file", png, "--file", pdf, "What are these?"], env),
            cli(["--file", bad, "What is it?"], env)
          ])
        )
        assert.strictEqual(ok.code, 0, ok.stderr)
        const first = JSON.parse(ok.stdout.split("\n")[0])
        assert.strictEqual(first.event, "input")
        assert.deepStrictEqual(first.data.attachments.map((a: any) => [a.name, a.media_type]), [[
          "square.png",
          "image/png"
        ], ["two.pdf", "application/pdf"]])
        const query = fake.requests[0].body.messages[1].content
        assert.deepStrictEqual(query.map((p: any) => p.type), ["text", "image_url", "file"])
        assert.strictEqual(query[2].file.filename, "two.pdf")
        assert.strictEqual(refused.code, 2)
        assert.include(refused.stderr, `--file ${bad}: the type of the bytes could not be recognised`)
        assert.strictEqual(
          fake.requests.filter((r) => JSON.stringify(r.body).includes("What is it?")).length,
          0
        )
      }),
    180_000
  )
})
