// Course fixtures for the learner journeys: a share built through the admin
// JSON API as the owner of the spec's own tenant, real uploads, real codes,
// and SQL against the server's own (throwaway) database to check final
// states.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import {
  expect,
  request,
  test,
  type APIRequestContext,
  type BrowserContext,
  type Page,
  type TestInfo,
} from "@playwright/test";
import { PASSWORD, serverCommand, signUpByApi, uniqueEmail } from "./fixtures";

const port = Number(process.env.E2E_PORT ?? 3100);
export const baseURL = `http://127.0.0.1:${port}`;

export const VIDEO = readFileSync(join(__dirname, "..", "fixtures", "lesson.webm"));

function serverInfo(): { databaseUrl: string } {
  return JSON.parse(readFileSync(join(__dirname, "..", ".e2e-server.json"), "utf8"));
}

/** One SQL query against the server under test; rows as `a|b` lines. */
export function sql(query: string): string {
  return execFileSync("psql", ["-qtAX", "-v", "ON_ERROR_STOP=1", "-d", serverInfo().databaseUrl, "-c", query], {
    encoding: "utf8",
  }).trim();
}

/** The tenant a spec file works in, and its owner. */
export interface SpecTenant {
  id: string;
  slug: string;
  name: string;
  email: string;
  password: string;
  /** An API client signed in as the owner. */
  api: APIRequestContext;
}

const specTenants = new Map<string, Promise<SpecTenant>>();
const tenantOf = new WeakMap<APIRequestContext, string>();

/** The running spec file's own tenant, made on first use by the operator
 * command production uses (`server admin create-tenant`), with a fresh
 * owner signed in once through the API. Specs run side by side in several
 * workers against one server: none shares another's courses, settings,
 * time zone or owner's sign-ins (throttled per email). */
