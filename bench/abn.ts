/**
 * `bench/ab.ts` for any number of builds of our engine, interleaved in one process beside the
 * AI SDK (and, with `PEERS=all`, the OpenAI Agents SDK):
 *
 *   npx tsx bench/abn.ts <dir1>,<dir2>,… [generate|stream|both] [w1,w2,w3] [samples]
 *
 * Prints each build's marginal CPU µs per step and its ratio to the fastest peer of the run.
 *
 * @since 0.1.0
 */
import { oursFrom } from "./ab.js"
import * as Loop from "./loopOverhead.js"
import * as agentsSdk from "./peers/agentsSdk.js"
import * as aiSdk from "./peers/aiSdk.js"
import type { Engine, Flavour } from "./scenario.js"

const main = async () => {
  const [dirs, fl = "both", ws = "w1,w2,w3", samplesArg = "120"] = process.argv.slice(2)
  const flavours: Array<Flavour> = fl === "both" ? ["generate", "stream"] : [fl as Flavour]
  const labels = ws.split(",")
  const builds = dirs.split(",")
  for (const flavour of flavours) {
    const syn = flavour === "generate" ? "always" : "auto"
    const ours: Array<Engine> = []
    for (const [i, dir] of builds.entries()) ours.push(await oursFrom(dir, `#${i}`, syn))
    const peers: Array<Engine> = flavour === "generate" ? [aiSdk.engine] : [aiSdk.streamEngine]
    if (process.env.PEERS === "all") peers.push(flavour === "generate" ? agentsSdk.engine : agentsSdk.streamEngine)
    for (const c of Loop.cases.filter((c) => labels.includes(c.label))) {
      const r = await Loop.runCase([...ours, ...peers], c, {
        flavour,
        warmup: 15,
        samples: Number(samplesArg),
        afterGcRounds: 1,
        maxMsPerCase: 60_000,
        allocRepeats: 1,
        log: () => {}
      })
      const peerFigures = r.figures.slice(ours.length)
      const fastest = Math.min(...peerFigures.map((f) => f.marginalUs))
      const cells = r.figures.map((f) => `${f.engine} ${f.marginalUs.toFixed(0)}`)
      const ratios = r.figures.slice(0, ours.length).map((f) =>
        `${f.engine}/peer ${(f.marginalUs / fastest).toFixed(2)}`
      )
      console.log(`${flavour} ${c.label}: ${cells.join(" ")} µs | ${ratios.join(" ")} | n ${r.figures[0].samples}`)
    }
  }
}
main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
