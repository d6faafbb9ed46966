/**
 * `Eval` reports as text (the summary table, per-case changes against a
 * baseline) and as one self-contained HTML page: what `npm run eval` prints and
 * writes, for suites run from your own code (`Eval.run`) too.
 *
 * @since 0.1.0
 */
import type { CaseResult, Report } from "./Eval.js"

const pad = (s: string, n: number) => (s.length >= n ? s.slice(0, n) : s + " ".repeat(n - s.length))
const padLeft = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s)

/**
 * The summary table: one row per case, then the totals.
 *
 * @since 0.1.0
 */
export const table = (report: Report): string => {
  const idWidth = Math.max(4, ...report.cases.map((c) => Math.min(40, c.id.length)))
  const header = `${pad("case", idWidth)}  result  score  tokens  latency  notes`
  const rows = report.cases.map((c) => {
    // why a case scored what it did: every score that failed or was not full (a judge's 0.6 that passed)
    const explained = c.scores.filter((s) => !s.passed || s.score < 1).map((s) => `${s.scorer}: ${s.reason}`)
    const notes = c.error !== null ? `error: ${c.error.split("\n")[0]}` : explained.join("; ")
    return `${pad(c.id, idWidth)}  ${c.passed ? "PASS  " : "FAIL  "}  ${padLeft(c.score.toFixed(2), 5)}  ${
      padLeft(String(c.tokens), 6)
    }  ${padLeft(`${c.latency_ms} ms`, 7)}  ${notes.slice(0, 100)}`
  })
  const s = report.summary
  const total = `${s.passed}/${s.cases} passed, mean score ${s.score.toFixed(3)}, ${s.tokens} tokens${
    s.cost_usd !== null ? `, $${s.cost_usd.toFixed(4)}` : ""
  }`
  return [header, "-".repeat(header.length + 10), ...rows, "-".repeat(header.length + 10), total].join("\n")
}

/**
 * Per-case changes of `report` against `baseline` (new, gone, score changes, pass/fail flips).
 *
 * @since 0.1.0
 */
export const changes = (report: Report, baseline: Report): string => {
  const before = new Map(baseline.cases.map((c) => [c.id, c]))
  const lines: Array<string> = []
  for (const c of report.cases) {
    const b = before.get(c.id)
    before.delete(c.id)
    if (b === undefined) lines.push(`+ ${c.id}: new (${c.score.toFixed(2)})`)
    else if (b.score !== c.score || b.passed !== c.passed) {
      const flip = b.passed === c.passed ? "" : c.passed ? " now PASSES" : " now FAILS"
      lines.push(`${c.score >= b.score ? "▲" : "▼"} ${c.id}: ${b.score.toFixed(2)} → ${c.score.toFixed(2)}${flip}`)
    }
  }
  for (const id of before.keys()) lines.push(`- ${id}: gone`)
  const delta = report.summary.score - baseline.summary.score
  lines.push(
    `mean score ${baseline.summary.score.toFixed(3)} → ${report.summary.score.toFixed(3)} (${delta >= 0 ? "+" : ""}${
      delta.toFixed(3)
    })`
  )
  return lines.join("\n")
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const caseHtml = (c: CaseResult, before: CaseResult | undefined): string => {
  const scores = c.scores.map((s) =>
    `<tr class="${s.passed ? "ok" : "ko"}"><td>${esc(s.scorer)}</td><td>${s.score.toFixed(2)}</td><td>${
      esc(s.reason)
    }</td></tr>`
  ).join("")
  const trace = c.trace.length === 0 ?
    "<p class=muted>no tool calls</p>" :
    `<ol>${
      c.trace.map((t) =>
        `<li><code>${esc(t.tool)}(${esc(JSON.stringify(t.args ?? {}))})</code>${
          t.error ? ` <span class=ko>error: ${esc(t.error)}</span>` : ""
        }<pre>${esc(t.observation)}</pre></li>`
      ).join("")
    }</ol>`
  const change = before === undefined ? "" : ` <span class=muted>(baseline ${before.score.toFixed(2)})</span>`
  return `<details class="case ${c.passed ? "pass" : "fail"}"${c.passed ? "" : " open"}>
<summary><b>${c.passed ? "PASS" : "FAIL"}</b> ${esc(c.id)} — score ${c.score.toFixed(2)}${change} · ${c.tokens} tokens${
    c.cost_usd !== null ? ` · $${c.cost_usd.toFixed(4)}` : ""
  } · ${c.latency_ms} ms</summary>
${c.error !== null ? `<p class=ko>error: ${esc(c.error)}</p>` : ""}
<h4>Answer</h4><pre>${esc(c.answer)}</pre>
<h4>Scores</h4><table><tr><th>scorer</th><th>score</th><th>reason</th></tr>${scores}</table>
<h4>Tool trace</h4>${trace}
</details>`
}

/**
 * The report as one HTML page (inline style, no script, no external resource).
 *
 * @since 0.1.0
 */
export const html = (report: Report, baseline?: Report): string => {
  const before = new Map((baseline?.cases ?? []).map((c) => [c.id, c]))
  const s = report.summary
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Eval report — ${s.passed}/${s.cases} passed</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}
h1{font-size:1.4rem}.summary{display:flex;gap:1.5rem;flex-wrap:wrap;background:#f4f4f6;padding:.8rem 1rem;border-radius:6px}
.summary b{display:block;font-size:1.3rem}.case{border:1px solid #ddd;border-left:6px solid #2a7;border-radius:6px;margin:.6rem 0;padding:.4rem .8rem}
.case.fail{border-left-color:#c33}summary{cursor:pointer}pre{background:#fafafa;border:1px solid #eee;padding:.5rem;white-space:pre-wrap;max-height:20rem;overflow:auto}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}.ok{color:#1a6}.ko{color:#c33}.muted{color:#888}
</style></head><body>
<h1>Eval report</h1>
<div class=summary><div><b>${s.passed}/${s.cases}</b>passed</div><div><b>${
    s.score.toFixed(3)
  }</b>mean score</div><div><b>${s.tokens}</b>tokens</div>${
    s.cost_usd !== null ? `<div><b>$${s.cost_usd.toFixed(4)}</b>cost</div>` : ""
  }<div><b>${(s.latency_ms / 1000).toFixed(2)} s</b>total latency</div>${
    baseline ? `<div><b>${baseline.summary.score.toFixed(3)}</b>baseline score</div>` : ""
  }</div>
${report.cases.map((c) => caseHtml(c, before.get(c.id))).join("\n")}
</body></html>
`
}
