import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { config, defaults } from "../../src/server/ServerConfig.js"

const load = (env: Record<string, string>) =>
  Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("ServerConfig", () => {
  it.effect("defaults with an empty environment", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* load({}), defaults)
    }))

  it.effect("reads every variable; an empty API_TOKEN means no auth", () =>
    Effect.gen(function*() {
      const settings = yield* load({
        PORT: "0",
        HOST: "0.0.0.0",
        API_TOKEN: "tok",
        MAX_BODY_BYTES: "2048",
        RUN_DETACH_GRACE_MS: "0",
        DATABASE_PATH: "/tmp/x.sqlite",
        SSE_HEARTBEAT_MS: "500",
        RUN_RETENTION_MS: "3000",
        REQUEST_TIMEOUT_MS: "5000",
        HEADERS_TIMEOUT_MS: "2000",
        MAX_CONNECTIONS: "50",
        SSE_MAX_BACKLOG_BYTES: "65536"
      })
      assert.strictEqual(settings.port, 0)
      assert.strictEqual(settings.host, "0.0.0.0")
      assert.strictEqual(Redacted.value(Option.getOrThrow(settings.apiToken)), "tok")
      assert.deepStrictEqual(
        [
          settings.maxBodyBytes,
          settings.detachGraceMs,
          settings.databasePath,
          settings.heartbeatMs,
          settings.runRetentionMs
        ],
        [2048, 0, "/tmp/x.sqlite", 500, 3000]
      )
      assert.deepStrictEqual(
        [settings.requestTimeoutMs, settings.headersTimeoutMs, settings.maxConnections, settings.sseMaxBacklogBytes],
        [5000, 2000, 50, 65536]
      )
      assert.isTrue(Option.isNone((yield* load({ API_TOKEN: "  " })).apiToken))
    }))

  it.effect("CORS_ORIGINS and ALLOWED_HOSTS are comma lists, normalised; malformed entries fail naming the variable", () =>
    Effect.gen(function*() {
      const settings = yield* load({
        CORS_ORIGINS: " https://App.Example.com/ , http://localhost:5173,,",
        ALLOWED_HOSTS: "Agent.Example.com, .corp.example"
      })
      assert.deepStrictEqual(settings.corsOrigins, ["https://app.example.com", "http://localhost:5173"])
      assert.deepStrictEqual(settings.allowedHosts, ["agent.example.com", ".corp.example"])
      assert.deepStrictEqual((yield* load({ CORS_ORIGINS: "*", ALLOWED_HOSTS: "*" })).corsOrigins, ["*"])
      for (
        const [name, value] of [
          ["CORS_ORIGINS", "app.example.com"],
          ["CORS_ORIGINS", "https://app.example.com/path"],
          ["CORS_ORIGINS", "ftp://app.example.com"],
          ["ALLOWED_HOSTS", "https://agent.example.com"],
          ["ALLOWED_HOSTS", "agent.example.com:8080"]
        ]
      ) {
        const error = yield* Effect.flip(load({ [name]: value }))
        assert.include(String(error), name, `${name}=${value}`)
      }
    }))

  it.effect("a bad value fails with an error naming the variable", () =>
    Effect.gen(function*() {
      for (
        const [name, value] of [
          ["PORT", "abc"],
          ["PORT", "70000"],
          ["MAX_BODY_BYTES", "0"],
          ["RUN_DETACH_GRACE_MS", "-1"],
          ["SSE_HEARTBEAT_MS", "5"],
          ["REQUEST_TIMEOUT_MS", "10"],
          ["HEADERS_TIMEOUT_MS", "x"],
          ["MAX_CONNECTIONS", "0"],
          ["SSE_MAX_BACKLOG_BYTES", "10"],
          ["REACT_MAX_ACTIVE_RUNS", "0"],
          ["REACT_RUN_QUEUE", "-1"]
        ]
      ) {
        const error = yield* Effect.flip(load({ [name]: value }))
        assert.include(String(error), name, `${name}=${value}`)
      }
    }))

  it.effect("admission: REACT_MAX_ACTIVE_RUNS and REACT_RUN_QUEUE (a queue of 0 refuses every start beyond the active runs)", () =>
    Effect.gen(function*() {
      const settings = yield* load({ REACT_MAX_ACTIVE_RUNS: "16", REACT_RUN_QUEUE: "0" })
      assert.deepStrictEqual([settings.maxActiveRuns, settings.runQueue], [16, 0])
    }))
})
