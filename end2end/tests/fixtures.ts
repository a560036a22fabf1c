import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, type Page } from "@playwright/test";

/** Opens `path` and waits until the wasm layer has hydrated the page
 * (clicks made before hydration are lost). */
export async function openHydrated(page: Page, path: string) {
  const response = await page.goto(path);
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  return response;
}

/** A fresh, unique email for one test. */
export function uniqueEmail(tag: string): string {
  return `${tag}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;
}

export const PASSWORD = "correct horse battery";

/** Runs an operator command of the server under test (its database). */
export function serverCommand(...args: string[]): string {
  const info = JSON.parse(readFileSync(join(__dirname, "..", ".e2e-server.json"), "utf8"));
  return execFileSync(info.serverBin, args, {
    env: { ...process.env, DATABASE_URL: info.databaseUrl, RUST_LOG: "warn" },
    encoding: "utf8",
  });
}

/** Fills and submits the registration form (the page must be open). */
export async function register(page: Page, email: string, name: string, password = PASSWORD) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Your name").fill(name);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByLabel("Repeat the password").fill(password);
  await page.getByRole("button", { name: "Create account" }).click();
}

/** Fills and submits the sign-in form (the page must be open). */
export async function signIn(page: Page, email: string, password = PASSWORD) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}
