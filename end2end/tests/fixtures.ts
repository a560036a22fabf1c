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

/** A mail as the journeys' SMTP server (`smtp-sink`) received it. */
export interface Mail {
  from: string;
  to: string[];
  subject: string;
  message_id: string;
  text: string;
  html: string;
}

function mailUrl(): string {
  return JSON.parse(readFileSync(join(__dirname, "..", ".e2e-server.json"), "utf8")).mailUrl;
}

/** Every mail the SMTP server received for `to`, oldest first. */
export async function mailsFor(to: string): Promise<Mail[]> {
  const response = await fetch(`${mailUrl()}/messages?to=${encodeURIComponent(to)}`);
  expect(response.ok).toBe(true);
  return (await response.json()) as Mail[];
}

/** Waits for a mail to `to` whose subject contains `subject`. */
export async function waitForMail(to: string, subject: string): Promise<Mail> {
  let found: Mail | undefined;
  await expect
    .poll(
      async () => {
        found = (await mailsFor(to)).find((m) => m.subject.includes(subject));
        return found !== undefined;
      },
      { timeout: 20_000, message: `a mail to ${to} about "${subject}"` },
    )
    .toBe(true);
  return found as Mail;
}

/** The link in a mail's text that goes to `path`, as a path on this server. */
export function linkIn(mail: Mail, path: string): string {
  const link = mail.text.split(/\s+/).find((w) => /^https?:\/\//.test(w) && w.includes(path));
  expect(link, `a link to ${path} in: ${mail.text}`).toBeTruthy();
  const url = new URL(link as string);
  return url.pathname + url.search;
}

/** Opens the link of `email`'s verification mail and confirms (its
 * address is then verified). Works with JavaScript off too. */
export async function verifyByMail(page: Page, email: string) {
  const mail = await waitForMail(email, "Confirm your email address");
  await page.goto(linkIn(mail, "/verify-email"));
  await page.getByRole("button", { name: "Confirm my address" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Your email address is verified" })).toBeVisible();
}
