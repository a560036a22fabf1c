import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type APIRequestContext, expect, type Page } from "@playwright/test";

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

/** Registers `email` the way a person does: the address on the open
 * registration page, then the mailed link, whose form makes the account
 * with `name` and `password`. Afterwards the page is signed in, back where
 * registration started. `javaScript: false` for a page without scripts
 * (the link's page is then not waited on to hydrate). */
export async function register(
  page: Page,
  email: string,
  name: string,
  password = PASSWORD,
  { javaScript = true }: { javaScript?: boolean } = {},
) {
  await requestSignup(page, email);
  await expect(page.getByRole("status").filter({ hasText: "We sent a mail to" })).toBeVisible();
  await finishSignup(page, email, name, password, { javaScript });
}

/** Fills and submits the registration form's address (the page must be open). */
export async function requestSignup(page: Page, email: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByRole("button", { name: "Email me a link" }).click();
}

/** Opens the newest signup link mailed to `email` and fills its form. */
export async function finishSignup(
  page: Page,
  email: string,
  name: string,
  password = PASSWORD,
  { javaScript = true }: { javaScript?: boolean } = {},
) {
  const mail = await newestMail(email, "Finish creating your account");
  const link = linkIn(mail, "/register/finish");
  if (javaScript) {
    await openHydrated(page, link);
  } else {
    await page.goto(link);
  }
  await page.getByLabel("Your name").fill(name);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByLabel("Repeat the password").fill(password);
  await page.getByRole("button", { name: "Create account" }).click();
}

/** Signs up `email` through the JSON API with `request` (its context is
 * then signed in): the address, then the mailed link's token. */
export async function signUpByApi(request: APIRequestContext, email: string, name: string, password = PASSWORD) {
  const asked = await request.post("/api/v1/auth/register", { data: { email } });
  expect(asked.status(), await asked.text()).toBe(202);
  const mail = await waitForMail(email, "Finish creating your account");
  const token = new URLSearchParams(linkIn(mail, "/register/finish").split("?")[1]).get("token");
  const made = await request.post("/api/v1/auth/register/finish", {
    data: { token, display_name: name, password },
  });
  expect(made.status(), await made.text()).toBe(201);
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

/** The newest mail to `to` whose subject contains `subject` (waiting for
 * one to arrive). */
export async function newestMail(to: string, subject: string): Promise<Mail> {
  await waitForMail(to, subject);
  const all = (await mailsFor(to)).filter((m) => m.subject.includes(subject));
  return all[all.length - 1];
}