export function specTenant(): Promise<SpecTenant> {
  const file = basename(test.info().file).replace(/\.spec\.ts$/, "");
  let tenant = specTenants.get(file);
  if (tenant === undefined) {
    tenant = (async () => {
      const suffix = randomUUID().slice(0, 8);
      const slug = `e2e-${file}-${suffix}`.slice(0, 48).replace(/-+$/, "");
      const name = `Academy ${file} ${suffix}`;
      const email = uniqueEmail(`owner-${file}`);
      const password = `${PASSWORD} ${suffix}`;
      const dir = mkdtempSync(join(tmpdir(), "e2e-owner-"));
      const passwordFile = join(dir, "password");
      writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
      let id: string;
      try {
        id = serverCommand(
          "admin",
          "create-tenant",
          "--slug",
          slug,
          "--name",
          name,
          "--admin-email",
          email,
          "--admin-name",
          "Olive Owner",
          "--admin-password-file",
          passwordFile,
        ).trim();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const api = await request.newContext({ baseURL });
      const response = await api.post("/api/v1/auth/login", { data: { email, password } });
      expect(response.status(), await response.text()).toBe(200);
      tenantOf.set(api, id);
      return { id, slug, name, email, password, api };
    })();
    specTenants.set(file, tenant);
  }
  return tenant;
}

/** An API client signed in as the owner of the running spec's tenant
 * ([`specTenant`]): what [`createCourse`] builds courses with. */
export async function adminApi(): Promise<APIRequestContext> {
  return (await specTenant()).api;
}

export interface Course {
  id: string;
  slug: string;
  title: string;
  video: string;
  page: string;
  codes: string[];
  codeIds: string[];
}

export interface CourseOptions {
  title?: string;
  status?: "active" | "paused" | "draft" | "archived";
  quota?: number;
  validFrom?: Date;
  validUntil?: Date;
  codes?: number;
}

/** A share with a video and a page, `codes` codes, then `status`. */
export async function createCourse(api: APIRequestContext, options: CourseOptions = {}): Promise<Course> {
  const tenant = tenantOf.get(api);
  expect(tenant, "createCourse takes adminApi()'s client (its tenant's owner)").toBeDefined();
  const slug = `course-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
  const title = options.title ?? "Rust for the Curious";
  const created = await api.post(`/api/v1/tenants/${tenant}/shares`, {
    data: {
      title,
      slug,
      description: "Eight short lessons, from ownership to async.",
      status: "active",
      quota: options.quota,
      valid_from: options.validFrom?.toISOString(),
      valid_until: options.validUntil?.toISOString(),
    },
  });
  expect(created.status(), await created.text()).toBe(201);
  const share = await created.json();
  const upload = async (name: string, mimeType: string, buffer: Buffer, resourceTitle: string) => {
    const response = await api.post(`/api/v1/shares/${share.id}/resources`, {
      multipart: { title: resourceTitle, file: { name, mimeType, buffer } },
    });
    expect(response.status(), await response.text()).toBe(201);
    return (await response.json()).id as string;
  };
  const video = await upload("lesson.webm", "video/webm", VIDEO, "Lesson 1: Ownership");
  const page = await upload(
    "welcome.html",
    "text/html",
    Buffer.from("<h1>Welcome</h1><p>Start with lesson 1.</p>"),
    "Welcome notes",
  );
  const issued = await api.post(`/api/v1/shares/${share.id}/codes`, {
    data: { count: options.codes ?? 3, label: "e2e" },
  });
  expect(issued.status(), await issued.text()).toBe(201);
  const batch: { id: string; code: string }[] = (await issued.json()).codes;
  const codes = batch.map((c) => c.code);
  const codeIds = batch.map((c) => c.id);
  if (options.status && options.status !== "active") {
    const status = await api.post(`/api/v1/shares/${share.id}/status`, { data: { status: options.status } });
    expect(status.status(), await status.text()).toBe(200);
  }
  return { id: share.id, slug, title, video, page, codes, codeIds };
}

/** Signs a new learner up and in, in `context` (its pages share the
 * cookie): the address, then the mailed link (which proves it). */
export async function newLearner(context: BrowserContext, tag: string): Promise<string> {
  const email = uniqueEmail(tag);
  await signUpByApi(context.request, email, `Learner ${tag}`);
  return email;
}

/** How a person might type `code`: lower case, spaces instead of dashes. */
export function sloppy(code: string): string {
  return ` ${code.toLowerCase().replaceAll("-", " ")} `;
}

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A well-formed code (right check symbol) that was never issued. */
export function unknownCode(): string {
  const payload = Array.from({ length: 11 }, () => Math.floor(Math.random() * 32));
  let sum = 0;
  payload
    .slice()
    .reverse()
    .forEach((v, i) => {
      let addend = v;
      if (i % 2 === 0) {
        addend *= 2;
        addend = Math.floor(addend / 32) + (addend % 32);
      }
      sum += addend;
    });
  const check = (32 - (sum % 32)) % 32;
  const text = [...payload, check].map((v) => ALPHABET[v]).join("");
  return `${text.slice(0, 4)}-${text.slice(4, 8)}-${text.slice(8)}`;
}

/** `code` with its check symbol changed: a typo. */
export function typo(code: string): string {
  const last = code[code.length - 1];
  const replacement = ALPHABET[(ALPHABET.indexOf(last) + 1) % 32];
  return code.slice(0, -1) + replacement;
}

/** Types a code into the share page's form and submits it. */
export async function enterCode(page: Page, code: string) {
  await page.getByLabel("Access code").fill(code);
  await page.getByRole("button", { name: "Use this code" }).click();
}

/** The learner's state as the share page shows it. */
export function shareState(page: Page) {
  return page.locator("article.share");
}

/** Waits until a video element has really played for a while. */
export async function expectVideoPlays(page: Page) {
  const video = page.locator("video.player");
  await expect(video).toBeVisible();
  await video.evaluate((v: HTMLVideoElement) => {
    v.muted = true;
    return v.play();
  });
  await expect
    .poll(() => video.evaluate((v: HTMLVideoElement) => v.currentTime), { timeout: 15_000 })
    .toBeGreaterThan(0.5);
}

/** A full-page screenshot kept with the test's artifacts. */
export async function snapshot(page: Page, testInfo: TestInfo, name: string) {
  const path = testInfo.outputPath(`${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await testInfo.attach(name, { path, contentType: "image/png" });
}

/** The account id of `email` in the server's database. */
export function accountId(email: string): string {
  return sql(`SELECT id FROM accounts WHERE email = '${email.replaceAll("'", "''")}'`);
}
