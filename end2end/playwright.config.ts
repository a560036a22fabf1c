import { defineConfig, devices } from "@playwright/test";

// The server under test: the binary `cargo leptos build` produced, started by
// scripts/e2e-server.sh against a throwaway database (dropped when it stops).
const port = Number(process.env.E2E_PORT ?? 3100);
export const baseURL = `http://127.0.0.1:${port}`;

/** Chromium's flags for an offline, headless machine (also used by specs
 * that launch a browser of their own). */
export const chromiumArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Workers from E2E_WORKERS (a whole number from 1), 3 by default: spec
 * files run side by side against the one server, each in its own tenant.
 * Three workers on a 2-core machine found two server faults (pages served
 * without their script policy, answers in another page's language), fixed
 * and tested in the server (`middleware::owner`). One more failure, seen
 * once in CI before them, is not explained: a Redis read past its 500 ms
 * bound, answered 503, while another spec issued 50,000 codes; it did not
 * come back in 13 three-worker runs since (docs/development/testing.md). */
function workers(): number {
  const raw = process.env.E2E_WORKERS ?? "3";
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`E2E_WORKERS must be a whole number from 1, not ${JSON.stringify(raw)}`);
  }
  return n;
}

export default defineConfig({
  testDir: "./tests",
  // The deploy spec spans two builds: scripts/test.sh runs it on its own,
  // once per build (DEPLOY_PHASE), after the release build.
  testIgnore: process.env.DEPLOY_PHASE ? [] : ["**/deploy.spec.ts"],
  timeout: 30_000,
  expect: { timeout: 10_000 },
  // Each spec file works in a tenant of its own (tests/course.ts
  // `specTenant`): what one spec changes (a time zone, a brand, a batch,
  // its owner's sign-ins) no other one sees, so spec files can run side by
  // side against the one server (E2E_WORKERS). A file's tests run in
  // order, in one worker.
  fullyParallel: false,
  workers: workers(),
  forbidOnly: true,
  retries: 0,
  reporter: "list",
  outputDir: "test-results",
  use: {
    baseURL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "chromium",
      use: {
        ...devices["Desktop Chrome"],
        launchOptions: {
          executablePath: "/usr/bin/chromium",
          args: chromiumArgs,
        },
      },
    },
  ],
  webServer: {
    command: `bash ../scripts/e2e-server.sh`,
    url: `${baseURL}/readyz`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: "pipe",
    stderr: "pipe",
    // SIGTERM lets scripts/e2e-server.sh drop its throwaway database.
    gracefulShutdown: { signal: "SIGTERM", timeout: 10_000 },
    env: { E2E_PORT: String(port) },
  },
});
