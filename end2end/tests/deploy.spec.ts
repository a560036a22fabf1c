import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, expect, test, type BrowserContext } from "@playwright/test";
import { baseURL, chromiumArgs } from "../playwright.config";

// A deploy, as a returning browser meets it. scripts/test.sh builds the
// release site twice (build A, then build B with a changed stylesheet and a
// wasm compiled with another `ADMITONE_BUILD`) and runs this file against
// each (DEPLOY_PHASE=a, then b), in one browser profile whose HTTP cache
// keeps A's files for a year. B's page must name B's files, so the browser
// can never pair B's HTML with A's cached wasm, and it must hydrate cleanly.

const phase = process.env.DEPLOY_PHASE ?? "";
const state = process.env.DEPLOY_STATE ?? "";
const HASHED = /^\/pkg\/admitone\.[A-Za-z0-9_-]{22}\.(js|wasm|css)$/;
const YEAR = "public, max-age=31536000, immutable";

type Names = { js: string; wasm: string; css: string };

async function profile(): Promise<BrowserContext> {
  return chromium.launchPersistentContext(join(state, "profile"), {
    executablePath: "/usr/bin/chromium",
    args: chromiumArgs,
    baseURL,
  });
}

/** Opens the home page, waits for hydration, and reads the bundle's names
 * from the page (the hydration script's preloads and the stylesheet). */
async function visit(context: BrowserContext) {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  await page.goto("/");
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  const path = async (selector: string) =>
    new URL((await page.locator(selector).getAttribute("href")) ?? "", baseURL).pathname;
  const names: Names = {
    js: await path('head link[rel="modulepreload"][href^="/pkg/admitone."]'),
    wasm: await path('head link[rel="preload"][href^="/pkg/admitone."][href$=".wasm"]'),
    css: await path('head link[rel="stylesheet"]#leptos'),
  };
  // A year only where the name pins the bytes (the hash in it is theirs);
  // the rest is revalidated. The stylesheet is pinned.
  for (const name of Object.values(names)) {
    expect(name).toMatch(HASHED);
    const response = await context.request.get(name);
    expect(response.status(), name).toBe(200);
    const cacheControl = response.headers()["cache-control"];
    const pinned = createHash("md5").update(await response.body()).digest("base64url");
    if (cacheControl === YEAR) {
      expect(name.split(".")[1], `${name} is cached for a year`).toBe(pinned);
    } else {
      expect(cacheControl, name).toBe("no-cache");
    }
  }
  expect((await context.request.get(names.css)).headers()["cache-control"]).toBe(YEAR);
  const build = await page.locator("html").getAttribute("data-build");
  const mark = await page.evaluate(() =>
    getComputedStyle(document.documentElement).getPropertyValue("--deploy-build").trim(),
  );
  return { names, build, mark, errors };
}

test("a deploy never pairs the new page with the cached old bundle", async () => {
  expect(["a", "b"], "DEPLOY_PHASE").toContain(phase);
  expect(state, "DEPLOY_STATE").not.toBe("");
  const context = await profile();
  try {
    const seen = await visit(context);
    expect(seen.errors).toEqual([]);
    if (phase === "a") {
      expect(seen.build).toBe("deploy-a");
      expect(seen.mark).toBe("");
      writeFileSync(join(state, "a.json"), JSON.stringify(seen.names));
    } else {
      const before: Names = JSON.parse(readFileSync(join(state, "a.json"), "utf8"));
      // The new wasm runs (not the year-cached old one), with the new CSS.
      expect(seen.build).toBe("deploy-b");
      expect(seen.mark).toBe('"b"');
      expect(seen.names.wasm).not.toBe(before.wasm);
      expect(seen.names.css).not.toBe(before.css);
    }
  } finally {
    await context.close();
  }
});
