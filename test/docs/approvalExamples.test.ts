/**
 * The approval examples of the docs against a live run (issue 32, "Docs out of step with the
 * product"): the real server process on the demo model with `REACT_APPROVAL_TOOLS=calculator`
 * and a fresh SQLite file; a run asks for the calculator and waits; while it waits,
 * docs/http-api.md's `$ curl … /api/react/approve` transcript is replayed (its approval id
 * replaced by the run's) and must print what the doc shows; once the run is done, the frames
 * of docs/approvals.md's "## Events" block must appear in the run's stream, in a row
 * (`id:` lines aside; ids, keys and hashes normalised as in test/docs/curlExamples.test.ts;
 * `…` is an elision).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { curl, firstDifference, normal, pattern, ROOT, transcripts } from "../utils/docExamples.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"

/** The frames (`event:` + `data:` lines, `id:` lines dropped) of the first block under `heading` that has an `event:` line. */
const docFrames = (file: string, heading: string): Array<string> => {
  const section = readFileSync(join(ROOT, file), "utf8").split(`\n${heading}\n`)[1] ?? ""
  const block = [...section.matchAll(/^```\n([\s\S]*?)^```/gm)].map((m) => m[1]).find((b) => /^event: /m.test(b))
  if (block === undefined) throw new Error(`${file}: no block of frames under "${heading}"`)
  return block.split(/\n\n+/).map((f) => f.trim()).filter((f) => f !== "")
}

/** POSTs a run and hands the raw stream to `onText` as it arrives; resolves with all of it at its end. */
const rawRun = (url: string, body: unknown, onText: (all: string) => void): Promise<string> =>
  new Promise((resolve, reject) => {
    const target = new URL("/api/react", url)
    const req = request({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: "POST",
      headers: { "content-type": "application/json" }
    }, (res) => {
      let all = ""
      res.setEncoding("utf8")
      res.on("data", (d: string) => {
        all += d
        onText(all)
      })
      res.on("end", () => resolve(all))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.setTimeout(60_000, () => req.destroy(new Error("the run did not end within 60 s")))
    req.end(JSON.stringify(body))
  })

describe("the approval examples of the docs (demo model, a live run)", () => {
  let server: ServerProcess | undefined
  let dir = ""
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "react-doc-approvals-"))
    server = await startServerProcess({
      DATABASE_PATH: join(dir, "docs.sqlite"),
      REACT_APPROVAL_TOOLS: "calculator",
      RUN_DETACH_GRACE_MS: "60000"
    })
  }, 90_000)
  afterAll(async () => {
    await server?.kill("SIGTERM")
    if (dir !== "") rmSync(dir, { recursive: true, force: true })
  })

  it("http-api.md's approve transcript answers as shown; approvals.md's frames are in the run's stream", async () => {
    const transcript = transcripts("docs/http-api.md").find((t) => t.commands[0].command.includes("/api/react/approve"))
    assert.isDefined(transcript, "docs/http-api.md has the approve transcript")
    const first = transcript!.commands[0].command
    const docId = /apr_[0-9a-f]{32}/.exec(first)?.[0]
    const conversation = /"conversation_id":"([^"]+)"/.exec(first)?.[1]
    assert.isDefined(docId)
    assert.isDefined(conversation)

    let approving: Promise<void> | undefined
    const failures: Array<string> = []
    const stream = await rawRun(server!.url, { query: "What is 2+3*4?", conversation_id: conversation }, (all) => {
      const live = /"status":"requested","approval_id":"(apr_[0-9a-f]{32})"/.exec(all)?.[1]
      if (live === undefined || approving !== undefined) return
      approving = (async () => {
        for (const c of transcript!.commands) {
          const actual = await curl(new URL(server!.url), c.command.replaceAll(docId!, live))
          if (!pattern(c.expected).test(normal(actual))) {
            failures.push(
              `docs/http-api.md:${c.outputLine}: $ ${c.command}\n${
                firstDifference(normal(c.expected), normal(actual))
              }\n--- server ---\n${actual}`
            )
          }
        }
      })()
    })
    assert.isDefined(approving, `the run asked for approval:\n${stream}`)
    await approving
    assert.deepStrictEqual(failures, [])

    const live = stream.split(/\n\n+/).map((f) =>
      f.split("\n").filter((l) => !l.startsWith("id: ") && !l.startsWith(":")).join("\n")
    ).filter((f) => f !== "")
    assert.match(live.at(-1) ?? "", /^event: done/, "the run ended with done")
    const doc = docFrames("docs/approvals.md", "## Events")
    const patterns = doc.map(pattern)
    const at = live.findIndex((_, i) => patterns.every((p, k) => i + k < live.length && p.test(normal(live[i + k]))))
    assert.isAtLeast(
      at,
      0,
      `docs/approvals.md "## Events": these frames are not in the run's stream, in a row:\n--- doc ---\n${
        doc.join("\n\n")
      }\n--- server (normalised) ---\n${live.map(normal).join("\n\n")}`
    )
  }, 90_000)
})
