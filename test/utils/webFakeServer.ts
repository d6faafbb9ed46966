/**
 * A test-only server for the page: serves the real page assets (from WebPage's
 * asset table) and a minimal API that replays a recorded event sequence with
 * delays, with the same cursor/replay/inject/cancel semantics as the real server.
 * Used to test page rendering in isolation (e.g. hostile model output, reconnects).
 */
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { webAssets } from "../../src/server/WebPage.js"

export interface ScriptedEvent {
  readonly event: string
  readonly data: Record<string, unknown>
  readonly delay?: number
}

interface FakeRun {
  readonly conversationId: string
  readonly log: Array<{ id: number; event: string; data: unknown }>
  readonly listeners: Set<() => void>
  done: boolean
  cancelled: boolean
  readonly queued: Map<string, string>
}

export interface FakeServer {
  readonly url: string
  readonly requests: Array<{ method: string; path: string; body: unknown }>
  health: { status: string; model: string; demo: boolean }
  /** When false, injected follow-ups stay queued (recallable) and end up in `done.pending_injections`. */
  autoTakeIn: boolean
}

const readBody = (req: IncomingMessage) =>
  new Promise<unknown>((resolve) => {
    let s = ""
    req.on("data", (c) => (s += c))
    req.on("end", () => {
      try {
        resolve(s ? JSON.parse(s) : {})
      } catch {
        resolve(undefined)
      }
    })
  })

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

/** Start the fake on a random port for the scope; `script(query)` gives each run's events. */
export const fakeWebServer = (script: (query: string) => ReadonlyArray<ScriptedEvent>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const assets = new Map(webAssets().map((a) => [a.route, { ...a, body: readFileSync(a.file) }]))
      const runs = new Map<string, FakeRun>()
      const requests: FakeServer["requests"] = []
      let nextConversation = 1
      const fake: FakeServer = {
        url: "",
        requests,
        health: { status: "ok", model: "scripted", demo: false },
        autoTakeIn: true
      }

      const push = (run: FakeRun, event: string, data: unknown) => {
        if (run.done) return
        if (event === "done") {
          data = { ...(data as object), pending_injections: [...run.queued].map(([id, content]) => ({ id, content })) }
        }
        run.log.push({ id: run.log.length + 1, event, data })
        if (event === "done") run.done = true
        for (const l of run.listeners) l()
      }

      const play = async (run: FakeRun, events: ReadonlyArray<ScriptedEvent>) => {
        for (const e of events) {
          if (run.cancelled) break
          if (e.delay) await new Promise((r) => setTimeout(r, e.delay))
          if (run.cancelled) break
          push(run, e.event, e.data)
        }
        if (!run.done) {
          push(run, "done", {
            answer: "",
            iterations: 0,
            usage: { total_tokens: 0 },
            elapsed: 0,
            conversation_id: run.conversationId,
            pending_injections: []
          })
        }
      }

      const stream = (req: IncomingMessage, res: ServerResponse, run: FakeRun, after: number) => {
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
          "x-conversation-id": run.conversationId
        })
        res.write(": hello\n\n")
        let cursor = after
        const flush = () => {
          while (cursor < run.log.length) {
            const e = run.log[cursor++]
            // split frames across writes to exercise the page's parser on chunk boundaries
            const frame = `id: ${e.id}\r\nevent: ${e.event}\r\ndata: ${JSON.stringify(e.data)}\r\n\r\n`
            const cut = Math.floor(frame.length / 2)
            res.write(frame.slice(0, cut))
            res.write(frame.slice(cut))
          }
          if (run.done) {
            run.listeners.delete(flush)
            res.end()
          }
        }
        run.listeners.add(flush)
        req.on("close", () => run.listeners.delete(flush))
        flush()
      }

      const server = createServer(async (req, res) => {
        const url = new URL(req.url ?? "/", "http://x")
        const body = req.method === "POST" ? await readBody(req) : undefined
        requests.push({ method: req.method ?? "", path: url.pathname + url.search, body })
        const asset = req.method === "GET" ? assets.get(url.pathname) : undefined
        if (asset) {
          res.writeHead(200, { "content-type": asset.contentType })
          return res.end(asset.body)
        }
        const b = (body ?? {}) as Record<string, any>
        switch (`${req.method} ${url.pathname}`) {
          case "GET /health":
            return json(res, 200, fake.health)
          case "GET /api/tools":
            return json(res, 200, {
              tools: [{ name: "lookup", description: "Looks things up", source: "builtin" }],
              failed_servers: []
            })
          case "GET /api/conversations":
            return json(
              res,
              200,
              [...runs.values()].map((r) => ({
                id: r.conversationId,
                title: "Fake conversation",
                updated_at: new Date(0).toISOString(),
                turns: 1
              }))
            )
          case "POST /api/react": {
            const id = typeof b.conversation_id === "string" ? b.conversation_id : `c${nextConversation++}`
            const run: FakeRun = {
              conversationId: id,
              log: [],
              listeners: new Set(),
              done: false,
              cancelled: false,
              queued: new Map()
            }
            runs.set(id, run)
            void play(run, script(String(b.query)))
            return stream(req, res, run, 0)
          }
          case "GET /api/react/events": {
            const run = runs.get(url.searchParams.get("conversation_id") ?? "")
            if (!run) return json(res, 404, { error: "NotFound" })
            const after = Number(url.searchParams.get("after") ?? req.headers["last-event-id"] ?? 0)
            return stream(req, res, run, after)
          }
          case "POST /api/react/inject": {
            const run = runs.get(b.conversation_id)
            if (!run || run.done) return json(res, 404, { error: "no active run" })
            const id = `i${run.log.length}`
            run.queued.set(id, String(b.content))
            if (fake.autoTakeIn) {
              setTimeout(() => {
                if (run.queued.delete(id)) push(run, "inject", { type: "inject", content: b.content, id })
              }, 150)
            }
            return json(res, 200, { id })
          }
          case "POST /api/react/inject/recall": {
            const run = runs.get(b.conversation_id)
            return json(res, 200, { recalled: run?.queued.delete(String(b.id)) ?? false })
          }
          case "POST /api/react/cancel": {
            const run = runs.get(b.conversation_id)
            if (!run || run.done) return json(res, 404, { error: "no active run" })
            run.cancelled = true
            // as the real server: a cancelled run's done says so
            push(run, "done", {
              answer: "",
              iterations: 1,
              usage: { total_tokens: 1 },
              elapsed: 0.1,
              conversation_id: run.conversationId,
              pending_injections: [],
              cancelled: true
            })
            return json(res, 200, { cancelled: true })
          }
        }
        if (req.method === "GET" && url.pathname.startsWith("/api/conversations/")) {
          return json(res, 200, { messages: [] })
        }
        json(res, 404, { error: "NotFound" })
      })
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
      ;(fake as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      return { fake, server }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  ).pipe(Effect.map(({ fake }) => fake))
