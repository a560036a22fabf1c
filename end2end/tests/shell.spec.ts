import { createHash } from "node:crypto";
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";

test("home page hydrates and its menu button works on a phone-sized screen", async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await openHydrated(page, "/");
  await expect(page).toHaveTitle("AdmitOne");
  await expect(page.getByRole("heading", { level: 1 })).toContainText("exactly the people");

  const toggle = page.getByRole("button", { name: "Menu" });
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(toggle).toHaveAttribute("aria-expanded", "false");
  await expect(nav).toBeHidden();

  await toggle.click();
  await expect(toggle).toHaveAttribute("aria-expanded", "true");
  await expect(nav).toBeVisible();

  await toggle.click();
  await expect(toggle).toHaveAttribute("aria-expanded", "false");
  await expect(nav).toBeHidden();
});

test("unknown addresses show the 404 page inside the shell", async ({ page }) => {
  const response = await openHydrated(page, "/this/does/not/exist");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Page not found" })).toBeVisible();
  await page.getByRole("link", { name: "Go to the home page" }).click();
  await expect(page).toHaveURL(/\/$/);
});

test("readiness reports both dependencies up", async ({ request }) => {
  const response = await request.get("/readyz");
  expect(response.status()).toBe(200);
  expect(await response.json()).toMatchObject({ status: "ready", postgres: "up", redis: "up" });
});

test("every page links the site icon, and the icon is served", async ({ page, request }) => {
  await openHydrated(page, "/");
  await expect(page.locator('head link[rel="icon"]')).toHaveAttribute("href", "/favicon.svg");
  const icon = await request.get("/favicon.svg");
  expect(icon.status()).toBe(200);
  expect(icon.headers()["content-type"]).toContain("image/svg+xml");
  expect(await icon.text()).toContain("<svg");
  // Browsers that ask for /favicon.ico are sent to it.
  const ico = await request.get("/favicon.ico", { maxRedirects: 0 });
  expect(ico.status()).toBe(301);
  expect(ico.headers()["location"]).toBe("/favicon.svg");
});

test("the pages' assets have hashed names, a year of caching where the name pins the bytes, and arrive compressed", async ({ page, request }) => {
  // The main module (the home page also fetches its own view's chunk).
  const wasm = page.waitForResponse((r) => /\/pkg\/admitone\.[^/]*\.wasm$/.test(new URL(r.url()).pathname));
  await openHydrated(page, "/");
  const response = await wasm;
  // Names carry their build's hash (cargo-leptos `hash-files`): a deploy
  // changes them, so a page never meets another build's files.
  expect(new URL(response.url()).pathname).toMatch(/^\/pkg\/admitone\.[A-Za-z0-9_-]{22}\.wasm$/);
  // cargo-leptos writes the split loader's name into the main wasm after
  // hashing it: that name does not pin the bytes, so it is revalidated.
  expect(response.headers()["cache-control"]).toBe("no-cache");
  // The stylesheet's does: a year.
  const css = (await page.locator("head link#leptos").getAttribute("href"))!;
  const stylesheet = await request.get(css);
  expect(stylesheet.headers()["cache-control"]).toBe("public, max-age=31536000, immutable");
  expect(css.split(".")[1]).toBe(createHash("md5").update(await stylesheet.body()).digest("base64url"));
  // `make test` runs this file against the release site, precompressed as
  // in production (scripts/test.sh), and against the debug site, which is not.
  // (Chromium asks for br over HTTPS only; over http://127.0.0.1 it gets
  // the gzip copy.)
  const release = (process.env.SERVER_BIN ?? "").includes("/release/");
  const encoding = response.headers()["content-encoding"];
  if (release) {
    expect(["br", "gzip"]).toContain(encoding);
  } else {
    expect(encoding).toBeUndefined();
  }
});
