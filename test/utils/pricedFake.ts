/**
 * What the server budget tests share: a fake model's price, the bill the
 * OpenAI-compatible fake reports for a request, a temporary directory with a
 * price file, and the check that a money limit without a price for the model
 * in use stops the server's start-up naming the model.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "./fakeOpenAiServer.js"
import { modelEnv } from "./killMatrix.js"
import { startServerProcess } from "./serverProcess.js"

/** USD per million tokens of the fake model. */
export const PRICE = { input: 2, output: 8 }

export interface Bill {
  readonly prompt: number
  readonly completion: number
}

/** The fake bills the request's size (4 chars a token) and at most its max_tokens. */
export const billOf = (body: any, wanted: number): Bill => ({
  prompt: Math.ceil(JSON.stringify(body.messages).length / 4),
  completion: Math.min(wanted, body.max_tokens ?? Infinity)
})

/** What a bill costs at `PRICE`. */
export const usdOf = (u: Bill): number => (u.prompt * PRICE.input + u.completion * PRICE.output) / 1e6

/** A fresh directory holding `prices.json` with these prices. */
export const setup = (prices: Record<string, unknown>) => {
  const dir = mkdtempSync(join(tmpdir(), "react-budget-"))
  const pricesFile = join(dir, "prices.json")
  writeFileSync(pricesFile, JSON.stringify(prices))
  return { dir, pricesFile }
}

/**
 * Starts the server with a money limit in `limitVariable` and a price file
 * that has no price for the fake's model; resolves to the start-up error's
 * text ("" when the server started, which the caller's assertions reject).
 */
export const startupErrorWithoutPrice = async (limitVariable: string): Promise<string> => {
  const fake = await FakeOpenAi.start([])
  const { dir, pricesFile } = setup({ "other-model": PRICE })
  try {
    return await startServerProcess({
      DATABASE_PATH: join(dir, "react.sqlite"),
      ...modelEnv(fake.url),
      [limitVariable]: "1",
      MODEL_PRICES_FILE: pricesFile
    }).then(async (s) => {
      await s.kill("SIGTERM")
      return ""
    }, (e: Error) => e.message)
  } finally {
    await fake.close()
  }
}
