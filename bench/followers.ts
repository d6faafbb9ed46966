/**
 * Memory of idle followers (issue 44 item 1): what one more SSE client following a run
 * costs the server while nothing happens. The real server in a child process
 * (bench/serverProcess.ts) with a model that takes 10 minutes to answer: `RUNS` runs are
 * started (each with its own client, the `POST`), all parked in their first model call;
 * then `FOLLOWERS` more clients attach to them (`GET /api/react/events`, spread evenly over
 * the runs) and wait. The server's heap after a full GC and its RSS are read before and
 * after the followers attach: per follower = (after − before) ÷ followers. Then every
 * client hangs up and the heap is read again, until it is back within 5 MB of before or 20 s
 * have passed (nothing of a follower may stay behind).
 *
 * @since 0.1.0
 */
import * as http from "node:http"
import * as os from "node:os"
import { startServerProcess } from "./serverLoad.js"

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })

/** @since 0.1.0 */
export interface FollowerFigures {
  readonly runs: number
  readonly followers: number
  readonly heapPerFollowerBytes: number
  readonly rssPerFollowerBytes: number
  /** Heap after every client left, minus the heap before the followers attached. */
  readonly heapLeftBytes: number
  readonly load: number
  readonly error?: string
}

interface Client {
  readonly request: http.ClientRequest
  readonly ready: Promise<boolean>
}

/** Opens a request and resolves once its first SSE bytes (the `: ping`) arrived. */
const open = (port: number, method: "GET" | "POST", path: string, body?: string): Client => {
  let request!: http.ClientRequest
  const ready = new Promise<boolean>((resolve) => {
    request = http.request({
      host: "127.0.0.1",
      port,
      method,
      path,
      agent,
      headers: body === undefined
        ? {}
        : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      res.once("data", () => resolve(res.statusCode === 200))
      res.on("error", () => resolve(false))
      res.on("end", () => resolve(false))
    })
    request.on("error", () => resolve(false))
    request.end(body)
  })
  return { request, ready }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** @since 0.1.0 */
export const run = async (options: { readonly runs: number; readonly followers: number }): Promise<FollowerFigures> => {
  const server = await startServerProcess({
    BENCH_LATENCY_MS: "600000",
    BENCH_STEPS: "1",
    BENCH_CHUNKS: "1",
    REACT_MAX_ACTIVE_RUNS: String(options.runs)
  })
  const clients: Array<Client> = []
  try {
    for (let i = 0; i < options.runs; i++) {
      clients.push(
        open(server.port, "POST", "/api/react", JSON.stringify({ query: `idle ${i}`, conversation_id: `idle-${i}` }))
      )
    }
    if (!(await Promise.all(clients.map((c) => c.ready))).every(Boolean)) throw new Error("a run did not start")
    // let the runs reach their model call
    await sleep(1000)
    const before = await server.measure()
    const followers: Array<Client> = []
    for (let i = 0; i < options.followers; i++) {
      followers.push(open(server.port, "GET", `/api/react/events?conversation_id=idle-${i % options.runs}`))
      // a few at a time: the figure is the idle cost, not the cost of a burst of connections
      if (i % 50 === 49) await Promise.all(followers.slice(-50).map((c) => c.ready))
    }
    const ok = (await Promise.all(followers.map((c) => c.ready))).filter(Boolean).length
    if (ok !== options.followers) throw new Error(`${options.followers - ok} followers did not attach`)
    await sleep(1000)
    const during = await server.measure()
    for (const c of followers) c.request.destroy()
    // each hang-up ends a lease (a write to the run log): give them time on a loaded machine
    let after = await server.measure()
    for (let i = 0; i < 10 && after.heapUsed - before.heapUsed > 5 * 1024 * 1024; i++) {
      await sleep(2000)
      after = await server.measure()
    }
    return {
      runs: options.runs,
      followers: options.followers,
      heapPerFollowerBytes: (during.heapUsed - before.heapUsed) / options.followers,
      rssPerFollowerBytes: (during.rss - before.rss) / options.followers,
      heapLeftBytes: after.heapUsed - before.heapUsed,
      load: os.loadavg()[0]
    }
  } catch (e) {
    return {
      runs: options.runs,
      followers: options.followers,
      heapPerFollowerBytes: Number.NaN,
      rssPerFollowerBytes: Number.NaN,
      heapLeftBytes: Number.NaN,
      load: os.loadavg()[0],
      error: e instanceof Error ? e.message : String(e)
    }
  } finally {
    for (const c of clients) c.request.destroy()
    await server.stop()
  }
}

/** @since 0.1.0 */
export const line = (f: FollowerFigures): string =>
  f.error !== undefined
    ? `followers: ${f.error}`
    : `${f.followers} idle followers of ${f.runs} runs: heap ${
      (f.heapPerFollowerBytes / 1024).toFixed(1)
    } KB per follower, ` +
      `RSS ${(f.rssPerFollowerBytes / 1024).toFixed(1)} KB per follower; heap left after they hung up ${
        (f.heapLeftBytes / 1024).toFixed(0)
      } KB ` +
      `(load ${f.load.toFixed(1)})`

/**
 * The figure before the typed event stream (issue 44), measured with the same section on the
 * server whose followers were callbacks in a listener registry pushing into a Node `Readable`
 * (3 runs, load 9.6–11.2, 2026-12-06).
 */
const BEFORE = { heapKb: 49.3, rssKb: 39.2 }

/** The section of docs/benchmarks.md. @since 0.1.0 */
export const section = (f: FollowerFigures): string =>
  `## Idle followers

What one more SSE client following a run costs the server while nothing happens (bench/followers.ts):
${f.runs} runs parked in a 10-minute model call, then ${f.followers} clients attach to them
(\`GET /api/react/events\`, spread evenly) and wait; the server's heap after a full GC and its RSS
before and after, ÷ followers.

| | heap per follower | RSS per follower |
|---|---|---|
| before the typed stream (listener callbacks into a Node \`Readable\`) | ${BEFORE.heapKb} KB | ${BEFORE.rssKb} KB |
| now (one \`Stream\` per follower over the run's feed) | ${
    f.error ? f.error : `${(f.heapPerFollowerBytes / 1024).toFixed(1)} KB`
  } | ${f.error ? "" : `${(f.rssPerFollowerBytes / 1024).toFixed(1)} KB`} |

Heap left once every client hung up: ${
    Number.isNaN(f.heapLeftBytes) ? "n/a" : `${(f.heapLeftBytes / 1024).toFixed(0)} KB`
  } (load ${f.load.toFixed(1)}).
A follower now is one fiber of its request pulling its stream (\`Stream.toPull\`: a stream run through a
sink costs ≈ 17 KB more per client) and one subscription to the run's \`PubSub\`; heartbeats come
through the feed (one fiber for the whole registry, no timer per client). The SSE response keeps a
Node \`Readable\` as its last adapter only for the unread-backlog rule (\`SSE_MAX_BACKLOG_BYTES\`): the
platform's stream response pulls only while the socket drains, so a paused client's events would
pile up unbounded in its subscription. Measured on scratch programs (Effect 3.22.4): a fiber waiting
on a subscription ≈ 14 KB; the same through \`Stream.runForEach\` ≈ 36 KB, through \`Stream.toPull\`
≈ 20 KB; \`Stream.interruptWhenDeferred\` ≈ 33 KB more (why a shutdown reaches followers as a message
of the feed instead).
`
